"""The ordered event stream of a run, whatever wrote it (issue 3: "what happened, in order").

Three origins (``History.origin``):

* ``"log"``: the source already is a stream. Compact event logs (FORMATS.md, generations
  2-4), SQLite ``execution`` rows (seeds/sqlite.md) and narration markers
  (seeds/in-context.md) give ``Run.events``; they are taken as they are.
* ``"journal"``: a snapshot ``state.md`` run (seeds/filesystem.md, generation 1) that
  prose-tui watched. Each journaled ``state.md`` revision is diffed against the one before
  (trace annotations, call stack, header status) and binding/segment writes become
  ``binding_written``/``agent_segment`` events, in the order they were seen.
* ``"reconstructed"``: a snapshot run never watched. See :mod:`.reconstruct`.

No Textual, no writes. ``history_of`` reads the journal folder (user state dir) and, for
reconstruction, file times of the run's own files.
"""

from __future__ import annotations

import hashlib
import re
import threading
from itertools import chain, compress
from operator import is_, is_not
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prose_tui.backends.common.bindings import name_and_scope
from prose_tui.backends.filesystem.snapshot import SnapshotState
from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_cached
from prose_tui.history.nodes import with_receipt_failures
from prose_tui.history.refs import EventRef, LineRefs
from prose_tui.history.step_lines import StepLines
from prose_tui.model import (
    Event,
    EventKind,
    Frame,
    Run,
    RunFormat,
    StatementState,
    TraceLine,
    assigned_name,
)
from prose_tui.model.serialize import event as event_json

if TYPE_CHECKING:  # pragma: no cover
    from prose_tui.history.journal import Journal, JournalEntry

__all__ = ["EventRef", "History", "events_json", "history_of", "snapshot_events"]

K = EventKind
S = StatementState
LOG_FORMATS = (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG, RunFormat.SKILL, RunFormat.SQLITE,
               RunFormat.NARRATION, RunFormat.REACTOR)
# formats whose trace is the log itself, one line per event line (``_log_trace_lines``)
LINE_FORMATS = (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG, RunFormat.SKILL)
# formats whose events map to trace lines by step (``StepLines``): a row per line
STEP_FORMATS = (RunFormat.SQLITE, RunFormat.POSTGRES)
_FAILED = (K.STATEMENT_FAILED, K.RUN_ERRORED)


