"""What changed between two ``state.md`` snapshots of a run, as events (seeds/filesystem.md).

A snapshot run (generation 1) keeps no log: each revision of ``state.md`` is the whole
state. ``snapshot_events(before, after, when)`` turns the difference between two parsed
revisions (trace annotations, call stack frames, the header's status) into the events a
log would have held; the journal replay (:mod:`.replay`) and the reconstruction from file
times (:mod:`.reconstruct`) both build on it. No I/O, no Textual.
"""

from __future__ import annotations

import re
from datetime import datetime
from itertools import chain, compress
from operator import is_not
from pathlib import Path

from prose_tui.backends.common.bindings import name_and_scope
from prose_tui.backends.protocol import Revision
from prose_tui.model import Event, EventKind, Frame, Run, StatementState, TraceLine, assigned_name

__all__ = ["error_text", "snapshot_events", "statement_name", "transition"]

K = EventKind
S = StatementState


_PARALLEL = re.compile(r"^\s*(?:(?:let|const)\s+\w+\s*=\s*)?parallel\b", re.IGNORECASE)
_LOOP = re.compile(r"^\s*(?:loop|repeat|for)\b", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:(?:let|const|output|input)\s+)?([A-Za-z_]\w*)\s*:")


def statement_name(line: TraceLine) -> str:
    """A short name for a trace line: the binding it assigns, else its first words."""
    if name := assigned_name(line.text):
        return name
    if m := _LABEL.match(line.text):
        return m.group(1)
    return " ".join(line.text.split())[:60]


def transition(line: TraceLine, old: S | None, new: S | None) -> tuple[EventKind, str | None] | None:
    """The event a change of annotation from ``old`` to ``new`` means, or ``None``."""
    parallel, loop = _PARALLEL.match(line.text), _LOOP.match(line.text)
    if parallel and old in (S.NEXT, S.PENDING) and new not in (S.NEXT, S.PENDING, S.COMPLETE):
        return K.PARALLEL_STARTED, None  # the header lost its "next" mark: its branches began
    if new == old or new is None or new in (S.NEXT, S.PENDING):
        return None
    if new is S.EXECUTING:
        if parallel:
            return K.PARALLEL_STARTED, None
        if loop:
            return K.LOOP_ITERATION, None
        return K.STATEMENT_STARTED, None
    if new is S.RETRYING:
        return K.RETRY, f"{line.attempt}/{line.max_attempts}" if line.attempt else None
    if new is S.COMPLETE:
        if parallel:
            return K.PARALLEL_JOINED, "ok"
        return K.STATEMENT_COMPLETED, "ok"
    if new is S.FAILED:
        return K.STATEMENT_FAILED, "failed"
    if new is S.SKIPPED:
        return K.STATEMENT_SKIPPED, "skip"
    return None


def _frame_key(f: Frame) -> tuple[int | None, str]:
    return (f.execution_id, f.block)


def snapshot_events(before: Revision | None, after: Revision, when: datetime | None) -> list[tuple[Event, int | None]]:
    """Events that turn snapshot ``before`` into ``after`` (``before=None``: from nothing).

    Returned as ``(event, trace_line)`` pairs with ``seq`` 0 (the caller numbers them).
    Frames popped come first (innermost first), then annotation changes in trace order
    (a line retyped at the same position counts as changed; parallels joining last), then frames pushed
    (outermost first), then a ``run_ended``/``run_errored`` when ``status:`` turned
    completed/failed. May be empty (only ``updated:`` changed).
    """
    out: list[tuple[Event, int | None]] = []
    old_stack = [_frame_key(f) for f in (before.call_stack if before else [])]
    new_stack = [_frame_key(f) for f in after.call_stack]
    for f in (before.call_stack if before else []):
        if _frame_key(f) not in new_stack:
            out.append((Event(0, K.FRAME_POPPED, f"#{f.execution_id} {f.block} returned", time=when,
                              name=f.block, status="done", execution_id=f.execution_id), None))
    old_trace = before.trace if before else []
    joins: list[tuple[Event, int | None]] = []  # a parallel joins after its branches complete
    new_trace = after.trace
    # A line that is the same object as before (the parse shares unchanged lines between
    # revisions, snapshot_trace.py) cannot have changed: only the others are looked at.
    shared = min(len(old_trace), len(new_trace))
    looked = chain(compress(range(shared), map(is_not, old_trace, new_trace)), range(shared, len(new_trace)))
    for i in looked:
        line = new_trace[i]
        old_line = old_trace[i] if i < len(old_trace) and old_trace[i].text == line.text else None
        old_state = old_line.state if old_line else None
        change = transition(line, old_state, line.state)
        retried_again = (old_line is not None and line.state is S.RETRYING
                         and (old_line.attempt, old_line.max_attempts) != (line.attempt, line.max_attempts))
        if change is None and retried_again:
            change = transition(line, None, line.state)
        if change is None:
            continue
        kind, status = change
        text = line.text.strip() + (f"  # {line.note}" if line.note else "")
        name = name_and_scope(Path(line.binding).stem)[0] if line.binding else statement_name(line)
        event = (Event(0, kind, text, time=when, name=name, status=status), line.line)
        (joins if kind is K.PARALLEL_JOINED else out).append(event)
    out.extend(joins)
    for f in reversed(after.call_stack):
        if _frame_key(f) not in old_stack:
            out.append((Event(0, K.FRAME_PUSHED, f"#{f.execution_id} {f.block}", time=when, name=f.block,
                              execution_id=f.execution_id), None))
    old_status = (before.header.get("status") or "").lower() if before else ""
    new_status = (after.header.get("status") or "").lower()
    if new_status != old_status:
        if new_status.startswith(("complete", "done", "success")):
            out.append((Event(0, K.RUN_ENDED, f"status: {after.header.get('status')}", time=when,
                              status="completed"), None))
        elif new_status.startswith(("fail", "error", "abort")):
            out.append((Event(0, K.RUN_ERRORED, error_text(after) or f"status: {after.header.get('status')}",
                              time=when, status="failed"), None))
    return out


def error_text(snap: Revision | Run) -> str | None:
    """The text of a snapshot's (or a run's) ``## Error`` / ``## Failure`` section (a
    real-world extension), if any."""
    for section in snap.sections:
        if section.title.strip().lower().startswith(("error", "failure")):
            return section.text.strip() or None
    return None

