"""A run as of a cursor on its history (issue 3).

``state_at`` builds a new :class:`~prose_tui.model.Run` as it stood right after event
``cursor``; the views render it like any run. It changes neither the run nor the history
and imports no Textual. What a failure had around it is in ``failure.py``.
"""

from __future__ import annotations

import dataclasses
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from operator import is_not
from pathlib import Path
from typing import TYPE_CHECKING

from prose_tui.backends.common.foreground import wait_turn
from prose_tui.backends.protocol import HistorySource, Revision
from prose_tui.history.node_cursor import apply_nodes_at
from prose_tui.history.current import current_state
from prose_tui.history.refs import LineRefs, run_relative
from prose_tui.history.sources import source_of
from prose_tui.history.stream import LINE_FORMATS
from prose_tui.history.timeline import History
from prose_tui.model import (
    Agent,
    Binding,
    Event,
    EventKind,
    Frame,
    Run,
    RunStatus,
    StatementState,
    TraceLine,
)

if TYPE_CHECKING:  # pragma: no cover
    from prose_tui.history.journal import Journal

__all__ = ["WRITE_KINDS", "CursorMemo", "copy_run", "fold_frames", "index_history", "state_at", "trace_index"]

K = EventKind
S = StatementState
_STATE_OF = {
    K.STATEMENT_STARTED: S.EXECUTING, K.PARALLEL_STARTED: S.EXECUTING, K.LOOP_ITERATION: S.EXECUTING,
    K.RETRY: S.RETRYING, K.STATEMENT_COMPLETED: S.COMPLETE, K.PARALLEL_JOINED: S.COMPLETE,
    K.STATEMENT_FAILED: S.FAILED, K.STATEMENT_SKIPPED: S.SKIPPED,
    # a statement receipt (FORMATS.md generation 8, Reactor's receipts.json): written when it ended
    K.RECEIPT_RENDERED: S.COMPLETE, K.RECEIPT_SKIPPED: S.SKIPPED, K.RECEIPT_FAILED: S.FAILED,
    # the run's end, where a trace line stands for the run (a receipt ledger's run_end)
    K.RUN_ENDED: S.COMPLETE, K.RUN_ERRORED: S.FAILED,
}
_DONE = (K.STATEMENT_COMPLETED, K.STATEMENT_FAILED, K.STATEMENT_SKIPPED, K.PARALLEL_JOINED,
         K.RECEIPT_RENDERED, K.RECEIPT_SKIPPED, K.RECEIPT_FAILED)


# -- copying ---------------------------------------------------------------------------------


def _copy_line(t: TraceLine, **changes) -> TraceLine:
    """A new ``TraceLine`` like ``t`` with ``changes``. Built field by field: a third of
    ``dataclasses.replace``'s time, which was most of a history step at 100,000 events
    (``tests/test_history.py`` checks that every field is copied)."""
    line = TraceLine(t.line, t.text, t.state, t.note, t.binding, t.attempt, t.max_attempts, t.step, t.failure)
    for name, value in changes.items():
        setattr(line, name, value)
    return line


def copy_run(run: Run, *, trace: bool = True) -> Run:
    """A copy of ``run`` whose lists, trace lines, frames and agents are new objects;
    ``Binding``, ``Segment``, ``Event`` and import ``Run`` objects are shared (read-only).
    ``trace=False``: the trace list is new but its lines are shared, for a caller that
    replaces every line (a copy each was 0.4 s of a history step at 100,000 events)."""
    return dataclasses.replace(
        run,
        trace=[_copy_line(t) for t in run.trace] if trace else list(run.trace),
        bindings=list(run.bindings),
        agents=[dataclasses.replace(a, segments=list(a.segments), details=dict(a.details)) for a in run.agents],
        call_stack=[dataclasses.replace(f) for f in run.call_stack],
        constructs=list(run.constructs),
        sections=list(run.sections),
        imports=list(run.imports),
        events=list(run.events),
        header=dict(run.header),
        warnings=list(run.warnings),
    )


# -- state_at --------------------------------------------------------------------------------


