"""What the explorer shows, without Textual: the current run, the history cursor, the follow
policy and what a change means for the views.

A change flows one way: ``show(run, changed)`` (a run read, or a live change), ``apply(delta)``
(a live delta) and ``repaint()`` (a history move, a toggle) each return one ``ViewChange``
(``viewmodel.view_change``) that the screen's painter hands to the widgets;
``trace_repaint`` is the one place that decides what the trace repaints. The screen
(``tui/screens/explorer.py``) lays this out and maps keys to it; everything it decides is
here so it can be tested without an app:

* ``run``: the run on screen; ``nav`` the history cursor on it (``HistoryNavigator``).
* ``view()``: the run as of the cursor (the run itself when live); every pane, the header
  and the status line render this, so a frozen cursor shows that moment everywhere.
* ``moment()``: where the cursor is (event index, 0-based like ``Event.seq`` and
  ``prose-tui show --at N``), its time and the status as of then.
* ``touch(run, changed)``: what showing a run (or a change to it) means for the panes,
  and the follow policy (``Touch``); ``value_after`` what the value pane does then.
* ``trace_lines()``: the lines the trace shows (program from the log or ``raw_log``, the
  raw state file as a fallback, failures marked); ``trace_index`` finds a line in them.
* ``loaded_run``: the run whose full read is on screen (a ready signal).
* the history moves (``step``, ``start``, ``live``, ``problem``, ``first_failure``) return
  a ``Moved`` saying whether the cursor moved and what to tell the user when it did not.
* ``statement_times()``: where the time went, per statement, slowest first.
* ``moment_focus()``: where the trace cursor and the value pane go at a frozen moment (the
  event's statement; the binding it wrote, or the event's own details); ``remember_live``/
  ``take_live_place`` keep the live view (trace cursor, follow, value) to restore on ``}``.
* ``shown_line(line)``: a trace line number as the trace shows it (one numbering).

An event-log run's program annotated from its log is ``viewmodel/program_trace.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path


from prose_tui.backends.common.foreground import in_turns, wait_turn
from prose_tui.backends.registry import backend_or_default
from prose_tui.history import (
    CursorMemo,
    FailureContext,
    History,
    Journal,
    failure_context,
    failure_events,
    index_history,
)
from prose_tui.history.stream import PreparedHistory, extends_cheaply, keep_prepared, prepare_history
from prose_tui.live.workspace import Part, Workspace
from prose_tui.model import (
    Binding,
    Delta,
    EventKind,
    Failure,
    Frame,
    Run,
    RunFormat,
    RunStatus,
    StatementState,
    TraceLine,
    ValueWindow,
    ending,
    run_failures,
)
from prose_tui.model.failure import first_line
from prose_tui.model.write_order import binding_written_last, newest_binding
from prose_tui.viewmodel.moment import LivePlace, MomentFocus, event_details, statement_writing, when_text
from prose_tui.viewmodel.navigator import HistoryNavigator
from prose_tui.viewmodel.statement_clock import StatementClock, StatementTime
from prose_tui.viewmodel.view_change import TraceRepaint, Touch, ValueChange, ViewChange
from prose_tui.viewmodel.program_trace import FailureMarks, ProgramAnnotator, ProgramTrace

__all__ = ["ExplorerModel", "LivePlace", "Moment", "MomentFocus", "Moved", "PreparedRead", "StatementTime", "Touch",
           "ValueChange", "ViewChange", "failure_line", "newest_binding", "prepare_read", "trace_as_shown", "when_text"]

_WRITES = (EventKind.STATEMENT_COMPLETED, EventKind.BINDING_WRITTEN)
HISTORY_DELAY = 0.4
"""Seconds after a live change before a snapshot run's history (timeline) catches up: after
the change is painted, and once for a burst of changes. With a journal recording the run's
changes the painter builds it from the record instead (``Panes.journal_recorded``)."""


@dataclass(frozen=True, slots=True)
class Moment:
    """The moment under the cursor. ``index`` is 0-based (``Event.seq``), ``last`` the last
    index; ``time`` the event's time (``None`` where unknown), ``approximate`` when it was
    reconstructed from file times; ``status``/``reason`` the run's status as of then."""

    live: bool
    index: int
    last: int
    time: datetime | None
    status: RunStatus
    reason: str
    approximate: bool = False

    def label(self, today: datetime | None = None) -> str:
        """``as of event 41 of 0–85 · 14:02:11`` (the date too where it is not today; ``≈``
        before a reconstructed time)."""
        when = ""
        if self.time is not None:
            when = f" · {when_text(self.time, today, approximate=self.approximate)}"
        return f"as of event {self.index} of 0–{self.last}{when}"


