"""A run's failures: what failed, where and why, and whether the run got past it (issues 28, 35).

One model for every backend and every view. A :class:`Failure` is one failed attempt of a
statement: the statement as the program writes it, the trace line the explorer shows it
on, the error as the VM recorded it, the attempt (``n/m``), its event in the run's
history and whether a later attempt of the same statement completed (*recovered*).

Where VMs record failures (FORMATS.md; seeds/filesystem.md; openprose-0.15 state/*.md,
reactor.md):

* annotated snapshots: a line annotated failed (``# <-- FAILED: reason``, ``✗ timeout``)
  and a ``## Error`` / ``## Failure`` section;
* event logs (``state.md``, ``vm.log.md``, contract runs): ``5→ ✗ timeout`` and the
  closing ``---error {ts} {message}``; 0.12-0.14 front matter ``error:``;
* 0.15 skill runs: ``workspace/{node}/__error.md`` (a section ``Error: {node} (…)``) and a
  receipt's ``semantic_diff.failure_reason``;
* SQLite / PostgreSQL: a row's ``error_message`` (a ``✗`` event);
* narration: ``[Warning] Session failed: …`` (a failed event);
* Reactor: a failed receipt's ``failure_reason``.

A VM that retries writes the failure first and the retry after it (``5→ ✗ timeout``,
``5→ retry:2/3``; ``# <-- RETRYING (attempt 2/3)``), so a failed attempt is not the run's
failure: when a later attempt of the same statement completes, the failure is
*recovered*. Only ``---error`` (or a failure nothing followed, or a header saying so) ends
a run as failed; that is ``backends.common.status``'s rule. :func:`run_failure` is the
failure that ended a failed run, worded with every error the run recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING

from prose_tui.model.event import Event, EventKind
from prose_tui.model.statement import StatementState, TraceLine

if TYPE_CHECKING:
    from prose_tui.model.run import Run

__all__ = ["FAIL_MARKS", "Failure", "ending", "error_message", "error_sections", "first_line", "recorded_errors", "run_failure",
           "run_failures", "statement_failures"]

K = EventKind

# The event-log failure marks and their look-alikes (FORMATS.md, Event-log dialects).
FAIL_MARKS = "✗✘✖❌"
_LOG_FORMATS = {"event-log", "contract", "vm-log", "skill"}
_AGAIN = (K.RETRY, K.STATEMENT_STARTED, K.STATEMENT_FAILED)  # each may begin an attempt
_ATTEMPT = re.compile(r"(?:attempt\s*|retry\s*:?\s*)(\d+)\s*(?:/|of)\s*(\d+)", re.IGNORECASE)
_ERROR_LINE = re.compile(
    r"^-{3}\s*error\b\s*(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\s*(.*)$",
    re.IGNORECASE)
_STEP_PREFIX = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?[\w.]*\s*(?:→|->)\s*")
# "[Warning] ", "⚠️ ", "- " before a narration line's words
_LEADING_MARKER = re.compile(r"^[^\w\[]*(?:\[[^\]]*\][*`_]*\s*:?)?[^\w\"']*")
_ERROR_TITLE = re.compile(r"^#+\s*(?:error|failure)\b\s*:?\s*", re.IGNORECASE)


@dataclass(slots=True)
class Failure:
    """One failed attempt of a statement (or a node's render).

    ``line`` is the 1-based trace line where the explorer shows it (as ``TraceLine.line``;
    ``None`` when the run names no line), ``text`` that line as written, ``statement`` the
    statement as the program writes it (a snapshot line without its annotation, an event
    log's step name, a node's name), ``error`` the words the VM gave (after ``✗``, the
    annotation, ``---error``, an ``## Error`` section, ``error:``, ``__error.md``,
    ``error_message``, ``failure_reason``, ``[Warning]``; several joined with " — "),
    ``step`` the event-log step label (``None`` for a snapshot). ``attempt`` is ``"n/m"``
    (``"n"`` when the VM gave no maximum; ``None`` for a statement tried once with no
    retry policy said). ``event`` is the index of the failure in the run's history: in
    ``run.events`` for the runs whose history is their events (logs, SQLite, PostgreSQL,
    narration, Reactor), ``None`` until the history layer places a snapshot's
    (``history.failure_events``). ``retries`` counts the attempts of the same statement
    begun after it, and ``recovered`` is true when a later attempt of the same statement
    (a later receipt of the same node) completed.
    """

    line: int | None
    text: str
    error: str | None = None
    step: str | None = None
    retries: int = 0
    recovered: bool = False
    statement: str = ""
    attempt: str | None = None
    event: int | None = None


def first_line(text: str | None, limit: int = 200) -> str:
    """The first non-blank line of ``text`` that is not an ``# Error:`` title, at most
    ``limit`` characters (cut with ``…``); ``""`` for none."""
    for line in (text or "").splitlines():
        words = line.strip()
        if not words:
            continue
        if _ERROR_TITLE.match(words):
            rest = _ERROR_TITLE.sub("", words).strip()
            if not rest:
                continue
        return words if len(words) <= limit else words[: limit - 1] + "…"
    return ""


def _error_after_mark(text: str) -> str | None:
    for i, ch in enumerate(text):
        if ch in FAIL_MARKS:
            return text[i + 1:].lstrip("\ufe0f").strip() or None
    return None


def _error_of_event(event: Event) -> str | None:
    """The words a failed event carries: after ``✗``, a receipt's ``failed:`` reason, a
    snapshot annotation, a narration line after its ``[Warning]``."""
    if (words := _error_after_mark(event.text)) is not None:
        return words
    if m := re.search(r"\bfailed:\s*(.*?)(?:\s+·\s+\d[\d,]* fresh\b.*)?$", event.text):
        return m.group(1).strip() or event.status
    if "#" in event.text:
        return event.text.split("#", 1)[1].strip().removeprefix("<--").strip() or event.status
    return _LEADING_MARKER.sub("", event.text).strip() or event.status


def error_message(marker: str | None) -> str | None:
    """The message of a ``---error {timestamp} {message}`` line, else ``None``."""
    m = _ERROR_LINE.match((marker or "").strip())
    return (m.group(1).strip() or None) if m else None


def error_sections(run: Run) -> list[str]:
    """The texts of the run's ``## Error`` / ``## Failure`` sections (a snapshot's
    real-world extension; a 0.12-0.15 ``workspace/{node}/__error.md``, which the backend
    adds as ``Error: {node} (…)``), in the order written, blank ones left out."""
    return [s.text.strip() for s in run.sections
            if s.title.strip().lower().startswith(("error", "failure")) and s.text.strip()]


def _titled(text: str) -> str:
    """An error file's text with its ``# Error: name`` title folded into ``name: …`` (as
    the receipt's ``failure_reason`` usually words it), so the two are said once."""
    lines = text.strip().splitlines()
    if lines and (m := re.match(r"^#+\s*(?:error|failure)\b\s*:?\s*(.*)$", lines[0].strip(), re.IGNORECASE)):
        rest = "\n".join(lines[1:]).strip()
        name = m.group(1).strip()
        return f"{name}: {rest}" if name and rest else (rest or name)
    return text.strip()