def state_at(run: Run, history: History, cursor: int, *, journal: Journal | None = None,
             memo: CursorMemo | None = None) -> Run:
    """``run`` as it stood right after ``history.events[cursor]`` (inclusive), as a new Run.

    ``cursor`` is 0-based; ``len(events) - 1`` (the end) gives a copy of the live run.
    Raises ``IndexError`` for a cursor outside ``0..len-1`` (an empty history accepts only
    the end, ``-1``, and gives the live run).

    * Event logs: the log cut after the cursor's line and parsed again by the run's
      backend (``HistorySource.log_prefix``), so trace states,
      open parallels and the call stack are what the file said then; lines after it are
      dropped. (A line holding several events, ``a ✓ | b ✓``, is shown whole.)
    * Skill runs and Reactor state dirs (runs with nodes): the nodes recomputed from the
      receipts written by then (status, receipts, version, tokens, failure text), the trace
      lines standing for nodes redrawn to match, world models kept for nodes that had
      rendered, cost cut to those receipts; a Reactor is ``failed`` while some node's last
      receipt so far failed, else ``running`` (see :mod:`.node_cursor`).
    * SQLite/narration: every trace line keeps its place; lines the events so far touched
      take the state of their latest event, the others have state ``None``.
    * Journal: the ``state.md`` revision current at the cursor, parsed by the run's
      backend (``HistorySource.revision``: trace, constructs, call stack, header).
    * Reconstructed: statements whose events come later are ``next`` (the first) or
      ``pending``; the cursor's statement is ``executing`` unless its event finished it.

    In every case bindings are those written by then (the same ``Binding`` objects;
    never-mentioned inputs count as present from the start; for snapshots, Index rows not
    yet written stay as ``exists=False``), agents keep the segments written by then, events
    are cut at the cursor, and the status is ``running`` unless an end/error came by then
    or the cursor is on a failed statement (nothing was written after it yet: failed, as a
    log that ends there is).

    ``memo``: a :class:`CursorMemo` made for this ``run`` and ``history`` (``memo.fits``),
    kept by the caller between calls: a log's fold then starts from the cursor it was last
    asked for, so moving a cursor by a few events costs what they changed. The result is
    the same as without it (trace lines the cursor does not change may be the run's own
    objects instead of copies). A memo that does not fit is ignored.
    """
    if memo is not None and not memo.fits(run, history):
        memo = None
    elif memo is not None:
        memo.ensure()
    n = len(history.events)
    if n == 0 and cursor in (-1, 0):
        return copy_run(run)
    if not 0 <= cursor < n:
        raise IndexError(f"cursor {cursor} outside 0..{n - 1}")
    if cursor == n - 1:
        return copy_run(run)
    out = copy_run(run, trace=history.origin not in ("log", "journal", "reconstructed"))  # each path below sets out.trace
    out.events = history.events[: cursor + 1]
    source = source_of(run) if history.origin != "reconstructed" else None
    if history.origin == "journal":
        _journal_state(out, run, history, cursor, journal, source)
    elif history.origin == "reconstructed":
        _reconstructed_state(out, run, history, cursor)
    else:
        _log_state(out, run, history, cursor, source, memo)
    _agents_at(out, history, cursor, memo)
    _status_at(out, history, cursor, memo)
    if history.origin == "log" and (run.nodes or run.receipts):
        apply_nodes_at(out, run, history, cursor, source)
    return out


def _status_at(out: Run, history: History, cursor: int, memo: CursorMemo | None = None) -> None:
    status, reason = RunStatus.RUNNING, f"as of event {cursor} of 0–{len(history.events) - 1}"
    out.end_marker = out.error_marker = None
    ends = memo.before(memo.run_ends, cursor) if memo is not None else history.events[: cursor + 1]
    for event in ends:
        if event.kind is K.RUN_ENDED:
            status, out.end_marker = RunStatus.COMPLETED, event.text
        elif event.kind is K.RUN_ERRORED:
            status, out.error_marker = RunStatus.FAILED, event.text
        elif event.kind is K.RUN_RESUMED:
            status, out.end_marker, out.error_marker = RunStatus.RUNNING, None, None
    if status is RunStatus.RUNNING and history.events[cursor].kind is K.STATEMENT_FAILED:
        # as of a failure nothing was yet written after, the run stands failed (common.status's rule
        # for a log that ends there); the retry, if one comes, is a later event
        status = RunStatus.FAILED
        reason = f"as of event {cursor} of 0–{len(history.events) - 1}: {history.events[cursor].text.strip()}"
    if history.origin == "journal" and out.header.get("status"):
        word = out.header["status"].lower()
        if word.startswith(("complete", "done", "success")):
            status = RunStatus.COMPLETED
        elif word.startswith(("fail", "error", "abort")):
            status = RunStatus.FAILED
    out.status, out.status_reason = status, reason
    if history.origin != "journal":
        when = _last_time(history, cursor, memo)
        if when is not None:
            out.updated = when


def _last_time(history: History, cursor: int, memo: CursorMemo | None):
    """The time of the last event up to ``cursor`` that has one (``None`` when none has)."""
    if memo is not None:
        k = bisect_right(memo.timed, cursor)
        return history.events[memo.timed[k - 1]].time if k else None
    return next((e.time for e in reversed(history.events[: cursor + 1]) if e.time is not None), None)


# event logs, sqlite, narration ----------------------------------------------------------------


def trace_index(run: Run, line: int | None) -> int | None:
    """The index in ``run.trace`` of the trace line numbered ``line`` (1-based
    ``TraceLine.line``), or ``None`` when ``line`` is ``None`` or not in the trace."""
    if line is None:
        return None
    if 0 < line <= len(run.trace) and run.trace[line - 1].line == line:
        return line - 1
    return next((i for i, t in enumerate(run.trace) if t.line == line), None)


