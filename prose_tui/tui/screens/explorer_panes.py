"""The explorer's painter: the model's record of what changed, put on the widgets.

``Panes`` is owned by ``ExplorerScreen`` (which lays the panes out and maps keys) and sees
it only as a ``PanesHost``. ``paint`` hands each widget its part of a ``ViewChange``
(``viewmodel.view_change``), which the model returns for a run shown (``show_run``), a live
delta (``show_delta``) or a history move (``refresh``): the model decides what to repaint,
the painter never does. It also keeps the header, titles, strip and status line (``head``,
``titles``, ``strip``, ``status``), puts the trace cursor and the value pane on the moment
under the history cursor and restores the live view on return (``remember_live``,
``to_moment``), builds a snapshot run's history in a worker (``history_pending`` is the
ready signal), and puts a failure's report and statement on screen (``failure``).
``PANES`` names the panes in key order (``1``..``6``).

The panes the compact layout hides at start (``LAZY_PANES``: history, call stack, bindings,
value) are composed once first shown or once the first screen is out (``ExplorerScreen``);
until then the painter keeps what the value pane is to show (``value_target``) and paints
the rest from the model when they come (``rest_ready``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text
from textual.app import App
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from prose_tui.backends.common.foreground import wait_turn
from prose_tui.backends.common.status import age
from prose_tui.history import FailureContext, History
from prose_tui.live.workspace import Workspace
from prose_tui.backends.common.contained import OUTSIDE_RUN
from prose_tui.model import Backend, Binding, Delta, Frame, Run, RunStatus, TraceLine, ValueWindow
from prose_tui.viewmodel.explorer_model import ExplorerModel, LivePlace, PreparedRead, prepare_read, when_text
from prose_tui.viewmodel.steps import Steps
from prose_tui.viewmodel.view_change import TraceRepaint, ValueChange, ViewChange
from prose_tui.tui.heap import HeapKeeper
from prose_tui.tui.screens.history_keys import failure_markdown
from prose_tui.tui.targets import Target, binding_target, resolve_trace_binding
from prose_tui.tui.widgets.context_strip import FIRST_LINE_BYTES, ContextStrip, first_line, line_of
from prose_tui.tui.widgets.repaint import set_border, show_text
from prose_tui.tui.widgets.run_header import RunHeader, header_text
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.trace_layout import TraceLayout
from prose_tui.tui.widgets.trace_view import TraceView

if TYPE_CHECKING:
    from prose_tui.tui.widgets.binding_tree import BindingTree
    from prose_tui.tui.widgets.call_stack import CallStackView
    from prose_tui.tui.widgets.node_table import NodeTable
    from prose_tui.tui.widgets.timeline import Timeline
    from prose_tui.tui.widgets.value_viewer import ValueViewer

# (name, container id, the type name of the widget keys go to: a selector, ``query_one(name)``).
# The lazy panes' widget modules (and Textual's DataTable and Tree under them) are imported
# when those panes are composed, not at start (issue 33); ``pane_widget_classes`` names them.
PANES = [("Runs", "runs-pane", "RunList"), ("Trace", "trace-pane", "TraceView"), ("Stack", "stack-pane", "CallStackView"),
         ("Data", "data-pane", "BindingTree"), ("Value", "value-pane", "ValueViewer"), ("History", "history-pane", "Timeline")]


def pane_widget_classes() -> list[type[Widget]]:
    """The class of each pane's widget (``PANES`` order), importing the lazy panes' modules."""
    from prose_tui.tui.widgets.binding_tree import BindingTree
    from prose_tui.tui.widgets.call_stack import CallStackView
    from prose_tui.tui.widgets.run_list import RunList
    from prose_tui.tui.widgets.timeline import Timeline
    from prose_tui.tui.widgets.value_viewer import ValueViewer

    return [RunList, TraceView, CallStackView, BindingTree, ValueViewer, Timeline]
TRACE, STACK, VALUE = 1, 2, 4
# The panes whose widgets are composed when first shown (or behind the first screen): the
# compact layout (80x24) shows the trace and the strip alone at start (issue 33).
LAZY_PANES = ("history-pane", "stack-pane", "data-pane", "value-pane")
# Seconds a live change of a journaled run waits for its record before its history is built
# anyway (a change the journal keeps nothing of: no record comes). A record comes 5-30 ms
# after the change's frame.
RECORD_WAIT = 2.0


@dataclass(frozen=True, slots=True)
class PaneWidgets:
    """The widgets the painter draws on at every size, found once when the screen is
    composed; ``frames``: each pane's container by id (``PANES``), for its border title."""

    trace: TraceView
    header: RunHeader
    strip: ContextStrip
    status: StatusLine
    frames: dict[str, Widget]

    @classmethod
    def of(cls, screen: Widget) -> PaneWidgets:
        """The widgets ``ExplorerScreen.compose`` mounted in ``screen``."""
        return cls(trace=screen.query_one(TraceView), header=screen.query_one(RunHeader),
                   strip=screen.query_one(ContextStrip), status=screen.query_one(StatusLine),
                   frames={pane_id: screen.query_one(f"#{pane_id}") for _, pane_id, _ in PANES})