@dataclass
class History:
    """A run's events in order, ``seq`` dense 0..n-1, and where they came from.

    ``origin`` is ``"log"``, ``"journal"`` or ``"reconstructed"``; ``note`` one sentence
    for the UI saying how far to trust the order. ``refs[i]`` says where ``events[i]``
    points (same length as ``events``; see :class:`EventRef`).
    """

    events: list[Event]
    origin: str
    note: str
    refs: list[EventRef] | LineRefs = field(default_factory=list)  # LineRefs: a log's (4 bytes each)
    # Events put before the first one since this history was built (older rows paged in):
    # a cursor on an event moves by as many to stay on it.
    prepended: int = 0

    def __post_init__(self) -> None:
        if len(self.refs) < len(self.events):
            self.refs = self.refs + [EventRef() for _ in range(len(self.events) - len(self.refs))]

    def failures(self) -> list[int]:
        """Indexes of events where the run went wrong: ``statement_failed``,
        ``run_errored`` and ``receipt_failed``. A failed attempt that the same statement got
        past later (a ``retry``, a new start, a completion, a later failure) is part of that
        retry, not a failure (see :meth:`retries`); so is a failed receipt the same node
        wrote another receipt after. A log line and a receipt reporting one node failure
        count once (see :func:`~prose_tui.history.nodes.with_receipt_failures`)."""
        out: list[int] = []
        for i, event in enumerate(self.events):
            if event.kind is K.RUN_ERRORED:
                out.append(i)
            elif event.kind is K.STATEMENT_FAILED and not self._retried(i):
                out.append(i)
        return with_receipt_failures(self.events, out)

    def retries(self) -> list[int]:
        """Indexes of ``retry`` events, in order."""
        return [i for i, e in enumerate(self.events) if e.kind is K.RETRY]

    def first_failure(self) -> int | None:
        """The first index of :meth:`failures`, or ``None`` for a run that did not fail."""
        failures = self.failures()
        return failures[0] if failures else None

    def revision_cursors(self) -> list[tuple[str, int]]:
        """Journal origin: ``(sha256, index)`` for each ``state.md`` revision in order, where
        ``index`` is the last event that revision's changes produced: the cursor at which
        :func:`~prose_tui.history.state_at` shows that revision exactly as it was seen.
        Empty for other origins."""
        out: list[tuple[str, int]] = []
        for i, ref in enumerate(self.refs):
            if ref.revision is None or ref.path is not None:
                continue
            if out and out[-1][0] == ref.revision and out[-1][1] == i - 1:
                out[-1] = (ref.revision, i)
            else:
                out.append((ref.revision, i))
        return out

    def same_statement(self, a: int, b: int) -> bool:
        """True when events ``a`` and ``b`` concern the same statement: the same step label
        and, where both name one, the same name (VMs reuse step numbers); without step
        labels, the same trace line."""
        ea, eb = self.events[a], self.events[b]
        if ea.step is not None or eb.step is not None:
            return ea.step == eb.step and (ea.name is None or eb.name is None or ea.name == eb.name)
        ta, tb = self.refs[a].trace_line, self.refs[b].trace_line
        return ta is not None and ta == tb

    def _retried(self, index: int) -> bool:
        """A failed attempt is not final when the same statement is retried, started
        again, completes or fails again later."""
        again = (K.RETRY, K.STATEMENT_STARTED, K.STATEMENT_COMPLETED, K.STATEMENT_FAILED)
        return any(self.events[j].kind in again and self.same_statement(index, j)
                   for j in range(index + 1, len(self.events)))


def extends_cheaply(run: Run | None) -> bool:
    """True when ``history_of(run)`` after a live change costs what the change appended (a
    log's new events copied onto the kept history), so a UI can do it at once; a journal
    replay or a reconstruction may cost more."""
    return run is not None and (run.format in LOG_FORMATS or bool(run.events))


def history_of(run: Run, *, journal: Journal | None = None) -> History:
    """The ordered history of ``run``.

    Event-log, SQLite and narration runs: ``run.events`` as they are (origin ``"log"``).
    Snapshot runs (and bare run folders): the journal's entries for ``run.path`` when it
    has any (origin ``"journal"``), else a reconstruction from file times (origin
    ``"reconstructed"``). ``journal`` defaults to ``Journal()`` (the user state folder).
    Never raises for I/O: an unreadable journal falls back to reconstruction. The run is
    not changed. A log's events are the run's own objects where their ``seq`` is already
    their index (memory per event is the parsed event once); callers must not mutate them.

    Histories grow by extension: the last history of each of the most recent runs is
    kept, and a later call copies only the events added since (a log's new events, the
    journal's new entries), so following a live run costs what it appended.
    """
    if extends_cheaply(run):
        return _log_history(run)
    if run.format is RunFormat.ENCRYPTED:
        return History([], "log", "the run's state is SOPS-encrypted; no events to show")
    from prose_tui.history.journal import Journal

    journal = journal if journal is not None else Journal()
    try:
        entries = journal.entries(run.path) if journal.has(run.path) else []
    except OSError:
        entries = []
    if entries:
        return _journal_replay(run, journal, entries)
    from prose_tui.history.reconstruct import reconstruct

    return reconstruct(run)


@dataclass
class _LogCache:
    """The history last built from one run's events, and the events it copied."""

    history: History
    sources: list[Event]
    note_format: RunFormat
    steps: StepLines | None = None  # a database run's line mapping, extended with the run


