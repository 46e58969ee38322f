"""The Mission Control panel: status of ``agent_state.json`` and the four controls.

Shows the badge (seeds/agent-state.md, "UI Status Mapping", plus ``terminated``), the pending
transition and how long it has been pending, the timestamp's age, ``setBy``, ``note``, heartbeat
fields and every error, and offers Start / Stop / Run once / Cleanup (and Create when the file is
missing). The file is watched live through the process's one watcher (``live.watcher``), plus a poll every
``poll_interval`` seconds as a fallback. Reading and writing go through
:mod:`prose_tui.mission` (no textual there); writes run in a worker thread.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Button, Static

from prose_tui.live.watcher import Subscription, shared_watcher
from prose_tui.mission.control import (
    ACTION_LABELS,
    ACTIONS,
    VERIFY_WINDOW,
    ControlError,
    StateFileMalformed,
    WriteResult,
    apply_action,
    create_default,
    malformed_preview,
)
from prose_tui.mission.rows import status_rows
from prose_tui.mission.state import Clock, Kind, MissionState, read_state, utc_now
from prose_tui.remote import shown
from prose_tui.tui.screens.confirm import ConfirmScreen
from prose_tui.tui.served import is_read_only, read_only_message
from prose_tui.tui.widgets.repaint import show_text

BUTTONS = (("start", "Start"), ("stop", "Stop"), ("once", "Run once"), ("cleanup", "Cleanup"))


class MissionFileChanged(Message):
    """``agent_state.json`` changed on disk (posted from the watcher thread)."""


class MissionPanel(Vertical):
    """Status and controls for one ``agent_state.json``.

    ``path`` is the file (see :func:`prose_tui.mission.find_agent_state`); ``now`` is the clock
    used for ages (inject a fixed one in tests); ``poll_interval`` seconds between fallback
    re-reads (0 disables); ``watch`` enables the watchfiles watcher; ``verify_window`` is passed
    to the write's race check.
    """

    DEFAULT_CSS = """
    MissionPanel {
        height: auto;
        padding: 0 1;
    }
    MissionPanel #mission-head {
        height: auto;
    }
    MissionPanel #mission-badge {
        width: auto;
        min-width: 9;
        text-style: bold;
        padding: 0 1;
        margin-right: 1;
        background: $panel;
    }
    MissionPanel #mission-badge.tone-running { background: $success; color: $text; }
    MissionPanel #mission-badge.tone-idle { background: $panel-lighten-2; color: $text; }
    MissionPanel #mission-badge.tone-terminated { background: $error; color: $text; }
    MissionPanel #mission-badge.tone-warning,
    MissionPanel #mission-badge.tone-stale { background: $warning; color: $text; }
    MissionPanel #mission-badge.tone-error { background: $error; color: $text; }
    MissionPanel #mission-badge.tone-heartbeat { background: $primary; color: $text; }
    MissionPanel #mission-message {
        width: 1fr;
        text-style: bold;
    }
    MissionPanel #mission-details {
        padding: 1 0 0 0;
        height: auto;
    }
    MissionPanel #mission-buttons {
        height: auto;
        padding: 1 0 0 0;
    }
    MissionPanel #mission-buttons Button {
        min-width: 10;
        margin-right: 1;
    }
    MissionPanel #mission-feedback {
        padding: 1 0 0 0;
        height: auto;
        color: $text-muted;
    }
    """

    class StateChanged(Message):
        """The file was (re)read and differs from the last reading."""

        def __init__(self, state: MissionState) -> None:
            super().__init__()
            self.state = state

    class DesiredStateSet(Message):
        """A control wrote ``desired_state``; ``result`` says what was written."""

        def __init__(self, action: str, result: WriteResult) -> None:
            super().__init__()
            self.action = action
            self.result = result

    class DesiredStateReapplied(Message):
        """The agent overwrote the new ``desired_state`` and it was applied again."""

        def __init__(self, action: str, result: WriteResult) -> None:
            super().__init__()
            self.action = action
            self.result = result

    class StateFileCreated(Message):
        """A missing file was created with the seed default (pause/pause)."""

        def __init__(self, result: WriteResult) -> None:
            super().__init__()
            self.result = result

    class ControlRefused(Message):
        """A control was not applied (declined, missing file, heartbeat file, write error)."""

        def __init__(self, action: str, reason: str) -> None:
            super().__init__()
            self.action = action
            self.reason = reason

    def __init__(
        self,
        path: str | Path,
        *,
        now: Clock = utc_now,
        poll_interval: float = 2.0,
        watch: bool = True,
        verify_window: float = VERIFY_WINDOW,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.path = Path(path)
        self.now = now
        self.poll_interval = poll_interval
        self.watch_file = watch
        self.verify_window = verify_window
        self.state: MissionState | None = None
        self.feedback = ""
        self._pending_key: tuple[str, str | None] | None = None
        self._pending_since: datetime | None = None
        self._stop_watching = asyncio.Event()
        self._write_lock = asyncio.Lock()  # one write at a time, in the order asked
        self.watching = False  # the file watcher is registered (changes from now on are seen)
        self._subscription: Subscription | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="mission-head"):
            yield Static(id="mission-badge")
            yield Static(id="mission-message")
        yield Static(id="mission-details")
        with Horizontal(id="mission-buttons"):
            for action, label in BUTTONS:
                yield Button(label, id=f"mission-{action}", variant="error" if action == "stop" else "default")
            yield Button("Create file", id="mission-create", variant="primary")
        yield Static(id="mission-feedback")

    def on_mount(self) -> None:
        self._apply(read_state(self.path, now=self.now))
        self.set_interval(1.0, self._render_state)
        if self.poll_interval > 0:
            self.set_interval(self.poll_interval, self.reload)
        if self.watch_file:
            self._watch()

    def on_unmount(self) -> None:
        self._stop_watching.set()
        sub = self._subscription
        if sub is not None:
            shared_watcher().unsubscribe(sub)
            self._subscription = None

    # -- reading -----------------------------------------------------------------------------

    async def reload(self) -> None:
        """Re-read the file (in a thread) and update the display."""
        state = await asyncio.to_thread(read_state, self.path, now=self.now)
        self._apply(state)

    def _watch(self) -> None:
        """Follow the file through the shared watcher (its callback runs on the watcher
        thread: it only posts a message); the poll covers a folder that does not exist yet."""
        def changed(_paths=None) -> None:
            self.post_message(MissionFileChanged())

        def ready() -> None:
            self.watching = True  # a ready signal for tests and the status: writes from now on are seen
            changed()

        self._subscription = shared_watcher().subscribe([self.path], changed, files=True, on_ready=ready)

    async def on_mission_file_changed(self, _message: MissionFileChanged) -> None:
        await self.reload()

    def _apply(self, state: MissionState) -> None:
        previous = self.state
        self.state = state
        pending = state.pending
        if pending is None:
            self._pending_key = self._pending_since = None
        else:
            key = (pending.desired_state, pending.current_state)
            since = pending.since or state.read_at
            if key != self._pending_key or self._pending_since is None:
                self._pending_key, self._pending_since = key, since
            else:
                self._pending_since = min(self._pending_since, since)
        self._render_state()
        if previous is None or (previous.kind, previous.raw) != (state.kind, state.raw):
            self.post_message(self.StateChanged(state))

    def _render_state(self) -> None:
        state = self.state
        if state is None:
            return
        try:
            badge_widget = self.query_one("#mission-badge", Static)
        except NoMatches:  # not composed yet, or being removed
            return
        badge = state.badge
        # Each second (ages move on): a Static told the text it shows stays as it is (repaint.py).
        show_text(badge_widget, Text(badge.label))
        for tone in ("running", "idle", "terminated", "warning", "error", "heartbeat", "stale"):
            badge_widget.set_class(tone == badge.tone, f"tone-{tone}")
        show_text(self.query_one("#mission-message", Static), Text(state.message))
        show_text(self.query_one("#mission-details", Static), self._details(state))
        controllable = state.kind not in (Kind.HEARTBEAT, Kind.UNREADABLE)
        for action, _ in BUTTONS:
            self.query_one(f"#mission-{action}", Button).disabled = not controllable
        self.query_one("#mission-create", Button).display = state.kind is Kind.MISSING
        show_text(self.query_one("#mission-feedback", Static), Text(self.feedback))

    def _details(self, state: MissionState) -> Text:
        text = Text()
        rows = [("File", shown(str(state.path)))] + status_rows(state, self.now(), self._pending_since)
        for label, value in rows:
            if text:
                text.append("\n")
            style = "bold" if label == "Warning" else "dim"
            text.append(f"{label:<13}", style=style)
            text.append(value)
        if state.kind is Kind.MISSING:
            text.append("\n\nPress n (Create file) to create it with desired and current pause.")
        elif state.kind in (Kind.MALFORMED, Kind.UNRECOGNISED):
            text.append("\n\nA control will ask before replacing it; its content is shown first.")
        elif state.kind is Kind.HEARTBEAT:
            text.append("\n\nControls are disabled: this file has no desired_state to set.")
        return text

    def say(self, message: str) -> None:
        """Show ``message`` in the feedback line under the buttons."""
        self.feedback = shown(message)
        self._render_state()

    # -- controls ----------------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action = (event.button.id or "").removeprefix("mission-")
        if action == "create":
            self.request_create()
        elif action in ACTIONS:
            self.request_control(action)

    def request_control(self, action: str, note: str | None = None) -> None:
        """Apply control ``action`` (start, stop, once, cleanup), asking first when needed:
        Stop always asks; a malformed file is replaced only after a confirmation showing what
        will be lost; a missing or heartbeat file is refused with a message, and so is every
        control in an explorer served read-only (``tui.served``)."""
        if is_read_only(self.app):
            self._refuse(action, read_only_message(f"{ACTION_LABELS[action]} (writing desired_state)"))
            return
        state = self.state or read_state(self.path, now=self.now)
        label = ACTION_LABELS[action]
        if state.kind is Kind.MISSING:
            self._refuse(action, f"{label}: no agent_state.json at {self.path}. Press n to create it first.")
        elif state.kind in (Kind.HEARTBEAT, Kind.UNREADABLE):
            self._refuse(action, f"{label}: {state.message}")
        elif state.kind in (Kind.MALFORMED, Kind.UNRECOGNISED):
            self._ask_overwrite(action, note, state.message, state.raw or "")
        elif action == "stop":
            body = (
                "desired_state becomes pause. The agent finishes its current session, "
                "then pauses (seeds/agent-state.md, \"pause\")."
            )

            def answered(yes: bool | None) -> None:
                if yes:
                    self._write(action, note, False)
                else:
                    self._refuse(action, "Stop cancelled; nothing was written.")

            self.app.push_screen(ConfirmScreen("Stop the agent?", body, yes_label="Stop", danger=True), answered)
        else:
            self._write(action, note, False)

    def _ask_overwrite(self, action: str, note: str | None, problem: str, lost: str) -> None:
        if read_state(self.path, now=self.now, retries=0).kind is Kind.UNRECOGNISED:
            body = (
                f"{problem}\n\n{ACTION_LABELS[action]} will add desired_state, timestamp and setBy "
                "to it; its other keys are kept."
            )
        else:
            body = (
                f"{problem}\n\n{ACTION_LABELS[action]} will replace the file. "
                f"This content will be lost:\n\n{malformed_preview(lost)}"
            )

        def answered(yes: bool | None) -> None:
            if yes:
                self._write(action, note, True)
            else:
                self._refuse(action, "Kept the unreadable file; nothing was written.")

        screen = ConfirmScreen(f"Overwrite the unreadable {self.path.name}?", body, yes_label="Overwrite", danger=True)
        self.app.push_screen(screen, answered)

    def request_create(self) -> None:
        """Create the missing file with the seed default (pause/pause); refused if it exists,
        or when the explorer is served read-only."""
        if is_read_only(self.app):
            self._refuse("create", read_only_message(f"Creating {self.path.name}"))
            return
        self._create()

    def _refuse(self, action: str, reason: str) -> None:
        self.say(reason)
        self.post_message(self.ControlRefused(action, reason))

    @work(group="mission-write")
    async def _write(self, action: str, note: str | None, overwrite: bool) -> None:
        # Serialised: two writes verifying at once would each take the other for the agent.
        result: WriteResult | Exception
        async with self._write_lock:
            self.say(f"{ACTION_LABELS[action]}: writing desired_state = {ACTIONS[action]}…")
            try:
                result = await asyncio.to_thread(
                    apply_action, self.path, action, note=note, overwrite_malformed=overwrite,
                    now=self.now, verify_window=self.verify_window,
                )
            except Exception as error:  # noqa: BLE001 - reported below, never a traceback
                result = error
        if isinstance(result, Exception):
            self._report_failure(action, note, result)
            return
        self.say(f"{ACTION_LABELS[action]}: {result.message}")
        self.post_message(self.DesiredStateSet(action, result))
        if result.reapplied:
            self.post_message(self.DesiredStateReapplied(action, result))
        await self.reload()

    def _report_failure(self, action: str, note: str | None, error: Exception) -> None:
        if isinstance(error, StateFileMalformed):
            self._ask_overwrite(action, note, error.message, error.lost)
        elif isinstance(error, ControlError):
            self._refuse(action, f"{ACTION_LABELS[action]}: {error.message}")
        else:
            self._refuse(action, f"{ACTION_LABELS[action]} failed: {error}")

    @work(group="mission-write")
    async def _create(self) -> None:
        try:
            result = await asyncio.to_thread(create_default, self.path, now=self.now)
        except ControlError as error:
            self._refuse("create", error.message)
            return
        except Exception as error:  # never a traceback in the UI
            self._refuse("create", f"Could not create {self.path}: {error}")
            return
        self.say(f"Created {self.path} with desired_state and current_state pause.")
        self.post_message(self.StateFileCreated(result))
        await self.reload()