def _log_state(out: Run, run: Run, history: History, cursor: int, source: HistorySource | None,
               memo: CursorMemo | None = None) -> None:
    index = trace_index(run, history.refs[cursor].trace_line)
    prefix = source.log_prefix(run, index + 1) if source is not None and index is not None else None
    if prefix is not None:  # the log read again up to the cursor's line
        trace, out.call_stack = prefix
        out.trace = [_copy_line(t, binding=run.trace[i].binding if t.state is not None else None)
                     for i, t in enumerate(trace)]
    elif memo is not None:
        out.trace = memo.trace(cursor, index if run.format in LINE_FORMATS else None)
        out.call_stack = fold_frames(memo.before(memo.frames, cursor))
    else:
        at = _fold_trace(out, run, history, cursor)
        if index is not None and run.format in LINE_FORMATS:
            # A log too long to parse again (``REPARSE_LINES``): as the parse would, lines after
            # the cursor's are not there yet, and a line no event names (a retry line, a note)
            # stands as the file says, since no later event changes it.
            # A retry line is retrying only until a later event of its step (its next attempt
            # ended): then it stands as the file says.
            reported = set(at)
            last_of_step: dict[str, int] = {}
            last_on_line: dict[int, int] = {}
            for k, (event, line) in enumerate(zip(history.events[: cursor + 1], at)):
                if event.step:
                    last_of_step[event.step] = k
                if line is not None:
                    last_on_line[line] = k
            trace = out.trace[: index + 1]
            for i, t in enumerate(trace):
                if t.line not in reported and t.state is not run.trace[i].state:
                    trace[i] = _copy_line(run.trace[i])
                elif t.state is S.RETRYING and (seen := last_on_line.get(t.line)) is not None:
                    step = history.events[seen].step
                    if step and last_of_step.get(step, seen) > seen:
                        trace[i] = _copy_line(run.trace[i])
            out.trace = trace
    out.bindings = _log_bindings(run, history, cursor, memo)


def _fold_trace(out: Run, run: Run, history: History, cursor: int) -> list[int | None]:
    """``out``'s trace and call stack folded from the events up to ``cursor``; returns each
    event's trace line (``None`` for an event naming none), all events, not only those so far."""
    states: dict[int, S] = {}
    at = [ref.trace_line for ref in history.refs]  # each event's trace line (one pass over the refs)
    reported = set(at)  # lines some event reaches
    reported.discard(None)
    for event, line in zip(history.events[: cursor + 1], at[: cursor + 1]):
        if line is not None and event.kind in _STATE_OF:
            states[line] = _STATE_OF[event.kind]
    # A line still "executing" when a later line at its own depth or shallower has
    # started was finished by then (sources rarely report a container's completion).
    shallowest_after: list[float] = [float("inf")] * (len(run.trace) + 1)
    for i in range(len(run.trace) - 1, -1, -1):
        t = run.trace[i]
        shallowest_after[i] = min(shallowest_after[i + 1], t.indent if t.line in states else float("inf"))
    # ...unless the history reports its end later: then it was still running at the cursor
    # (a receipt ledger's run line, started by run_start and ended by run_end).
    ends_later = {line for event, line in zip(history.events[cursor + 1:], at[cursor + 1:])
                  if event.kind in _DONE or event.kind in (K.RUN_ENDED, K.RUN_ERRORED)}
    lines = []
    for i, t in enumerate(run.trace):
        state = states.get(t.line)
        if state is S.EXECUTING and shallowest_after[i + 1] <= t.indent and t.line not in ends_later:
            live = t.state if t.state in (S.COMPLETE, S.FAILED, S.SKIPPED) else S.COMPLETE
            state = live
        if (state is None and t.line in reported) or (state in (S.EXECUTING, S.RETRYING) and t.state is not state):
            # Not reached yet at the cursor, or not ended yet: today's note (its receipts,
            # tokens, failure) and binding would tell the future.
            lines.append(_copy_line(t, state=state, note=None, binding=None, failure=None))
            continue
        lines.append(_copy_line(t, state=state))
    out.trace = lines
    out.call_stack = fold_frames(history.events[: cursor + 1])
    return at


def fold_frames(events: list[Event]) -> list[Frame]:
    """The call stack after ``events``: frames pushed and not popped, innermost first."""
    open_frames: list[Frame] = []
    for event in events:
        if event.kind is K.FRAME_PUSHED:
            parent = open_frames[-1].execution_id if open_frames else None
            open_frames.append(Frame(event.execution_id, event.name or "?", depth=len(open_frames) + 1,
                                     status="executing", parent_id=parent))
        elif event.kind is K.FRAME_POPPED:
            for i in range(len(open_frames) - 1, -1, -1):
                if open_frames[i].execution_id == event.execution_id:
                    del open_frames[i]
                    break
    for frame in open_frames[:-1]:
        frame.status = "waiting"
    return list(reversed(open_frames))


WRITE_KINDS = (K.STATEMENT_COMPLETED, K.BINDING_WRITTEN)  # the events that write a binding


def _log_bindings(run: Run, history: History, cursor: int, memo: CursorMemo | None = None) -> list[Binding]:
    if memo is not None:
        first = memo.first_write
        return [b for b in run.bindings if first.get(b.name, cursor + 1) <= cursor
                or (b.name not in first and (b.kind or "").lower() == "input")]
    mentioned = {e.name for e in history.events if e.kind in WRITE_KINDS and e.name}
    so_far = {e.name for e in history.events[: cursor + 1] if e.kind in WRITE_KINDS and e.name}
    return [b for b in run.bindings
            if b.name in so_far or (b.name not in mentioned and (b.kind or "").lower() == "input")]


# journal -----------------------------------------------------------------------------------


