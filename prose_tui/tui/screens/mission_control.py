"""Mission Control screen and its command-palette provider (seeds/agent-state.md).

How the app exposes the file: set ``app.agent_state_path`` to the ``agent_state.json`` path
(a ``pathlib.Path``, already resolved with ``prose_tui.mission.find_agent_state(PATH,
args.agent_state)``), or None when Mission Control is not wanted. Then::

    class ProseApp(App):
        COMMANDS = App.COMMANDS | {MissionControlCommands}
        agent_state_path: Path | None = None

    app.push_screen(MissionControlScreen())            # uses app.agent_state_path
    app.push_screen(MissionControlScreen(some_path))   # or an explicit file

The palette offers "Mission Control: open" plus the four controls, on the Mission Control screen
(acting on its panel) and on any other screen when ``app.agent_state_path`` is set (the screen is
pushed first, so Stop's confirmation appears over it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

from textual.app import ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Header

from prose_tui.mission.control import ACTION_LABELS, ACTIONS, VERIFY_WINDOW
from prose_tui.mission.state import Clock, Kind, find_agent_state, utc_now
from prose_tui.remote import shown
from prose_tui.tui.keys import keyed
from prose_tui.tui.widgets.key_footer import KeyFooter
from prose_tui.tui.widgets.mission_panel import MissionPanel


class _PanelOptions(TypedDict):
    """What ``MissionControlScreen`` hands on to its ``MissionPanel``."""

    now: Clock
    poll_interval: float
    watch: bool
    verify_window: float


class MissionControlScreen(Screen):
    """Hosts a :class:`MissionPanel`. ``path`` defaults to ``app.agent_state_path``, then to
    ``find_agent_state(".")``. ``initial_action`` (start, stop, once, cleanup) is requested once
    the panel is up. ``now``, ``poll_interval``, ``watch``, ``verify_window`` go to the panel."""

    TITLE = "Mission Control"

    DEFAULT_CSS = """
    MissionControlScreen MissionPanel {
        height: 1fr;
    }
    """

    BINDINGS = keyed([
        Binding("s", "control('start')", "Start"),
        Binding("x", "control('stop')", "Stop"),
        Binding("o", "control('once')", "Once"),
        Binding("c", "control('cleanup')", "Cleanup"),
        Binding("n", "create", "Create file"),
        Binding("escape", "close", "Back"),
        Binding("q", "close", "Back", show=False),
    ])

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        now: Clock = utc_now,
        poll_interval: float = 2.0,
        watch: bool = True,
        verify_window: float = VERIFY_WINDOW,
        initial_action: str | None = None,
        name: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id)
        self._path = Path(path) if path is not None else None
        self._panel_options = _PanelOptions(now=now, poll_interval=poll_interval, watch=watch, verify_window=verify_window)
        self._initial_action = initial_action

    @property
    def agent_state_path(self) -> Path:
        """The file this screen shows."""
        if self._path is None:
            configured = getattr(self.app, "agent_state_path", None)
            self._path = Path(configured) if configured is not None else find_agent_state(".")
        return self._path

    @property
    def panel(self) -> MissionPanel:
        return self.query_one(MissionPanel)

    def compose(self) -> ComposeResult:
        yield Header()
        yield MissionPanel(self.agent_state_path, **self._panel_options)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = shown(str(self.agent_state_path))
        if self._initial_action is not None:
            self.call_after_refresh(self.action_control, self._initial_action)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer "Create file" (key n) only while the file is missing."""
        if action == "create":
            try:
                state = self.panel.state
            except NoMatches:
                return False
            return state is not None and state.kind is Kind.MISSING
        return True

    def on_mission_panel_state_changed(self, event: MissionPanel.StateChanged) -> None:
        self.refresh_bindings()

    def action_control(self, action: str) -> None:
        """Request control ``action`` on the panel (Stop asks first)."""
        self.panel.request_control(action)

    def action_create(self) -> None:
        self.panel.request_create()

    def action_close(self) -> None:
        """Back to the previous screen (or quit when this is the only screen)."""
        if len(self.app.screen_stack) > 1:
            self.dismiss()
        else:
            self.app.exit()


class MissionControlCommands(Provider):
    """Command-palette commands for Mission Control; register in ``App.COMMANDS``.

    Active on a :class:`MissionControlScreen`, or anywhere when ``app.agent_state_path`` is set.
    """

    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        on_screen = isinstance(self.screen, MissionControlScreen)
        if not on_screen and getattr(self.app, "agent_state_path", None) is None:
            return []
        commands: list[tuple[str, Callable[[], Any], str]] = []
        if not on_screen:
            commands.append(("Mission Control: open", self._open, "Show agent_state.json status and controls"))
        for action, desired in ACTIONS.items():
            commands.append(
                (f"Mission Control: {ACTION_LABELS[action]}", partial(self._control, action),
                 f"Set desired_state to {desired}")
            )
        return commands

    def _open(self) -> None:
        self.app.push_screen(MissionControlScreen())

    def _control(self, action: str) -> None:
        if isinstance(self.screen, MissionControlScreen):
            self.screen.action_control(action)
        else:
            self.app.push_screen(MissionControlScreen(initial_action=action))

    async def discover(self) -> Hits:
        for text, command, help_text in self._commands():
            yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, command, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, help=help_text)
