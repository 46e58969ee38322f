"""A run's statement failures, and whether the run got past each one (issue 35).

A VM that retries writes the failure first and the retry after it (FORMATS.md, 2. Compact
event log: ``5→ ✗ timeout``, ``5→ retry:2/3``; seeds/filesystem.md: ``# <-- RETRYING
(attempt 2/3)``). A failed attempt is therefore not the run's failure: when a later
attempt of the same statement completes, the failure is *recovered*. Only ``---error``
(or a failure nothing followed) ends a run as failed; that is ``common.status``'s rule,
this module only lists what failed and what became of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from prose_tui.model.event import EventKind
from prose_tui.model.statement import StatementState

if TYPE_CHECKING:
    from prose_tui.model.run import Run

__all__ = ["FAIL_MARKS", "Failure", "statement_failures"]

# The event-log failure marks and their look-alikes (FORMATS.md, Event-log dialects).
FAIL_MARKS = "✗✘✖❌"
_LOG_FORMATS = {"event-log", "contract", "vm-log", "skill"}
_AGAIN = (EventKind.RETRY, EventKind.STATEMENT_STARTED, EventKind.STATEMENT_FAILED)  # each may begin an attempt


@dataclass(slots=True)
class Failure:
    """One failed attempt of a statement.

    ``line`` is the 1-based trace line of the failure (as ``TraceLine.line``), ``text``
    that line as written, ``error`` the words the VM gave (after ``✗``, or the snapshot
    annotation), ``step`` the event-log step label (``None`` for a snapshot). ``retries``
    counts the attempts of the same statement begun after it (a ``retry:`` event, or a
    start, completion or failure not announced by one; in a snapshot, later lines of the
    same statement), and ``recovered`` is true when a later attempt of the same statement
    completed.
    """

    line: int
    text: str
    error: str | None = None
    step: str | None = None
    retries: int = 0
    recovered: bool = False


def _error_after_mark(text: str) -> str | None:
    for i, ch in enumerate(text):
        if ch in FAIL_MARKS:
            return text[i + 1:].lstrip("\ufe0f").strip() or None
    return None


def statement_failures(run: Run) -> list[Failure]:
    """Every failed statement attempt of ``run``, in the order written, each marked
    recovered or not. Event logs (``event-log``, ``contract``, ``vm-log``, ``skill``) are
    read from ``run.events`` (the same statement: the same step label and, where both name
    one, the same name); annotated snapshots from ``run.trace`` (the same statement: a
    later line with the same program text). Other formats give ``[]`` (their backends word
    failures themselves). O(events) or O(trace lines); never raises."""
    if run.format.value in _LOG_FORMATS:
        return _log_failures(run)
    if run.format.value == "snapshot":
        return _snapshot_failures(run)
    return []


def _log_failures(run: Run) -> list[Failure]:
    out: list[Failure] = []
    open_: dict[str, list[tuple[Failure, str | None]]] = {}  # step -> its failures not yet recovered
    announced: dict[str, bool] = {}  # step -> its last event began an attempt (retry:, a start)
    trace_line, last_line = 0, None
    for event in run.events:
        if event.line != last_line:
            trace_line, last_line = trace_line + 1, event.line
        failed = event.kind is EventKind.STATEMENT_FAILED or (
            event.kind is EventKind.FRAME_POPPED and any(ch in FAIL_MARKS for ch in event.text))
        step = event.step
        if step is not None and step in open_:
            same = [(f, name) for f, name in open_[step] if name is None or event.name is None or name == event.name]
            attempt = event.kind in _AGAIN or failed or event.kind is EventKind.STATEMENT_COMPLETED
            if attempt and same and not announced.get(step):
                for f, _name in same:
                    f.retries += 1
            if event.kind is EventKind.STATEMENT_COMPLETED:
                for f, _name in same:
                    f.recovered = True
                done = {id(f) for f, _name in same}
                open_[step] = [pair for pair in open_[step] if id(pair[0]) not in done]
        if step is not None:
            announced[step] = event.kind in (EventKind.RETRY, EventKind.STATEMENT_STARTED)
        if failed:
            failure = Failure(line=trace_line, text=event.text, error=_error_after_mark(event.text) or event.status,
                              step=step)
            out.append(failure)
            if step is not None:
                open_.setdefault(step, []).append((failure, event.name))
    return out


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
            failure = Failure(line=t.line, text=t.text, error=_error_after_mark(note) or note or None)
            out.append(failure)
            open_.setdefault(key, []).append(failure)
    return out