def _written(history: History, cursor: int, run_dir: Path, kinds: tuple[EventKind, ...]) -> set[str]:
    """Run-relative paths the events up to ``cursor`` wrote (and did not remove since)."""
    paths: set[str] = set()
    for event, ref in zip(history.events[: cursor + 1], history.refs[: cursor + 1]):
        if ref.path is None:
            continue
        rel = run_relative(ref.path, run_dir)
        if event.kind in kinds:
            paths.add(rel)
        elif event.kind is K.NOTE and event.text.startswith("removed "):
            paths.discard(rel)
    return paths


def _revision(run: Run, sha: str | None, journal: Journal | None) -> str | None:
    if sha is None:
        return None
    if journal is None:
        from prose_tui.history.journal import Journal

        journal = Journal()
    try:
        text = journal.revision_text(run.path, sha)
    except OSError:
        text = None
    if text is None:
        current, current_sha = current_state(run)
        text = current if current_sha == sha else None
    return text


def _journal_state(out: Run, run: Run, history: History, cursor: int, journal: Journal | None,
                   source: HistorySource | None) -> None:
    text = _revision(run, history.refs[cursor].revision, journal)
    snap = source.revision(text) if text is not None and source is not None else Revision()
    if text is None and history.refs[cursor].revision is not None:
        out.warnings.append("the journal has lost this state.md revision; its trace cannot be shown")
    out.header = dict(snap.header)
    out.program = snap.header.get("program") or run.program
    out.started = snap.started or run.started
    out.updated = snap.updated
    out.trace = list(snap.trace)
    out.constructs = list(snap.constructs)
    out.call_stack = list(snap.call_stack)
    out.sections = list(snap.sections)
    written = _written(history, cursor, run.path, (K.BINDING_WRITTEN,))
    kept = [b for b in run.bindings if b.exists and run_relative(b.path, run.path) in written]
    have = {run_relative(b.path, run.path) for b in kept}
    for row in snap.index:
        name = row.get("name") or ""
        rel = row.get("path") or f"bindings/{name}.md"
        if rel.startswith("("):
            rel = f"bindings/{name}.md"
        rel = rel.removeprefix("./")
        if rel in have or not name:
            continue
        have.add(rel)
        eid = int(m.group(0)) if (m := re.search(r"\d+", row.get("execution id", "execution_id") or "")) else None
        kept.append(Binding(name=name, path=run.path / rel, kind=(row.get("kind") or "").lower() or None,
                            execution_id=eid, exists=False,
                            warning="named in the Index but its file was not written yet"))
    out.bindings = kept


def _agents_at(out: Run, history: History, cursor: int, memo: CursorMemo | None = None) -> None:
    """Keep the segments written by the cursor: by journal/reconstructed paths, else by
    ``agent_segment`` events, else by time; segments no event speaks of are kept."""
    events, refs = history.events, history.refs
    if history.origin in ("journal", "reconstructed"):
        seen = {run_relative(r.path, out.path) for e, r in zip(events, refs) if e.kind is K.AGENT_SEGMENT and r.path}
        written = _written(history, cursor, out.path, (K.AGENT_SEGMENT,))

        def keep(agent: Agent, seg) -> bool:
            rel = run_relative(seg.path, out.path)
            return rel not in seen or rel in written
    else:
        segments = memo.segments if memo is not None else [i for i, e in enumerate(events) if e.kind is K.AGENT_SEGMENT]
        told = {(events[i].name, events[i].status) for i in segments}
        so_far = {(events[i].name, events[i].status) for i in segments if i <= cursor}
        when = _last_time(history, cursor, memo)
        stamp = when.timestamp() if when is not None and not told else None

        def keep(agent: Agent, seg) -> bool:
            key = (agent.name, f"{seg.number:03d}")
            if told:
                return key not in told or key in so_far
            return stamp is None or seg.mtime is None or seg.mtime <= stamp
    out.agents = [dataclasses.replace(a, segments=[s for s in a.segments if keep(a, s)]) for a in out.agents]


# reconstructed ----------------------------------------------------------------------------


def _reconstructed_state(out: Run, run: Run, history: History, cursor: int) -> None:
    first: dict[int, int] = {}
    last_done: dict[int, int] = {}
    for i, (event, ref) in enumerate(zip(history.events, history.refs)):
        if ref.trace_line is None:
            continue
        first.setdefault(ref.trace_line, i)
        if i <= cursor and event.kind in _STATE_OF:
            last_done[ref.trace_line] = i
    current = history.refs[cursor].trace_line
    entered = _entered_blocks(run.trace, {line for line, i in first.items() if i <= cursor})
    future = sorted((line for line, i in first.items() if i > cursor and line not in entered), key=lambda line: first[line])
    first_future = future[0] if future else None
    trace: list[TraceLine] = []
    for t in run.trace:
        if t.line == current:
            event = history.events[last_done.get(t.line, cursor)]
            finished = history.events[cursor].kind in _DONE or event.kind in _DONE and last_done.get(t.line) == cursor
            state = _STATE_OF.get(event.kind, S.EXECUTING) if finished else (
                S.RETRYING if event.kind is K.RETRY else S.EXECUTING)
            trace.append(_copy_line(t, state=state, note=t.note if finished else None,
                                    binding=t.binding if finished else None))
        elif t.line in first and first[t.line] > cursor and t.line in entered:
            trace.append(_copy_line(t, state=S.EXECUTING, note=None, binding=None))  # its body has begun
        elif t.line in first and first[t.line] > cursor:
            state = S.NEXT if t.line == first_future else S.PENDING
            trace.append(_copy_line(t, state=state, note=None, binding=None))
        else:
            trace.append(_copy_line(t))
    out.trace = trace
    out.call_stack = fold_frames(history.events[: cursor + 1])
    written = _written(history, cursor, run.path, (K.BINDING_WRITTEN,))
    mentioned = {run_relative(r.path, run.path) for e, r in zip(history.events, history.refs)
                 if e.kind is K.BINDING_WRITTEN and r.path is not None}
    out.bindings = [b for b in run.bindings
                    if run_relative(b.path, run.path) in written
                    or (run_relative(b.path, run.path) not in mentioned and (b.kind or "").lower() == "input")]


