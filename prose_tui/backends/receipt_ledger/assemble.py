"""A receipt-ledger run as a :class:`~prose_tui.model.Run` (FORMATS.md generation 8).

One event per receipt (``receipt_rendered``/``_skipped``/``_failed``, named and stepped by
its ``statement_id``), one trace line per statement id in ledger order (its latest status,
receipts, tokens with their basis, reuse, discretion outcome, failure), the ``state.md``
fields as the header and its sections kept, ``bindings/`` as bindings, token totals per
statement and per run (``Run.receipts``, ``Run.metrics`` and a "Cost" section), chain
problems first among the warnings, and a status with its reason.

:class:`LedgerRun` is what the backend keeps per run folder so that an append is applied
without reading the ledger again.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prose_tui.backends.common.bindings import scan_bindings
from prose_tui.backends.common.contained import run_root
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, human_age, last_change, run_id_time
from prose_tui.backends.common.text import decode, open_regular, visible_name
from prose_tui.backends.receipt_ledger.layout import ANCHOR, RECEIPTS, STATE, read_anchor
from prose_tui.backends.receipt_ledger.ledger import Anchor, Entry, Ledger, short
from prose_tui.backends.receipt_ledger.state_md import StateMd, parse_state_md
from prose_tui.model import (
    Backend,
    ChainReport,
    Event,
    EventKind,
    Receipt,
    Run,
    RunFormat,
    RunStatus,
    Section,
    StatementState,
    TraceLine,
)

MAX_STATE_BYTES = 4 * 1024 * 1024
COST_ROWS = 50  # statements listed in the Cost section (the most tokens first)
CHAIN_WARNINGS_SHOWN = 20  # chain problems copied into Run.warnings (show --json's chain has them all)
_KIND = {"rendered": EventKind.RECEIPT_RENDERED, "skipped": EventKind.RECEIPT_SKIPPED,
         "failed": EventKind.RECEIPT_FAILED}
_STATE = {"rendered": StatementState.COMPLETE, "skipped": StatementState.SKIPPED,
          "failed": StatementState.FAILED}
_DONE = re.compile(r"^(complete[d]?|done|success(ful)?|succeeded|finished|ok)\b", re.I)
_FAILED = re.compile(r"^(fail(ed|ure)?|error(ed)?|aborted|crashed)\b", re.I)
_STOPPED = re.compile(r"^(interrupted|cancel+ed|stopped|halted|paused)\b", re.I)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(value: Any) -> str | None:
    """A string field for one line of display: whitespace runs folded, control characters
    (an ANSI escape a receipt may carry) made visible; ``None`` for a blank or non-string."""
    if not isinstance(value, str):
        return None
    if value.isprintable():  # the usual case: no control character, newline or odd space
        return value.strip() or None
    return visible_name(" ".join(value.split())) or None


@dataclass(slots=True)
class Statement:
    """One statement id's receipts summarised (a trace line)."""

    sid: str
    kind: str | None = None
    agent: str | None = None
    status: str | None = None
    receipts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    bases: set[str] = field(default_factory=set)
    failure: str | None = None
    reused: str | None = None
    outcome: str | None = None
    detail: str | None = None  # what the receipt's detail says (an event, a binding, a join)
    binding: str | None = None


@dataclass(slots=True)
class LedgerRun:
    """Per run folder: the ledger's reading state, the anchor and state.md as last read, the
    statements (= trace lines, by id) and the run this state keeps current."""

    run_dir: Path
    ledger: Ledger
    anchor: Anchor = field(default_factory=Anchor)
    state: StateMd = field(default_factory=StateMd)
    statements: list[Statement] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    end: Entry | None = None  # the last run_end control receipt
    other_warnings: list[str] = field(default_factory=list)  # not the chain's: state.md, reading
    input_tokens: int = 0
    output_tokens: int = 0
    by_basis: dict[str, int] = field(default_factory=dict)  # receipts per usage.basis
    top: list[Statement] = field(default_factory=list)  # the Cost section's rows: the most tokens first
    failing: dict[str, None] = field(default_factory=dict)  # statements whose last receipt failed, in order
    owner: int = 0
    receipts: int = 0
    report: ChainReport = field(default_factory=lambda: ChainReport(ok=True, checked=0))

    def belongs_to(self, run: Run) -> bool:
        """True when ``run`` is the run this state keeps current."""
        return self.owner == id(run) and len(run.receipts) == self.receipts