def recorded_errors(run: Run) -> list[str]:
    """Every run-level error the VM recorded, each once, in this order: the ``---error``
    message, the header's (front matter's) ``error:``, the error sections, the failed
    nodes' ``failure_reason``. A text contained in another is left out."""
    pieces: list[str] = []
    node_reasons = [n.failure_reason for n in run.nodes if n.status == "failed" and n.failure_reason]
    errored = [error_message(e.text) for e in run.events if e.kind is K.RUN_ERRORED]
    for text in (error_message(run.error_marker), *errored, run.header.get("error"),
                 *(_titled(t) for t in error_sections(run)), *node_reasons):
        _add(pieces, text)
    return pieces


def _add(pieces: list[str], text: str | None) -> None:
    text = (text or "").strip()
    if not text or any(_norm(text) in _norm(p) for p in pieces):
        return
    pieces[:] = [p for p in pieces if _norm(p) not in _norm(text)]
    pieces.append(text)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _join(*pieces: str | None) -> str | None:
    out: list[str] = []
    for p in pieces:
        _add(out, p)
    return " — ".join(out) or None


def _statement_of_event(event: Event) -> str:
    """An event's statement as the program names it: its name (a binding, a node, a
    narration's session), else its text without the step label and the mark."""
    if event.name:
        return event.name
    text = _STEP_PREFIX.sub("", event.text)
    for i, ch in enumerate(text):
        if ch in FAIL_MARKS:
            text = text[:i]
            break
    return text.strip()