_HISTORIES: OrderedDict[tuple[Path, str], Any] = OrderedDict()
_KEEP = 8  # runs whose history is kept for extension


def _keep(key: tuple[Path, str], value: Any) -> Any:
    _HISTORIES[key] = value
    _HISTORIES.move_to_end(key)
    while len(_HISTORIES) > _KEEP:
        _HISTORIES.popitem(last=False)
    return value


def events_json(history: History) -> list[dict[str, Any]]:
    """One dict per event for ``prose-tui show --json``: ``{seq, time, kind, step, name,
    status, text}``; ``time`` is ISO 8601 or ``None``, ``kind`` the ``EventKind`` value."""
    return [event_json(e) for e in history.events]


# -- log origin ------------------------------------------------------------------------------


def _share(event: Event, seq: int) -> Event:
    """``event`` itself when its ``seq`` is ``seq`` (a log's events are numbered densely), else a copy."""
    return event if event.seq == seq else _copy(event, seq)


def _copy(event: Event, seq: int) -> Event:
    return Event(seq=seq, kind=event.kind, text=event.text, time=event.time, step=event.step,
                 name=event.name, status=event.status, line=event.line, execution_id=event.execution_id)


def _log_note(run: Run, events: list[Event]) -> str:
    if not events:
        return "the run recorded no events yet"
    if run.format is RunFormat.SQLITE:
        return "from the execution table; times as the database gave them"
    if run.format is RunFormat.NARRATION:
        return "from the narration markers, in the order they were written"
    return "from the event log, in the order the VM wrote it"


def _log_history(run: Run) -> History:
    key = (run.path, "log")
    cached = _HISTORIES.get(key)
    src = run.events
    if isinstance(cached, _LogCache) and cached.note_format is run.format and cached.sources:
        mine = cached.sources
        same = min(len(src), len(mine))
        # Events are replaced only at the end (a provisional last line completed): find
        # how far the run's events are still the ones copied.
        while same > 0 and mine[same - 1] is not src[same - 1]:
            same -= 1
        if same > 0:
            _extend_log(cached, run, same)
            _HISTORIES.move_to_end(key)
            return cached.history
        older = len(src) - len(mine)
        if older > 0 and all(map(is_, src[older:], mine)):
            _prepend_log(cached, run, older)
            _HISTORIES.move_to_end(key)
            return cached.history
    events = [_share(e, i) for i, e in enumerate(src)]
    steps = StepLines(run.trace) if run.format in STEP_FORMATS else None
    lines = steps.lines_for(events) if steps is not None else _log_trace_lines(run, events)
    refs = LineRefs(lines)  # a trace line per event, 4 bytes each
    history = History(events, "log", _log_note(run, events), refs)
    _keep(key, _LogCache(history, list(src), run.format, steps))
    return history


def _extend_log(cached: _LogCache, run: Run, same: int) -> None:
    """Append to ``cached`` the run's events from index ``same`` on (dropping its own past it)."""
    history, src = cached.history, run.events
    if same == len(src) == len(history.events):
        return
    appended = same == len(history.events)  # nothing of the history's own is dropped
    del history.events[same:]
    del history.refs[same:]
    del cached.sources[same:]
    fresh = [_share(e, i) for i, e in enumerate(src[same:], start=same)]
    history.events.extend(fresh)
    cached.sources.extend(src[same:])
    if run.format in (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG) \
            and all(e.line is not None for e in fresh) and (same == 0 or history.refs[same - 1].trace_line is not None):
        # The k-th distinct line is the k-th trace line (``eventlog``), lines only grow.
        rank = history.refs[same - 1].trace_line or 0 if same else 0
        last_line = history.events[same - 1].line if same else None
        for event in fresh:
            if event.line != last_line:
                rank += 1
                last_line = event.line
            line = run.trace[rank - 1].line if rank - 1 < len(run.trace) else None
            history.refs.append(EventRef(trace_line=line))
    elif run.format in STEP_FORMATS:
        steps = cached.steps
        if steps is not None and appended and steps.extend(run.trace):
            # Rows appended (or re-stated in place): only the new events are mapped.
            for t in steps.lines_for(fresh):
                history.refs.append(EventRef(trace_line=t))
        else:
            _map_steps(cached, run)
    else:
        history.refs[:] = [EventRef(trace_line=t) for t in _log_trace_lines(run, history.events)]  # in place
    history.note = _log_note(run, history.events)


