"""The explorer screen: run list, trace, call stack, bindings/agents and value, kept live.

Wide terminals show all five panes; below ``NARROW_WIDTH`` columns one pane is shown at a
time (the pane bar says which; ``1``-``5`` and Tab switch), which keeps every pane usable at
80x24. Data flows one way: the ``Workspace`` reads disk, this screen hands runs to widgets.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from prose_tui.backends.common.status import age
from prose_tui.backends.filesystem.folder import fallback_trace
from prose_tui.history import Journal
from prose_tui.live.workspace import Part, Workspace
from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.tui.glyphs import STATUS_BADGE
from prose_tui.tui.navigator import HistoryNavigator
from prose_tui.tui.screens.history_keys import HISTORY_BINDINGS, HistoryActions
from prose_tui.tui.screens.live_updates import LiveUpdates
from prose_tui.tui.targets import Target, binding_target, resolve_trace_binding
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.pane_bar import PaneBar
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.search_bar import SearchBar
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

NARROW_WIDTH = 110
PANES = [("Runs", "runs-pane", RunList), ("Trace", "trace-pane", TraceView), ("Stack", "stack-pane", CallStackView),
         ("Data", "data-pane", BindingTree), ("Value", "value-pane", ValueViewer), ("History", "history-pane", Timeline)]
STATUS_TICK = 5.0
HISTORY_DELAY = 0.4  # seconds after a live change before the history (timeline) catches up


class ExplorerScreen(LiveUpdates, HistoryActions, Screen[None]):
    """The main screen. ``workspace`` is read in a worker; ``watch`` turns live updates on.

    Ready signals (for tests and tools driving the screen; poll them between event-loop turns):
    ``reads_done`` counts finished reads of the run list (the start-up read, then each rescan);
    ``loaded_run`` is the shown run's path once its full read (not a summary, a placeholder or
    a partial narration file) is on the widgets, and ``None`` while the shown run loads.
    """

    BINDINGS = [
        Binding("tab", "cycle_pane(1)", "Next pane"),
        Binding("shift+tab", "cycle_pane(-1)", "Previous pane", show=False),
        *[Binding(str(i + 1), f"pane({i})", f"{name} pane", show=False) for i, (name, _, _) in enumerate(PANES)],
        Binding("f", "toggle_follow", "Follow"),
        Binding("slash", "search", "Search"),
        Binding("n", "search_again(False)", "Next match", show=False),
        Binding("N", "search_again(True)", "Previous match", show=False),
        Binding("ctrl+r", "rescan", "Rescan runs", show=False),
        *HISTORY_BINDINGS,
    ]
    HELP_GROUP = "Panes & live"
    AUTO_FOCUS = None

    def __init__(self, workspace: Workspace, *, watch: bool = True, initial: Path | None = None,
                 journal: Journal | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.live = watch
        self.initial = initial
        self.current_run: Run | None = None
        self.loaded_run: Path | None = None
        self.reads_done = 0
        self.active = 0
        self.watcher_state = "watch off" if not watch else "starting watcher"
        self.search_term = ""
        self._stop = asyncio.Event()
        self.journal = journal
        self.nav = HistoryNavigator(journal)
        self.viewer_follows_writes = True  # until the user picks something to read
        self._history_timer = None
        self._fallback_key: tuple | None = None
        self._fallback_value = ([], None)
        self._head_text: Text | None = None
        self._banner: str | None = None

    # -- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield PaneBar([name for name, _, _ in PANES], id="pane-bar")
        with Horizontal(id="main"):
            with Vertical(id="runs-pane", classes="pane"):
                yield RunList(id="runs")
            with Vertical(id="center"):
                with Vertical(id="trace-pane", classes="pane"):
                    yield Static(id="run-head")
                    yield TraceView(id="trace")
                with Vertical(id="history-pane", classes="pane"):
                    yield Timeline(id="timeline")
            with Vertical(id="side"):
                with Vertical(id="stack-pane", classes="pane"):
                    yield CallStackView(id="stack")
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
        titles = {"runs-pane": "Runs", "trace-pane": "Trace", "stack-pane": "Call stack", "data-pane": "Bindings · agents", "value-pane": "Value", "history-pane": "History"}
        for pane_id, title in titles.items():
            self.query_one(f"#{pane_id}").border_title = title
        self._layout()
        self._update_status()
        self._scan()
        self.set_interval(STATUS_TICK, self._tick)

    def on_resize(self) -> None:
        if self.query("#runs-pane"):
            self._layout()

    @property
    def narrow(self) -> bool:
        return self.size.width < NARROW_WIDTH

    def _layout(self) -> None:
        self.set_class(self.narrow, "narrow")
        for i, (_, pane_id, _) in enumerate(PANES):
            pane = self.query_one(f"#{pane_id}")
            pane.set_class(i == self.active, "-active")
            pane.display = (not self.narrow) or i == self.active
        self.query_one("#side").display = (not self.narrow) or self.active in (2, 3, 4)
        self.query_one("#center").display = (not self.narrow) or self.active in (1, 5)
        self.query_one(PaneBar).set_active(self.active)

    def _pane_widget(self, index: int):
        return self.query_one(PANES[index][2])

    def activate(self, index: int, *, focus: bool = True) -> None:
        """Make pane ``index`` active (shown in the narrow layout) and focus its widget."""
        self.active = index % len(PANES)
        self._layout()
        if focus:
            self._pane_widget(self.active).focus()

    def on_descendant_focus(self, event) -> None:
        for i, (_, pane_id, _) in enumerate(PANES):
            if any(a.id == pane_id for a in event.widget.ancestors_with_self):
                if i != self.active:
                    self.active = i
                    self._layout()
                return

    def on_pane_bar_pane_clicked(self, event: PaneBar.PaneClicked) -> None:
        self.activate(event.index)

    # -- showing a run -------------------------------------------------------------------------------
    def on_run_list_run_chosen(self, event: RunList.RunChosen) -> None:
        self.open_run_at(event.path)

    def open_run_at(self, path: Path) -> None:
        """Show the run at ``path``: its summary at once, then all of it once read."""
        run = self.workspace.runs.get(path) or next((r for r in self.query_one(RunList).runs if r.path == path), None)
        self.show_run(run)
        if path not in self.workspace.detailed:
            self.open_in_full(path)

    def show_run(self, run: Run | None, *, changed: set[Path] | None = None) -> None:
        """Show ``run`` in every pane; ``changed`` are the files that changed (live update)."""
        self.loaded_run = None
        self._show_run(run, changed)
        if run is not None and self._is_full_read(run):
            self.loaded_run = run.path

    def _is_full_read(self, run: Run) -> bool:
        """``run`` is the workspace's full read of its path (a summary or placeholder is another object)."""
        return run.path in self.workspace.detailed and self.workspace.runs.get(run.path) is run

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "scan" and event.state is WorkerState.SUCCESS:
            self.reads_done += 1

    def _show_run(self, run: Run | None, changed: set[Path] | None) -> None:
        same = run is not None and self.current_run is not None and run.path == self.current_run.path
        self.current_run = run
        if same and changed is not None:
            # The panes show the run (or keep their frozen moment); the history and its count of
            # new events catch up just after, off the hot path.
            self._history_later()
        else:
            self.nav.load(run)
        viewer = self.query_one(ValueViewer)
        if run is None:
            self.refresh_view()
            viewer.show_target(None)
            return
        if not same:
            self.viewer_follows_writes = True
            self.query_one(TraceView).set_following(True)
        self.refresh_view(only_bindings=same and changed is not None
                          and all(self.workspace.part_of(run.path, p) is Part.BINDING for p in changed))
        if not same:
            viewer.show_target(_newest_binding(run, None))
        elif self.nav.live:
            newest = _newest_binding(run, changed) if self.viewer_follows_writes else None
            if newest is not None and (viewer.target is None or viewer.target.path != newest.path):
                viewer.show_target(newest)
            elif viewer.target is not None and viewer.target.path is not None and changed and viewer.target.path in changed:
                fresh = next((b for b in run.bindings if b.path == viewer.target.path), None)
                # The header may have changed length: read the value with the new binding's offset.
                viewer.reload(target=binding_target(fresh, run) if fresh is not None and viewer.target.binding else None)

    def _history_later(self) -> None:
        if self._history_timer is None:
            self._history_timer = self.set_timer(HISTORY_DELAY, self._history_now)

    def _history_now(self) -> None:
        self._history_timer = None
        self.nav.load(self.current_run)
        self.refresh_view(only_bindings=True)

    def refresh_view(self, *, only_bindings: bool = False) -> None:
        """Render the current run as of the history cursor (the run itself when live)."""
        run = self.current_run
        trace = self.query_one(TraceView)
        if run is None:
            trace.set_lines([])
            self.query_one(CallStackView).set_frames([])
            self.query_one(BindingTree).set_run(None)
            self.query_one(Timeline).set_events([], 0)
            self._show_head(None)
            return
        view = self.nav.view(run)
        if not only_bindings:
            lines, self._banner = (view.trace, None) if view.trace else self._fallback(run)
            if lines != trace.lines:
                trace.set_lines(lines)
            stack = self.query_one(CallStackView)
            if view.call_stack != stack.frames or not stack.frames:
                stack.set_frames(view.call_stack)
        tree = self.query_one(BindingTree)
        if tree.shape_of(view) != tree.shape:
            tree.set_run(view)
        timeline = self.query_one(Timeline)
        if timeline.events is not self.nav.events or timeline.cursor != self.nav.position:
            timeline.set_events(self.nav.events, self.nav.position)
        self._show_head(run)

    def _fallback(self, run: Run):
        """The raw state file (or program) of a run with no parsed trace, read once per change."""
        key = (run.path, run.state_mtime, run.encrypted)
        if self._fallback_key != key:
            self._fallback_key, self._fallback_value = key, fallback_trace(run)
        return self._fallback_value

    def show_target(self, target) -> None:
        self.query_one(ValueViewer).show_target(target)

    def show_trace_line(self, line: int) -> None:
        """Put the trace cursor on trace line ``line`` (stops following)."""
        trace = self.query_one(TraceView)
        for i, t in enumerate(trace.lines):
            if t.line == line:
                trace.set_following(False)
                trace.move_cursor(i)
                return

    def on_timeline_cursor_moved(self, event: Timeline.CursorMoved) -> None:
        self.nav.move_to(event.index)
        self.refresh_view()
        self._show_failure_if_any()

    def _show_head(self, run: Run | None) -> None:
        head = Text(no_wrap=False)
        if run is not None:
            badge, style = STATUS_BADGE[run.status]
            head.append(badge, style)
            head.append(f" {run.id}", "bold")
            head.append(f"  {program_name(run.program)}  {run.format.value}", "dim")
            head.append(f"\n{run.status_reason}", "italic")
            if run.metrics:
                head.append("\n" + " · ".join(f"{k} {v:,.4g}" for k, v in sorted(run.metrics.items())), "cyan")
            for warning in run.warnings[:2]:
                head.append(f"\n⚠ {warning}", "yellow")
            if self._banner:
                head.append(f"\n⚠ {self._banner}", "yellow")
        if head != self._head_text:
            self._head_text = head
            self.query_one("#run-head", Static).update(head)
        self._update_titles()
        self._update_status()

    def _update_titles(self) -> None:
        trace = self.query_one(TraceView)
        pane = self.query_one("#trace-pane")
        nav = self.nav
        if not nav.live:
            event = nav.events[nav.position]
            when = f" {event.time:%H:%M:%S}" if event.time else ""
            pane.border_title = f"Trace · at event {nav.position + 1}/{len(nav.events)}{when}"
            pane.border_subtitle = f"{nav.pending} new events · }} to follow" if nav.pending else "} to follow"
        else:
            pane.border_title = "Trace · following" if trace.following else "Trace · paused (f: follow)"
            pane.border_subtitle = None
        history = self.query_one("#history-pane")
        note = f" · {nav.history.origin}" if nav.history and nav.events else ""
        history.border_title = f"History ({len(nav.events)}){note}" + ("" if nav.live else " · frozen")
        history.border_subtitle = nav.history.note if nav.history and nav.history.origin != "log" and nav.events else None

    def _update_status(self) -> None:
        run = self.current_run
        changed = "—"
        if run is not None:
            observed = self.workspace.observed.get(run.path)
            changed = age(observed or run.updated, self.workspace.clock())
        self.query_one(StatusLine).show(run, last_change=changed, watcher=self.watcher_state,
                                        following=self.query_one(TraceView).following, pending=self.nav.pending)

    # -- trace and value ---------------------------------------------------------------------------
    def on_trace_view_binding_requested(self, event: TraceView.BindingRequested) -> None:
        if self.current_run is None:
            return
        binding = resolve_trace_binding(self.current_run, event.path, event.line.text)
        if binding is None:
            what = f"'{event.line.note}' names no binding file" if event.line.note else f"line {event.line.line} wrote no binding"
            self.notify(what, severity="information", markup=False)
            return
        self.viewer_follows_writes = False
        self.query_one(BindingTree).select_binding_path(binding.path)
        self.query_one(ValueViewer).show_target(binding_target(binding, self.current_run))
        if self.narrow:
            self.activate(4)

    def on_trace_view_follow_changed(self, event: TraceView.FollowChanged) -> None:
        self._update_titles()
        self._update_status()

    def on_binding_tree_target_chosen(self, event: BindingTree.TargetChosen) -> None:
        if self.query_one(BindingTree).has_focus:
            self.viewer_follows_writes = False  # the user picked it; stop switching to new writes
        self.query_one(ValueViewer).show_target(event.target)

    # -- actions ----------------------------------------------------------------------------------------
    def action_cycle_pane(self, step: int) -> None:
        self.activate(self.active + step)

    def action_pane(self, index: int) -> None:
        self.activate(index)

    def action_toggle_follow(self) -> None:
        trace = self.query_one(TraceView)
        trace.set_following(not trace.following)
        self.notify("Following the executing statement" if trace.following else "Follow off: the trace stays where you are", markup=False)

    def action_search(self) -> None:
        self.query_one(SearchBar).open(PANES[self.active][0])

    def on_search_bar_search_submitted(self, event: SearchBar.SearchSubmitted) -> None:
        self.search_term = event.term
        self._pane_widget(self.active).focus()
        self.action_search_again(False)

    def on_search_bar_search_closed(self, event: SearchBar.SearchClosed) -> None:
        self._pane_widget(self.active).focus()

    def action_search_again(self, backwards: bool) -> None:
        if not self.search_term:
            self.action_search()
            return
        if not self._pane_widget(self.active).search(self.search_term, backwards=backwards):
            self.notify(f"no match for '{self.search_term}' in {PANES[self.active][0]}", severity="warning", markup=False)



def _newest_binding(run: Run, changed: set[Path] | None) -> Target | None:
    """The most recently written binding (among ``changed`` when given), as a viewer target."""
    candidates = [b for b in run.bindings if b.exists and not b.encrypted and b.mtime is not None
                  and (changed is None or b.path in changed)]
    if not candidates:
        return None
    return binding_target(max(candidates, key=lambda b: (b.mtime, b.name)), run)
