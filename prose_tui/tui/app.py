"""The Textual application: composes the explorer screen, help, palette and Mission Control.

Start-up imports what the explorer's first screen needs; the help, Mission Control, compare
and export screens are imported when first opened (issue 33).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from textual import events
from textual.binding import Binding
from textual.notifications import SeverityLevel

from prose_tui.backends.common.foreground import change_in_flight, change_shown
from prose_tui.history import Journal
from prose_tui.live.workspace import RunSource, Workspace
from prose_tui.remote import shown
from prose_tui.tui.commands import OrderedCommands
from prose_tui.tui.config import Config
from prose_tui.tui.habits import HABIT_BINDINGS, HABITS_GROUP, HabitsApp
from prose_tui.tui.keys import keyed
from prose_tui.tui.screens.explorer import ExplorerScreen
from prose_tui.tui.screens.history_keys import HISTORY_BINDINGS
from prose_tui.tui.served import served_read_only
from prose_tui.tui.sent_cells import SentCells
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView

INTRO = (
    "prose-tui explores OpenProse runs. The run list shows every run below the path, newest first; "
    "the trace follows the executing statement while you have not moved away (f toggles); Enter on a "
    "trace line opens the binding it wrote. Tab or 1-6 move between panes, z zooms the active one (Esc: back); "
    "/ searches the current pane, n/N go through every hit. [ ] { } step through the run's history: every pane "
    "then shows that moment."
)


NOTIFY_SECONDS: dict[str, float] = {"information": 4.0, "warning": 6.0, "error": 10.0}  # a notification's life


class ProseTUI(HabitsApp):
    """``path`` is a project, ``.prose``, ``runs`` or run folder. ``clock`` fixes time for tests.
    ``config`` is the user's config file as read (``tui.config``); its values are the defaults
    for the other arguments, which the command line sets when given. ``sources`` hold runs off
    disk (a PostgreSQL database), listed beside those below ``path``; ``disk=False``: the
    sources' runs alone (the command line was given a database URL), nothing below ``path``.
    ``initial``: the run to open on (default: ``path`` when it is a run folder). ``read_only``:
    served to a browser that may not write on this machine (``tui.served``); default: the
    environment says."""

    CSS_PATH = "app.tcss"
    TITLE = "prose-tui"
    BINDINGS = keyed([
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("m", "mission_control", "Mission Control"),
        Binding("E", "export('html')", "Export HTML", show=False),
        Binding("ctrl+p", "command_palette", "Command palette", show=False),
    ])
    COMMANDS = {OrderedCommands}  # ours, then Textual's own (Keys, Maximize, Screenshot ...)

    def __init__(
        self,
        path: Path,
        *,
        stale_after: float | None = None,
        watch: bool = True,
        clock=None,
        agent_state: Path | None = None,
        journal: Journal | None = None,
        config: Config | None = None,
        sources: Sequence[RunSource] = (),
        disk: bool = True,
        initial: Path | None = None,
        read_only: bool | None = None,
    ) -> None:
        super().__init__(config)
        self.read_only = served_read_only() if read_only is None else read_only
        stale_after = self.config.stale_after if stale_after is None else stale_after
        self.layout_mode = self.config.layout
        self.poll_interval = self.config.poll_interval
        self.follow_on_start = self.config.follow_on_start
        self.path = path.resolve()
        self.initial_run = initial
        self.workspace = Workspace(self.path, stale_after=stale_after, clock=clock, sources=sources, disk=disk)
        self.live = watch
        self.journal = journal if journal is not None else Journal()
        self._agent_state: tuple[Path | None] | None = None if agent_state is None else (agent_state,)
        self._after_frame: list[Callable[[], object]] = []
        # Set once the explorer has listed the runs and settled (its first read): another
        # thread may wait on it (the demo VM starts its run then).
        self.first_read = threading.Event()
        self.sent_cells = SentCells()  # what the terminal shows: frames send only the rest

    @property
    def agent_state_path(self) -> Path | None:
        """The ``agent_state.json`` Mission Control shows: ``--agent-state``, else the first
        found below the path (``mission.state.find_agent_state``), looked for when first asked."""
        if self._agent_state is None:
            from prose_tui.mission.state import find_agent_state

            root = self.path if self.path.is_dir() else self.path.parent
            self._agent_state = (find_agent_state(root),)
        return self._agent_state[0]

    @agent_state_path.setter
    def agent_state_path(self, path: Path | None) -> None:
        self._agent_state = (path,)

    def on_mount(self) -> None:
        # Back from a suspension (an editor run in the terminal): the terminal shows its text.
        self.app_resume_signal.subscribe(self, lambda _app: self.sent_cells.forget(), immediate=True)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            # What a key does is painted before a long log's whole read (a thread) goes on:
            # they would share the interpreter turn about (backends.common.foreground).
            change_in_flight()
            self.after_frame(change_shown)
        await super().on_event(event)

    def after_frame(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` on the UI thread just after the next frame is handed to the
        terminal. Textual's ``call_after_refresh`` can run before the frame that shows a
        change (a widget tells its screen it needs painting on its own next turn); the live
        inbox counts a change as painted with this instead (``LiveInbox``)."""
        if len(self._after_frame) >= 64:  # no frame for a long while (the app suspended): keep the newest
            del self._after_frame[0]
        self._after_frame.append(callback)

    def _display(self, screen, renderable) -> None:
        # Textual's one place where a frame is handed out (its own benchmarks' hook too).
        # Pieces of rows the terminal shows already are left out (sent_cells.py): a frame
        # costs the link what changed on screen.
        if renderable is not None and not getattr(self, "_batch_count", 0):
            renderable = self.sent_cells.filter(renderable, self.size)
            if renderable is None:  # the terminal shows the frame already
                callbacks, self._after_frame = self._after_frame, []
                for callback in callbacks:
                    callback()
                return
        super()._display(screen, renderable)
        if self._after_frame and renderable is not None and not getattr(self, "_batch_count", 0):
            callbacks, self._after_frame = self._after_frame, []
            for callback in callbacks:
                callback()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """A notification, short-lived unless it is an error: ``NOTIFY_SECONDS`` by severity
        when ``timeout`` is not given, and never longer than that."""
        limit = NOTIFY_SECONDS.get(severity, NOTIFY_SECONDS["information"])
        timeout = limit if timeout is None else min(timeout, limit)
        message, title = shown(message), shown(title)  # a remote run: the host's paths, never the local copy's
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def get_default_screen(self) -> ExplorerScreen:
        initial = self.initial_run or (self.path if self.path.parent.name == "runs" else None)
        return ExplorerScreen(self.workspace, watch=self.live, initial=initial, journal=self.journal)

    @property
    def explorer(self) -> ExplorerScreen:
        return next(s for s in self.screen_stack if isinstance(s, ExplorerScreen))

    def help_groups(self):
        """Key bindings grouped by where they work, for the help screen (with the keys the
        config file's ``[keys]`` gave them)."""
        keymap = dict(self.config.keys)
        return [(title, [b.with_key(keymap[b.id]) if b.id in keymap else b for b in bindings])
                for title, bindings in self.binding_groups()]

    @classmethod
    def action_names(cls) -> set[str]:
        """Every action name ``[keys]`` in the config file may rebind."""
        return {b.id for _, bindings in cls.binding_groups() for b in bindings if b.id}

    @classmethod
    def binding_groups(cls):
        """Key bindings grouped by where they work."""
        from prose_tui.tui.widgets.binding_tree import BindingTree
        from prose_tui.tui.widgets.call_stack import CallStackView
        from prose_tui.tui.widgets.node_table import NodeTable
        from prose_tui.tui.widgets.timeline import Timeline
        from prose_tui.tui.widgets.value_viewer import ValueViewer

        history_keys = set(id(b) for b in HISTORY_BINDINGS)
        groups = [("Everywhere", list(cls.BINDINGS)), (HABITS_GROUP, list(HABIT_BINDINGS)),
                  (ExplorerScreen.HELP_GROUP, [b for b in ExplorerScreen.BINDINGS if id(b) not in history_keys]),
                  ("History (everywhere)", list(HISTORY_BINDINGS))]
        for widget in (RunList, TraceView, CallStackView, NodeTable, BindingTree, ValueViewer, Timeline):
            groups.append((widget.HELP_GROUP, [b for b in widget.BINDINGS if isinstance(b, Binding)]))
        from prose_tui.tui.screens.compare import CompareScreen
        from prose_tui.tui.screens.mission_control import MissionControlScreen

        groups.append(("Compare (palette: Compare with run…)", [b for b in CompareScreen.BINDINGS if isinstance(b, Binding)]))
        groups.append(("Mission Control (m)", [b for b in MissionControlScreen.BINDINGS if isinstance(b, Binding)]))
        return groups

    def action_mission_control(self) -> None:
        from prose_tui.tui.screens.mission_control import MissionControlScreen

        if not isinstance(self.screen, MissionControlScreen):
            self.push_screen(MissionControlScreen())

    def action_export(self, fmt: str = "html", ask: bool = False) -> None:
        """Export the run on screen, as of the history cursor, to the current folder (issue 14);
        served read-only, as a download in the browser instead."""
        from prose_tui.tui.screens.export_prompt import export_current

        export_current(self, fmt, ask=ask)

    def action_compare(self, other: Path) -> None:
        """Compare ``other`` (A, the reference) with the run on screen (B)."""
        from prose_tui.tui.screens.compare import CompareScreen

        run = self.explorer.current_run
        if run is None:
            self.notify("No run to compare: choose one in the run list first.", severity="warning", markup=False)
            return
        self.push_screen(CompareScreen(other, run.path))

    def action_help(self) -> None:
        from prose_tui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups(), INTRO))
