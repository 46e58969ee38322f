"""The explorer screen: lays out the panes and maps keys. ``ExplorerModel`` decides (the
run, the cursor, the follow policy, what a change touches), ``Panes`` renders it on the
widgets, ``RunFeed`` reads and watches the runs.

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

The compact layout starts with the trace and the strip on screen: the widgets of the panes
it hides (``LAZY_PANES``: history, call stack, bindings, value) are composed when one is
first shown, or just after the frame of the first screen (a run's trace), whichever comes
first, so the first screen pays for the panes it shows (issue 33). The search prompt (a
Textual ``Input``, hidden until ``/``) comes with them; ``/`` typed before composes it at
once, and the keys typed after ``/`` wait for it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import AwaitMount, Widget
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from prose_tui.history import CursorMemo, History, Journal, index_history
from prose_tui.live.workspace import Workspace
from prose_tui.model import Run
from prose_tui.viewmodel.explorer_model import ExplorerModel, Moved, when_text
from prose_tui.tui.heap import HeapKeeper
from prose_tui.tui.keys import keyed
from prose_tui.viewmodel.navigator import HistoryNavigator
from prose_tui.tui.live_inbox import DeltasWaiting
from prose_tui.tui.screens.explorer_feed import RunFeed
from prose_tui.tui.screens.explorer_live import LiveProblem, RunsChanged
from prose_tui.tui.screens.explorer_panes import LAZY_PANES, PANES, STACK, TRACE, VALUE, PaneWidgets, Panes
from prose_tui.tui.screens.history_keys import HISTORY_BINDINGS
from prose_tui.tui.targets import Target
from prose_tui.tui.widgets.context_strip import ContextStrip
from prose_tui.tui.widgets.key_footer import KeyFooter
from prose_tui.tui.widgets.pane_bar import PaneBar
from prose_tui.tui.widgets.repaint import repaint_regions_only
from prose_tui.tui.widgets.run_header import RunHeader
from prose_tui.tui.widgets.run_list import RunList, preferred_width
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.trace_view import TraceView

if TYPE_CHECKING:  # the lazy panes' widgets and the search prompt: imported when composed (issue 33)
    from prose_tui.tui.widgets.binding_tree import BindingTree
    from prose_tui.tui.widgets.call_stack import CallStackView
    from prose_tui.tui.widgets.search_bar import SearchBar
    from prose_tui.tui.widgets.timeline import Timeline

COMPACT_WIDTH = 100
COMPACT_HEIGHT = 28
TRACE_MIN = 80  # the trace pane's width at 80x24: the wide layout gives it no less where it can
SIDE_MIN = 34  # the side column's (call stack, bindings, value) least width
RUNS_FRAME = 4  # the run list pane's border and padding (cells)
STATUS_TICK = 5.0
READERS = ("scan", "detail", "value")  # worker groups that read runs and values (the watcher's never ends)


class ExplorerScreen(Screen[None]):
    """The main screen. ``workspace`` is read in a worker; ``watch`` turns live updates on.

    Ready signals (for tests and tools driving the screen; poll them between event-loop turns):
    ``reads_done`` counts finished reads of the run list (the start-up read, then each rescan);
    ``first_read_done`` is set once every run is listed and the layout settled after the first read;

    ``loaded_run`` is the path of the run whose full read (not a summary) is on the widgets,
    ``None`` while another run is loading; ``rest_composed``: the lazy panes' widgets are
    mounted (``LAZY_PANES``)."""

    BINDINGS = keyed([
        Binding("tab", "cycle_pane(1)", "Next pane"),
        Binding("shift+tab", "cycle_pane(-1)", "Previous pane", show=False),
        *[Binding(str(i + 1), f"pane({i})", f"{name} pane", show=False) for i, (name, _, _) in enumerate(PANES)],
        Binding("z", "zoom", "Zoom"),
        Binding("escape", "back", "Back: unzoom, to the trace, to the run an import was opened from", show=False),
        Binding("f", "toggle_follow", "Follow"),
        Binding("L", "toggle_log", "Program / raw log", show=False),
        # A priority binding: the app runs it before it hands the next key or paste on, so
        # keys typed (or sent over SSH) together with "/" reach the prompt, not the pane.
        Binding("slash", "search", "Search", priority=True),
        Binding("n", "search_again(False)", "Next match", show=False),
        Binding("N", "search_again(True)", "Previous match", show=False),
        Binding("ctrl+r", "rescan", "Rescan runs", show=False),
        *HISTORY_BINDINGS,
    ])
    HELP_GROUP = "Panes & live"
    # The trace has the focus from the start, styled so in the first frame: Textual's default
    # (``None``: the app's "*") focused the run list, which made it the active pane, shown alone
    # at 80x24 until the runs were listed (two layouts, a restyle and frames before the run).
    AUTO_FOCUS = "#trace"

    def __init__(self, workspace: Workspace, *, watch: bool = True, initial: Path | None = None,
                 journal: Journal | None = None) -> None:
        super().__init__()
        repaint_regions_only(self)  # a live change's frame paints the rows it changed (issue 33)
        self.workspace = workspace
        self.model = ExplorerModel(journal, workspace=workspace)  # its follow_on_start is the app's, set on mount
        self.active = TRACE
        self.zoomed = False
        self.reads_done = 0
        self.search_term = ""
        self.first_read_done = False  # every run listed and the layout settled after the first read
        self.panes = Panes(self, self.model, workspace, widgets=lambda: PaneWidgets.of(self))
        self.feed = RunFeed(self, workspace, self.model, self.panes, live=watch, journal=journal, initial=initial)
        self.heap = HeapKeeper()  # no collection during an open, a freeze after it (prose_tui.tui.heap)
        self._started = False
        self._run_list_width = (0, 0)  # (screen width, run list width wanted): it never narrows within one
        self.parents: list[Run] = []  # the runs the imports shown were opened from, outermost first
        self._rest = "absent"  # the lazy panes' widgets: "absent", "mounting", "ready"
        self._when_rest: list[Callable[[], object]] = []  # called once they are ready
        self._rest_after_frame = False  # their compose waits for the first screen's frame
        self._focus_when_ready: int | None = None  # a lazy pane activated while composed
        self._search: SearchBar | None = None  # the search prompt, once composed (with the lazy panes)
        self._search_mount: AwaitMount | None = None  # its mount, while it is mounted later
        self._pane_chosen = False  # the user picked a pane (a key, a click): start-up reads leave it
        # History moves waiting for a long log's index, built in a worker (``_history``): None when none wait.
        self._index_waiting: list[tuple[Callable[[], Moved], Callable[[Moved], None] | None]] | None = None

    # -- the model's and the panes' state, under the names tests and tools use ---------------------
    @property
    def current_run(self) -> Run | None:
        return self.model.run

    @property
    def loaded_run(self) -> Path | None:
        return self.model.loaded_run

    @property
    def nav(self) -> HistoryNavigator:
        return self.model.nav

    @property
    def head_text(self) -> Text:
        """The run header as shown."""
        return self.panes.head_text

    @property
    def history_pending(self) -> bool:
        """A ready signal: the history (timeline, cursor) is about to catch up with a change."""
        return self.panes.history_pending

    def pending(self, run_path: Path | None = None) -> str | None:
        """What is still on its way to the screen, in words, or ``None`` when the panes show
        what was read: the start-up read, a run or value being read (worker groups
        ``READERS``), the history catching up, the full read of the shown run (or
        ``run_path``). A ready signal for tests and the screenshot script."""
        if self.reads_done < 1:
            return "the start-up read"
        if self._rest == "mounting" or (self._rest == "absent" and self._rest_after_frame):
            return "the history, stack, bindings and value panes being composed"
        if any(w.group in READERS and not w.is_finished for w in self.app.workers):
            return "a run being read"
        if self.history_pending:
            return "the history to catch up with the last change"
        run = self.current_run
        want = run_path if run_path is not None else (run.path if run is not None else None)
        if want is not None and self.loaded_run != want:
            return f"the full read of {want} (loaded_run={self.loaded_run}, shown={run.path if run else None})"
        return None

    # -- the feed's state ---------------------------------------------------------------------------
    @property
    def journal(self) -> Journal | None:
        """Where live changes are journaled; ``None`` without one or after journaling failed."""
        return self.feed.journal

    @property
    def watcher_state(self) -> str:
        return self.feed.watcher_state

    def gone(self) -> str | None:
        """Why the run chosen is not shown: its folder went from disk (``LiveFeed.gone``)."""
        live = self.feed.live
        return live.gone.text() if live is not None and live.gone is not None else None

    # -- what the components use of the screen (their hosts: FeedHost, LiveHost, PanesHost) ---------
    @property
    def run_list(self) -> RunList:
        return self.query_one(RunList)

    @property
    def runs_pane(self) -> Widget:
        return self.query_one("#runs-pane")

    @property
    def after_frame(self) -> Callable[[Callable[[], None]], None] | None:
        """``ProseTUI.after_frame`` (a callback once the next frame is out), ``None`` in another app."""
        return getattr(self.app, "after_frame", None)

    # -- layout -------------------------------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "scan" and event.state is WorkerState.SUCCESS:
            self.reads_done += 1

    def compose(self) -> ComposeResult:
        # The classes the first layout sets, set before the panes mount: set after, each
        # restyles every widget below the screen (a tenth of a start's CSS work).
        compact = self._compact_at(self.app.size)
        self.set_class(compact, "compact", update=False)
        # The compact layout shows the trace and the strip: the hidden panes' widgets (and
        # their CSS) come later (``compose_rest``); the wide layout shows them all now.
        rest = {} if compact else self._rest_widgets()
        if not compact:
            self._rest = "ready"
        # Which containers show, set before they mount too: the first frame then lays out
        # the panes of its layout alone, and the layout at start changes nothing (the
        # compact layout's first frame laid out every pane, the next one again without them).
        shown = self._displays(compact)

        def pane(pane_id: str, classes: str = "pane") -> Vertical:
            container = Vertical(id=pane_id, classes=classes)
            container.display = shown[pane_id]
            return container

        yield PaneBar([name for name, _, _ in PANES], id="pane-bar")
        with Horizontal(id="main"):
            with pane("runs-pane"):
                yield RunList(id="runs")
            with pane("center", classes=""):
                with pane("trace-pane", classes="pane -active" if self.active == TRACE else "pane"):
                    yield RunHeader(id="run-head")
                    yield TraceView(id="trace")
                strip = ContextStrip(id="strip")
                strip.display = shown["strip"]
                yield strip
                with pane("history-pane"):
                    yield from rest.get("history-pane", ())
            with pane("side", classes=""):
                for pane_id in ("stack-pane", "data-pane", "value-pane"):
                    with pane(pane_id):
                        yield from rest.get(pane_id, ())
        if not compact:
            from prose_tui.tui.widgets.search_bar import SearchBar

            self._search = SearchBar()
            yield self._search
        yield StatusLine(id="status")
        yield KeyFooter(compact=True)

    @staticmethod
    def _rest_widgets() -> dict[str, list[Widget]]:
        """The widgets of each lazy pane (``LAZY_PANES``), by the pane's id. Their modules
        (and Textual's DataTable and Tree) are imported here, when the panes are composed: the
        compact layout's first screen waits for none of them (issue 33)."""
        from prose_tui.tui.widgets.binding_tree import BindingTree
        from prose_tui.tui.widgets.call_stack import CallStackView
        from prose_tui.tui.widgets.node_table import NodeTable
        from prose_tui.tui.widgets.timeline import Timeline
        from prose_tui.tui.widgets.value_viewer import ValueViewer

        return {"history-pane": [Static(id="time-summary"), Timeline(id="timeline")],
                "stack-pane": [CallStackView(id="stack"), NodeTable(id="nodes"), Static(id="constructs")],
                "data-pane": [BindingTree(id="tree")],
                "value-pane": [ValueViewer(id="value")]}

    @property
    def rest_composed(self) -> bool:
        """Whether the lazy panes' widgets are mounted (``LAZY_PANES``)."""
        return self._rest == "ready"

    def compose_rest(self) -> None:
        """Mount the lazy panes' widgets (once; a no-op when they are there or coming). The
        painter then paints them as of the moment the other panes show (``Panes.rest_ready``)."""
        if self._rest != "absent" or not self.is_attached:
            return
        self._rest = "mounting"
        mounts = [self.query_one(f"#{pane_id}").mount(*widgets) for pane_id, widgets in self._rest_widgets().items()]
        search = self._mount_search()
        if search is not None:
            mounts.append(search)

        async def mounted() -> None:
            for mount in mounts:
                await mount
            if not self.is_attached:
                return
            self._rest = "ready"
            self.panes.rest_ready()
            if self._focus_when_ready is not None:
                index, self._focus_when_ready = self._focus_when_ready, None
                if index == self.active and (widget := self._pane_widget(index)) is not None:
                    self.set_focus(widget)
            callbacks, self._when_rest = self._when_rest, []
            for callback in callbacks:
                callback()

        self.call_later(mounted)

    def _mount_search(self) -> AwaitMount | None:
        """Mount the search prompt unless it is there or coming (``None`` then, once mounted)."""
        if self._search is None:
            from prose_tui.tui.widgets.search_bar import SearchBar

            self._search = SearchBar()
            self._search_mount = self.mount(self._search, before=self.query_one(StatusLine))
        return self._search_mount

    def when_rest_composed(self, callback: Callable[[], object], *, after_frame: bool = False) -> None:
        """Call ``callback()`` once the lazy panes are mounted (now, when they are); they are
        composed now, or after the next frame (``after_frame``: that frame is not delayed)."""
        if self._rest == "ready":
            callback()
            return
        self._when_rest.append(callback)
        if after_frame:
            self.first_screen_shown()
        else:
            self.compose_rest()

    def first_screen_shown(self) -> None:
        """A run is on the widgets (its first screen): the lazy panes are composed just after
        the frame that shows it, not before (their mount would delay that frame)."""
        if self._rest != "absent" or self._rest_after_frame:
            return
        self._rest_after_frame = True
        after_frame = self.after_frame
        if after_frame is not None:
            after_frame(self._compose_rest_soon)  # on the next turn: not inside the frame's hand-out
        else:
            self.call_after_refresh(self.compose_rest)

    def _compose_rest_soon(self) -> None:
        self.call_later(self.compose_rest)

    def on_mount(self) -> None:
        self.model.follow_on_start = getattr(self.app, "follow_on_start", True)
        self.panes.start()  # the titles and the status line before anything read is shown
        self.feed.mounted()  # a database's first page, if read already, is in the first frame
        # Start reading at once, on the reader's thread while Textual draws the first frames
        # (the children are mounted): a start after them waited three frames, one after the
        # first refresh about five (0.4 s under load), before the first byte of a run was read.
        self._hold_heap()
        self.feed.scan()
        self.call_later(self._start)

    def _start(self) -> None:
        self._started = True
        self._layout()
        self.set_interval(getattr(self.app, "poll_interval", STATUS_TICK), self.feed.tick)

    def on_resize(self) -> None:
        if self._started:
            self._layout()

    @property
    def compact(self) -> bool:
        return self._compact_at(self.size)

    def _compact_at(self, size: Size) -> bool:
        layout = getattr(self.app, "layout_mode", "auto")  # the config file's layout (or --layout)
        if layout in ("narrow", "wide"):
            return layout == "narrow"
        return size.width < COMPACT_WIDTH or size.height < COMPACT_HEIGHT

    # The narrow layout of earlier versions is the compact one.
    narrow = compact

    def _displays(self, compact: bool) -> dict[str, bool]:
        """Whether each container of the layout shows (by id: the panes, ``side``, ``center``
        and the ``strip``), in the compact layout or not, as of ``zoomed`` and ``active``."""
        zoomed, active = self.zoomed, self.active
        one = compact or zoomed  # one pane at a time
        shown = {pane_id: i == active if one else True for i, (_, pane_id, _) in enumerate(PANES)}
        side_active = active in (STACK, 3, VALUE)
        shown["side"] = side_active if one else True
        shown["center"] = (not side_active and active != 0) if one else True
        shown["strip"] = compact and not zoomed and active == TRACE
        return shown

    def _layout(self) -> None:
        if not self._started or not self.query(PaneBar):
            return  # not composed yet, or being torn down while a worker finishes
        compact, zoomed, active = self.compact, self.zoomed, self.active
        self.set_class(compact, "compact")
        self.set_class(zoomed, "zoomed")
        shown = self._displays(compact)
        for i, (_, pane_id, _) in enumerate(PANES):
            pane = self.query_one(f"#{pane_id}")
            pane.set_class(i == active, "-active")
            pane.display = shown[pane_id]
            if pane.display and pane_id in LAZY_PANES:
                self.compose_rest()  # shown before the first screen was: composed now
        self.query_one("#side").display = shown["side"]
        self.query_one("#center").display = shown["center"]
        strip = self.query_one(ContextStrip)
        was = strip.display
        strip.display = shown["strip"]
        if strip.display and not was:
            self.panes.strip()
        # The strip or the run header shows the status and its reason, the status line not:
        # which of them is on screen may have changed (a resize, a zoom, another pane).
        self.panes.status()
        self.fit_widths()
        self.query_one(PaneBar).set_active(active)

    def fit_widths(self, *, programs_known: bool = True) -> None:
        """The run list's and the side column's sizes in the wide layout: each pane what its
        content needs, the trace never narrower than the compact layout's (``TRACE_MIN``).

        * Columns, where the run list's rows fit beside a trace of ``TRACE_MIN`` and a side
          column of ``SIDE_MIN``: the run list as wide as its rows want (whole ids, programs
          and ages), the side column 30 % of the screen while the trace keeps ``TRACE_MIN``.
        * Else (120x40, say) the run list is a band across the top, as wide as the screen
          and as tall as its runs (up to a fifth of the screen), over the trace and the side
          column: every row whole, the trace at least ``TRACE_MIN`` wide from 114 columns.

        The run list does not narrow while the screen keeps its width: a narrower list is a
        layout of every pane, and after the first read it would come once the run is on
        screen, in the frame a first live change waits for. ``programs_known=False`` (rows
        of runs not read yet): the program column counts at its widest, so the list sized in
        the frame that lists the runs keeps its width when they are read."""
        runs_pane, side = self.query_one("#runs-pane"), self.query_one("#side")
        if self.compact or self.zoomed:
            self.set_class(False, "runs-top")
            runs_pane.styles.width = side.styles.width = "1fr"  # a layout when they change
            if runs_pane.styles.inline.has_rule("height"):
                runs_pane.styles.height = None  # a layout at every call, changed or not
            return
        width = self.size.width
        run_list = self.query_one(RunList)
        runs = preferred_width(run_list.runs, programs_known=programs_known) + RUNS_FRAME
        kept_for, kept = self._run_list_width
        if kept_for == width:
            runs = max(runs, kept)
        self._run_list_width = (width, runs)
        on_top = width - SIDE_MIN - runs < TRACE_MIN
        self.set_class(on_top, "runs-top")
        if on_top:
            rows = min(max(len(run_list.runs), 3), max(3, (self.size.height - 3) // 5))
            runs_pane.styles.width = "100%"
            runs_pane.styles.height = rows + 2
            side.styles.width = max(SIDE_MIN, min(width * 30 // 100, width - TRACE_MIN))
        else:
            runs_pane.styles.width = runs
            runs_pane.styles.height = None
            side.styles.width = max(SIDE_MIN, min(width * 30 // 100, width - runs - TRACE_MIN))

    def _pane_widget(self, index: int) -> Widget | None:
        """Pane ``index``'s widget (the one keys go to), ``None`` while a lazy pane's widgets
        are being composed."""
        if PANES[index][1] in LAZY_PANES and not self.rest_composed:
            return None
        if index == STACK and (nodes := self.query_one("NodeTable")).display:
            return nodes
        return self.query_one(PANES[index][2])

    def activate(self, index: int, *, focus: bool = True) -> None:
        """Make pane ``index`` active (shown in the compact layout) and focus its widget now,
        so keys typed right after go to it (a lazy pane's once it is composed)."""
        self.active = index % len(PANES)
        self._layout()
        if focus:
            self._focus_active()

    def activate_for_start(self, index: int) -> None:
        """Make pane ``index`` active because a start-up read found where the run is (its
        trace, the run list while none is there), unless the user already picked a pane:
        a key typed before the first run is read keeps its pane and its focus, and a search
        prompt opened meanwhile its focus (the keys typed on are its query)."""
        if not self._pane_chosen:
            self.activate(index, focus=self._search is None or self.focused is not self._search)

    def _choose(self, index: int) -> None:
        """The user picked pane ``index`` (a key, a click): it stays active across start-up reads."""
        self._pane_chosen = True
        self.activate(index)

    def _focus_active(self) -> None:
        """Focus the active pane's widget (a lazy pane's once it is composed)."""
        widget = self._pane_widget(self.active)
        if widget is None:
            self._focus_when_ready = self.active
            self.compose_rest()
        else:
            self.set_focus(widget)

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
        self._choose(event.index)

    def bring_up(self, index: int) -> None:
        """Show pane ``index`` because an action filled it (only needed where it is hidden)."""
        if self.compact or self.zoomed:
            self.activate(index)

    # -- showing a run -------------------------------------------------------------------------------
    def on_run_list_run_chosen(self, event: RunList.RunChosen) -> None:
        self.open_listed(event.path)
        if event.opened:
            self.activate(TRACE)  # Enter opens the run: its trace, at every size

    def open_listed(self, path: Path) -> None:
        """Open the run at ``path`` of the run list: chosen by the user (``RunChosen``) or
        for them by a read (the feed, at once)."""
        self.parents.clear()  # a run of the list: no import's parent to go back to
        self.open_run_at(path)

    def open_run_at(self, path: Path) -> None:
        """Show the run at ``path``: its summary at once, then all of it once read."""
        if self.heap.frozen != path:
            self._hold_heap()
        self.feed.open(path)

    def _hold_heap(self) -> None:
        """No garbage collection while a run is read and first shown (``prose_tui.tui.heap``)."""
        self.heap.hold()

    def show_run(self, run: Run | None, *, changed: set[Path] | None = None) -> None:
        """Show ``run`` in every pane; ``changed`` are the files that changed (live update)."""
        self.panes.show_run(run, changed=changed)

    def refresh_view(self, *, only_bindings: bool = False) -> None:
        """Render the current run as of the history cursor (the run itself when live)."""
        self.panes.refresh(only_bindings=only_bindings)

    def open_import(self, parent: Path, handle: str) -> bool:
        """Show the import ``handle`` of the run at ``parent`` as a run of its own, in the trace;
        Esc goes back (``parents``, shown as a breadcrumb in the trace's title)."""
        shown = self.current_run
        if not self.feed.open_import(parent, handle):
            return False
        came_from = shown if shown is not None and shown.path == parent else self.workspace.runs.get(parent, shown)
        if came_from is not None:
            self.parents.append(came_from)
        self.panes.titles()
        self.activate(TRACE)
        return True

    def back_to_parent(self) -> bool:
        """Show the run an import was opened from again (Esc); ``False`` when none was."""
        if not self.parents:
            return False
        parent = self.parents.pop()
        if parent.path in self.workspace.runs:
            self.open_run_at(parent.path)
        else:  # an import of an import: shown as it was
            self.model.loaded_run = None
            self.show_run(parent)
            self.model.loaded_run = parent.path
        self.panes.titles()
        self.activate(TRACE)
        return True

    @property
    def breadcrumb(self) -> str:
        """Where the trace is: ``parent › import`` for an import opened as a run, else ``""``."""
        if not self.parents:
            return ""
        run = self.current_run
        here = (run.import_handle or run.id) if run is not None else "?"
        return " › ".join([*((r.import_handle or r.id) for r in self.parents), here])

    def action_toggle_log(self) -> None:
        if not self.model.toggle_raw_log():
            self.notify("This run has no event log beside a program file", markup=False)
            return
        self.panes.refresh()
        self.notify("The raw event log" if self.model.raw_log else "The program, annotated from the log", markup=False)

    def show_target(self, target: Target | None) -> None:
        self.panes.show_value(target)

    @property
    def value_target(self) -> Target | None:
        """What the value pane shows (or shows once composed)."""
        return self.panes.value_target

    def on_timeline_cursor_moved(self, event: Timeline.CursorMoved) -> None:
        index = event.index
        self._history(lambda: self.model.to(index))

    # -- trace, stack and value ----------------------------------------------------------------------
    def on_trace_view_binding_requested(self, event: TraceView.BindingRequested) -> None:
        self.panes.open_trace_binding(event.line, event.path)

    def on_trace_view_follow_changed(self, event: TraceView.FollowChanged) -> None:
        self.panes.titles()
        self.panes.status()

    def on_binding_tree_target_chosen(self, event: BindingTree.TargetChosen) -> None:
        if self.query_one("BindingTree").has_focus:
            self.model.viewer_follows_writes = False  # the user picked it; stop switching to new writes
        self.panes.show_value(event.target)
        if event.opened:
            self.bring_up(VALUE)

    def on_binding_tree_import_chosen(self, event: BindingTree.ImportChosen) -> None:
        run = self.current_run
        if run is None or not self.open_import(run.path, event.handle):
            self.notify(f"import {event.handle} cannot be opened as a run", severity="warning", markup=False)

    def on_call_stack_view_frame_chosen(self, event: CallStackView.FrameChosen) -> None:
        self.panes.open_frame(event.frame)

    # -- actions ----------------------------------------------------------------------------------------
    def action_cycle_pane(self, step: int) -> None:
        self._choose(self.active + step)

    def action_pane(self, index: int) -> None:
        self._choose(index)

    def action_zoom(self) -> None:
        self.zoomed = not self.zoomed
        self.activate(self.active)

    def action_back(self) -> None:
        if self.zoomed:
            self.action_zoom()
        elif self.compact and self.active != TRACE:
            self.activate(TRACE)
        else:
            self.back_to_parent()

    def action_toggle_follow(self) -> None:
        trace = self.query_one(TraceView)
        trace.set_following(not trace.following)
        self.notify("Following the executing statement" if trace.following else "Follow off: the trace stays where you are", markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "search" and isinstance(self.focused, Input):
            return False  # "/" typed into the prompt (or another input) is a character of the query
        return True

    async def action_search(self) -> None:
        # The prompt composed now when "/" comes before it was (the first screen's frame):
        # the app handles no other key until this returns, so those typed after "/" wait
        # for it and go to it.
        mounting = self._mount_search()
        if mounting is not None:
            await mounting
        self._open_search()

    def _open_search(self) -> bool:
        """Open the search prompt for the active pane and focus it; False while it is not mounted."""
        bar = self._search
        if bar is None or not bar.is_mounted or not self.is_attached:
            return False
        bar.open(PANES[self.active][0])
        self.set_focus(bar)  # now, not after a refresh: keys typed right after "/" are the query
        return True

    def on_search_bar_search_submitted(self, event: SearchBar.SearchSubmitted) -> None:
        self.search_term = event.term
        self._focus_active()
        self.action_search_again(False)
        runs = self.query_one(RunList)
        if self.active == 0:
            total = len(runs.runs)
            self.query_one("#runs-pane").border_title = (f"Runs ({runs.shown_count} of {total} · /{runs.filter})"
                                                         if runs.filter else f"Runs ({total})")

    def on_search_bar_search_closed(self, event: SearchBar.SearchClosed) -> None:
        self._focus_active()

    def action_search_again(self, backwards: bool) -> None:
        if not self.search_term:
            if not self._open_search():
                self.call_later(self.action_search)  # composed first
            return
        widget = self._pane_widget(self.active)
        if widget is None:  # a pane being composed: its widget takes the search once there
            self.when_rest_composed(lambda: self.action_search_again(backwards))
            return
        if not widget.search(self.search_term, backwards=backwards):  # type: ignore[attr-defined]
            self.notify(f"no match for '{self.search_term}' in {PANES[self.active][0]}", severity="warning", markup=False)

    # -- history --------------------------------------------------------------------------------------
    def _moved(self, moved: Moved) -> None:
        """After a history move: every pane as of the cursor (the live view again when live);
        a failure's report brought up where the value pane is hidden."""
        if not moved.moved:
            self.notify(moved.message, severity="information", markup=False)
            return
        self.panes.refresh()
        if self.panes.to_moment():
            self.bring_up(VALUE)

    def _history(self, move: Callable[[], Moved], then: Callable[[Moved], None] | None = None) -> None:
        """Make a history ``move`` (``then``: called with what it did, once shown). A long log's
        first move needs its history's index (0.6-1 s at 100,000 events): it is built in a
        worker while keys go on working, the status line saying so, and the moves asked
        meanwhile are made in order once it is in."""
        if self._index_waiting is not None:
            self._index_waiting.append((move, then))
            return
        events = self.model.index_wanted()
        run, history = self.model.run, self.model.nav.history
        if events and run is not None and history is not None:
            self._index_waiting = [(move, then)]
            self.panes.indexing = events
            self.panes.status()
            self.run_worker(partial(self._index_off_thread, run, history), name="history index", group="history-index",
                            description=f"the history's index of {run.id}", thread=True, exit_on_error=False)
            return
        self._move_now(move, then)

    def _move_now(self, move: Callable[[], Moved], then: Callable[[Moved], None] | None) -> None:
        self.panes.remember_live()  # the live view, kept when this move leaves it
        moved = move()
        self._moved(moved)
        if then is not None:
            then(moved)

    @property
    def indexing(self) -> bool:
        """A ready signal: a history move waits for its index, built in a worker."""
        return self._index_waiting is not None

    def _index_off_thread(self, run: Run, history: History) -> None:
        try:
            memo: CursorMemo | None = index_history(run, history)
        except Exception:  # not indexed here: the move indexes on its own, as before
            memo = None
        from prose_tui.tui.widgets.value_viewer import import_markdown

        import_markdown()  # the move shows the moment's value: not imported on the UI thread then
        try:
            self.app.call_from_thread(self._indexed, run, memo)
        except RuntimeError:  # the app stopped meanwhile
            pass

    def _indexed(self, run: Run, memo: CursorMemo | None) -> None:
        """The index is in: the moves that waited for it, in order (dropped when another run
        is shown now: they were asked of that one)."""
        moves, self._index_waiting = self._index_waiting or [], None
        self.panes.indexing = 0
        if self.model.run is not run:
            self.panes.status()
            return
        if memo is None or self.model.take_index(memo):
            for move, then in moves:
                self._move_now(move, then)  # indexed (or it could not be: the move indexes itself)
        else:
            for move, then in moves:
                self._history(move, then)  # read again meanwhile (another history): indexed for it
        self.panes.status()

    def action_history_step(self, delta: int) -> None:
        self._history(lambda: self.model.step(delta))

    def action_history_start(self) -> None:
        self._history(self.model.start)

    def action_history_live(self) -> None:
        self._history(self.model.live)

    def action_history_problem(self, forward: bool) -> None:
        self._history(lambda: self.model.problem(forward))

    def action_history_first_failure(self) -> None:
        """``!``: the run's failure, its report in the value pane and its statement under the
        trace cursor, also when the cursor was already on it (or it is the last event)."""
        def report(moved: Moved) -> None:
            if moved.moved and (ctx := self.model.failure_at_cursor()) is not None:
                self.panes.failure(ctx, bring_up=True)

        self._history(self.model.first_failure, report)

    # -- the feed: reads and live changes ------------------------------------------------------------
    def runs_read(self, *, first: bool) -> None:
        """After a read of the run list that found runs: the run list's width again; after the
        ``first`` read, the trace of the run chosen (the running one), the run list one key
        (1) away. A rescan leaves the focus where the user put it."""
        self._layout()
        if first:
            self.activate_for_start(TRACE)
            # Settled once the lazy panes are there too: a key for any pane then finds it.
            self.when_rest_composed(lambda: self.call_after_refresh(self._settled), after_frame=True)

    def _settled(self) -> None:
        """After the first read's layout: a run opened on a failure keeps it in view."""
        trace = self.query_one(TraceView)
        if not trace.following:
            trace.scroll_to_cursor(center=True)
        self.first_read_done = True
        first_read = getattr(self.app, "first_read", None)
        if first_read is not None:
            first_read.set()

    def on_deltas_waiting(self, message: DeltasWaiting) -> None:
        if self.feed.live is not None:
            self.feed.live.deliver(message.path)

    def on_trace_view_at_start(self, event: TraceView.AtStart) -> None:
        self.feed.page_back()

    def on_runs_changed(self, message: RunsChanged) -> None:
        if self.feed.live is not None:
            self.feed.live.runs_changed(message.applied)

    def on_live_problem(self, message: LiveProblem) -> None:
        if self.feed.live is not None:
            self.feed.live.problem(message.text)

    def action_rescan(self) -> None:
        self.feed.scan()

    def on_unmount(self) -> None:
        self.feed.stop()
        self.heap.release()


__all__ = ["ExplorerScreen", "PANES", "when_text"]