def statement_failures(run: Run) -> list[Failure]:
    """Every failed statement attempt of ``run``, in history order, each marked recovered
    or not (no run-level errors joined in: see :func:`run_failures`).

    Runs with events (event logs, skill runs, SQLite, PostgreSQL, narration, Reactor) are
    read from ``run.events`` (the same statement: the same step label and, where both name
    one, the same name; without a step, the same name; a node's receipts by node);
    annotated snapshots from ``run.trace`` (the same statement: a later line with the same
    program text). O(events) or O(trace lines); never raises."""
    if run.events:
        return _event_failures(run)
    if run.format.value == "snapshot":
        return _snapshot_failures(run)
    return []


def run_failures(run: Run) -> list[Failure]:
    """Every failed attempt of ``run`` in history order (:func:`statement_failures`), the
    failure that ended a failed run (:func:`run_failure`) among them, worded with the
    run's recorded errors. What ``show --json`` gives as ``failures``."""
    out = statement_failures(run)
    final = run_failure(run, out)
    if final is None:
        return out
    for i, f in enumerate(out):
        if f.line == final.line and f.event == final.event and f.text == final.text:
            out[i] = final
            return out
    out.append(final)
    return out


def ending(run: Run, failures: list[Failure]) -> Failure | None:
    """Of ``run_failures(run)``, the failure that ended the run: the last one nothing
    recovered, when the run failed; else ``None``."""
    if run.status.value != "failed":
        return None
    return next((f for f in reversed(failures) if not f.recovered), None)


def run_failure(run: Run, failures: list[Failure] | None = None) -> Failure | None:
    """The failure that ended ``run`` (``None`` unless ``run.status`` is failed).

    The last failed attempt nothing recovered, with the run's recorded errors
    (:func:`recorded_errors`) joined to its own; without one (a snapshot that stopped at
    ``<-- RETRYING (attempt 3/3)`` under ``status: failed``, a log ending ``---error``
    after a start), the statement the run stopped at (the executing or retrying line,
    else the last started or annotated one) carries those errors; with no statement at
    all, ``statement`` is ``""`` and ``line`` ``None``."""
    if run.status.value != "failed":
        return None
    failures = statement_failures(run) if failures is None else failures
    errors = recorded_errors(run)
    last = next((f for f in reversed(failures) if not f.recovered), None)
    if last is not None:
        return replace(last, error=_join(last.error, *errors))
    event = _errored_event(run)
    stopped = _stopped_at(run)
    if stopped is None:
        return Failure(line=None, text="", error=_join(*errors) or "no error recorded", event=event)
    attempt = _attempt_of(stopped.attempt, stopped.max_attempts, stopped.note)
    return Failure(line=stopped.line, text=stopped.text, error=_join(*errors) or "no error recorded",
                   step=stopped.step, statement=_program_text(stopped.text), attempt=attempt, event=event)


def _errored_event(run: Run) -> int | None:
    return next((i for i in range(len(run.events) - 1, -1, -1) if run.events[i].kind is K.RUN_ERRORED), None)