def failure_of(fields: dict[str, Any]) -> str | None:
    """A failed receipt's ``error`` in words: ``type: message (retry n)``."""
    error = fields.get("error")
    if isinstance(error, dict):
        kind, message = _text(error.get("type")), _text(error.get("message"))
        words = ": ".join(w for w in (kind, message) if w)
        retry = error.get("retry_count")
        if _int(retry):
            words += f" (retry {retry})"
        return words or None
    return _text(error)


def to_receipt(entry: Entry) -> Receipt:
    """The model's :class:`~prose_tui.model.Receipt` of one ledger line: ``node`` is the
    statement id, ``tokens_fresh`` the input plus output tokens, ``basis`` ``usage.basis``."""
    obj = entry.fields
    usage = _dict(obj.get("usage"))
    status = _text(obj.get("status")) or "unknown"
    stored, prev = obj.get("content_hash"), obj.get("prev")
    return Receipt(
        node=entry.statement, status=status, seq=entry.line,
        hash=stored if isinstance(stored, str) else None, prev=prev if isinstance(prev, str) else None,
        version=_text(obj.get("output_fingerprint")),
        tokens_fresh=_int(usage.get("input_tokens")) + _int(usage.get("output_tokens")),
        surprise_cause=_text(obj.get("surprise_cause")),
        failure_reason=(failure_of(obj) or "no error recorded") if status == "failed" else None,
        fields=obj, basis=_text(usage.get("basis")),
    )


def _tokens(n_in: int, n_out: int, bases: set[str] | str | None) -> str:
    basis = ", ".join(sorted(bases)) if isinstance(bases, set) else bases
    if basis == "unavailable":
        return "tokens unavailable"
    words = f"{n_in:,} in / {n_out:,} out tokens"
    return f"{words} ({basis})" if basis else words


def _reuse(fields: dict[str, Any]) -> str | None:
    reused = fields.get("reused_from")
    if not isinstance(reused, dict):
        return _text(reused)
    run, sid = _text(reused.get("run_id")), _text(reused.get("statement_id"))
    return "/".join(w for w in (run, sid) if w) or "an earlier run"


def _discretion(detail: dict[str, Any]) -> str | None:
    """A discretion's ``condition → outcome (branch …)`` (its detail names a condition)."""
    if "condition" not in detail:
        return None
    words = f"{_text(detail.get('condition')) or 'condition'} → {detail.get('outcome')}"
    if branch := _text(detail.get("branch")):
        words += f" (branch {branch})"
    return words