@dataclass(frozen=True, slots=True)
class Moved:
    """The result of a history key: ``moved`` or not, and ``message`` for the user."""

    moved: bool
    message: str = ""


@dataclass(frozen=True, slots=True)
class PreparedRead:
    """A run's full read with the parts of showing it that cost O(events) done already, on
    the thread that read it (``prepare_read``): a log's history (``history``) and where its
    time went up to its last event (``clock``), an event log's program annotated from it
    (``annotator``, when it has a program file); ``None`` where there is none (a snapshot's
    history is a journal replay or a reconstruction, built in a worker after it is shown).
    ``ExplorerModel.show`` takes them for ``run`` (that object) only."""

    run: Run
    history: PreparedHistory | None
    clock: StatementClock | None
    annotator: ProgramAnnotator | None = None
    memo: CursorMemo | None = None  # a failed log's history index, for its first step back

    @property
    def program(self) -> list[TraceLine] | None:
        """The lines the trace shows for the run when its program is annotated from its log
        (``annotator.lines``), else ``None`` (the run's own trace)."""
        annotator = self.annotator
        return annotator.lines if annotator is not None and annotator.line_of else None


MEMO_AHEAD_EVENTS = 10_000
"""A failed log run with at least this many events gets its history index from its reader
(``prepare_read``); another log this long has it built in a worker at its first move
(``index_wanted``); a shorter one builds it at the first step back in a few milliseconds."""


def prepare_read(run: Run) -> PreparedRead:
    """What ``ExplorerModel.show(run)`` would work out over every event, worked out now, on
    any thread (the run's reader, before the run is handed over): it reads no model state.
    100,000 events: about 0.15 s, which the UI thread spent while a live change waited."""
    history = prepare_history(run)
    wait_turn()  # in a background read (the reader's): a live change goes first (foreground.py)
    clock = None
    if history is not None:
        events = history.history.events
        clock = StatementClock()
        for _start, end in in_turns(len(events)):  # a slice at a time: a live change goes first
            clock.count(events, end)
        clock.advance(events, len(events))
        wait_turn()
    annotator = None
    if run.format in (RunFormat.EVENT_LOG, RunFormat.CONTRACT) and run.program_text and run.trace:
        # Mapped over a copy of the log: shown, it follows the run's own list (grown or changed
        # in place since) where the two differ (``ProgramAnnotator.update``); 100,000 steps
        # took the UI thread 0.6-1.1 s.
        annotator = ProgramAnnotator(run.program_text)
        annotator.update(list(run.trace), None)
    memo = None
    if history is not None and run.status is RunStatus.FAILED and len(history.history.events) >= MEMO_AHEAD_EVENTS:
        # A failed run is stepped through from its end: its history's index and the trace
        # folded as of its last event (one pass over the events and one over the lines,
        # 0.35-0.6 s of the UI thread at 100,000 at the first step back) are built here, for
        # failed runs alone (about 0.25 KB per event while it is shown).
        wait_turn()
        memo = index_history(run, history.history)
    return PreparedRead(run, history, clock, annotator, memo)


def _index_of_line(lines: list[TraceLine], line: int) -> int | None:
    """The index in ``lines`` of the trace line numbered ``line`` (``TraceLine.line``), or
    ``None``. A trace numbered from 1 without gaps (an event log's, a snapshot's) holds it at
    ``line - 1``, looked at first; other traces are looked through (a 100,000-line trace:
    27 ms in Python, on each step through a failed run's history)."""
    at = line - 1
    if 0 <= at < len(lines) and lines[at].line == line:
        return at
    return next((i for i, t in enumerate(lines) if t.line == line), None)


def failure_line(lines: list[TraceLine]) -> int:
    """The index a failed run's trace cursor rests on until (or without) its failure event
    in the history: the first line marked failed, else the last line (0 for no lines)."""
    return next((i for i, t in enumerate(lines) if t.state is StatementState.FAILED), max(0, len(lines) - 1))


