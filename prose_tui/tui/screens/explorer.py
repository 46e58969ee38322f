"""The explorer screen: lays out the panes and maps keys; ``ExplorerModel`` decides.

Two layouts, both keeping the trace on screen (lazygit keeps every panel visible):

* wide (``COMPACT_WIDTH`` columns and ``COMPACT_HEIGHT`` rows or more): a dense run list
  (as wide as its rows want, within bounds) | the trace over the history | call stack or
  nodes, bindings and the value. The trace takes whatever width is left.
* compact (smaller): the trace (or the pane ``1``-``6`` chose) over a strip with the
  status reason, the innermost frames and the newest binding. An action that fills
  another pane (``!``, Enter on a trace line or a binding) brings that pane up; Escape
  goes back to the trace.

``z`` zooms the active pane to the full screen and back, at every size. Every pane, the
header and the status line show the moment under the history cursor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from prose_tui.backends.common.status import age
from prose_tui.backends.filesystem.folder import fallback_trace
from prose_tui.history import FailureContext, Journal
from prose_tui.history.stream import extends_cheaply
from prose_tui.live.workspace import Part, Workspace
from prose_tui.model import Run, RunFormat, RunStatus, TraceLine
from prose_tui.tui.explorer_model import ExplorerModel, Moved, mark_failures, newest_binding, when_text
from prose_tui.tui.keys import keyed
from prose_tui.tui.navigator import HistoryNavigator
from prose_tui.tui.screens.history_keys import HISTORY_BINDINGS, failure_markdown
from prose_tui.tui.screens.live_updates import LiveUpdates
from prose_tui.tui.targets import Target, binding_target, resolve_trace_binding
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.context_strip import ContextStrip
from prose_tui.tui.widgets.node_table import NodeTable
from prose_tui.tui.widgets.pane_bar import PaneBar
from prose_tui.tui.widgets.repaint import set_border, show_text
from prose_tui.tui.widgets.run_header import RunHeader, header_text
from prose_tui.tui.widgets.run_list import RunList, preferred_width
from prose_tui.tui.widgets.search_bar import SearchBar
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.timeline import Timeline, elapsed
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

COMPACT_WIDTH = 100
COMPACT_HEIGHT = 28
PANES = [("Runs", "runs-pane", RunList), ("Trace", "trace-pane", TraceView), ("Stack", "stack-pane", CallStackView),
         ("Data", "data-pane", BindingTree), ("Value", "value-pane", ValueViewer), ("History", "history-pane", Timeline)]
TRACE, STACK, VALUE = 1, 2, 4
STATUS_TICK = 5.0
HISTORY_DELAY = 0.4  # seconds after a live change before the history (timeline) catches up


class ExplorerScreen(LiveUpdates, Screen[None]):
    """The main screen. ``workspace`` is read in a worker; ``watch`` turns live updates on.

    Ready signals (for tests and tools driving the screen; poll them between event-loop turns):
    ``reads_done`` counts finished reads of the run list (the start-up read, then each rescan);
    ``first_read_done`` is set once every run is listed and the layout settled after the first read;

    ``loaded_run`` is the path of the run whose full read (not a summary) is on the widgets,
    ``None`` while another run is loading."""

    BINDINGS = keyed([
        Binding("tab", "cycle_pane(1)", "Next pane"),
        Binding("shift+tab", "cycle_pane(-1)", "Previous pane", show=False),
        *[Binding(str(i + 1), f"pane({i})", f"{name} pane", show=False) for i, (name, _, _) in enumerate(PANES)],
        Binding("z", "zoom", "Zoom"),
        Binding("escape", "back", "Back to the trace / unzoom", show=False),
        Binding("f", "toggle_follow", "Follow"),
        Binding("L", "toggle_log", "Program / raw log", show=False),
        Binding("slash", "search", "Search"),
        Binding("n", "search_again(False)", "Next match", show=False),
        Binding("N", "search_again(True)", "Previous match", show=False),
        Binding("ctrl+r", "rescan", "Rescan runs", show=False),
        *HISTORY_BINDINGS,
    ])
    HELP_GROUP = "Panes & live"
    AUTO_FOCUS = None

    def __init__(self, workspace: Workspace, *, watch: bool = True, initial: Path | None = None,
                 journal: Journal | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.live = watch
        self.initial = initial
        self.model = ExplorerModel(journal)
        self.active = TRACE
        self.zoomed = False
        self.reads_done = 0
        self.watcher_state = "watch off" if not watch else "starting watcher"
        self.search_term = ""
        self._stop = asyncio.Event()
        self.journal: Journal | None = journal  # LiveUpdates sets None when journaling fails
        self.loaded_run: Path | None = None
        self.first_read_done = False  # every run listed and the layout settled after the first read
        self._history_timer: Timer | None = None
        self._fallback_key: tuple | None = None
        self._fallback_value: tuple[list[TraceLine], str | None] = ([], None)
        self.head_text = Text()  # the run header as shown
        self._banner: str | None = None
        self._started = False
        self.raw_log = False  # event-log runs: the raw log instead of the annotated program
        self._line_of: dict[int, int] = {}  # log line -> program line while the program is shown

    # -- the model's state, under the names the live path uses ------------------------------------
    @property
    def current_run(self) -> Run | None:
        return self.model.run

    @current_run.setter
    def current_run(self, run: Run | None) -> None:
        self.model.run = run

    @property
    def nav(self) -> HistoryNavigator:
        return self.model.nav

    @property
    def viewer_follows_writes(self) -> bool:
        return self.model.viewer_follows_writes

    @viewer_follows_writes.setter
    def viewer_follows_writes(self, value: bool) -> None:
        self.model.viewer_follows_writes = value

    # -- layout -------------------------------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "scan" and event.state is WorkerState.SUCCESS:
            self.reads_done += 1

    def compose(self) -> ComposeResult:
        yield PaneBar([name for name, _, _ in PANES], id="pane-bar")
        with Horizontal(id="main"):
            with Vertical(id="runs-pane", classes="pane"):
                yield RunList(id="runs")
            with Vertical(id="center"):
                with Vertical(id="trace-pane", classes="pane"):
                    yield RunHeader(id="run-head")
                    yield TraceView(id="trace")
                yield ContextStrip(id="strip")
                with Vertical(id="history-pane", classes="pane"):
                    yield Static(id="time-summary")
                    yield Timeline(id="timeline")
            with Vertical(id="side"):
                with Vertical(id="stack-pane", classes="pane"):
                    yield CallStackView(id="stack")
                    yield NodeTable(id="nodes")
                    yield Static(id="constructs")
                with Vertical(id="data-pane", classes="pane"):
                    yield BindingTree(id="tree")
                with Vertical(id="value-pane", classes="pane"):
                    yield ValueViewer(id="value")
        yield SearchBar()
        yield StatusLine(id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # Children may not be mounted yet when the default screen mounts: start after a refresh.
        self.call_after_refresh(self._start)

    def _start(self) -> None:
        titles = {"runs-pane": "Runs", "trace-pane": "Trace", "stack-pane": "Call stack", "data-pane": "Bindings · agents",
                  "value-pane": "Value", "history-pane": "History"}
        for pane_id, title in titles.items():
            self.query_one(f"#{pane_id}").border_title = title
        self._started = True
        self._layout()
        self._update_status()
        self._scan()
        self.set_interval(getattr(self.app, "poll_interval", STATUS_TICK), self._tick)

    def on_resize(self) -> None:
        if self._started:
            self._layout()

    @property
    def compact(self) -> bool:
        layout = getattr(self.app, "layout_mode", "auto")  # the config file's layout (or --layout)
        if layout in ("narrow", "wide"):
            return layout == "narrow"
        return self.size.width < COMPACT_WIDTH or self.size.height < COMPACT_HEIGHT

    # The narrow layout of earlier versions is the compact one.
    narrow = compact

    def _layout(self) -> None:
        if not self._started or not self.query(PaneBar):
            return  # not composed yet, or being torn down while a worker finishes
        compact, zoomed, active = self.compact, self.zoomed, self.active
        self.set_class(compact, "compact")
        self.set_class(zoomed, "zoomed")
        for i, (_, pane_id, _) in enumerate(PANES):
            pane = self.query_one(f"#{pane_id}")
            pane.set_class(i == active, "-active")
            pane.display = i == active if (compact or zoomed) else True
        side_active = active in (STACK, 3, VALUE)
        self.query_one("#side").display = side_active if (compact or zoomed) else True
        self.query_one("#center").display = (not side_active and active != 0) if (compact or zoomed) else True
        strip = self.query_one(ContextStrip)
        was = strip.display
        strip.display = compact and not zoomed and active == TRACE
        if strip.display and not was:
            self._update_strip()
        runs_pane, side = self.query_one("#runs-pane"), self.query_one("#side")
        if not compact and not zoomed:
            width = self.size.width
            runs = preferred_width(self.query_one(RunList).runs) + 2
            runs_pane.styles.width = max(24, min(runs, width * 22 // 100))
            side.styles.width = max(34, width * 30 // 100)
        else:
            runs_pane.styles.width = side.styles.width = "1fr"
        self.query_one(PaneBar).set_active(active)

    def _pane_widget(self, index: int) -> Widget:
        if index == STACK and self.query_one(NodeTable).display:
            return self.query_one(NodeTable)
        return self.query_one(PANES[index][2])

    def activate(self, index: int, *, focus: bool = True) -> None:
        """Make pane ``index`` active (shown in the compact layout) and focus its widget now,
        so keys typed right after go to it."""
        self.active = index % len(PANES)
        self._layout()
        if focus:
            self.set_focus(self._pane_widget(self.active))

    def on_descendant_focus(self, event) -> None:
        widget = event.widget
        if widget is not self.focused:
            return  # a focus overtaken by a later key (1..6 typed fast)
        if widget is None:
            return
        chain = widget.ancestors_with_self
        for i, (_, pane_id, _) in enumerate(PANES):
            if any(a.id == pane_id for a in chain):
                if i != self.active:
                    self.active = i
                    self._layout()
                return

    def on_pane_bar_pane_clicked(self, event: PaneBar.PaneClicked) -> None:
        self.activate(event.index)

    def bring_up(self, index: int) -> None:
        """Show pane ``index`` because an action filled it (only needed where it is hidden)."""
        if self.compact or self.zoomed:
            self.activate(index)

    # -- showing a run -------------------------------------------------------------------------------
    def on_run_list_run_chosen(self, event: RunList.RunChosen) -> None:
        self.open_run_at(event.path)

    def open_run_at(self, path: Path) -> None:
        """Show the run at ``path``: its summary at once, then all of it once read."""
        run = self.workspace.runs.get(path) or next((r for r in self.query_one(RunList).runs if r.path == path), None)
        if self.loaded_run != path:
            self.loaded_run = None
        self.show_run(run)
        if path not in self.workspace.detailed:
            self.open_in_full(path)

    def open_import(self, parent: Path, handle: str) -> bool:
        """Show the import ``handle`` of the run at ``parent`` as a run of its own."""
        run = self.workspace.runs.get(parent)
        child = next((i for i in (run.imports if run else []) if (i.import_handle or i.id) == handle), None)
        if child is None:
            return False
        self.loaded_run = None
        self.show_run(child)
        self.loaded_run = child.path
        self.activate(TRACE)
        return True

    def show_run(self, run: Run | None, *, changed: set[Path] | None = None) -> None:
        """Show ``run`` in every pane; ``changed`` are the files that changed (live update)."""
        binding_only = run is not None and changed is not None and all(
            self.workspace.part_of(run.path, p) is Part.BINDING for p in changed)
        touch = self.model.touch(run, changed, binding_only)
        if run is None or not touch.same:
            self.loaded_run = None
        if touch.live and not extends_cheaply(run):
            # The panes show the run (or keep their frozen moment); the history and its count of
            # new events catch up just after, off the hot path. A log's history grows by its new
            # events (a few ms): in the same paint, not in a second one.
            self._history_later()
        else:
            self.model.load_history()
        viewer = self.query_one(ValueViewer)
        if run is None:
            self.refresh_view()
            viewer.show_target(None)
            return
        if not touch.same:
            self.viewer_follows_writes = True
            self.query_one(TraceView).set_following(getattr(self.app, "follow_on_start", True))
        self.refresh_view(only_bindings=touch.only_bindings)
        if not touch.same:
            newest = newest_binding(run)
            viewer.show_target(binding_target(newest, run) if newest else None)
        elif self.nav.live:
            newest = newest_binding(run, changed) if self.viewer_follows_writes else None
            if newest is not None and (viewer.target is None or viewer.target.path != newest.path):
                viewer.show_target(binding_target(newest, run))
            elif viewer.target is not None and viewer.target.path is not None and changed and viewer.target.path in changed:
                fresh = next((b for b in run.bindings if b.path == viewer.target.path), None)
                # The header may have changed length: read the value with the new binding's offset.
                viewer.reload(target=binding_target(fresh, run) if fresh is not None and viewer.target.binding else None)
        if self._is_full_read(run):
            self._open_on_failure()
            self.loaded_run = run.path

    def _is_full_read(self, run: Run) -> bool:
        """``run`` is the workspace's full read of its path (a summary or placeholder is another object)."""
        return run.path in self.workspace.detailed and self.workspace.runs.get(run.path) is run

    def _open_on_failure(self) -> None:
        """A failed run seen for the first time opens on its first failure, once its full read
        and its history are both there (the history may arrive after the read)."""
        run = self.current_run
        if run is not None and self._is_full_read(run):
            ctx = self.model.failure_to_open_on()
            if ctx is not None and not self._show_failure(ctx, bring_up=False):
                self.model.opened_on_failure = None  # its statement is not in the trace yet: again later

    @property
    def history_pending(self) -> bool:
        """A ready signal: the history (timeline, cursor) is about to catch up with a change."""
        return self._history_timer is not None

    def _history_later(self) -> None:
        if self._history_timer is None:
            self._history_timer = self.set_timer(HISTORY_DELAY, self._history_now)

    def _history_now(self) -> None:
        self._history_timer = None
        self.model.load_history()
        self.refresh_view(only_bindings=True)
        self._open_on_failure()

    def refresh_view(self, *, only_bindings: bool = False) -> None:
        """Render the current run as of the history cursor (the run itself when live)."""
        run = self.current_run
        trace = self.query_one(TraceView)
        if run is None:
            trace.set_lines([])
            self.query_one(CallStackView).set_frames([])
            self.query_one(BindingTree).set_run(None)
            self.query_one(Timeline).set_events([], 0)
            self.query_one(ContextStrip).show(None, None, None)
            self._show_head(None)
            return
        view = self.model.view() or run
        if not only_bindings:
            lines, self._banner = (view.trace, None) if view.trace else self._fallback(run)
            self._line_of = {}
            if view.trace and not self.raw_log and (annotated := self.model.program_view(view)) is not None:
                lines, self._line_of = annotated.lines, annotated.line_of
            lines = mark_failures(lines, view)
            if lines != trace.lines:
                trace.set_lines(lines)
            self._show_stack(view)
        tree = self.query_one(BindingTree)
        if tree.shape_of(view) != tree.shape:
            tree.set_run(view)
        timeline = self.query_one(Timeline)
        if timeline.events is not self.nav.events or timeline.cursor != self.nav.position:
            timeline.set_events(self.nav.events, self.nav.position)
        self._show_time_summary()
        self._show_head(run)

    def _show_stack(self, view: Run) -> None:
        stack, nodes, constructs = self.query_one(CallStackView), self.query_one(NodeTable), self.query_one("#constructs", Static)
        has_nodes = bool(view.nodes)
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
        pane = self.query_one("#stack-pane")
        set_border(pane, title=f"Nodes ({len(view.nodes)})" if has_nodes else (
            f"Call stack ({len(view.call_stack)})" + (" · active constructs" if view.constructs else "")))

    def _show_time_summary(self) -> None:
        times = [t for t in self.model.statement_times() if t.seconds > 0]
        text = Text(no_wrap=True, overflow="ellipsis")
        if times:
            text.append("time: ", "dim")
            for i, t in enumerate(times[:6]):
                text.append(("  " if i else "") + t.name, "bold" if i == 0 else "")
                text.append(f" {elapsed(t.seconds)}" + (f"×{t.attempts}" if t.attempts > 1 else ""), "dim")
        box = self.query_one("#time-summary", Static)
        box.display = bool(times)
        show_text(box, text)

    def action_toggle_log(self) -> None:
        run = self.current_run
        if run is None or run.format not in (RunFormat.EVENT_LOG, RunFormat.CONTRACT) or run.program_path is None:
            self.notify("This run has no event log beside a program file", markup=False)
            return
        self.raw_log = not self.raw_log
        self.refresh_view()
        self.notify("The raw event log" if self.raw_log else "The program, annotated from the log", markup=False)

    def _fallback(self, run: Run) -> tuple[list[TraceLine], str | None]:
        """The raw state file (or program) of a run with no parsed trace, read once per change."""
        key = (run.path, run.state_mtime, run.encrypted)
        if self._fallback_key != key:
            self._fallback_key, self._fallback_value = key, fallback_trace(run)
        return self._fallback_value

    def show_target(self, target: Target | None) -> None:
        self.query_one(ValueViewer).show_target(target)

    def show_trace_line(self, line: int) -> bool:
        """Put the trace cursor on trace line ``line`` (stops following); False when the trace
        does not show that line (yet)."""
        trace = self.query_one(TraceView)
        line = self._line_of.get(line, line)
        for i, t in enumerate(trace.lines):
            if t.line == line:
                trace.set_following(False)
                trace.move_cursor(i)
                # New lines get their size on the next refresh: scroll to the line once they have.
                self.call_after_refresh(trace.scroll_to_cursor, center=True)
                return True
        return False

    def on_timeline_cursor_moved(self, event: Timeline.CursorMoved) -> None:
        self._moved(self.model.to(event.index))

    def _show_head(self, run: Run | None) -> None:
        view = (self.model.view() if run is not None and not self.nav.live else run) or run
        moment = self.model.moment()
        label = moment.label(self.workspace.clock()) if moment is not None and not moment.live else None
        header = self.query_one(RunHeader)
        header.show(header_text(run, view, moment=label, compact=self.compact, banner=self._banner))
        self.head_text = header.shown
        self._update_titles()
        self._update_status()
        self._update_strip()

    def _update_strip(self) -> None:
        strip = self.query_one(ContextStrip)
        if not strip.display:
            return
        run = self.current_run
        view = self.model.view() if run is not None else None
        moment = self.model.moment()
        label = None
        if moment is not None and not moment.live:
            event = self.nav.events[moment.index]
            when = f" · {when_text(event.time, self.workspace.clock())}" if event.time else ""
            label = f"at event {moment.index}{when}: {event.text.strip()}"
        strip.show(view, self.model.newest_binding_now(), label)

    def _update_titles(self) -> None:
        trace = self.query_one(TraceView)
        pane = self.query_one("#trace-pane")
        nav = self.nav
        moment = self.model.moment()
        if moment is not None and not moment.live:
            title = f"Trace · {moment.label(self.workspace.clock())}"
            subtitle: str | None = f"{nav.pending} new events · }} to follow" if nav.pending else "} to follow"
        else:
            title = "Trace · following" if trace.following else "Trace · paused (f: follow)"
            subtitle = "z zoom" if self.compact else None
        if self._line_of:
            title = f"{title} · program from the log (L: raw)"
        elif self.raw_log:
            title = f"{title} · raw log (L: program)"
        set_border(pane, title=title, subtitle=subtitle)  # unchanged titles: no repaint of the pane
        history = self.query_one("#history-pane")
        note = f" · {nav.history.origin}" if nav.history and nav.events else ""
        set_border(history, title=f"History ({len(nav.events)}){note}" + ("" if nav.live else " · frozen"),
                   subtitle=nav.history.note if nav.history and nav.history.origin != "log" and nav.events else None)

    def _update_status(self) -> None:
        run = self.current_run
        changed = "—"
        if run is not None:
            observed = self.workspace.observed.get(run.path)
            changed = age(observed or run.updated, self.workspace.clock())
        moment = self.model.moment() if run is not None else None
        view = self.model.view() if moment is not None and not moment.live else run
        as_of = moment.label(self.workspace.clock()) if moment is not None and not moment.live else None
        watcher = " · ".join([self.watcher_state, *self.workspace.source_states()])
        self.query_one(StatusLine).show(view, last_change=changed, watcher=watcher,
                                        following=self.query_one(TraceView).following, pending=self.nav.pending,
                                        as_of=as_of, compact=self.compact)

    # -- trace, stack and value ----------------------------------------------------------------------
    def on_trace_view_binding_requested(self, event: TraceView.BindingRequested) -> None:
        if self.current_run is None:
            return
        binding = resolve_trace_binding(self.model.view() or self.current_run, event.path, event.line.text)
        if binding is None:
            what = f"'{event.line.note}' names no binding file" if event.line.note else f"line {event.line.line} wrote no binding"
            self.notify(what, severity="information", markup=False)
            return
        self.viewer_follows_writes = False
        self.query_one(BindingTree).select_binding_path(binding.path)
        self.query_one(ValueViewer).show_target(binding_target(binding, self.current_run))
        self.bring_up(VALUE)

    def on_trace_view_follow_changed(self, event: TraceView.FollowChanged) -> None:
        self._update_titles()
        self._update_status()

    def on_binding_tree_target_chosen(self, event: BindingTree.TargetChosen) -> None:
        if self.query_one(BindingTree).has_focus:
            self.viewer_follows_writes = False  # the user picked it; stop switching to new writes
        self.query_one(ValueViewer).show_target(event.target)
        if event.opened:
            self.bring_up(VALUE)

    def on_binding_tree_import_chosen(self, event: BindingTree.ImportChosen) -> None:
        run = self.current_run
        if run is None or not self.open_import(run.path, event.handle):
            self.notify(f"import {event.handle} cannot be opened as a run", severity="warning", markup=False)

    def on_call_stack_view_frame_chosen(self, event: CallStackView.FrameChosen) -> None:
        """Enter on a frame: its newest binding in the value pane, its block in the trace."""
        view = self.model.view()
        if view is None:
            return
        eid = event.frame.execution_id
        scoped = [b for b in view.bindings if b.execution_id == eid and b.exists]
        if scoped:
            newest = max(scoped, key=lambda b: (b.mtime or 0.0, b.name))
            self.viewer_follows_writes = False
            self.query_one(BindingTree).select_binding_path(newest.path)
            self.show_target(binding_target(newest, view))
        block = next((t for t in view.trace if t.text.strip().startswith(f"block {event.frame.block}")), None)
        if block is not None:
            self.show_trace_line(block.line)
        if not scoped and block is None:
            self.notify(f"frame {eid}: no bindings and no block line found", markup=False)
            return
        self.bring_up(VALUE if scoped else TRACE)

    # -- actions ----------------------------------------------------------------------------------------
    def action_cycle_pane(self, step: int) -> None:
        self.activate(self.active + step)

    def action_pane(self, index: int) -> None:
        self.activate(index)

    def action_zoom(self) -> None:
        self.zoomed = not self.zoomed
        self.activate(self.active)

    def action_back(self) -> None:
        if self.zoomed:
            self.action_zoom()
        elif self.compact and self.active != TRACE:
            self.activate(TRACE)

    def action_toggle_follow(self) -> None:
        trace = self.query_one(TraceView)
        trace.set_following(not trace.following)
        self.notify("Following the executing statement" if trace.following else "Follow off: the trace stays where you are", markup=False)

    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.open(PANES[self.active][0])
        self.set_focus(bar)  # now, not after a refresh: keys typed right after "/" are the query

    def on_search_bar_search_submitted(self, event: SearchBar.SearchSubmitted) -> None:
        self.search_term = event.term
        self.set_focus(self._pane_widget(self.active))
        self.action_search_again(False)
        runs = self.query_one(RunList)
        if self.active == 0:
            total = len(runs.runs)
            self.query_one("#runs-pane").border_title = (f"Runs ({runs.shown_count} of {total} · /{runs.filter})"
                                                         if runs.filter else f"Runs ({total})")

    def on_search_bar_search_closed(self, event: SearchBar.SearchClosed) -> None:
        self.set_focus(self._pane_widget(self.active))

    def action_search_again(self, backwards: bool) -> None:
        if not self.search_term:
            self.action_search()
            return
        if not self._pane_widget(self.active).search(self.search_term, backwards=backwards):  # type: ignore[attr-defined]
            self.notify(f"no match for '{self.search_term}' in {PANES[self.active][0]}", severity="warning", markup=False)

    # -- history --------------------------------------------------------------------------------------
    def _moved(self, moved: Moved) -> None:
        if not moved.moved:
            self.notify(moved.message, severity="information", markup=False)
            return
        self.refresh_view()
        self._show_failure_if_any()

    def action_history_step(self, delta: int) -> None:
        self._moved(self.model.step(delta))

    def action_history_start(self) -> None:
        self._moved(self.model.start())

    def action_history_live(self) -> None:
        self.model.live()
        self.refresh_view()

    def action_history_problem(self, forward: bool) -> None:
        self._moved(self.model.problem(forward))

    def action_history_first_failure(self) -> None:
        self._moved(self.model.first_failure())

    def _show_failure_if_any(self, *, bring_up: bool = True) -> None:
        """On a failure event: its report in the value pane (brought up where hidden) and its
        statement under the trace cursor."""
        ctx = self.model.failure_here()
        if ctx is not None:
            self._show_failure(ctx, bring_up=bring_up)

    def _show_failure(self, ctx: FailureContext, *, bring_up: bool) -> bool:
        """The failure report in the value pane and its statement under the trace cursor;
        False when the trace does not show the statement (yet)."""
        self.viewer_follows_writes = False
        view = self.model.view()
        failures = [f"{b.name}: {b.failure}" for b in (view.bindings if view else []) if b.failure]
        self.show_target(Target("section", f"Failure at event {ctx.event.seq}", text=failure_markdown(ctx, failures)))
        shown = ctx.statement is None or self.show_trace_line(ctx.statement.line)
        if bring_up:
            self.bring_up(VALUE)
        return shown

    # -- after the first read ---------------------------------------------------------------------------
    def _scanned(self, runs: list[Run]) -> None:
        """After the first read: open on the running run's trace (the newest running one), else
        on the newest run's trace; the run list is one key (1) away."""
        super()._scanned(runs)
        if not runs:
            return
        run_list = self.query_one(RunList)
        if self.initial is None or self.initial not in self.workspace.runs:
            running = next((r for r in runs if r.status is RunStatus.RUNNING), None)
            if running is not None and run_list.chosen != running.path and run_list.chosen == getattr(self, "_auto_choice", None):
                run_list.select_path(running.path)
        self._layout()
        self.activate(TRACE)
        self.call_after_refresh(self._settled)

    def _settled(self) -> None:
        """After the first read's layout: a run opened on a failure keeps it in view."""
        trace = self.query_one(TraceView)
        if not trace.following:
            trace.scroll_to_cursor(center=True)
        self.first_read_done = True


__all__ = ["ExplorerScreen", "PANES", "when_text"]
