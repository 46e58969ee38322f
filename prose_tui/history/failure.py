"""What "jump to failure" shows: the failing statement, its error, the retries before it and
the bindings it had as context (issue 3). Reads the run and its history; changes neither.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from prose_tui.backends.common.text import open_regular
from prose_tui.history.cursor import WRITE_KINDS, CursorMemo, state_at, trace_index
from prose_tui.history.nodes import (
    RECEIPT_KINDS,
    binding_node,
    failure_words,
    receipt_events,
)
from prose_tui.history.timeline import History
from prose_tui.history.transitions import error_text
from prose_tui.model import Binding, Event, EventKind, Failure, Run, RunFormat, TraceLine, assigned_name, run_failures
from prose_tui.model.failure import FAIL_MARKS, error_message

__all__ = ["FailureContext", "failure_context", "failure_events"]

K = EventKind


@dataclass
class FailureContext:
    """What "jump to failure" shows for the failure at one event.

    ``event`` is the failure event itself; ``statement`` the trace line of the statement
    that failed (as of that moment; ``None`` when no line is known); ``error`` the error
    text (the words after ``✗``, the ``---error`` message, a snapshot's ``## Error``
    section, joined with " — " when there are several); ``retries`` the ``retry`` events of
    the same statement before it; ``context_bindings`` the bindings it had as context.

    For a failed receipt (a 0.15 skill run's or a Reactor's node): ``node`` names the node,
    ``error`` is the receipt's failure text (``semantic_diff.failure_reason``, a skill run's
    ``__error.md`` summary), ``retries`` the node's failed receipts right before it (its
    earlier attempts), ``context_bindings`` the world models of the nodes it reads (the
    caller's inputs for a node reading none) and its own last published one, as of then.
    ``node`` is also set for a log line reporting a node's failure.

    ``recovered`` and ``attempt`` are the run's failure model's (``model.failure``) for the
    failure at this event: a later attempt of the same statement completed; ``"n/m"``.
    """

    event: Event
    statement: TraceLine | None
    error: str | None
    retries: list[Event] = field(default_factory=list)
    context_bindings: list[Binding] = field(default_factory=list)
    node: str | None = None
    recovered: bool = False
    attempt: str | None = None


# the formats whose trace is a log or node rows: no ``## Error`` section, no context lines in the trace
_LOGS = (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG, RunFormat.SKILL, RunFormat.REACTOR)
_CONTEXT = re.compile(r"^\s*(?:context|evidence|inputs?)\s*:\s*(.*)$", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][\w]*")
_BARE = ("", "rejected", "failed", "error", "fail", "✗")  # outcome words that say nothing of why
# "[Warning] ", "⚠️ ", "- " before a narration line's words
_LEADING_MARKER = re.compile(r"^[^\w\[]*(?:\[[^\]]*\][*`_]*\s*:?)?[^\w\"']*")


def failure_context(run: Run, history: History, index: int, *, memo: CursorMemo | None = None) -> FailureContext:
    """The failing statement, its error, the retries before it and the bindings it had.

    ``index`` is an event index, usually one of ``history.failures()``. For a
    ``run_errored`` event the statement is the last one that failed or was left started
    before it. Context bindings come from the statement's ``context:``/``evidence:`` lines
    (in a snapshot trace, else in the program file), resolved as the VM would
    (``Run.binding_named`` on the run as of the failure, then on the live run); when
    there are none, the bindings written before the failure. Raises ``IndexError`` for an
    index outside the history. ``memo``: a cursor's :class:`~.cursor.CursorMemo` for ``run``
    and ``history`` (``state_at``), so the runs as of the failure cost what the cursor moved.
    """
    if not 0 <= index < len(history.events):
        raise IndexError(f"event {index} outside 0..{len(history.events) - 1}")
    ctx = _failure_context(run, history, index, memo)
    placed = next((f for f in failure_events(run, history) if f.event == index), None)
    if placed is not None:
        ctx.recovered, ctx.attempt = placed.recovered, placed.attempt
        words = " ".join((ctx.error or "").split()).lower()
        if placed.error and words in _BARE and words in " ".join(placed.error.split()).lower():
            ctx.error = placed.error  # an outcome word alone says nothing: the model's has the run's error too
    return ctx


def _failure_context(run: Run, history: History, index: int, memo: CursorMemo | None = None) -> FailureContext:
    event = history.events[index]
    at = state_at(run, history, index, memo=memo)
    if event.kind is K.RECEIPT_FAILED:
        return _receipt_failure(run, history, index, at)
    stmt_index = index
    if event.kind is K.RUN_ERRORED:
        for j in range(index - 1, -1, -1):
            if history.events[j].kind in (K.STATEMENT_FAILED, K.STATEMENT_STARTED, K.RETRY):
                stmt_index = j
                break
    statement = _line_at(at, history.refs[stmt_index].trace_line)
    errors: list[str] = []
    for j in dict.fromkeys((stmt_index, index)):
        if (text := _error_words(history.events[j])) and text not in errors:
            errors.append(text)
    if run.format not in _LOGS and (section := error_text(at)) and section not in errors:
        errors.append(section)
    retries = _retries_before(history, stmt_index, _same_statement_chain(run, history, stmt_index, memo))
    names = _context_names(run, at, history, stmt_index)
    bindings: list[Binding] = []
    node = history.events[stmt_index].name if any(n.name == history.events[stmt_index].name for n in run.nodes) else None
    if node is not None and not names:
        bindings = _node_context(run, at, node)
    if node is not None and event.kind is K.RUN_ERRORED:
        reason = next((n.failure_reason for n in at.nodes if n.name == node and n.status == "failed"), None)
        if reason and not any(reason in e for e in errors):
            errors = [e for e in errors if e not in reason] + [reason]
    eid = history.events[stmt_index].execution_id
    for name in names:
        b = at.binding_named(name, eid) or run.binding_named(name, eid)
        if b is not None and b not in bindings:
            bindings.append(b)
    if not bindings:
        before = state_at(run, history, stmt_index - 1, memo=memo) if stmt_index > 0 else None
        bindings = [b for b in (before.bindings if before else []) if b.exists]
    return FailureContext(event=event, statement=statement, error=" — ".join(errors) or None,
                          retries=retries, context_bindings=bindings, node=node)


def _receipt_failure(run: Run, history: History, index: int, at: Run) -> FailureContext:
    """A failed receipt: its node, its failure text, the node's failed attempts right
    before it, the node's inputs and last published world model as of then."""
    event = history.events[index]
    node = event.name or ""
    mapping = receipt_events(run, history.events)
    receipt = mapping[index]
    errors: list[str] = []
    live = next((n for n in run.nodes if n.name == node), None)
    last_of_node = receipt is not None and not any(r is not None and r.node == node for r in mapping[index + 1:])
    for text in (receipt.failure_reason if receipt is not None else None,
                 live.failure_reason if live is not None and last_of_node else None,
                 _twin_words(history, index)):
        text = (text or "").strip()
        if text and not any(text in e for e in errors):
            errors = [e for e in errors if e not in text] + [text]
    if not errors:
        errors.append(failure_words(event))
    retries: list[Event] = []
    for j in range(index - 1, -1, -1):
        earlier = mapping[j]
        if earlier is None or earlier.node != node:
            continue
        if earlier.status != "failed":
            break
        retries.append(history.events[j])
    return FailureContext(event=event, statement=_line_at(at, history.refs[index].trace_line),
                          error=" — ".join(errors), retries=list(reversed(retries)),
                          context_bindings=_node_context(run, at, node), node=node)


def _twin_words(history: History, index: int) -> str | None:
    """The failure words of the log line reporting the same node failure as the receipt at
    ``index`` (a skill run writes ``3→ ranker ✗ reason``, then the receipt), if any."""
    event = history.events[index]
    for j in range(index - 1, -1, -1):
        other = history.events[j]
        if other.kind is K.STATEMENT_FAILED and other.name == event.name and other.line == event.line:
            return failure_words(other) if other.line is not None else None
        if other.name == event.name and other.kind in RECEIPT_KINDS:
            return None
    return None


def _node_context(run: Run, at: Run, node: str) -> list[Binding]:
    """The world models ``node`` reads (its producers', in producer order; the caller's
    inputs when it reads no node) and its own last published one, as of ``at``."""
    spec = next((n for n in run.nodes if n.name == node), None)
    producers = list(spec.producers) if spec is not None else []
    by_node: dict[str | None, list[Binding]] = {}
    for b in at.bindings:
        owner = binding_node(run, b)
        if owner is None and (b.service == "caller" or (b.kind or "").lower() == "input"):
            owner = "caller"
        by_node.setdefault(owner, []).append(b)
    out: list[Binding] = []
    for name in dict.fromkeys([*(producers or ["caller"]), node]):
        out.extend(b for b in by_node.get(name, []) if b.exists)
    return out


def _line_at(run: Run, line: int | None) -> TraceLine | None:
    index = trace_index(run, line)
    return run.trace[index] if index is not None else None


def _error_words(event: Event) -> str | None:
    """What a failure event's text says went wrong: a ``---error`` line's message, the words
    after a failure mark (``✗``: the model's ``FAIL_MARKS``, which event logs and database
    rows both write), a snapshot line's annotation, else its plain words."""
    if event.kind is K.RUN_ERRORED:
        if message := error_message(event.text):
            return message
        return None if event.text.startswith("---") else event.text or None
    if event.kind is K.STATEMENT_FAILED:
        for i, ch in enumerate(event.text):
            if ch in FAIL_MARKS:
                words = event.text[i + 1:].lstrip("\ufe0f").strip()
                return words or event.status
        if "#" in event.text:  # a snapshot line: its annotation, "<-- FAILED: reason"
            return event.text.split("#", 1)[1].strip().removeprefix("<--").strip() or event.status
        words = _LEADING_MARKER.sub("", event.text).strip()
        return words or event.status
    return None


def _retries_before(history: History, index: int, chain: array | None = None) -> list[Event]:
    """The retries of the statement of event ``index`` since it last completed, oldest first
    (the event itself first when it is one). ``chain``: each event's previous event of the
    same step (or trace line, for events without one), a cursor memo's ``prev_step`` or
    ``prev_line``: only those are looked at, not every event before (0.14 s at 100,000)."""
    out: list[Event] = []
    earlier: Iterable[int] = range(index - 1, -1, -1) if chain is None else _chained(chain, index)
    for j in earlier:
        event = history.events[j]
        if not history.same_statement(index, j):
            continue
        if event.kind is K.RETRY:
            out.append(event)
        elif event.kind is K.STATEMENT_COMPLETED:
            break
    if history.events[index].kind is K.RETRY:
        out.insert(0, history.events[index])
    return list(reversed(out))


def _chained(chain: array, index: int) -> Iterator[int]:
    j = chain[index]
    while j >= 0:
        yield j
        j = chain[j]


def _same_statement_chain(run: Run, history: History, index: int, memo: CursorMemo | None) -> array | None:
    """The memo's chain through the events that may be event ``index``'s statement
    (``History.same_statement``: the same step, or without steps the same trace line);
    ``None`` without a memo that answers for ``run`` and ``history``."""
    if memo is None or not memo.fits(run, history):
        return None
    memo.ensure()
    if index >= len(memo.at):
        return None
    step = history.events[index].step
    if step == "":
        return None  # the memo chains steps that say something
    return memo.prev_step if step is not None else memo.prev_line


def _context_names(run: Run, at: Run, history: History, index: int) -> list[str]:
    """Names in the ``context:`` lines of the statement at ``index``."""
    line = history.refs[index].trace_line
    if run.format not in _LOGS and (i := trace_index(at, line)) is not None:
        return _block_context([t.text for t in at.trace], i)
    program = _program_lines(run)
    if not program:
        return []
    event = history.events[index]
    name = event.name or ""
    start = None
    if _IDENT.fullmatch(name):
        start = next((i for i, text in enumerate(program) if assigned_name(text) == name), None)
    if start is None and name:
        keyword = re.split(r"[:\s(]", name, maxsplit=1)[0]
        after = _program_position_of_last_binding(program, history, index)
        start = next((i for i in range(after, len(program)) if program[i].strip().startswith(keyword)), None)
    return _block_context(program, start) if start is not None else []


def _program_position_of_last_binding(program: list[str], history: History, index: int) -> int:
    for j in range(index - 1, -1, -1):
        name = history.events[j].name
        if history.events[j].kind in WRITE_KINDS and name and _IDENT.fullmatch(name):
            found = next((i for i, text in enumerate(program) if assigned_name(text) == name), None)
            if found is not None:
                return found + 1
    return 0


_INLINE_CONTEXT = re.compile(r"\bcontext\s*:\s*(.*)$", re.IGNORECASE)


def _block_context(lines: list[str], start: int) -> list[str]:
    """Names in ``context:`` lines of the block starting at ``lines[start]`` (and in a
    ``... with context: {a, b}`` on that line itself, as narrations write it)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    names: list[str] = []
    if m := _INLINE_CONTEXT.search(lines[start].split("#", 1)[0]):
        names.extend(dict.fromkeys(_IDENT.findall(m.group(1))))
    for text in lines[start + 1:]:
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        if m := _CONTEXT.match(text):
            for name in _IDENT.findall(m.group(1).split("#", 1)[0]):
                if name not in names:
                    names.append(name)
    return names


def _program_lines(run: Run) -> list[str]:
    if run.program_path is None:
        return []
    try:  # the run's own file: read only below its root (backends/common/contained.py)
        with open_regular(run.program_path, root=run.root) as fh:
            return fh.read(8 * 1024 * 1024).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []



def failure_events(run: Run, history: History) -> list[Failure]:
    """``run_failures(run)`` with each failure's ``event`` an index into ``history.events``.

    Runs whose history is their events (origin ``"log"``) keep the indexes the model gave.
    A snapshot's (journal or reconstruction): a failed attempt is the ``statement_failed``
    event on its trace line (the first not yet taken), the failure that ended the run the
    last ``run_errored`` event (else the last event on its line, else the last event), so
    the state at ``event`` is failed. Each failure's ``line`` is then the trace line the
    history shows its event on (a Reactor node's row, an event log's line). O(failures x
    events); the last run's answer is kept (same run and history objects, same lengths)."""
    global _PLACED
    key = (len(history.events), run.status, len(run.events), len(run.trace))
    cached = _PLACED  # one read: a worker thread may replace it meanwhile
    if cached is not None and cached[0] is run and cached[1] is history and cached[2] == key:
        return [replace(f) for f in cached[3]]
    failures = _placed(run, history)
    _PLACED = (run, history, key, failures)
    return [replace(f) for f in failures]


# The last run's placed failures, (run, history, key, failures): a report, the explorer's
# failure report and its marks ask once per failure; ~0.2 s for 100,000 events each time.
_PLACED: tuple[Run, History, tuple, list[Failure]] | None = None


def _placed(run: Run, history: History) -> list[Failure]:
    failures = run_failures(run)
    if not history.events:
        return failures
    if history.origin != "log":
        _place_snapshot_failures(run, history, failures)
    for f in failures:
        if f.event is not None and 0 <= f.event < len(history.refs) and history.refs[f.event].trace_line is not None:
            f.line = history.refs[f.event].trace_line
    return failures


def _place_snapshot_failures(run: Run, history: History, failures: list[Failure]) -> None:
    taken: set[int] = set()
    final = run.status.value == "failed" and failures and not failures[-1].recovered
    for n, f in enumerate(failures):
        if final and n == len(failures) - 1:
            errored = [i for i, e in enumerate(history.events) if e.kind is K.RUN_ERRORED]
            on_line = [i for i, r in enumerate(history.refs) if f.line is not None and r.trace_line == f.line]
            f.event = (errored or on_line or [len(history.events) - 1])[-1]
            continue
        f.event = next((i for i, (e, r) in enumerate(zip(history.events, history.refs))
                        if e.kind is K.STATEMENT_FAILED and r.trace_line == f.line and i not in taken), None)
        if f.event is not None:
            taken.add(f.event)