@dataclass(frozen=True, slots=True)
class RestWidgets:
    """The widgets of ``LAZY_PANES``, once composed (``ExplorerScreen.compose_rest``)."""

    stack: CallStackView
    nodes: NodeTable
    constructs: Static
    tree: BindingTree
    viewer: ValueViewer
    timeline: Timeline
    time_summary: Static

    @classmethod
    def of(cls, screen: Widget) -> RestWidgets:
        """The widgets of the lazy panes mounted in ``screen`` (``NoMatches`` before)."""
        from prose_tui.tui.widgets.binding_tree import BindingTree
        from prose_tui.tui.widgets.call_stack import CallStackView
        from prose_tui.tui.widgets.node_table import NodeTable
        from prose_tui.tui.widgets.timeline import Timeline
        from prose_tui.tui.widgets.value_viewer import ValueViewer

        return cls(stack=screen.query_one(CallStackView), nodes=screen.query_one(NodeTable),
                   constructs=screen.query_one("#constructs", Static), tree=screen.query_one(BindingTree),
                   viewer=screen.query_one(ValueViewer), timeline=screen.query_one(Timeline),
                   time_summary=screen.query_one("#time-summary", Static))


@dataclass(frozen=True, slots=True)
class Prepared:
    """A run's full read with what painting it costs per line or event done already, on the
    thread that read it (``Panes.prepare``): the model's part (``read``: its history and
    statement times), its trace laid out for the trace's width then (``trace``) and its
    history's steps (``steps``), each ``None`` where there is none."""

    read: PreparedRead
    trace: TraceLayout | None
    steps: Steps | None


PREPARED_KEPT = 2  # runs whose prepared full read waits to be shown (the newest)