def _stopped_at(run: Run) -> TraceLine | None:
    """The statement a failed run stopped at: its executing or retrying line, else the last
    line with a step (an event log), else the last annotated one."""
    if (t := run.executing) is not None:
        return t
    busy = (StatementState.EXECUTING, StatementState.RETRYING)
    for pick in (lambda t: t.state in busy, lambda t: t.step is not None,
                 lambda t: t.state is not None and t.state not in (StatementState.PENDING, StatementState.NEXT)):
        found = next((t for t in reversed(run.trace) if pick(t)), None)
        if found is not None:
            return found
    return None


def _program_text(text: str) -> str:
    """A snapshot trace line without its ``#`` annotation (the statement as written)."""
    code = text.split("  #", 1)[0] if "  #" in text else text
    return code.rstrip() or text.strip()


def _attempt_of(n: int | None, m: int | None, note: str | None = None) -> str | None:
    if n is None and note and (found := _ATTEMPT.search(note)):
        n, m = int(found.group(1)), int(found.group(2))
    if n is None:
        return None
    return f"{n}/{m}" if m else str(n)


def _key(event: Event) -> str | None:
    """What tells one statement from another in a history without trace lines: the step
    label, else the name (a node, a binding, a narration's session)."""
    return event.step if event.step is not None else event.name


def _event_failures(run: Run) -> list[Failure]:
    out: list[Failure] = []
    open_: dict[str, list[tuple[Failure, str | None]]] = {}  # statement -> its failures not yet recovered
    announced: dict[str, bool] = {}  # statement -> its last event began an attempt (retry:, a start)
    tries: dict[str, int] = {}  # statement -> attempts begun since it last completed
    most: dict[str, int] = {}  # statement -> the maximum a retry:n/m gave
    receipt_twin: dict[str, Failure] = {}  # node -> its log line's failure, not yet met by its receipt
    failed_receipts: dict[str, int] = {}
    keys: dict[int, str | None] = {}  # id(failure) -> its statement's key
    trace_line, last_line = 0, None
    for index, event in enumerate(run.events):
        if event.line != last_line:
            trace_line, last_line = trace_line + 1, event.line
        if event.kind in (K.RECEIPT_RENDERED, K.RECEIPT_SKIPPED, K.RECEIPT_FAILED):
            _receipt(run, out, event, index, trace_line, receipt_twin, failed_receipts)
            continue
        failed = event.kind is K.STATEMENT_FAILED or (
            event.kind is K.FRAME_POPPED and any(ch in FAIL_MARKS for ch in event.text))
        key = _key(event)
        if key is not None and event.kind is K.RETRY and (said := _ATTEMPT.search(event.text)):
            most[key], tries[key] = int(said.group(2)), int(said.group(1))
        if key is not None and key in open_:
            same = [(f, name) for f, name in open_[key] if name is None or event.name is None or name == event.name]
            begins = event.kind in _AGAIN or failed or event.kind is K.STATEMENT_COMPLETED
            if begins and same and not announced.get(key):
                for f, _name in same:
                    f.retries += 1
            if event.kind is K.STATEMENT_COMPLETED:
                for f, _name in same:
                    f.recovered = True
                done = {id(f) for f, _name in same}
                open_[key] = [pair for pair in open_[key] if id(pair[0]) not in done]
        if key is not None:
            if event.kind is K.STATEMENT_COMPLETED:
                tries.pop(key, None)
            elif failed and not announced.get(key):
                tries[key] = tries.get(key, 0) + 1  # a failure no retry: line announced is an attempt of its own
            announced[key] = event.kind in (K.RETRY, K.STATEMENT_STARTED)
        if failed:
            n = tries.get(key, 1) if key is not None else 1
            limit = most.get(key) if key is not None else None
            attempt = _attempt_of(n, limit) if (limit or n > 1) else None
            statement = _statement_of_event(event) or _named_before(run.events, index)
            failure = Failure(line=trace_line if event.line is not None else None, text=event.text,
                              error=_error_of_event(event), step=event.step,
                              statement=statement, attempt=attempt, event=index)
            out.append(failure)
            keys[id(failure)] = key
            if event.name:
                receipt_twin[event.name] = failure
            if key is not None:
                open_.setdefault(key, []).append((failure, event.name))
    for f in out:  # a retry policy said after the first failure (retry:2/3) numbers it too
        if (limit := most.get(keys.get(id(f)) or "")) and (f.attempt is None or "/" not in f.attempt):
            f.attempt = f"{f.attempt or 1}/{limit}"
    return out