def _entered_blocks(trace: list[TraceLine], begun: set[int]) -> set[int]:
    """Trace lines heading a block (``parallel:``, ``loop``...) some line of whose body has begun."""
    out: set[int] = set()
    for i, t in enumerate(trace):
        for inner in trace[i + 1:]:
            if inner.text.strip() and inner.indent <= t.indent:
                break
            if inner.line in begun:
                out.add(t.line)
                break
    return out


# -- a cursor that moves ---------------------------------------------------------------------

_RUN_ENDS = (K.RUN_ENDED, K.RUN_ERRORED, K.RUN_RESUMED)
_ENDS_LATER = (*_DONE, K.RUN_ENDED, K.RUN_ERRORED)  # what tells a line ended after the cursor
_LIVE = (S.EXECUTING, S.RETRYING)
_KEPT_STATES = (S.COMPLETE, S.FAILED, S.SKIPPED)


class CursorMemo:
    """What :func:`state_at` keeps between calls for one log run and its history, so that a
    cursor moved by a few events costs what those events changed, not the log: at 100,000
    events a history step folded every event and copied every trace line (1.2 s).

    Built on first use with one pass over the events (where each event's line, step and
    state-giving event came before); then it holds the fold as of the last cursor asked for
    (each line's state, the last event on each line and step, the ends still to come) and
    the trace lines worked out from it. A move applies or takes back the events in between
    and works out again only the lines they name, the retrying lines (their step may have
    gone on) and the executing lines no line below them passed yet (``_fold_trace``'s rule:
    such a line is finished once a line at its depth or shallower has a state). Memory: four
    4-byte arrays per event, two list slots per trace line, and the fold's dicts (a state
    and a last event per line reached): about 25 MB at 100,000 events.

    Holds for one ``run`` and ``history`` object and their lengths (``fits``). A log that
    grew at its end since (followed live while the cursor stands in its past: ``grew``) is
    caught up by ``extend``, at the cost of what it appended; another read of the run needs
    a new memo. Only the ``"log"`` origin without nodes or receipts uses it; ``state_at``
    ignores a memo that does not fit."""

    def __init__(self, run: Run, history: History) -> None:
        self.run, self.history = run, history
        self.key = self._key_of(run, history)
        self._built = False
        self.cursor = -1  # the fold (``_reset``) stands after events[: cursor + 1]
        self._shallowest: list[float] | None = None  # during a whole pass: _fold_trace's shallowest_after
        self._last_event: Event | None = None  # the last event indexed (``grew``: still there)
        self._lines_seen: list[TraceLine] = []  # the trace lines indexed (``extend``: replaced since?)
        self._ends: tuple[dict[int, int], dict[str, int]] | None = None  # ``extend``'s, from its first call
        self._prepended = self._bindings = 0  # the history's ``prepended`` and the run's bindings, indexed
        # trace line number -> its indexes in run.trace; None when line k is at index k - 1 (a log's)
        self.where: dict[int, list[int]] | None = None

    @staticmethod
    def _key_of(run: Run, history: History) -> tuple[object, ...]:
        return (len(history.events), len(history.refs), history.prepended, len(run.trace), len(run.events),
                len(run.bindings), run.updated, run.status, run.format)

    def fits(self, run: Run, history: History) -> bool:
        """Whether this memo answers for ``run`` and ``history`` as they are now."""
        return (run is self.run and history is self.history and history.origin == "log"
                and not (run.nodes or run.receipts) and self.key == self._key_of(run, history))

    def answers(self, run: Run, history: History) -> bool:
        """Whether this memo answers for ``run`` and ``history`` now: it ``fits``, or they grew
        since and it caught up with them here (``grew``, then ``extend``)."""
        if self.fits(run, history):
            return True
        if self.grew(run, history):
            self.extend()
            return True
        return False

    def _indexed_key(self, key: tuple[object, ...], events: int, lines: int) -> tuple[object, ...]:
        """``key`` (``_key_of``, taken before indexing) with the sizes indexed: ``events``
        events and refs, ``lines`` trace lines (more may have come meanwhile: ``extend``'s)."""
        return (events, events, key[2], lines, *key[4:])

    def grew(self, run: Run, history: History) -> bool:
        """Whether ``run`` and ``history`` are this memo's own, grown at their ends since it
        was built (a log followed live: its events and trace lines appended in place), the
        events it indexed still there: ``extend`` then catches up with them. ``False`` for
        anything else (another read, a tail parsed again, bindings added): a new memo."""
        if not self._built or run is not self.run or history is not self.history or history.origin != "log" \
                or run.nodes or run.receipts:
            return False
        n, prepended, n_bindings = len(self.at), self._prepended, self._bindings
        events = history.events
        return (history.prepended == prepended and len(events) >= n > 0 and len(history.refs) == len(events)
                and len(run.trace) >= len(self._lines_seen) and len(run.bindings) == n_bindings
                and events[n - 1] is self._last_event)

    def extend(self) -> None:
        """Catch up with the events and trace lines appended since (``grew`` is true). The
        index arrays grow by the new events; the fold stays at its cursor, before them, where
        only which lines end later and which lines no event names can change; new trace
        lines are folded as of the cursor, and a line the run's reader replaced in place (a
        half-written line read whole) is folded again. Cost: the new events, and a pass over
        the trace comparing objects (a few ms at 100,000 lines, where a new memo took
        0.4-0.6 s of the UI thread for each event appended while the cursor stood back).
        The first call keeps each line's and each step's last event (about 15 MB at 100,000)."""
        run, history = self.run, self.history
        key = self._key_of(run, history)  # the sizes caught up with (see ``_build``)
        events, at = history.events, self.at
        old, n = len(at), min(len(history.events), len(history.refs))
        trace = list(run.trace)
        if self._ends is None:
            # Each trace line's and each step's last event so far: a new event's ``prev_*``.
            ends_line: dict[int, int] = dict(zip(at, range(old)))
            ends_line.pop(0, None)
            ends_step: dict[str, int] = {e.step: i for i, e in enumerate(events[:old]) if e.step}
            self._ends = (ends_line, ends_step)
        ends_line, ends_step = self._ends
        state_of, writes, frame_kinds = _STATE_OF, WRITE_KINDS, (K.FRAME_PUSHED, K.FRAME_POPPED)
        wanted = {b.name for b in run.bindings}
        prev_state, prev_line, prev_step = self.prev_state, self.prev_line, self.prev_step
        dirty: set[int] = set()  # trace line numbers whose fold may differ now
        at.extend(r.trace_line or 0 for r in history.refs[old:n])
        for i in range(old, n):
            event, line, step = events[i], at[i], events[i].step
            state_before = -1
            if line:
                before = ends_line.get(line, -1)
                prev_line.append(before)
                ends_line[line] = i
                while before >= 0 and events[before].kind not in state_of:
                    before = prev_line[before]
                state_before = before
                if event.kind in _ENDS_LATER:  # after the fold's cursor: the line ends later
                    self.ends_after[line] = self.ends_after.get(line, 0) + 1
                    dirty.add(line)
                if line in self.unreported:
                    self.unreported.discard(line)
                    dirty.add(line)
            else:
                prev_line.append(-1)
            prev_state.append(state_before if line and event.kind in state_of else -1)
            if step:
                prev_step.append(ends_step.get(step, -1))
                ends_step[step] = i
            else:
                prev_step.append(-1)
            kind = event.kind
            if kind in writes:
                if event.name in wanted and event.name not in self.first_write:
                    self.first_write[event.name] = i
            elif kind in _RUN_ENDS:
                self.run_ends.append(i)
            elif kind in frame_kinds:
                self.frames.append(i)
            elif kind is K.AGENT_SEGMENT:
                self.segments.append(i)
            if event.time is not None:
                self.timed.append(i)
        seen = self._lines_seen
        replaced = ([i for i, (was, now) in enumerate(zip(seen, trace)) if was is not now]
                    if any(map(is_not, seen, trace)) else [])  # one C pass when none was (the usual)
        for i in replaced:
            seen[i] = trace[i]
            dirty.add(trace[i].line)
        first_new = len(seen)
        seen.extend(trace[first_new:])
        for i in range(first_new, len(trace)):
            if trace[i].line not in ends_line:
                self.unreported.add(trace[i].line)
        if self.where is not None and not replaced:
            for i in range(first_new, len(trace)):
                self.where.setdefault(trace[i].line, []).append(i)
        elif replaced or any(t.line != k for k, t in enumerate(trace[first_new:], first_new + 1)):
            # a replaced line may have another number; a new line out of step: looked up again
            self.where = None
            if any(t.line != k for k, t in enumerate(trace, 1)):
                where: dict[int, list[int]] = {}
                for i, t in enumerate(trace):
                    where.setdefault(t.line, []).append(i)
                self.where = where
        if self.folded is not None:
            for i in range(first_new, len(trace)):
                self.folded.append(self._folded(i))
                if self.fixed is not None:
                    self.fixed.append(self._fixed(i, self.folded[i]))
            for line in dirty:
                for i in self._indexes(line):
                    if i >= first_new:
                        continue
                    self.witness.pop(i, None)
                    self.folded[i] = self._folded(i)
                    if self.fixed is not None:
                        self.fixed[i] = self._fixed(i, self.folded[i])
        self._last_event = events[n - 1]
        self.key = self._indexed_key(key, n, len(trace))

    # -- built once ----------------------------------------------------------------------------
    def ensure(self) -> None:
        """Build the index arrays (one pass over the events) unless built."""
        if not self._built:
            self._build()

    def _build(self) -> None:
        """The index arrays, and the fold standing after the last event (a first step back
        from the end then takes back one event): one pass over the events."""
        history, run = self.history, self.run
        # The sizes indexed, taken first: the run's reader grows its trace, and the UI thread
        # its history, on other threads (a build in a worker); what came after is ``extend``'s.
        key = self._key_of(run, history)
        n = min(len(history.events), len(history.refs))
        trace = list(run.trace)
        self.key = self._indexed_key(key, n, len(trace))
        events = history.events[:n]
        refs = history.refs
        # each event's trace line, 0 for none (4 bytes an event)
        self.at = at = (refs.packed()[:n] if isinstance(refs, LineRefs)
                        else array("i", (r.trace_line or 0 for r in refs[:n])))
        self.unreported = {t.line for t in trace}.difference(at)  # trace lines no event names
        wanted = {b.name for b in run.bindings}
        prev_state, prev_line, prev_step = array("i", [-1]) * n, array("i", [-1]) * n, array("i", [-1]) * n
        first_write: dict[str, int] = {}
        run_ends: list[int] = []
        frames: list[int] = []
        segments: list[int] = []
        timed = array("i")
        # the fold as of the last event (``_reset`` then ``_forward`` to it, inlined)
        self._reset()
        states, last_line, last_step = self.states, self.last_on_line, self.last_of_step
        last_state: dict[int, int] = {}
        state_of, writes, frame_kinds = _STATE_OF, WRITE_KINDS, (K.FRAME_PUSHED, K.FRAME_POPPED)
        for i, event in enumerate(events):
            kind, line, step = event.kind, at[i], event.step
            if line:
                prev_line[i] = last_line.get(line, -1)
                last_line[line] = i
                if kind in state_of:
                    prev_state[i] = last_state.get(line, -1)
                    last_state[line] = i
                    states[line] = state_of[kind]
            if step:
                prev_step[i] = last_step.get(step, -1)
                last_step[step] = i
            if kind in writes:
                if event.name in wanted and event.name not in first_write:
                    first_write[event.name] = i
            elif kind in _RUN_ENDS:
                run_ends.append(i)
            elif kind in frame_kinds:
                frames.append(i)
            elif kind is K.AGENT_SEGMENT:
                segments.append(i)
            if event.time is not None:
                timed.append(i)
        self.live.update(line for line, state in states.items() if state in _LIVE)
        self.cursor = n - 1
        self.prev_state, self.prev_line, self.prev_step = prev_state, prev_line, prev_step
        self.first_write = first_write  # binding name -> first event writing it (the run's bindings)
        self.run_ends, self.frames, self.segments, self.timed = run_ends, frames, segments, timed
        self.where = None
        if not all(t.line == k for k, t in enumerate(trace, 1)):
            self.where = {}
            for i, t in enumerate(trace):
                self.where.setdefault(t.line, []).append(i)
        self._last_event = events[-1] if n else None
        self._lines_seen = trace
        self._prepended, self._bindings = history.prepended, len(run.bindings)
        self._built = True

    def _indexes(self, line: int) -> Iterable[int]:
        """The indexes in ``run.trace`` of trace line ``line``."""
        if self.where is not None:
            return self.where.get(line, ())
        return (line - 1,) if 0 < line <= len(self._lines_seen) else ()

    def before(self, indexes: list[int], cursor: int) -> list[Event]:
        """The events among ``indexes`` (ascending) up to ``cursor``."""
        events = self.history.events
        return [events[i] for i in indexes[: bisect_right(indexes, cursor)]]

    # -- the fold, moved -----------------------------------------------------------------------
    def _reset(self) -> None:
        self.states: dict[int, S] = {}  # line -> state of its last state event so far
        self.last_on_line: dict[int, int] = {}
        self.last_of_step: dict[str, int] = {}
        self.ends_after: dict[int, int] = {}  # line -> events after the cursor telling it ended (> 0)
        self.live: set[int] = set()  # lines whose state so far is executing or retrying
        self.witness: dict[int, int] = {}  # executing line's index -> a line below passing it (_passed)
        self.cursor = -1
        self.folded: list[TraceLine] | None = None  # _fold_trace's lines (all)
        self.fixed: list[TraceLine] | None = None  # with the long log's fix-ups (LINE_FORMATS)

    def _set_state(self, line: int, state: S | None) -> None:
        if state is None:
            self.states.pop(line, None)
        else:
            self.states[line] = state
        if state in _LIVE:
            self.live.add(line)
        else:
            self.live.discard(line)

    def _forward(self, to: int, touched: set[int]) -> None:
        events, at = self.history.events, self.at
        for i in range(self.cursor + 1, to + 1):
            event, line = events[i], at[i]
            if line:
                touched.add(line)
                self.last_on_line[line] = i
                if event.kind in _STATE_OF:
                    self._set_state(line, _STATE_OF[event.kind])
                if event.kind in _ENDS_LATER:
                    _restore(self.ends_after, line, self.ends_after[line] - 1, least=1)
            if event.step:
                self.last_of_step[event.step] = i
        self.cursor = to

    def _back(self, to: int, touched: set[int]) -> None:
        events, at = self.history.events, self.at
        for i in range(self.cursor, to, -1):
            event, line = events[i], at[i]
            if line:
                touched.add(line)
                _restore(self.last_on_line, line, self.prev_line[i])
                if event.kind in _STATE_OF:
                    before = self.prev_state[i]
                    self._set_state(line, _STATE_OF[events[before].kind] if before >= 0 else None)
                if event.kind in _ENDS_LATER:
                    self.ends_after[line] = self.ends_after.get(line, 0) + 1
            if event.step:
                _restore(self.last_of_step, event.step, self.prev_step[i])
        self.cursor = to

    def trace(self, cursor: int, index: int | None) -> list[TraceLine]:
        """The trace as of ``cursor``, as ``_log_state``'s fold gives it: every line, or with
        ``index`` (the cursor's trace index in a line format) the lines up to it, fixed up."""
        run = self.run
        self.ensure()
        if cursor < self.cursor - cursor:  # nearer the first event than the last cursor: fold from there
            self._reset()
            ends = self.ends_after  # every ending event is after the cursor (before the first event)
            for event, line in zip(self.history.events, self.at):
                if line and event.kind in _ENDS_LATER:
                    ends[line] = ends.get(line, 0) + 1
        touched: set[int] = set()
        if cursor >= self.cursor:
            self._forward(cursor, touched)
        else:
            self._back(cursor, touched)
        if self.folded is None:
            self.witness = {}
            if any(self.states[line] is S.EXECUTING for line in self.live):  # only they ask (_passed)
                self._shallowest = _shallowest_after(self._lines_seen, self.states)
            try:
                self.folded = [self._folded(i) for i in range(len(self._lines_seen))]  # the lines indexed
            finally:
                self._shallowest = None
            self.fixed = [self._fixed(i, t) for i, t in enumerate(self.folded)] if run.format in LINE_FORMATS else None
        else:
            trace, states, witness = run.trace, self.states, self.witness
            for line in touched | self.live:
                for i in self._indexes(line):
                    if line not in touched and states[line] is S.EXECUTING and (w := witness.get(i)) is not None \
                            and trace[w].line in states:
                        continue  # still passed by the same line below: as it was
                    t = self._folded(i)
                    if t != self.folded[i]:  # an equal line stays the same object (a view diffs by identity)
                        self.folded[i] = t
                    if self.fixed is not None and (fixed := self._fixed(i, self.folded[i])) != self.fixed[i]:
                        self.fixed[i] = fixed
        if index is not None and self.fixed is not None:
            return self.fixed[: index + 1]
        return list(self.folded)

    def _folded(self, i: int) -> TraceLine:
        """Line ``i`` as ``_fold_trace`` gives it; the run's own line where nothing differs."""
        t = self.run.trace[i]
        state = self.states.get(t.line)
        if state is S.EXECUTING and t.line not in self.ends_after and self._passed(i):
            state = t.state if t.state in _KEPT_STATES else S.COMPLETE
        if (state is None and t.line not in self.unreported) or (state in _LIVE and t.state is not state):
            if state is t.state and t.note is None and t.binding is None and t.failure is None:
                return t
            return _copy_line(t, state=state, note=None, binding=None, failure=None)
        return t if state is t.state else _copy_line(t, state=state)

    def _passed(self, i: int) -> bool:
        """Whether a line below ``i`` at its depth or shallower has a state so far."""
        trace, states = self.run.trace, self.states
        indent = trace[i].indent
        if self._shallowest is not None:
            return self._shallowest[i + 1] <= indent
        for j in range(i + 1, len(trace)):
            u = trace[j]
            if u.line in states and u.indent <= indent:
                self.witness[i] = j  # stays so while that line has a state
                return True
        self.witness.pop(i, None)
        return False

    def _fixed(self, i: int, t: TraceLine) -> TraceLine:
        """``_log_state``'s fix-ups of a long log's folded line ``t`` (index ``i``)."""
        own = self.run.trace[i]
        if own.line in self.unreported:
            return own  # stands as the file says
        if t.state is S.RETRYING and (seen := self.last_on_line.get(own.line)) is not None:
            step = self.history.events[seen].step
            if step and self.last_of_step.get(step, seen) > seen:
                return own
        return t