def event_text(entry: Entry, receipt: Receipt) -> str:
    """One receipt in a line: statement, status (with the failure), kind, agent, detail, tokens."""
    obj = entry.fields
    detail = _dict(obj.get("detail"))
    usage = _dict(obj.get("usage"))
    head = f"{receipt.node} {receipt.status}"
    if receipt.status == "failed":
        head += f": {receipt.failure_reason}"
    parts = [head]
    if kind := _text(obj.get("kind")):
        parts.append(kind)
    if agent := _text(obj.get("agent")):
        parts.append(agent)
    if event := _text(detail.get("event")):
        outcome = _text(detail.get("outcome"))
        parts.append(f"{event}: {outcome}" if outcome else event)
    elif words := _discretion(detail):
        parts.append(words)
    elif binding := _text(detail.get("binding")):
        parts.append(f"→ {binding}")
    if reused := _reuse(obj):
        parts.append(f"reused from {reused}")
    if usage:
        parts.append(_tokens(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")), _text(usage.get("basis"))))
    return " · ".join(parts)


def read_state_md(run_dir: Path, root: Path | None) -> tuple[StateMd, str | None]:
    """``state.md`` parsed (empty when absent), and a warning when it could not be read."""
    try:
        with open_regular(run_dir / STATE, root=root) as fh:
            data = fh.read(MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return StateMd(), None
    except OSError as exc:
        return StateMd(), f"state.md could not be read: {exc.strerror or exc}"
    warning = "state.md is over 4 MiB: only its start is read" if len(data) > MAX_STATE_BYTES else None
    return parse_state_md(decode(data[:MAX_STATE_BYTES])), warning


def read_anchor_of(run_dir: Path) -> Anchor:
    data, problem = read_anchor(run_dir / ANCHOR)
    if problem is not None:
        return Anchor(present=True, problem=problem)
    if data is None:
        return Anchor()
    if not isinstance(data, dict):
        return Anchor(present=True, problem="run.json is not a JSON object")
    return Anchor(fields=data, present=True)


def new_run(lrun: LedgerRun) -> Run:
    run_dir = lrun.run_dir
    run = Run(id=run_dir.name, path=run_dir, backend=Backend.RECEIPT_LEDGER, format=RunFormat.RECEIPT_LEDGER,
              root=run_root(run_dir))
    run.state_file = run_dir / RECEIPTS if (run_dir / RECEIPTS).is_file() else run_dir / ANCHOR
    run.started = run_id_time(run.id)
    return run


def set_state_md(run: Run, lrun: LedgerRun) -> None:
    """Header, program and sections from ``state.md`` and ``run.json`` (the ledger's rows
    come after: the Cost section is set by :func:`set_cost`)."""
    fields, anchor = lrun.state.fields, lrun.anchor.fields
    program = _text(anchor.get("program")) or _text(fields.get("Program"))
    run.program = program.strip("`") if program else None
    header = dict(fields)
    for key in ("v", "state_backend", "status", "receipt_count"):
        if key in anchor:
            header[f"run.json {key}"] = visible_name(str(anchor[key])[:200])
    if "ledger_head" in anchor:
        header["run.json ledger_head"] = short(anchor["ledger_head"])
    if source := _text(anchor.get("reuse_source_run")):
        header["reuse source run"] = source
    header["receipts"] = str(len(run.receipts))
    run.header = header
    cost = [s for s in run.sections if s.title == "Cost"]
    run.sections = [Section(f"{s.title} (state.md)" if s.title == "Cost" else s.title, s.text)
                    for s in lrun.state.sections] + cost
    for name, said in (("run.json", _text(anchor.get("run_id"))), ("state.md", lrun.state.run_id)):
        if said and said != run.id:
            _warn(lrun, f"{name} names run {said!r}, not the folder's {run.id!r}")


def _warn(lrun: LedgerRun, text: str) -> None:
    if text not in lrun.other_warnings:
        lrun.other_warnings.append(text)


def add_entries(run: Run, lrun: LedgerRun, entries: list[Entry]) -> tuple[list[Event], set[int]]:
    """Append ``entries`` to ``run`` (receipts, events, statements, token totals). Returns
    the new events and the indexes of the statements they touched (a new statement's index
    is past the trace's end: :func:`update_trace` appends its line)."""
    events: list[Event] = []
    changed: set[int] = set()
    for entry in entries:
        receipt = to_receipt(entry)
        sid = receipt.node
        if sid not in lrun.index:
            lrun.index[sid] = len(lrun.statements)
            lrun.statements.append(Statement(sid))
        i = lrun.index[sid]
        _summarise(lrun, lrun.statements[i], entry, receipt)
        basis = receipt.basis or "not said"
        lrun.by_basis[basis] = lrun.by_basis.get(basis, 0) + 1
        changed.add(i)
        if _dict(entry.fields.get("detail")).get("event") == "run_end":
            lrun.end = entry
        run.receipts.append(receipt)
        event = Event(seq=len(run.events), kind=_event_kind(entry, receipt),
                      text=event_text(entry, receipt), step=sid, name=sid, status=receipt.status)
        run.events.append(event)
        events.append(event)
    lrun.receipts = len(run.receipts)
    return events, changed


def _event_kind(entry: Entry, receipt: Receipt) -> EventKind:
    """The event a receipt is in the run's history: named by its status, except the run's own
    control receipts. ``run_start`` starts the run's line (it is running, not done, until
    ``run_end``), and ``run_end`` ends the run as its ``outcome`` says (``RUN_ENDED`` or
    ``RUN_ERRORED``, as an event log's ``---end``/``---error``): stepping through history, the
    run's line is executing from its start and failed at its end when the run failed."""
    if receipt.node == "run":
        detail = _dict(entry.fields.get("detail"))
        if detail.get("event") == "run_start":
            return EventKind.STATEMENT_STARTED
        if detail.get("event") == "run_end" and receipt.status == "rendered":
            failed = _FAILED.match(_text(detail.get("outcome")) or "")
            return EventKind.RUN_ERRORED if failed else EventKind.RUN_ENDED
    return _KIND.get(receipt.status, EventKind.NOTE)


def update_trace(run: Run, lrun: LedgerRun, changed: set[int]) -> None:
    """Redraw the trace lines of statements ``changed`` in place and append the new ones
    (the same list: a view repaints those lines, not the trace)."""
    for i in sorted(changed):
        if i < len(run.trace):
            run.trace[i] = trace_line(run, lrun, i)
        else:
            run.trace.append(trace_line(run, lrun, i))


def _summarise(lrun: LedgerRun, s: Statement, entry: Entry, receipt: Receipt) -> None:
    obj = entry.fields
    detail = _dict(obj.get("detail"))
    s.kind = _text(obj.get("kind")) or s.kind
    s.agent = _text(obj.get("agent")) or s.agent
    s.status = receipt.status
    s.receipts += 1
    usage = _dict(obj.get("usage"))
    s.input_tokens += (n_in := _int(usage.get("input_tokens")))
    s.output_tokens += (n_out := _int(usage.get("output_tokens")))
    lrun.input_tokens += n_in
    lrun.output_tokens += n_out
    if receipt.basis:
        s.bases.add(receipt.basis)
    s.failure = receipt.failure_reason if receipt.status == "failed" else None
    lrun.failing.pop(s.sid, None)
    if receipt.status == "failed":
        lrun.failing[s.sid] = None
    s.reused = _reuse(obj)
    s.outcome = _discretion(detail)
    event = _text(detail.get("event"))
    s.detail = (f"{event}: {detail['outcome']}" if event and _text(detail.get("outcome")) else event) or s.detail
    if binding := _text(detail.get("binding")):
        s.binding = binding


def redraw_trace(run: Run, lrun: LedgerRun) -> None:
    """Every statement's trace line again (a statement was added, or state.md changed)."""
    run.trace = [trace_line(run, lrun, i) for i in range(len(lrun.statements))]


def trace_line(run: Run, lrun: LedgerRun, i: int) -> TraceLine:
    """Statement ``i``'s trace line: its program line from state.md when it names the id
    (else its kind and agent), its state and a note with receipts, tokens and outcome."""
    s = lrun.statements[i]
    said = lrun.state.statements.get(s.sid) or lrun.state.statements.get(s.sid.split(".", 1)[0])
    code = said.code.strip() if said and said.code.strip() else " ".join(w for w in (s.kind, s.agent, s.detail) if w)
    note = [s.status or "?"]
    if s.receipts > 1:
        note.append(f"{s.receipts} receipts")
    if s.bases or s.input_tokens or s.output_tokens:
        note.append(_tokens(s.input_tokens, s.output_tokens, s.bases))
    if s.reused:
        note.append(f"reused from {s.reused}")
    if s.outcome:
        note.append(s.outcome)
    if s.failure:
        note.append(s.failure)
    binding = said.binding if said and said.binding else None
    if binding is None and s.binding:
        candidate = next((b for b in run.bindings if b.name == s.binding), None)
        if candidate is not None:
            try:
                binding = candidate.path.relative_to(run.path).as_posix()
            except ValueError:
                binding = None
    state = _STATE.get(s.status or "")
    if s.sid == "run" and lrun.end is not None:
        outcome = _text(_dict(lrun.end.fields.get("detail")).get("outcome")) or ""
        state = StatementState.FAILED if _FAILED.match(outcome) else StatementState.COMPLETE
    elif s.sid == "run":
        state = None  # started, not ended
    return TraceLine(line=i + 1, text=f"{s.sid}  {code}".rstrip(), state=state, note=" · ".join(note),
                     binding=binding, step=s.sid, failure=s.failure)


def set_cost(run: Run, lrun: LedgerRun, changed: set[int] | None = None) -> None:
    """Token totals per run (``Run.metrics``) and per statement (the "Cost" section), each
    with how its tokens were counted: an estimate is not a measurement, and ``unavailable``
    zeros are not data. ``changed``: only those statements' tokens grew since the last call
    (a statement's tokens never shrink, so the top rows are found among them and the rows
    already shown); ``None``: all of them."""
    n_in, n_out, by_basis = lrun.input_tokens, lrun.output_tokens, lrun.by_basis
    run.metrics = {"receipts": float(len(run.receipts)), "input_tokens": float(n_in), "output_tokens": float(n_out)}
    for basis, count in by_basis.items():
        run.metrics[f"receipts_{basis.replace(' ', '_')}"] = float(count)
    bases = ", ".join(f"{basis} {count}" for basis, count in sorted(by_basis.items()))
    lines = [f"Total: {n_in:,} input / {n_out:,} output tokens over {len(run.receipts)} receipts "
             f"(usage.basis: {bases or 'none'}).", ""]
    if "estimated" in by_basis:
        lines.append("Estimated tokens are the VM's approximation, not a measurement.")
    if "unavailable" in by_basis:
        lines.append("Receipts with basis unavailable carry zeros that are not data.")
    pool = lrun.statements if changed is None else list(
        {id(s): s for s in (*lrun.top, *(lrun.statements[i] for i in changed))}.values())
    lrun.top = top = heapq.nlargest(COST_ROWS, pool, key=lambda s: s.input_tokens + s.output_tokens)
    if top:
        lines += ["", "| statement | kind | status | receipts | input | output | basis |", "|---|---|---|---:|---:|---:|---|"]
        lines += [f"| {s.sid} | {s.kind or '—'} | {s.status or '—'} | {s.receipts} | {s.input_tokens:,} | "
                  f"{s.output_tokens:,} | {', '.join(sorted(s.bases)) or '—'} |" for s in top]
        if len(lrun.statements) > COST_ROWS:
            lines.append(f"\n{len(lrun.statements) - COST_ROWS} more statements (`show --json`'s cost.by_node has all)")
    run.sections = [s for s in run.sections if s.title != "Cost"] + [Section("Cost", "\n".join(lines))]


def set_warnings(run: Run, lrun: LedgerRun) -> None:
    """The chain check again (cheap: the per-receipt checks were made as lines were read),
    its problems first among the run's warnings (the explorer's header shows the first)."""
    lrun.report = report = lrun.ledger.report(lrun.anchor)
    chain = [f"chain broken: {p}" for p in report.problems[:CHAIN_WARNINGS_SHOWN]]
    if len(report.problems) > CHAIN_WARNINGS_SHOWN:
        chain.append(f"chain broken in {len(report.problems) - CHAIN_WARNINGS_SHOWN} more places (show --json lists them)")
    chain += [f"ledger: {w}" for w in report.warnings]
    run.warnings = chain + lrun.other_warnings


def set_status(run: Run, lrun: LedgerRun, *, now: datetime | None = None,
               stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> None:
    """Ended as the ``run_end`` control receipt says (its ``outcome``); without one, running
    while receipts arrive (seen live, else the ledger's time within ``stale_after``), failed
    when a statement's last receipt failed, completed when ``run.json``/``state.md`` say so,
    else interrupted (an interrupted run has ``run_start`` but no ``run_end``)."""
    run.status, run.status_reason = status_of(run, lrun, now=now, stale_after=stale_after, observed=observed)


def status_of(run: Run, lrun: LedgerRun, *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> tuple[RunStatus, str]:
    now = now or datetime.now(timezone.utc)
    count = len(run.receipts)
    failing = [lrun.statements[lrun.index[sid]] for sid in lrun.failing]
    failed_words = f"{failing[-1].sid} failed: {failing[-1].failure}" if failing else ""
    if lrun.end is not None:
        outcome = _text(_dict(lrun.end.fields.get("detail")).get("outcome")) or "no outcome"
        where = f"run_end receipt (line {lrun.end.line}): outcome {outcome}"
        if _FAILED.match(outcome):
            return RunStatus.FAILED, f"{where}; {failed_words}" if failed_words else where
        if _DONE.match(outcome):
            return RunStatus.COMPLETED, f"{where}; {count} receipts"
        if _STOPPED.match(outcome):
            return RunStatus.INTERRUPTED, where
        return RunStatus.UNKNOWN, where
    changed, evidence = last_change(run, now, observed)
    age = (now - changed).total_seconds() if changed is not None else None
    said = _text(lrun.anchor.fields.get("status")) or _text(lrun.state.fields.get("Status")) or ""
    if age is not None and age <= stale_after:
        last = f"; the last {run.receipts[-1].node} {run.receipts[-1].status}" if run.receipts else ""
        what = f"receipts arriving: {count}{last}" if count else "no receipts yet"
        return RunStatus.RUNNING, f"{what}; last change {human_age(age)} ago, {evidence}"
    if failing:
        return RunStatus.FAILED, f"{failed_words}; no run_end receipt after it"
    if _DONE.match(said):
        return RunStatus.COMPLETED, f"run.json/state.md say {said}, but the ledger has no run_end receipt"
    if _FAILED.match(said):
        return RunStatus.FAILED, f"run.json/state.md say {said}; no run_end receipt"
    if count == 0:
        return RunStatus.UNKNOWN, "the ledger holds no receipts"
    quiet = f"nothing appended for {human_age(age)}" if age is not None else "no time known"
    return RunStatus.INTERRUPTED, f"no run_end receipt after {count} receipts and {quiet} ({evidence})"


def set_mtime(run: Run) -> None:
    sec, nsec = divmod(run_mtime_ns(run), 10**9)
    run.state_mtime = sec + nsec * 1e-9 if run_mtime_ns(run) >= 0 else None


def run_mtime_ns(run: Run) -> int:
    try:
        return (run.state_file or run.path).stat().st_mtime_ns
    except OSError:
        return -1


def build(run_dir: Path) -> tuple[Run, LedgerRun]:
    """The run at ``run_dir`` read whole (its status is set by the caller)."""
    root = run_root(run_dir)
    lrun = LedgerRun(run_dir, Ledger.at(run_dir / RECEIPTS, root))
    run = new_run(lrun)
    lrun.anchor = read_anchor_of(run_dir)
    lrun.state, warning = read_state_md(run_dir, root)
    if warning:
        _warn(lrun, warning)
    try:
        entries = lrun.ledger.read() or []
    except FileNotFoundError:
        entries = []
    except OSError as exc:
        entries = []
        _warn(lrun, f"receipts.jsonl could not be read: {exc.strerror or exc}")
    run.bindings = scan_bindings(run_dir, run.root)
    add_entries(run, lrun, entries)
    set_state_md(run, lrun)
    redraw_trace(run, lrun)
    set_cost(run, lrun)
    set_warnings(run, lrun)
    set_mtime(run)
    lrun.owner = id(run)
    return run, lrun