class ExplorerModel:
    """The explorer's state. ``journal`` feeds history replay of snapshot runs; ``workspace``
    (optional for tests) says which part of a run a changed file is and which reads are full."""

    def __init__(self, journal: Journal | None = None, *, workspace: Workspace | None = None,
                 follow_on_start: bool = True) -> None:
        self.nav = HistoryNavigator(journal)
        self.workspace = workspace
        self.follow_on_start = follow_on_start  # the config's: a run opens following its executing statement
        self.run: Run | None = None
        self.loaded_run: Path | None = None  # the run whose full read (not a summary) is on screen
        self.viewer_follows_writes = True  # until the user picks something to read
        self.opened_on_failure: Path | None = None
        self._status_seen: RunStatus | None = None  # the shown run's status at the last ``touch`` (a run may change in place)
        self.raw_log = False  # event-log runs: the raw log instead of the annotated program
        self.line_of: dict[int, int] = {}  # log line -> program line while the program is shown
        self.banner: str | None = None  # why the trace is the raw state file, when it is
        self._annotators: list[ProgramAnnotator | None] = [None, None]  # the live log's, a frozen moment's
        self._marks = FailureMarks()
        self._failures: tuple[tuple, list[Failure]] = ((), [])  # (key, the run's failures, events placed)
        self.failure_shown: int | None = None  # the line (as shown) the run's failure is marked on
        self._pending: set[int] | None = None  # run.trace indexes live deltas changed since trace_lines
        self._delta_noted = False  # a live delta changed the run's own trace list since the trace was repainted
        self._trace_shown: list[TraceLine] | None = None  # the list the trace widget holds (trace_repaint)
        self.lines_changed: set[int] | None = None  # what trace_lines changed in the list it returned before
        self.values: dict[Path, ValueWindow] = {}  # binding values the last live delta read (take_value)
        self._fallback: tuple[tuple | None, tuple[list[TraceLine], str | None]] = (None, ([], None))
        self.live_place: LivePlace | None = None  # the live view to restore when the cursor goes live
        self._clock: StatementClock | None = None  # statement_times carried forward
        # newest_binding_now's answer for (view, live, position, sizes): a status tick
        # repaints the strip without a change on disk (500 bindings: 2-5 ms each time).
        self._newest: tuple[Run, tuple, Binding | None] | None = None

    # -- the run ------------------------------------------------------------------------------
    def touch(self, run: Run | None, changed: set[Path] | None, binding_only: bool | None = None) -> Touch:
        """Take ``run`` as the shown run; say what the change touches (``changed``: the files
        a live change wrote; ``binding_only``: only binding files, found from the workspace
        when not given). A different run resets the follow policy and the cursor (it starts
        live) and is not loaded until its full read is shown (``shown``).

        The follow policy (the one place it is decided): a run opens following its executing
        statement (``follow_on_start``), except a failed run, which opens on its failure; a
        shown run seen failed for the first time (the read after its placeholder, or a live
        run that just failed) stops following, so nothing moves the cursor off the failure;
        a failed run that runs again (resumed) follows again."""
        if binding_only is None:
            workspace = self.workspace
            binding_only = run is not None and changed is not None and workspace is not None and all(
                workspace.part_of(run.path, p) is Part.BINDING for p in changed)
        same = run is not None and self.run is not None and run.path == self.run.path
        if run is None or not same:
            self.loaded_run = None
        if run is None or self.run is None or run.trace is not self.run.trace:
            self._pending = None  # another trace list: the views derived from it start again
        was_failed = same and self.run is not None and self.run.status is RunStatus.FAILED
        self.run = run
        follow: bool | None = None
        if not same:
            self.viewer_follows_writes = True
            self.live_place = None
            follow = self.follow_on_start
        failed = run is not None and run.status is RunStatus.FAILED and not was_failed
        if failed:
            follow = False
        elif same and self._status_seen is RunStatus.FAILED and run is not None and run.status is RunStatus.RUNNING:
            follow = self.follow_on_start  # resumed (a VM went on after the failure): followed again
        self._status_seen = run.status if run is not None else None
        return Touch(same=same, live=same and changed is not None, only_bindings=same and changed is not None and binding_only,
                     follow=follow, failed=failed)

    def is_full_read(self, run: Run) -> bool:
        """``run`` is the workspace's full read of its path (a summary or placeholder is another object)."""
        workspace = self.workspace
        return workspace is not None and run.path in workspace.detailed and workspace.runs.get(run.path) is run

    def value_after(self, touch: Touch, changed: set[Path] | None, shown: Path | None) -> ValueChange:
        """The value pane after ``touch`` (``shown``: the file it shows): a newly shown run
        shows its newest binding; live, a binding just written replaces the one shown while
        the viewer follows writes, and the file shown is read again when it changed."""
        run = self.run
        if run is None or not touch.same:
            return ValueChange("show", newest_binding(run) if run is not None else None)
        if not self.nav.live:
            return ValueChange("keep")
        newest = newest_binding(run, changed) if self.viewer_follows_writes else None
        if newest is not None and newest.path != shown:
            return ValueChange("show", newest)
        if shown is not None and changed and shown in changed:
            return ValueChange("reload", next((b for b in run.bindings if b.path == shown), None))
        return ValueChange("keep")

    def note_delta(self, delta: Delta) -> None:
        """A live delta is about to be shown: remember which trace lines it changed, so the
        program view and the failure marks follow them (``trace_lines``) instead of the trace."""
        run = self.run
        if run is None or delta.run.path != run.path:
            return
        self.values = dict(delta.values)
        self._delta_noted = True
        if delta.trace_lines is None or delta.run.trace is not run.trace:
            self._pending = None
        elif self._pending is not None:
            self._pending |= delta.trace_lines

    def take_value(self, path: Path | None) -> ValueWindow | None:
        """The start of ``path``'s value as the last live delta read it (once), else ``None``."""
        return self.values.pop(path, None) if path is not None else None

    # -- the record of what changed for the views ----------------------------------------------
    def show(self, run: Run | None, changed: set[Path] | None = None, *, value_shown: Path | None = None,
             prepared: PreparedRead | None = None) -> ViewChange:
        """Show ``run`` (a read of it, or a live change: ``changed`` are the files it wrote);
        ``value_shown``: the file the value pane shows. Loads a log's history now (it grows by
        its new events), or says another is built off the UI thread (``history_later``: a
        journal replay or a reconstruction reads the disk) and taken with ``adopt_history``.
        ``prepared``: ``prepare_read(run)`` for this run object, done by its reader: its
        history and statement times are taken, extended by what the run appended since."""
        touch = self.touch(run, changed)
        self._newest = None  # a read or a change: the run may have changed in place
        later: float | None = None
        if prepared is not None and (prepared.run is not run or run is None):
            prepared = None  # prepared for another read
        if prepared is not None and prepared.annotator is not None:
            self._annotators[0] = prepared.annotator  # the live log's (``_annotator``), taken as it is
        if self.history_elsewhere():
            # A journal replay or a reconstruction (disk): built off the UI thread, after a
            # live change once the change is painted (HISTORY_DELAY), for a run read at once.
            later = HISTORY_DELAY if touch.live else 0.0
            self.nav.switch(run)
        elif prepared is not None and run is not None and prepared.history is not None:
            keep_prepared(run, prepared.history)  # history_of(run) extends it from here
            self.load_history()
            if prepared.clock is not None and self.nav.history is prepared.history.history:
                self._clock = prepared.clock  # statement_times carries on from its last event
            if prepared.memo is not None:
                self.nav.take_memo(prepared.memo)
        else:
            self.load_history()
        if run is None:
            return replace(self.repaint(), touch=touch, value=ValueChange("show"))
        change = self.repaint(only_bindings=touch.only_bindings)
        failure_cursor = self.failure_index(self._trace_shown or []) if touch.failed else None
        value = self.value_after(touch, changed, value_shown)
        if value.action == "show":
            shown = value.binding.path if value.binding is not None else None
            value = replace(value, window=self.take_value(shown) if changed is not None else None)
        elif value.action == "reload":
            value = replace(value, window=self.take_value(value_shown))
        return replace(change, history_later=later, touch=touch, failure_cursor=failure_cursor, value=value,
                       full_read=self.is_full_read(run))

    def apply(self, delta: Delta, *, value_shown: Path | None = None,
              prepared: PreparedRead | None = None) -> ViewChange | None:
        """A live delta (merged, from the live worker): ``None`` when it is not the run shown
        (its run list row alone changes); a status tick (no file changed, the same read) is
        ``header_only``; else what ``show`` says, the trace repainting the lines it names
        (``prepared``: as ``show``'s, a delta of a full read not shown yet brings it)."""
        current = self.run
        if current is None or delta.run.path != current.path:
            return None
        self.note_delta(delta)  # the program view and failure marks follow these lines
        if not delta.paths and delta.run is current:
            return ViewChange(run=delta.run, header_only=True)
        return self.show(delta.run, set(delta.paths), value_shown=value_shown, prepared=prepared)

    def repaint(self, *, only_bindings: bool = False) -> ViewChange:
        """Every pane as of the history cursor (the run itself when live); ``only_bindings``:
        the trace and the call stack are left as they are (unless a live delta changed trace
        lines since the trace was last repainted)."""
        run = self.run
        if run is None:
            return ViewChange(run=None, trace=self.trace_repaint(), stack=True, events=[], position=0)
        view = self.view() or run
        trace = self.trace_repaint(only_noted=only_bindings)
        return ViewChange(run=run, view=view, trace=trace, stack=not only_bindings, events=self.nav.events,
                          position=self.nav.position)

    def trace_repaint(self, *, only_noted: bool = False) -> TraceRepaint | None:
        """What the trace widget does now (the one place it is decided): a new list to show,
        rows of the list it holds to repaint, or nothing (``None``). The run's own trace list
        is grown or re-stated in place by the live worker: its rows are repainted only after
        a live delta (``note_delta``) while the cursor is live. ``only_noted``: only that."""
        shown = self._trace_shown
        if only_noted:
            run = self.run
            if not (self._delta_noted and self.nav.live and run is not None and shown is run.trace and self._pending):
                return None
            noted_rows, self._pending = self._pending, set()
            self._delta_noted = False
            return TraceRepaint(shown, new=False, rows=noted_rows)
        noted, self._delta_noted = self._delta_noted, False
        lines = self.trace_lines()
        if lines is shown:
            own = self.run is not None and lines is (self.view() or self.run).trace
            rows = self.lines_changed
            if (own and not (noted and self.nav.live)) or (rows is not None and not rows):
                return None
            return TraceRepaint(lines, new=False, rows=rows)
        if shown is not None and lines == shown:
            return None  # the same lines in another list: the widget keeps the one it holds
        self._trace_shown = lines
        return TraceRepaint(lines, new=True)

    def rows_prepended(self) -> None:
        """Older rows were put before the run's own trace list (a database's window paged
        back): the trace repaints all of it on the next ``repaint``."""
        self._pending = None
        self._delta_noted = True

    def load_history(self) -> None:
        """The shown run's history, built on this thread (``HistoryNavigator.load``)."""
        self.nav.load(self.run)

    def adopt_history(self, run: Run, history: History) -> bool:
        """Take ``history``, built off the UI thread for ``run`` (``nav.build``); ``False``
        (not taken) when another read of the run, or another run, is shown now: a history
        built from a summary must not replace the full read's (``history_elsewhere`` then
        says whether to build it again)."""
        if self.run is not run:
            return False
        self.nav.adopt(run, history)
        return True

    def history_elsewhere(self) -> bool:
        """Whether the shown run's history is built off the UI thread (a journal replay or
        a reconstruction reads the disk), not here at once (a log's)."""
        return self.run is not None and not extends_cheaply(self.run)

    def view(self) -> Run | None:
        return self.nav.view(self.run) if self.run is not None else None

    def moment(self) -> Moment | None:
        """The cursor's moment, ``None`` without a run or events."""
        events = self.nav.events
        if self.run is None or not events:
            return None
        index = self.nav.position
        event = events[index]
        view = self.view() or self.run
        return Moment(live=self.nav.live, index=index, last=len(events) - 1, time=event.time,
                      approximate=event.approximate,
                      status=view.status, reason=view.status_reason)

    def failure_to_open_on(self) -> FailureContext | None:
        """For a failed run seen for the first time (once per run): its first failure, to open
        on (report and statement) while the cursor stays live, so the run reads as failed."""
        run = self.run
        if run is None or run.status is not RunStatus.FAILED or self.opened_on_failure == run.path:
            return None
        history = self.nav.history
        index = self.failure_event()
        if history is None or index is None:
            return None
        self.opened_on_failure = run.path
        try:
            return failure_context(run, history, index)
        except Exception:  # a failure that cannot be explained must not stop the run opening
            return None

    def newest_binding_now(self) -> Binding | None:
        """The binding written last as of the cursor: live, the one the run wrote last
        (``model.write_order.newest_binding``: its record, not file times, which a clone scrambles); at a
        past event, the one the latest ``binding_written`` event up to it names. Kept until the
        next ``show`` (a read or a live change) while the view, the cursor and the run's sizes
        stay the same."""
        view = self.view()
        if view is None:
            return None
        live = self.nav.live
        key = (live, None if live else self.nav.position, len(view.bindings), len(view.events), len(view.trace))
        memo = self._newest
        if memo is not None and memo[0] is view and memo[1] == key:
            return memo[2]  # nothing changed since: a status tick, a repaint of the strip
        newest = newest_binding(view) if live else binding_written_last(self.nav.events, view.bindings,
                                                                         self.nav.position)
        self._newest = (view, key, newest)
        return newest

    # -- the trace ---------------------------------------------------------------------------------
    def trace_lines(self) -> list[TraceLine]:
        """The trace as of the cursor: the run's lines, or an event-log run's program annotated
        from its log (unless ``raw_log``), or the raw state file when nothing parsed (``banner``
        says why); lines whose binding records a failure are marked. Sets ``line_of``."""
        run = self.run
        if run is None:
            return []
        view = self.view() or run
        if view.trace:
            lines, self.banner = view.trace, None
        elif view is not run and run.trace:
            # A past moment before the state file's first parsed revision (the journal took in
            # the run's bindings first): the run had no statements yet. Today's file shown raw
            # would be another moment's text under a false "nothing parsed" warning.
            name = run.state_file.name if run.state_file is not None else "the state file"
            lines, self.banner = [], f"no statements yet as of this event: {name} had not been written"
        else:
            lines, self.banner = self._fallback_trace(run)
        # What changed in view.trace since the last call (live deltas), when it is the run's
        # own list; the program view and the failure marks then cost what changed.
        changed: set[int] | None = None
        if view.trace is run.trace:
            changed, self._pending = self._pending, set()
        self.line_of = {}
        if view.trace and not self.raw_log and (annotator := self._annotator(view)) is not None:
            changed = annotator.update(view.trace, changed)
            if annotator.line_of:
                lines, self.line_of = annotator.lines, annotator.line_of
            else:
                changed = None
        elif lines is not view.trace:
            changed = None
        marked, self.lines_changed = self._marks.apply(lines, view, changed)
        marked, self.lines_changed = self._mark_failure(marked, view, self.lines_changed)
        return marked

    # -- the run's failures (one model: model.failure, events placed by history.failure_events) ----
    def failures(self) -> list[Failure]:
        """The run's failed attempts in history order, each with its event in the shown
        history; computed once per run read and history length."""
        run, history = self.run, self.nav.history
        if run is None:
            return []
        key = (id(run), id(history), len(history.events) if history is not None else -1, run.status)
        if self._failures[0] != key:
            try:
                found = failure_events(run, history) if history is not None else run_failures(run)
            except Exception:  # a failure that cannot be explained must not stop the run showing
                found = []
            self._failures = (key, found)
        return self._failures[1]

    def failure_event(self) -> int | None:
        """Where ``!`` goes and a failed run opens: the history's first failure nothing
        retried (``History.first_failure``), else the model's failure that ended the run,
        else its first failed attempt (one a later attempt recovered: a Reactor node that
        rendered again); ``None`` for a run with none."""
        run, history = self.run, self.nav.history
        if run is None or history is None:
            return None
        first = history.first_failure()
        if first is not None:
            return first
        found = self.failures()
        failure = ending(run, found) or (found[0] if found else None)
        return failure.event if failure is not None else None

    def _failure_as_of_cursor(self, view: Run) -> Failure | None:
        if view.status is not RunStatus.FAILED or self.run is None:
            return None
        found = self.failures()
        if self.nav.live:
            return ending(self.run, found)
        here = self.nav.position
        return next((f for f in reversed(found) if f.event is not None and f.event <= here), None)

    def _mark_failure(self, lines: list[TraceLine], view: Run,
                      changed: set[int] | None) -> tuple[list[TraceLine], set[int] | None]:
        """The line the run's failure is on, marked ✗ with the first line of its error (a
        statement left ``RETRYING (attempt 3/3)`` under ``status: failed`` is the failure),
        as of the cursor; sets ``failure_shown``. ``lines`` itself when there is none."""
        self.failure_shown = None
        failure = self._failure_as_of_cursor(view)
        if failure is None or failure.line is None or self.unmatched(failure.line):
            return lines, changed
        shown = self.line_of.get(failure.line, failure.line)
        index = _index_of_line(lines, shown)
        if index is None:
            return lines, changed
        self.failure_shown = shown
        t = lines[index]
        words = first_line(failure.error, 160)
        attempt = f" (attempt {failure.attempt})" if failure.attempt else ""
        if t.state is StatementState.FAILED:  # already ✗ with the VM's own words
            return lines, changed
        note = f"✗ failed{attempt}" + (f": {words}" if words else "")
        out = list(lines)
        out[index] = TraceLine(line=t.line, text=t.text, state=StatementState.FAILED, note=note, binding=t.binding,
                               attempt=t.attempt, max_attempts=t.max_attempts, step=t.step, failure=t.failure)
        return out, None

    def failure_index(self, lines: list[TraceLine]) -> int:
        """The index in ``lines`` a failed run's trace cursor rests on: the line its failure
        is marked on, else ``failure_line``."""
        if self.failure_shown is not None:
            found = _index_of_line(lines, self.failure_shown)
            if found is not None:
                return found
        return failure_line(lines)

    def shown_line(self, line: int) -> int:
        """Trace line ``line`` numbered as the trace shows it: the program line a log line
        annotates while the program is shown, else ``line`` (one numbering everywhere)."""
        return self.line_of.get(line, line)

    def unmatched(self, line: int) -> bool:
        """While the program is shown: log line ``line`` was matched to no program statement."""
        return bool(self.line_of) and line not in self.line_of

    def trace_index(self, line: int, lines: list[TraceLine]) -> int | None:
        """The index in ``lines`` (as shown) of trace line ``line``; a log line number while
        the program is shown means the program line it annotates. ``None``: not shown (yet)."""
        if self.unmatched(line):
            return None  # not the program line that happens to have its number
        line = self.line_of.get(line, line)
        if 0 < line <= len(lines) and lines[line - 1].line == line:
            return line - 1  # a log read whole: line n is the n-th (100,000 lines: no walk per step)
        return next((i for i, t in enumerate(lines) if t.line == line), None)

    def toggle_raw_log(self) -> bool:
        """Switch an event-log (or contract) run with a program file between the program
        annotated from the log and the raw log; False (nothing changes) for other runs."""
        run = self.run
        if run is None or run.format not in (RunFormat.EVENT_LOG, RunFormat.CONTRACT) or run.program_path is None:
            return False
        self.raw_log = not self.raw_log
        return True

    def _fallback_trace(self, run: Run) -> tuple[list[TraceLine], str | None]:
        """The raw state file (or program) of a run with no parsed trace: as the workspace's
        reader read it with the run (``Workspace.raw_trace``), else (no workspace, or a run it
        did not read) read here, once per change."""
        key = (run.path, run.state_mtime, run.encrypted)
        if self._fallback[0] != key:
            kept = self.workspace.raw_trace(run) if self.workspace is not None else None
            self._fallback = (key, kept if kept is not None else backend_or_default(run).raw_trace(run))
        return self._fallback[1]

    def frame_target(self, frame: Frame) -> tuple[Binding | None, TraceLine | None] | None:
        """Enter on a call-stack frame: the newest binding in its scope and its block's line in
        the trace as of the cursor (each ``None`` where there is none); ``None`` without a run."""
        view = self.view()
        if view is None:
            return None
        newest = newest_binding(view, where=lambda b: b.execution_id == frame.execution_id)
        block = next((t for t in view.trace if t.text.strip().startswith(f"block {frame.block}")), None)
        return newest, block

    def program_view(self, view: Run) -> ProgramTrace | None:
        """An event-log or contract run's program annotated from its log, when its program
        file was read with the run (``Run.program_text``; the view reads no file)."""
        annotator = self._annotator(view)
        if annotator is None:
            return None
        annotator.update(view.trace, None if annotator.log is not view.trace else set())
        return annotator.result()

    def _annotator(self, view: Run) -> ProgramAnnotator | None:
        """The annotator following ``view``'s log (one for the live run, one for a frozen
        moment); ``None`` for runs without an event log or a program text."""
        if view.format not in (RunFormat.EVENT_LOG, RunFormat.CONTRACT):
            return None
        run = self.run
        text = view.program_text or (run.program_text if run is not None and run.path == view.path else None)
        if not text:
            return None
        slot = 0 if run is not None and view.trace is run.trace else 1
        annotator = self._annotators[slot]
        if annotator is None or not (annotator.program is text or annotator.program == text):
            annotator = self._annotators[slot] = ProgramAnnotator(text)
        return annotator

    # -- the moment under a frozen cursor -----------------------------------------------------------
    def moment_focus(self) -> MomentFocus | None:
        """Where the trace cursor and the value pane go at the frozen moment (see
        ``MomentFocus``); ``None`` when live or without events. Never content from a later
        event: a binding written again after the cursor is shown as the event's details."""
        run, history = self.run, self.nav.history
        if run is None or history is None or self.nav.live or not self.nav.events:
            return None
        events, index = self.nav.events, self.nav.position
        event = events[index]
        view = self.view() or run
        own = history.refs[index].trace_line if index < len(history.refs) else None
        if own is None and event.name:  # a write no annotation names (a scoped result__3): its statement
            own = statement_writing(view.trace, event.name)
        line = own if own is not None else next(
            (history.refs[i].trace_line for i in range(index, -1, -1)
             if i < len(history.refs) and history.refs[i].trace_line is not None), None)
        binding = None
        rewritten: int | None = None
        if event.kind in _WRITES and event.name:
            binding = next((b for b in view.bindings if b.exists and not b.encrypted
                            and event.name in (b.name, b.path.stem)), None)
            rewritten = next((e.seq for e in events[index + 1:] if e.kind in _WRITES and e.name == event.name), None)
            if rewritten is not None:
                binding = None  # its file holds the later write
        title = f"Event {index} · {event.kind.value.replace('_', ' ')}"
        return MomentFocus(line=line, binding=binding, title=title,
                           details=event_details(event, self.shown_line(line) if line is not None else None, rewritten,
                                                 self.workspace.clock() if self.workspace is not None else None))


    def remember_live(self, place: LivePlace) -> None:
        """Keep ``place`` (the live view) when the cursor is about to leave live; a cursor
        already frozen keeps the place it left."""
        if self.nav.live:
            self.live_place = place

    def take_live_place(self) -> LivePlace | None:
        """The live view to restore, once, when the cursor is live again (``None`` otherwise)."""
        if not self.nav.live:
            return None
        place, self.live_place = self.live_place, None
        return place

    # -- history moves -----------------------------------------------------------------------------
    def index_wanted(self) -> int:
        """The events the next move of the history cursor would index on the calling thread
        first (``0``: none, or too few to matter): a log of ``MEMO_AHEAD_EVENTS`` events or more
        whose index is not built yet. The screen builds it in a worker (``history.index_history``
        on ``run`` and ``nav.history``), hands it over (``take_index``), then moves."""
        return self.nav.memo_wanted(self.run, MEMO_AHEAD_EVENTS) if self.run is not None else 0

    def take_index(self, memo: CursorMemo) -> bool:
        """Use ``memo`` (``index_history`` of the run shown) for its history's moves; ``False``
        when another run or another read of it is shown now."""
        return memo.run is self.run and self.nav.take_memo(memo)

    def step(self, delta: int) -> Moved:
        return Moved(self.nav.step(delta), "This run has no events to step through")

    def start(self) -> Moved:
        return Moved(self.nav.to_start(), "This run has no events to step through")

    def live(self) -> Moved:
        self.nav.go_live()
        return Moved(True)

    def to(self, index: int) -> Moved:
        return Moved(self.nav.move_to(index), "This run has no events to step through")

    def problem(self, forward: bool) -> Moved:
        found = self.nav.next_problem(forward)
        return Moved(found is not None, f"No {'later' if forward else 'earlier'} failure or retry")

    def first_failure(self) -> Moved:
        """``!``: the cursor on the run's failure (``failure_event``). Moved also when the
        cursor was already there: the screen shows the failure either way
        (``failure_at_cursor``)."""
        index = self.failure_event()
        return Moved(index is not None and self.nav.move_to(index), "This run has no failure")

    def failure_at_cursor(self) -> FailureContext | None:
        """What the failure at the cursor's event had around it (live: at the last event),
        whatever kind of event the model placed it on; ``None`` without one."""
        run, history = self.run, self.nav.history
        if run is None or history is None or not history.events:
            return None
        index = self.nav.position
        if not any(f.event == index for f in self.failures()) and history.events[index].kind not in (
                EventKind.STATEMENT_FAILED, EventKind.RUN_ERRORED, EventKind.RECEIPT_FAILED):
            return None
        try:
            return failure_context(run, history, index)
        except Exception:  # a failure that cannot be explained must not stop the explorer
            return None

    def failure_here(self) -> FailureContext | None:
        return self.nav.failure_here(self.run) if self.run is not None else None

    # -- where the time went -----------------------------------------------------------------------
    def statement_times(self, upto: int | None = None) -> list[StatementTime]:
        """Seconds per statement up to the cursor, slowest first: each start (or retry) runs
        until the next event with a time; times that run backwards count as 0.

        Following a live run this costs what was appended since the last call, and a step
        through the history what it stepped over (``StatementClock`` carries on from where it
        stopped, forward or back, while the history is the same list)."""
        events = self.nav.events
        end = (self.nav.position if upto is None else upto) + 1
        clock = self._clock
        if clock is None or not clock.same_events(events):
            clock = self._clock = StatementClock()
        return clock.advance(events, end)


def trace_as_shown(run: Run, at: int | None = None, journal: Journal | None = None) -> list[TraceLine]:
    """The trace the explorer shows for ``run`` as of event ``at`` (``None``: live): an
    event-log run's program annotated from its log, failed bindings and the run's failure
    marked. What an export carries, so it marks what the explorer marks (issue 28)."""
    model = ExplorerModel(journal)
    model.touch(run, None)
    model.load_history()
    if at is not None:
        model.nav.move_to(at)
    return model.trace_lines()
