"""The Textual application: composes the explorer screen, help, palette and Mission Control."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.history import Journal
from prose_tui.live.workspace import Workspace
from prose_tui.mission.state import find_agent_state
from prose_tui.tui.commands import ExplorerCommands
from prose_tui.tui.screens.explorer import ExplorerScreen
from prose_tui.tui.screens.help import HelpScreen
from prose_tui.tui.screens.history_keys import HISTORY_BINDINGS
from prose_tui.tui.screens.mission_control import (
    MissionControlCommands,
    MissionControlScreen,
)
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.node_table import NodeTable
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

INTRO = (
    "prose-tui explores OpenProse runs. The run list shows every run below the path, newest first; "
    "the trace follows the executing statement while you have not moved away (f toggles); Enter on a "
    "trace line opens the binding it wrote. Tab or 1-6 move between panes, z zooms the active one (Esc: back); "
    "/ searches the current pane, n/N go through every hit. [ ] { } step through the run's history: every pane "
    "then shows that moment."
)


class ProseTUI(App[None]):
    """``path`` is a project, ``.prose``, ``runs`` or run folder. ``clock`` fixes time for tests."""

    CSS_PATH = "app.tcss"
    TITLE = "prose-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("m", "mission_control", "Mission Control"),
        Binding("ctrl+p", "command_palette", "Command palette", show=False),
    ]
    COMMANDS = App.COMMANDS | {ExplorerCommands, MissionControlCommands}

    def __init__(
        self,
        path: Path,
        *,
        stale_after: float = DEFAULT_STALE_AFTER,
        watch: bool = True,
        clock=None,
        agent_state: Path | None = None,
        journal: Journal | None = None,
    ) -> None:
        super().__init__()
        self.path = path.resolve()
        self.workspace = Workspace(self.path, stale_after=stale_after, clock=clock)
        self.live = watch
        self.journal = journal if journal is not None else Journal()
        root = self.path if self.path.is_dir() else self.path.parent
        self.agent_state_path = find_agent_state(root, agent_state)

    def get_default_screen(self) -> ExplorerScreen:
        initial = self.path if self.path.parent.name == "runs" else None
        return ExplorerScreen(self.workspace, watch=self.live, initial=initial, journal=self.journal)

    @property
    def explorer(self) -> ExplorerScreen:
        return next(s for s in self.screen_stack if isinstance(s, ExplorerScreen))

    def help_groups(self):
        """Key bindings grouped by where they work, for the help screen."""
        history_keys = set(id(b) for b in HISTORY_BINDINGS)
        groups = [("Everywhere", list(self.BINDINGS)),
                  (ExplorerScreen.HELP_GROUP, [b for b in ExplorerScreen.BINDINGS if id(b) not in history_keys]),
                  ("History (everywhere)", list(HISTORY_BINDINGS))]
        for widget in (RunList, TraceView, CallStackView, NodeTable, BindingTree, ValueViewer, Timeline):
            groups.append((widget.HELP_GROUP, [b for b in widget.BINDINGS if isinstance(b, Binding)]))
        groups.append(("Mission Control (m)", [b for b in MissionControlScreen.BINDINGS if isinstance(b, Binding)]))
        return groups

    def action_mission_control(self) -> None:
        if not isinstance(self.screen, MissionControlScreen):
            self.push_screen(MissionControlScreen())

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups(), INTRO))