def _named_before(events: list[Event], index: int) -> str:
    """The statement another event of the same step names (``5→ review`` before
    ``5→ ✗ timeout``, or ``5→ review ✓`` after its retry), else the statement started since
    the last completion (``try→ session …`` before ``5→ ✗ timeout``), else ``""``."""
    step = events[index].step
    if step is not None:
        for j in chain(range(index - 1, -1, -1), range(index + 1, len(events))):
            if events[j].step == step and (words := _statement_of_event(events[j])) and not words.startswith("retry"):
                return words
    for j in range(index - 1, -1, -1):
        if events[j].kind is K.STATEMENT_COMPLETED:
            break
        if events[j].kind is K.STATEMENT_STARTED and (name := events[j].name):
            return name
    return ""


def _receipt(run: Run, out: list[Failure], event: Event, index: int, trace_line: int,
             twin: dict[str, Failure], failed_receipts: dict[str, int]) -> None:
    """A node's receipt: a failed one is a failed attempt of the node (once, with the log
    line that reported it, whose words it completes with its ``failure_reason``); any later
    receipt of the node recovers its earlier failures."""
    node = event.name or ""
    if event.kind is not K.RECEIPT_FAILED:
        for f in out:
            if f.statement == node and not f.recovered and f.event is not None and f.event < index:
                f.recovered = True
        twin.pop(node, None)
        return
    count = failed_receipts[node] = failed_receipts.get(node, 0) + 1
    reason = _receipt_reason(run, node, count) or _error_of_event(event)
    for f in out:  # an earlier failure of this node is recovered by its retry's receipt only if that succeeds
        if f.statement == node and not f.recovered and f is not twin.get(node):
            f.retries += 1
    if (log_line := twin.pop(node, None)) is not None:
        log_line.error = _join(log_line.error, reason)
        return
    attempt = str(count) if count > 1 else None
    out.append(Failure(line=trace_line if event.line is not None else None, text=event.text,
                       error=reason or "no failure_reason recorded",
                       statement=node, attempt=attempt, event=index))


def _receipt_reason(run: Run, node: str, nth: int) -> str | None:
    """The ``failure_reason`` of the ``nth`` failed receipt of ``node`` in ``run.receipts``."""
    seen = 0
    for r in run.receipts:
        if r.node == node and r.status == "failed":
            seen += 1
            if seen == nth:
                return (r.failure_reason or "").strip() or None
    return None


def _snapshot_failures(run: Run) -> list[Failure]:
    out: list[Failure] = []
    open_: dict[str, list[Failure]] = {}
    for t in run.trace:
        key = t.text.strip()
        if key in open_ and t.state is not None:
            if t.state is StatementState.COMPLETE:
                for f in open_.pop(key):
                    f.recovered = True
            elif t.state in (StatementState.RETRYING, StatementState.EXECUTING, StatementState.FAILED):
                for f in open_[key]:
                    f.retries += 1
        if t.state is StatementState.FAILED:
            note = (t.note or "").removeprefix("<--").strip()
            failure = Failure(line=t.line, text=t.text, error=_error_after_mark(note) or note or None,
                              statement=_program_text(t.text), attempt=_attempt_of(t.attempt, t.max_attempts, t.note))
            out.append(failure)
            open_.setdefault(key, []).append(failure)
    return out