def _map_steps(cached: _LogCache, run: Run) -> None:
    """A database run's refs mapped again from the whole trace (``StepLines`` started anew)."""
    steps = cached.steps = StepLines(run.trace)
    cached.history.refs[:] = [EventRef(trace_line=t) for t in steps.lines_for(cached.history.events)]  # in place


def _prepend_log(cached: _LogCache, run: Run, older: int) -> None:
    """The run's events gained ``older`` events before the first (a page of older rows):
    the history grows at its start, the same object, ``prepended`` counting them."""
    history, src = cached.history, run.events
    history.events[:] = [_share(e, i) for i, e in enumerate(src)]
    if run.format in STEP_FORMATS:
        _map_steps(cached, run)
    else:
        history.refs[:] = [EventRef(trace_line=t) for t in _log_trace_lines(run, history.events)]  # in place
    cached.sources[:] = src
    history.prepended += older
    history.note = _log_note(run, history.events)


def _log_trace_lines(run: Run, events: list[Event]) -> list[int | None]:
    """The trace line each event belongs to.

    Event logs: the k-th distinct ``Event.line`` is the k-th trace line (``eventlog``).
    Narration: the k-th ``statement_started`` is the k-th trace line (the parser adds a
    line per position marker). SQLite: the k-th ``statement_started`` of a step is the
    k-th trace line with that step; the step's other events follow the latest start.
    """
    if run.format in LINE_FORMATS:
        distinct = sorted({e.line for e in events if e.line is not None})
        if len(distinct) == len(run.trace) and all(e.line is not None for e in events):
            rank = {line: run.trace[i].line for i, line in enumerate(distinct)}
            return [rank[e.line] for e in events]  # type: ignore[index]
    starts = [i for i, e in enumerate(events) if e.kind is K.STATEMENT_STARTED]
    if run.format is RunFormat.NARRATION and run.trace and len(starts) == len(run.trace):
        return _ordinal_trace_lines(run, events)
    by_step: dict[str, list[int]] = {}
    for t in run.trace:
        if t.step is not None:
            by_step.setdefault(t.step, []).append(t.line)
    started: dict[str, int] = {}
    out: list[int | None] = []
    for e in events:
        lines = by_step.get(e.step or "")
        if not lines:
            out.append(None)
            continue
        if e.kind is K.STATEMENT_STARTED:
            started[e.step or ""] = min(started.get(e.step or "", -1) + 1, len(lines) - 1)
        out.append(lines[max(started.get(e.step or "", 0), 0)])
    return out


_OWN_STATEMENT = (K.STATEMENT_STARTED, K.STATEMENT_COMPLETED, K.STATEMENT_FAILED, K.STATEMENT_SKIPPED, K.RETRY)


def _ordinal_trace_lines(run: Run, events: list[Event]) -> list[int | None]:
    """Narration: the k-th ``statement_started`` is the k-th trace line; a statement's
    outcome and retries belong to the latest start; other events to no line."""
    out: list[int | None] = []
    current: int | None = None
    k = 0
    for e in events:
        if e.kind is K.STATEMENT_STARTED:
            current = run.trace[k].line
            k += 1
        out.append(current if e.kind in _OWN_STATEMENT else None)
    return out


# -- journal origin ---------------------------------------------------------------------------