def index_history(run: Run, history: History) -> CursorMemo:
    """A :class:`CursorMemo` for ``run`` and ``history`` (a log's), built and folded as of
    its last event, on any thread (a worker while the UI goes on, a run's reader): the first
    step back from the end then takes back one event. Cost: 0.6-1 s at 100,000 events, about
    25 MB; a live change in flight goes first between the two passes (``foreground.wait_turn``).
    A run or history grown meanwhile is caught up by ``CursorMemo.extend`` when taken."""
    memo = CursorMemo(run, history)
    memo.ensure()
    wait_turn()
    if len(memo.at):
        memo.trace(len(memo.at) - 1, None)
    return memo


def _shallowest_after(trace: list[TraceLine], states: dict[int, S]) -> list[float]:
    """For each index ``i``, the least indent of a line from ``i`` on that has a state."""
    out: list[float] = [float("inf")] * (len(trace) + 1)
    for i in range(len(trace) - 1, -1, -1):
        t = trace[i]
        out[i] = min(out[i + 1], t.indent if t.line in states else float("inf"))
    return out


def _restore(last: dict, key: object, before: int, *, least: int = 0) -> None:
    """``last[key] = before``, or no entry when ``before`` is under ``least``."""
    if before >= least:
        last[key] = before
    else:
        last.pop(key, None)