class PanesHost(Protocol):
    """What the painter uses of the screen that lays the panes out: the layout (``compact``,
    ``zoomed``, ``active`` pane), the trace's ``breadcrumb``, the status line's
    ``watcher_state``, whether the lazy panes are there (``rest_composed``), why no run is
    shown (``gone``), the ``heap`` keeper, ``first_screen_shown`` (a run on screen), and
    ``bring_up`` (a pane an action filled), ``notify``, timers and a worker (the history's)."""

    @property
    def compact(self) -> bool: ...
    @property
    def breadcrumb(self) -> str: ...
    @property
    def watcher_state(self) -> str: ...
    @property
    def rest_composed(self) -> bool: ...
    zoomed: bool
    active: int
    heap: HeapKeeper

    def gone(self) -> str | None: ...
    def first_screen_shown(self) -> None: ...
    def bring_up(self, index: int) -> None: ...
    def notify(self, message: str, *, severity: Any = ..., markup: bool = ...) -> None: ...
    def call_after_refresh(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...
    def call_later(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...
    def set_timer(self, delay: float, callback: Any = ...) -> Timer: ...
    def run_worker(self, work: Any, name: str | None = ..., group: str = ..., description: str = ...,
                   exit_on_error: bool = ..., start: bool = ..., exclusive: bool = ..., thread: bool = ...) -> Any: ...
    @property
    def app(self) -> App[Any]: ...


class Panes:
    """Renders ``model`` on the widgets ``widgets()`` finds once the screen is composed, for
    ``screen`` (the narrow ``PanesHost``); ``workspace`` gives clocks, ages and file parts."""

    def __init__(self, screen: PanesHost, model: ExplorerModel, workspace: Workspace, *,
                 widgets: Callable[[], PaneWidgets]) -> None:
        self.screen = screen
        self.model = model
        self.workspace = workspace
        self._find = widgets
        self.head_text = Text()  # the run header as shown
        self._history_waiting = False  # the history's build, waiting for its timer (history_pending)
        self._history_building = False  # the history being built in a worker
        self._history_again = False  # a change came while it was built: build it again after
        # A live change of a journaled run is built into the history from the journal's
        # record of it (``journal_recorded``), not on a timer; the live feed says whether
        # records come (a journal sink is on).
        self.history_on_record = False
        self.indexing = 0  # events of the history being indexed for a move (the status line says so)
        self._history_stale = False  # a live change shown, its record not built from yet
        self._journal_ahead = False  # a record came before the change it records was shown
        self._record_timer: Timer | None = None  # ``RECORD_WAIT`` for the first change still unrecorded
        self._widgets: PaneWidgets | None = None
        self._rest: RestWidgets | None = None
        # What the value pane shows while it is not composed: its target and the start of
        # its value as read with a live change (shown when the pane comes).
        self._value: tuple[Target | None, ValueWindow | None] = (None, None)
        # The strip's binding line per binding version (``_line_key``), read in a worker or
        # taken from a live delta's value window: the UI thread reads no binding for it.
        self._value_lines: dict[tuple[Path, int, int, float | None], str] = {}
        self._lines_reading: set[tuple[Path, int, int, float | None]] = set()
        # Full reads prepared by their readers (``prepare``), by run folder, until shown.
        self._prepared: dict[Path, Prepared] = {}
        self._prepared_lock = threading.Lock()
        self._steps: Steps | None = None  # the shown history's steps, while the history pane is not composed

    @property
    def w(self) -> PaneWidgets:
        """The widgets painted, found on the first paint once the screen is composed (a
        database's first page may choose a run before the screen's start)."""
        if self._widgets is None:
            self._widgets = self._find()  # NoMatches while not composed (or torn down)
        return self._widgets

    @property
    def rest(self) -> RestWidgets | None:
        """The lazy panes' widgets, ``None`` until they are composed (``LAZY_PANES``)."""
        if self._rest is None and self.screen.rest_composed:
            self._rest = RestWidgets.of(self.screen)  # type: ignore[arg-type]
        return self._rest

    @property
    def value_target(self) -> Target | None:
        """What the value pane shows (or will show once composed)."""
        rest = self.rest
        return rest.viewer.target if rest is not None else self._value[0]

    def show_value(self, target: Target | None, *, prefetched: ValueWindow | None = None) -> None:
        """Show ``target`` in the value pane (kept until the pane is composed)."""
        rest = self.rest
        if rest is None:
            self._value = (target, prefetched)
        else:
            rest.viewer.show_target(target, prefetched=prefetched)

    def rest_ready(self) -> None:
        """The lazy panes were just composed: each shows the moment the others show."""
        rest = self.rest
        if rest is None:
            return
        target, window = self._value
        self._value = (None, None)
        if target is not None:
            rest.viewer.show_target(target, prefetched=window)
        run, view = self.model.run, self.model.view()
        if run is None or view is None:
            return
        self._stack(view)
        rest.tree.show(view)
        events = self.model.nav.events
        rest.timeline.set_events(events, self.model.nav.position, live=run.status is RunStatus.RUNNING,
                                 steps=self._take_steps(events))
        self._time_summary()

    def start(self) -> None:
        """The panes' titles and the status line before anything is read."""
        titles = {"runs-pane": "Runs", "trace-pane": "Trace", "stack-pane": "Call stack", "data-pane": "Bindings · agents",
                  "value-pane": "Value", "history-pane": "History"}
        for pane_id, title in titles.items():
            self.w.frames[pane_id].border_title = title
        self.status()

    def prepare(self, run: Run) -> None:
        """(The thread that read ``run`` in full, before it is handed over: the workspace's
        ``on_full_read``.) Work out what showing it costs per line or event (its history,
        statement times, trace layout, timeline steps), so the UI thread only takes it when
        the run is shown, whichever way it comes (the read's rows, a live delta): a
        100,000-event log's full read took the UI thread 0.3-0.4 s in one go, and a live
        change written then waited behind it (issue 33). Never raises: a run not prepared
        is worked out on the UI thread, as before."""
        try:
            read = prepare_read(run)
            widgets = self._widgets
            width = widgets.trace.content_width if widgets is not None else 0
            shown = read.program if read.program is not None else run.trace  # the lines the trace will show
            wait_turn()  # a live change written meanwhile goes first (backends.common.foreground)
            trace = TraceLayout.of(shown, width) if shown else None
            wait_turn()
            steps = Steps.of(read.history.history.events) if read.history is not None else None
        except Exception:  # an optimisation only: the UI thread does it when this cannot
            return
        runs = self.workspace.runs
        with self._prepared_lock:
            prepared = self._prepared
            for path in [p for p, kept in prepared.items() if p == run.path or runs.get(p) is not kept.read.run]:
                del prepared[path]  # replaced by this read, or by another read since
            prepared[run.path] = Prepared(read, trace, steps)
            while len(prepared) > PREPARED_KEPT:
                del prepared[next(iter(prepared))]

    def _take_prepared(self, run: Run | None) -> Prepared | None:
        """The prepared full read of ``run`` (that object), once; ``None`` when there is none."""
        if run is None:
            return None
        with self._prepared_lock:
            kept = self._prepared.get(run.path)
            if kept is None or kept.read.run is not run:
                return None
            return self._prepared.pop(run.path)

    def show_run(self, run: Run | None, *, changed: set[Path] | None = None) -> None:
        """Show ``run`` in every pane; ``changed`` are the files that changed (live update)."""
        current = self.model.run
        if run is None or current is None or run.path != current.path:
            self._journal_ahead = False  # a record of the run shown before says nothing of this one
        prepared = self._take_prepared(run)
        self.paint(self.model.show(run, changed, value_shown=self._value_shown(),
                                   prepared=prepared.read if prepared is not None else None), prepared)

    def show_delta(self, delta: Delta) -> None:
        """Show one merged live delta of the run shown (its run list row is the feed's)."""
        for path, window in delta.values.items():  # the live worker read their start: the strip's line
            binding = next((b for b in delta.run.bindings if b.path == path), None)
            if binding is not None and binding.value_offset == window.offset:
                self._value_lines[_line_key(binding)] = line_of(window.text[:FIRST_LINE_BYTES])
        # A delta of a full read not shown yet (the first screen of a long log is): it shows
        # that read, as its own rows would have, from what its reader prepared.
        current = self.model.run
        prepared = self._take_prepared(delta.run) if (
            current is not None and delta.run is not current and delta.run.path == current.path) else None
        change = self.model.apply(delta, value_shown=self._value_shown(),
                                  prepared=prepared.read if prepared is not None else None)
        if change is not None:
            self.paint(change, prepared)

    def _value_shown(self) -> Path | None:
        target = self.value_target
        return target.path if target is not None else None

    def paint(self, change: ViewChange, prepared: Prepared | None = None) -> None:
        """Hand each widget its part of ``change`` (the model decided what to repaint);
        ``prepared``: what the run's reader worked out for it (``prepare``), taken where
        it fits (the trace's layout, the timeline's steps)."""
        if change.header_only:
            self.head(change.run)  # a status tick: nothing on disk changed
            return
        if change.history_later is not None:
            self._history_later(change.history_later)
        trace = self.w.trace
        touch = change.touch
        if touch is not None and touch.follow is not None and change.run is not None:
            trace.set_following(touch.follow)
        self._paint_trace(change.trace, prepared.trace if prepared is not None else None)
        run, view = change.run, change.view
        steps = prepared.steps if prepared is not None else None
        rest = self.rest
        if run is None or view is None:
            if rest is not None:
                rest.stack.set_frames([])
                rest.tree.set_run(None)
                rest.timeline.set_events([], 0)
            self.w.strip.show(None, None, None, absent=self.absent())
            self.head(None)
            if change.value is not None:
                self.show_value(None)
            return
        if change.stack:
            self._stack(view)
        if rest is not None:
            rest.tree.show(view)
            timeline = rest.timeline
            live = run.status is RunStatus.RUNNING  # only a run that may grow turns pages with blank rows
            if change.events is not None and (timeline.events is not change.events or timeline.cursor != change.position
                                              or timeline.live != live):
                timeline.set_events(change.events, change.position, live=live,
                                    steps=steps if steps is not None and steps.events is change.events else None)
            self._time_summary()
        elif steps is not None:
            self._steps = steps  # the history pane takes them once composed (rest_ready)
        self.head(run)
        if change.failure_cursor is not None:
            trace.move_cursor(change.failure_cursor)
        if change.value is not None:
            self._paint_value(change.value, run)
        if run.trace or change.full_read:
            self.screen.first_screen_shown()  # the lazy panes are composed after its frame
        if change.full_read:
            self.open_on_failure()
            self.model.loaded_run = run.path
            heap = self.screen.heap
            if heap.frozen != run.path or heap.holding:  # after the frame that shows it
                self.screen.call_after_refresh(heap.run_shown, run.path)

    def _take_steps(self, events: list) -> Steps | None:
        """The prepared steps of ``events`` (that list), once."""
        steps, self._steps = self._steps, None
        return steps if steps is not None and steps.events is events else None

    def _paint_trace(self, repaint: TraceRepaint | None, layout: TraceLayout | None = None) -> None:
        if repaint is None:
            return
        trace = self.w.trace
        if repaint.new:
            trace.set_lines(repaint.lines, layout)
        else:
            trace.lines_changed(repaint.rows)  # the same list grew or was re-stated in place

    def _paint_value(self, value: ValueChange, run: Run) -> None:
        target = self.value_target
        # A binding the live worker read with the change is shown without reading it here.
        if value.action == "show":
            self.show_value(binding_target(value.binding, run) if value.binding is not None else None,
                            prefetched=value.window)
        elif value.action == "reload":
            # The header may have changed length: read the value with the new binding's offset.
            fresh = value.binding if value.binding is not None and target is not None and target.binding else None
            rest = self.rest
            if rest is not None:
                rest.viewer.reload(target=binding_target(fresh, run) if fresh is not None else None,
                                   prefetched=value.window)
            elif fresh is not None:
                self._value = (binding_target(fresh, run), value.window)

    def open_on_failure(self) -> None:
        """A failed run seen for the first time opens on its first failure, once its full read
        and its history are both there (the history may arrive after the read)."""
        run = self.model.run
        if run is not None and self.model.is_full_read(run):
            ctx = self.model.failure_to_open_on()
            if ctx is not None and not self.failure(ctx, bring_up=False):
                self.model.opened_on_failure = None  # its statement is not in the trace yet: again later

    @property
    def history_pending(self) -> bool:
        """A ready signal: the history (timeline, cursor) is about to catch up with a change."""
        return self._history_waiting or self._history_building or self._history_stale

    def journal_recorded(self) -> None:
        """The journal recorded a change of the run shown (``LiveFeed.recorded``, after the
        change's frame): a history waiting for it is built now, in the quiet after that frame;
        a record of a change not shown yet (paced in a stream) is built from once it is."""
        if self._history_stale:
            self._history_later(0.0)
        else:
            self._journal_ahead = True

    def _history_overdue(self) -> None:
        self._record_timer = None
        if self._history_stale:  # no record came (the change wrote nothing to keep): built anyway
            self._history_later(0.0)

    def _history_later(self, delay: float) -> None:
        """Build the shown run's history in a worker after ``delay`` seconds (once for the
        changes meanwhile; again after a build under way, which a change made stale). A
        live change (``delay`` > 0) of a run the journal records waits for its record
        instead (``journal_recorded``), at most ``RECORD_WAIT`` seconds."""
        if delay > 0 and self.history_on_record:
            self._history_stale = True
            if not self._journal_ahead:
                if self._record_timer is None:  # one for the changes waiting: the first one's
                    self._record_timer = self.screen.set_timer(RECORD_WAIT, self._history_overdue)
                return
            delay = 0.0  # recorded already: the worker journaled it before the change was shown
        if self._history_building:
            self._history_again = True
        elif not self._history_waiting:
            self._history_waiting = True
            if delay > 0:
                self.screen.set_timer(delay, self._build_history)
            else:
                self.screen.call_later(self._build_history)

    def _build_history(self) -> None:
        self._history_waiting = False
        self._history_stale = self._journal_ahead = False  # what the journal holds now is built
        if self._record_timer is not None:
            self._record_timer.stop()
            self._record_timer = None
        run = self.model.run
        if run is None:
            return
        self._history_building = True
        # A description of its own: Textual's default is the work's repr, here the whole run's
        # (300-600 KB of text, 7-14 ms of the UI thread per build for 500-2,000 statements).
        self.screen.run_worker(partial(self._history_off_thread, run), name="history", group="history",
                               description="history of the run shown", thread=True, exit_on_error=False)

    def _history_off_thread(self, run: Run) -> None:
        history = self.model.nav.build(run)  # the journal is read here, never on the UI thread
        try:
            self.screen.app.call_from_thread(self._history_built, run, history)
        except RuntimeError:  # the app stopped meanwhile
            pass

    def _history_built(self, run: Run, history: History) -> None:
        self._history_building = False
        if self.model.adopt_history(run, history):
            self.refresh(only_bindings=True)
            self.open_on_failure()
        elif self.model.history_elsewhere():
            self._history_again = True  # built for another read of the run: again, for this one
        if self._history_again:
            self._history_again = False
            self._history_later(0.0)

    def refresh(self, *, only_bindings: bool = False) -> None:
        """Render the current run as of the history cursor (the run itself when live)."""
        self.paint(self.model.repaint(only_bindings=only_bindings))

    def _stack(self, view: Run) -> None:
        has_nodes = bool(view.nodes)
        rest = self.rest
        if rest is not None:
            stack, nodes, constructs = rest.stack, rest.nodes, rest.constructs
            nodes.display, stack.display = has_nodes, not has_nodes
            if has_nodes:
                nodes.set_nodes(view.nodes)
            elif view.call_stack != stack.frames or not stack.frames:
                stack.set_frames(view.call_stack)
            text = Text()
            for c in view.constructs:
                text.append(("\n" if text.plain else "") + f"∥ {c.title}", "bold blue")
                for item in c.items:
                    text.append(f"\n  {item.strip()}", "dim")
            constructs.display = bool(view.constructs)
            show_text(constructs, text)
        pane = self.w.frames["stack-pane"]
        set_border(pane, title=f"Nodes ({len(view.nodes)})" if has_nodes else (
            f"Call stack ({len(view.call_stack)})" + (" · active constructs" if view.constructs else "")))

    def _time_summary(self) -> None:
        rest = self.rest
        if rest is None:
            return
        from prose_tui.tui.widgets.timeline import elapsed  # (loaded with the history pane)

        times = [t for t in self.model.statement_times() if t.seconds > 0]
        text = Text(no_wrap=True, overflow="ellipsis")
        if times:
            text.append("time: ", "dim")
            for i, t in enumerate(times[:6]):
                text.append(("  " if i else "") + t.name, "bold" if i == 0 else "")
                text.append(f" {elapsed(t.seconds)}" + (f"×{t.attempts}" if t.attempts > 1 else ""), "dim")
        box = rest.time_summary
        box.display = bool(times)
        show_text(box, text)

    def remember_live(self) -> None:
        """Before a history move: keep the live view (trace cursor, follow, value) to restore."""
        trace = self.w.trace
        self.model.remember_live(LivePlace(following=trace.following, cursor=trace.cursor, value=self.value_target))

    def to_moment(self) -> bool:
        """After a history move (panes refreshed): at a past event, the trace cursor on its
        statement and the value pane on what that event wrote (or the event itself), its
        failure report at a failure; live again, the live view as it was left. True when a
        failure report was put in the value pane."""
        model = self.model
        trace = self.w.trace
        if model.nav.live:
            place = model.take_live_place()
            if place is None:
                return False
            trace.set_following(place.following)
            if not place.following and trace.lines:
                trace.move_cursor(min(place.cursor, len(trace.lines) - 1))
                self.screen.call_after_refresh(trace.scroll_to_cursor, center=True)
            self.show_value(place.value)
            return False
        focus = model.moment_focus()
        if focus is None:
            return False
        if focus.line is not None:
            self.show_trace_line(focus.line)
        view = model.view()
        if focus.binding is not None and view is not None:
            self.show_value(binding_target(focus.binding, view))
        else:
            self.show_value(Target("section", focus.title, text=focus.details))
        return self.failure_if_any(bring_up=False)

    def show_trace_line(self, line: int) -> bool:
        """Put the trace cursor on trace line ``line`` (stops following); False when the trace
        does not show that line (yet)."""
        trace = self.w.trace
        index = self.model.trace_index(line, trace.lines)
        if index is None:
            return False
        trace.set_following(False)
        trace.move_cursor(index)
        # New lines get their size on the next refresh: scroll to the line once they have.
        self.screen.call_after_refresh(trace.scroll_to_cursor, center=True)
        return True

    def absent(self) -> str | None:
        """Why no run is shown when the chosen one went from disk (``LiveFeed.gone``), else ``None``."""
        return self.screen.gone() if self.model.run is None else None

    def no_runs(self, said: str) -> None:
        """The header says why there is no run to show (``said``: where the explorer looked)."""
        self.w.header.update(Text(said, "yellow"))

    def head(self, run: Run | None) -> None:
        view = (self.model.view() if run is not None and not self.model.nav.live else run) or run
        moment = self.model.moment()
        label = moment.label(self.workspace.clock()) if moment is not None and not moment.live else None
        header = self.w.header
        absent = self.absent() if run is None else None
        header.show(Text(f"⚠ {absent}", "yellow") if absent else
                    header_text(run, view, moment=label, compact=self.screen.compact, banner=self.model.banner),
                    # Rows are kept for live changes from the run's full read on (its show comes
                    # before ``loaded_run`` is set).
                    key=run.path if run is not None and self.model.nav.live
                    and (self.model.loaded_run == run.path or self.model.is_full_read(run)) else None)
        self.head_text = header.shown
        self.titles()
        self.status()
        self.strip()

    def strip(self) -> None:
        strip = self.w.strip
        if not strip.display:
            return
        run = self.model.run
        view = self.model.view() if run is not None else None
        moment = self.model.moment()
        label = None
        if moment is not None and not moment.live:
            event = self.model.nav.events[moment.index]
            when = f" · {when_text(event.time, self.workspace.clock(), approximate=event.approximate)}" if event.time else ""
            label = f"at event {moment.index}{when}: {event.text.strip()}"
        binding = self.model.newest_binding_now()
        line = self._value_line(view, binding) if view is not None and binding is not None else ""
        strip.show(view, binding, label, absent=self.absent(), value_line=line)

    def _value_line(self, view: Run, binding: Binding) -> str:
        """The first line of ``binding``'s value for the strip: known (a live delta's window,
        or read before), else ``""`` while a worker reads it (the strip is shown again then)."""
        if view.backend is Backend.SQLITE:
            return ""  # an SQLite binding's path is the run's state.db: its bytes are no value line
        if binding.outside:
            return OUTSIDE_RUN
        if binding.encrypted or not binding.exists:
            return ""
        key = _line_key(binding)
        known = self._value_lines.get(key)
        if known is None and key not in self._lines_reading:
            self._lines_reading.add(key)
            self.screen.run_worker(partial(self._line_off_thread, key, binding, view.root), name="value_line",
                                   group="value_line", thread=True, exit_on_error=False)
        return known or ""

    def _line_off_thread(self, key: tuple[Path, int, int, float | None], binding: Binding, root: Path | None) -> None:
        line = first_line(binding, root=root)  # the binding is read here, never on the UI thread
        try:
            self.screen.app.call_from_thread(self._line_read, key, line)
        except RuntimeError:  # the app stopped meanwhile
            pass

    def _line_read(self, key: tuple[Path, int, int, float | None], line: str) -> None:
        self._lines_reading.discard(key)
        if len(self._value_lines) >= 256:
            self._value_lines.clear()  # bounded: a long run's older versions are read again if asked
        self._value_lines[key] = line
        if self.model.run is not None:
            self.strip()  # a stale line (the cursor moved on) is kept, not shown: the strip asks by key

    def titles(self) -> None:
        trace = self.w.trace
        pane = self.w.frames["trace-pane"]
        nav = self.model.nav
        moment = self.model.moment()
        if moment is not None and not moment.live:
            title = f"Trace · {moment.label(self.workspace.clock())}"
            subtitle: str | None = f"{nav.pending} new events · }} to follow" if nav.pending else "} to follow"
        else:
            title = "Trace · following" if trace.following else "Trace · paused (f: follow)"
            subtitle = "z zoom" if self.screen.compact else None
        if crumb := self.screen.breadcrumb:
            title = f"{crumb} · {title} · Esc: back"
        if self.model.line_of:
            title = f"{title} · program from the log (L: raw)"
        elif self.model.raw_log:
            title = f"{title} · raw log (L: program)"
        set_border(pane, title=title, subtitle=subtitle)  # unchanged titles: no repaint of the pane
        history = self.w.frames["history-pane"]
        note = f" · {nav.history.origin}" if nav.history and nav.events else ""
        set_border(history, title=f"History ({len(nav.events)}){note}" + ("" if nav.live else " · frozen"),
                   subtitle=nav.history.note if nav.history and nav.history.origin != "log" and nav.events else None)

    def status(self) -> None:
        run = self.model.run
        changed = "—"
        if run is not None:
            observed = self.workspace.observed.get(run.path)
            changed = age(observed or run.updated, self.workspace.clock())
        moment = self.model.moment() if run is not None else None
        view = self.model.view() if moment is not None and not moment.live else run
        as_of = moment.label(self.workspace.clock()) if moment is not None and not moment.live else None
        watcher = " · ".join([self.screen.watcher_state, *self.workspace.source_states()])
        busy = (f"indexing {self.indexing:,} events for the history…", "indexing…") if self.indexing else ()
        self.w.status.show(view, last_change=changed, watcher=watcher,
                                        following=self.w.trace.following, pending=self.model.nav.pending,
                                        as_of=as_of, said_above=self.status_said_above(), absent=self.absent(),
                                        busy=busy)

    def status_said_above(self) -> bool:
        """Whether the run's status and its reason are on screen above the status line: in the
        context strip (compact layout, trace pane), or in the run header atop the trace pane
        (wide layout, unless another pane is zoomed). The status line then leaves both out."""
        screen = self.screen
        if self.w.strip.display:
            return True
        return not screen.compact and (not screen.zoomed or screen.active == TRACE)

    def open_trace_binding(self, line: TraceLine, path: str | None) -> None:
        """Enter on a trace line: the binding it wrote (``path``: run-relative, from its
        annotation) in the value pane, brought up; a note when it wrote none."""
        run = self.model.run
        if run is None:
            return
        binding = resolve_trace_binding(self.model.view() or run, path, line.text)
        if binding is None:
            what = f"'{line.note}' names no binding file" if line.note else f"line {line.line} wrote no binding"
            self.screen.notify(what, severity="information", markup=False)
            return
        self.show_binding(binding, run)
        self.screen.bring_up(VALUE)

    def open_frame(self, frame: Frame) -> None:
        """Enter on a call-stack frame: its newest binding in the value pane, its block in the trace."""
        found, view = self.model.frame_target(frame), self.model.view()
        if found is None or view is None:
            return
        newest, block = found
        if newest is not None:
            self.show_binding(newest, view)
        if block is not None:
            self.show_trace_line(block.line)
        if newest is None and block is None:
            self.screen.notify(f"frame {frame.execution_id}: no bindings and no block line found", markup=False)
            return
        self.screen.bring_up(VALUE if newest is not None else TRACE)

    def show_binding(self, binding: Binding, run: Run) -> None:
        """The user chose ``binding`` (of ``run``): selected in the tree, its value in the
        value pane; the viewer stops switching to newer writes."""
        self.model.viewer_follows_writes = False
        if (rest := self.rest) is not None:
            rest.tree.select_binding_path(binding.path)
        self.show_value(binding_target(binding, run))

    def failure_if_any(self, *, bring_up: bool = True) -> bool:
        """On a failure event: its report in the value pane (brought up where hidden) and its
        statement under the trace cursor; False when the cursor is on no failure."""
        ctx = self.model.failure_here()
        if ctx is not None:
            self.failure(ctx, bring_up=bring_up)
        return ctx is not None

    def failure(self, ctx: FailureContext, *, bring_up: bool) -> bool:
        """The failure report in the value pane and its statement under the trace cursor;
        False when the trace does not show the statement (yet)."""
        self.model.viewer_follows_writes = False
        view = self.model.view()
        failures = [f"{b.name}: {b.failure}" for b in (view.bindings if view else []) if b.failure]
        statement = None
        if ctx.statement is not None:  # numbered and worded as the trace shows it
            shown = self.model.shown_line(ctx.statement.line)
            lines = self.w.trace.lines
            index = self.model.trace_index(ctx.statement.line, lines)
            text = lines[index].text.strip() if index is not None else ctx.statement.text.strip()
            statement = (shown, text)
        self.show_value(Target("section", f"Failure at event {ctx.event.seq}",
                               text=failure_markdown(ctx, failures, statement=statement)))
        shown = ctx.statement is None or self.show_trace_line(ctx.statement.line) or self.model.unmatched(
            ctx.statement.line)  # a log line no program statement matched: the report quotes it, as logged
        if bring_up:
            self.screen.bring_up(VALUE)
        return shown


def _line_key(binding: Binding) -> tuple[Path, int, int, float | None]:
    """One version of a binding file (path, value offset, size in bytes, mtime): its strip line's key."""
    return binding.path, binding.value_offset, binding.bytes, binding.mtime