def sha256_of(data: bytes) -> str:
    """The sha256 (hex) a journal keys a ``state.md`` revision by: of the file's bytes."""
    return hashlib.sha256(data).hexdigest()


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


def _transition(line: TraceLine, old: S | None, new: S | None) -> tuple[EventKind, str | None] | None:
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


def snapshot_events(before: SnapshotState | None, after: SnapshotState, when: datetime | None) -> list[tuple[Event, int | None]]:
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
        change = _transition(line, old_state, line.state)
        retried_again = (old_line is not None and line.state is S.RETRYING
                         and (old_line.attempt, old_line.max_attempts) != (line.attempt, line.max_attempts))
        if change is None and retried_again:
            change = _transition(line, None, line.state)
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


def error_text(snap: SnapshotState) -> str | None:
    """The text of a snapshot's ``## Error`` section (a real-world extension), if any."""
    for section in snap.sections:
        if section.title.strip().lower().startswith(("error", "failure")):
            return section.text.strip() or None
    return None


# A live run is replayed after every change; revisions and the steps between them do not
# change once journaled, so their parses and diffs are kept by content hash (bounded).
_PARSE_CACHE: OrderedDict[str, SnapshotState] = OrderedDict()
_DIFF_CACHE: OrderedDict[tuple, list] = OrderedDict()
_CACHE_SIZE = 4096


def _remember(cache: OrderedDict, key, value):
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return value


def _parsed_revision(sha: str | None, text: str) -> SnapshotState:
    if sha is not None and sha in _PARSE_CACHE:
        _PARSE_CACHE.move_to_end(sha)
        return _PARSE_CACHE[sha]
    snap = parse_snapshot_cached(text)
    return _remember(_PARSE_CACHE, sha, snap) if sha is not None else snap


def _revision_changes(prev_sha: str | None, previous: SnapshotState | None, sha: str | None,
                      snap: SnapshotState, when) -> list:
    key = (prev_sha, sha, when)
    if sha is not None and key in _DIFF_CACHE:
        return _DIFF_CACHE[key]
    changes = snapshot_events(previous, snap, when)
    if not changes:
        changes = [(Event(0, K.NOTE, "state.md rewritten; no statement changed", time=when), None)]
    return _remember(_DIFF_CACHE, key, changes) if sha is not None else changes


