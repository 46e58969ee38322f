"""The ordered event stream of a run, whatever wrote it (issue 3: "what happened, in order").

Three origins (``History.origin``):

* ``"log"``: the source already is a stream. Compact event logs (FORMATS.md, generations
  2-4), SQLite ``execution`` rows (seeds/sqlite.md) and narration markers
  (seeds/in-context.md) give ``Run.events``; they are taken as they are.
* ``"journal"``: a snapshot ``state.md`` run (seeds/filesystem.md, generation 1) that
  prose-tui watched. Each journaled ``state.md`` revision is diffed against the one before
  (trace annotations, call stack, header status: :mod:`.transitions`) and binding/segment
  writes become ``binding_written``/``agent_segment`` events, in the order they were seen.
  See :mod:`.replay`.
* ``"reconstructed"``: a snapshot run never watched. See :mod:`.reconstruct`.

No Textual, no writes. ``history_of`` reads the journal folder (user state dir) and, for
reconstruction, file times of the run's own files.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any

from prose_tui.backends.common.foreground import in_turns
from prose_tui.history.refs import EventRef, LineRefs
from prose_tui.history.step_lines import StepLines
from prose_tui.history.timeline import KEPT, History
from prose_tui.model import (
    Event,
    EventKind,
    Run,
    RunFormat,
)
from prose_tui.model.serialize import event as event_json

if TYPE_CHECKING:  # pragma: no cover
    from prose_tui.history.journal import Journal

__all__ = ["EventRef", "History", "PreparedHistory", "events_json", "history_of", "keep_prepared", "prepare_history"]

K = EventKind
LOG_FORMATS = (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG, RunFormat.SKILL, RunFormat.SQLITE,
               RunFormat.NARRATION, RunFormat.REACTOR)
# formats whose trace is the log itself, one line per event line (``_log_trace_lines``)
LINE_FORMATS = (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG, RunFormat.SKILL)
# formats whose events map to trace lines by step (``StepLines``): a row per line
STEP_FORMATS = (RunFormat.SQLITE, RunFormat.POSTGRES)

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
        from prose_tui.history.replay import journal_replay

        return journal_replay(run, journal, entries)
    from prose_tui.history.reconstruct import reconstruct

    return reconstruct(run)


@dataclass
class _LogCache:
    """The history last built from one run's events, and the events it copied."""

    history: History
    sources: list[Event]
    note_format: RunFormat
    steps: StepLines | None = None  # a database run's line mapping, extended with the run


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
    cached = KEPT.get(key)
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
            KEPT.touch(key)
            return cached.history
        older = len(src) - len(mine)
        if older > 0 and all(map(is_, src[older:], mine)):
            _prepend_log(cached, run, older)
            KEPT.touch(key)
            return cached.history
    return KEPT.keep(key, _fresh_log(run, src)).history


_SEQ, _LINE = attrgetter("seq"), attrgetter("line")


def _fresh_log(run: Run, src: list[Event]) -> _LogCache:
    """The history of ``run`` whose events are ``src``, built whole, and what extends it.
    A log's events numbered densely already (the usual case) are taken as they are. Its
    per-event work is done in C a slice at a time (``foreground.in_turns``): on a reader's
    thread (``prepare_history``) each slice holds the interpreter 1-3 ms, where one call
    over 100,000 events held it 10-25 ms while a live change waited."""
    if all(list(map(_SEQ, src[a:b])) == list(range(a, b)) for a, b in in_turns(len(src))):
        events = list(src)
    else:
        events = []
        for a, b in in_turns(len(src)):
            events.extend(_share(e, i) for i, e in enumerate(src[a:b], start=a))
    steps = StepLines(run.trace) if run.format in STEP_FORMATS else None
    lines = steps.lines_for(events) if steps is not None else _log_trace_lines(run, events)
    refs = LineRefs()  # a trace line per event, 4 bytes each
    for a, b in in_turns(len(lines)):
        refs.extend_lines(lines[a:b])
    history = History(events, "log", _log_note(run, events), refs)
    return _LogCache(history, list(src), run.format, steps)


PreparedHistory = _LogCache
"""A log's history built apart (``prepare_history``): ``.history`` is the ``History``."""


def prepare_history(run: Run) -> PreparedHistory | None:
    """The history ``history_of(run)`` gives a log run (origin ``"log"``), built whole on
    any thread, reading and changing none of the histories kept: the thread that read a
    long log builds it (100,000 events: 0.1-0.15 s) so the UI thread does not. After
    ``keep_prepared``, ``history_of(run)`` extends it by what the run appended since, or
    replaced at its end (the run's events may grow in place meanwhile: they are taken as
    they were when this began). ``None`` for a run whose history is not its log's (a
    journal replay or a reconstruction: built where the caller builds those)."""
    if not extends_cheaply(run):
        return None
    return _fresh_log(run, list(run.events))


def keep_prepared(run: Run, prepared: PreparedHistory) -> None:
    """Make ``prepared`` (``prepare_history(run)``) the history ``history_of(run)`` extends:
    the thread that builds histories (the UI's) calls it, in O(1)."""
    key = (run.path, "log")
    if KEPT.get(key) is not prepared:
        KEPT.keep(key, prepared)


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
        ranked = _ranked_lines(run, events)
        if ranked is not None:
            return ranked
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


def _ranked_lines(run: Run, events: list[Event]) -> list[int | None] | None:
    """An event log's trace line per event when every event has a line and the log has as
    many distinct lines as the trace (the k-th distinct is the k-th trace line), else
    ``None``. In C, a slice at a time (``in_turns``): a long log's history is built on a
    reader's thread beside live changes."""
    numbers: list[int] = []
    distinct: set[int] = set()
    for a, b in in_turns(len(events)):
        chunk: list[int] = list(map(_LINE, events[a:b]))
        if None in chunk:
            return None
        numbers.extend(chunk)
        distinct.update(chunk)
    if len(distinct) != len(run.trace):
        return None
    ordered = sorted(distinct)  # 100,000 lines: 3 ms (a log's lines come in order: timsort's run)
    rank: dict[int, int] = {}
    for a, b in in_turns(len(ordered)):
        rank.update(zip(ordered[a:b], map(_LINE, run.trace[a:b])))
    out: list[int | None] = []
    for a, b in in_turns(len(numbers)):
        out.extend(map(rank.__getitem__, numbers[a:b]))
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