class _Replay:
    """Journal entries replayed so far (see :func:`journal_history`), extended entry by entry."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.events: list[Event] = []
        self.refs: list[EventRef] = []
        self.previous: SnapshotState | None = None
        self.revision: str | None = None
        self.consumed = 0
        self.first: JournalEntry | None = None

    def add(self, event: Event, ref: EventRef) -> None:
        event.seq = len(self.events)
        self.events.append(event)
        self.refs.append(ref)

    def feed(self, entries: list[JournalEntry]) -> None:
        for entry in entries:
            rel = _rel(entry.path, self.run_dir)
            if entry.kind == "state":
                if entry.text is None or entry.sha256 == self.revision:
                    continue  # a revision too large to keep, or the same one journaled twice
                snap = _parsed_revision(entry.sha256, entry.text)
                changes = _revision_changes(self.revision, self.previous, entry.sha256, snap, entry.time)
                self.revision = entry.sha256
                for event, line in changes:
                    self.add(replace(event), EventRef(trace_line=line, revision=self.revision))
                self.previous = snap
            elif entry.kind == "binding":
                name, eid = name_and_scope(Path(rel).stem)
                self.add(Event(0, K.BINDING_WRITTEN, f"wrote {rel}", time=entry.time, name=name, execution_id=eid),
                         EventRef(path=entry.path, revision=self.revision))
            elif entry.kind == "segment":
                agent = entry.path.parent.name
                number = re.search(r"-(\d+)\.md$", entry.path.name)
                self.add(Event(0, K.AGENT_SEGMENT, f"wrote {rel}", time=entry.time, name=agent,
                               status=number.group(1) if number else None),
                         EventRef(path=entry.path, revision=self.revision))
            elif entry.kind == "removed":
                self.add(Event(0, K.NOTE, f"removed {rel}", time=entry.time, name=Path(rel).stem),
                         EventRef(path=entry.path, revision=self.revision))
        self.consumed += len(entries)

    def history(self, run: Run) -> History:
        note = "replayed from the journal prose-tui kept while watching; times are when changes were seen"
        events, refs = list(self.events), list(self.refs)
        current, current_sha = current_state(run)
        if current is not None and self.previous is not None and current_sha != self.revision:
            snap = _parsed_revision(current_sha, current)
            when = datetime.fromtimestamp(run.state_mtime).astimezone() if run.state_mtime else None
            tail = snapshot_events(self.previous, snap, when)
            if not tail:
                tail = [(Event(0, K.NOTE, "state.md rewritten; no statement changed", time=when), None)]
            for event, line in tail:
                event.seq = len(events)
                events.append(event)
                refs.append(EventRef(trace_line=line, revision=current_sha))
            note += "; state.md changed after the journal ends, the last step is the file as it is now"
        return History(events, "journal", note, refs)


def journal_history(run: Run, entries: list[JournalEntry]) -> History:
    """Replay journal ``entries`` (oldest first) of ``run`` into a :class:`History`.

    When the run's current ``state.md`` is not the last journaled revision (it changed
    while nobody watched), the difference is appended as if seen now, and the note says so.
    """
    replay = _Replay(run.path)
    replay.feed(entries)
    return replay.history(run)


def _journal_replay(run: Run, journal: Journal, entries: list[JournalEntry]) -> History:
    """``journal_history`` that replays only the entries added since the last call."""
    key = (run.path, "journal")
    replay = _HISTORIES.get(key)
    if not isinstance(replay, _Replay) or replay.consumed > len(entries) or (entries and replay.first is not entries[0]):
        replay = _keep(key, _Replay(run.path))
        replay.first = entries[0] if entries else None
    replay.feed(entries[replay.consumed:])
    _HISTORIES.move_to_end(key)
    return replay.history(run)


def _rel(path: Path, run_dir: Path) -> str:
    try:
        return path.relative_to(run_dir).as_posix()
    except ValueError:
        try:
            return path.resolve().relative_to(run_dir.resolve()).as_posix()
        except (ValueError, OSError):
            return path.as_posix()


_CURRENT: OrderedDict[tuple[Path, float | None, int], tuple[str, str]] = OrderedDict()
_CURRENT_LOCK = threading.Lock()  # the journal (live worker) and the UI thread both fill it


def current_state(run: Run) -> tuple[str | None, str | None]:
    """The run's ``state.md`` as it is now: ``(text, sha256 of its bytes)``, or ``(None, None)``.
    Kept per (file, mtime, size), so asking again about an unchanged file reads nothing."""
    if run.state_file is None:
        return None, None
    try:
        st = run.state_file.stat()
        key = (run.state_file, st.st_mtime, st.st_size)
        known = _CURRENT.get(key)
        if known is not None:
            return known
        data = run.state_file.read_bytes()
    except OSError:
        return None, None
    return _remember_current(key, data, sha256_of(data))


def remember_current(path: Path, st, data: bytes, sha: str) -> None:
    """``current_state`` of the file at ``path`` (``st`` its ``fstat`` when ``data`` was read)
    is ``data`` with sha256 ``sha``: the journal, which reads each revision on the live
    worker, tells it here so a history built on the UI thread does not read it again."""
    _remember_current((path, st.st_mtime, st.st_size), data, sha)


def _remember_current(key: tuple, data: bytes, sha: str) -> tuple[str, str]:
    value = (data.decode("utf-8", "replace"), sha)
    with _CURRENT_LOCK:
        _CURRENT[key] = value
        while len(_CURRENT) > 16:
            _CURRENT.popitem(last=False)
    return value
