"""Mission Control in the terminal: the screen, the panel, the confirm modal, the palette."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from app_helpers import TURNS
from mission_agent import Racer
from textual.app import App, ComposeResult
from textual.widgets import Button, Static

from prose_tui.mission import control
from prose_tui.tui.screens.confirm import ConfirmScreen
from prose_tui.tui.screens.mission_control import (
    MissionControlCommands,
    MissionControlScreen,
)
from prose_tui.tui.widgets import mission_panel
from prose_tui.tui.widgets.mission_panel import MissionPanel

AGENT = Path(__file__).with_name("mission_agent.py")
STAMP = "2025-10-15T22:39:14.372Z"
NOW = datetime(2025, 10, 15, 22, 41, 19, 372000, tzinfo=timezone.utc)  # 2m 05s after STAMP


def fixed_clock() -> datetime:
    return NOW


class Host(App):
    """A tiny app that exposes ``agent_state_path`` and opens Mission Control on start."""

    COMMANDS = App.COMMANDS | {MissionControlCommands}

    def __init__(self, path: Path, open_screen: bool = True, **screen_options) -> None:
        super().__init__()
        self.agent_state_path = path
        self.open_screen = open_screen
        self.screen_options = {"poll_interval": 0.5, "verify_window": 0.05, **screen_options}

    def compose(self) -> ComposeResult:
        yield Static("host home", id="home")

    def on_mount(self) -> None:
        if self.open_screen:
            self.push_screen(MissionControlScreen(**self.screen_options))


def write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def mission(desired: str, current: str, **extra) -> dict:
    return {"desired_state": desired, "current_state": current, "timestamp": STAMP, "setBy": "human", **extra}


def panel_of(app: App) -> MissionPanel:
    return app.screen_stack[1].query_one(MissionPanel) if len(app.screen_stack) > 1 else app.screen.query_one(MissionPanel)


def shown(app: App) -> str:
    """Everything the panel shows as text: badge, headline, details, feedback."""
    panel = panel_of(app)
    parts = [str(panel.query_one(f"#mission-{name}", Static).content)
             for name in ("badge", "message", "details", "feedback")]
    return "\n".join(parts)


def laid_out(app, selector: str):
    """A predicate: the widget ``selector`` on the current screen has a place on screen
    that did not move since the predicate was last asked (a click lands where it is)."""
    seen: dict[str, object] = {}

    def check() -> bool:
        found = app.screen.query(selector)
        if not found:
            return False
        region = found.first().region
        stable = region.area > 0 and seen.get("last") == region
        seen["last"] = region
        return stable

    return check


async def until(pilot, predicate, what: str, turns: int = TURNS):
    """Let the app run until ``predicate()`` is truthy (returned); bounded by event-loop turns."""
    for _ in range(turns):
        value = predicate()
        if value:
            return value
        await pilot.pause()
    value = predicate()
    if value:
        return value
    seen = shown(pilot.app) if pilot.app.query(MissionPanel) or len(pilot.app.screen_stack) > 1 else ""
    raise AssertionError(f"{what} did not happen within {turns} turns of the event loop; the panel shows:\n{seen}")


def palette_hit(app: App, text: str) -> bool:
    """The command palette's highlighted (first) hit reads ``text``."""
    lists = app.screen.query("CommandList")
    if not lists or not lists.first().option_count:
        return False
    return str(lists.first().get_option_at_index(0).prompt).startswith(text)


# -- status ---------------------------------------------------------------------------------------

async def test_status_shows_badge_pending_age_setby_and_note(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("pause", "continuous", note="Stopped over SSH [bold]x[/]"))
    app = Host(path, now=fixed_clock, watch=False, poll_interval=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = shown(app)
        assert text.startswith("RUNNING\nAgent is running sessions continuously.")
        assert "Pending      stopping after the current session (pending 2m 05s)" in text
        assert f"Updated      2m 05s ago ({STAMP})" in text
        assert "Set by       human" in text
        assert "Note         Stopped over SSH [bold]x[/]" in text  # shown literally, never as markup


@pytest.mark.parametrize(
    ("content", "badge", "words"),
    [
        (None, "NO FILE", "No agent_state.json at"),
        ("{not json", "UNREADABLE", "is not valid JSON (line 1, column 2"),
        ("[]", "UNREADABLE", "holds a list, not a JSON object."),
        (json.dumps(mission("warp", "pause")), "IDLE", "Unknown desired_state 'warp'"),
        (json.dumps(mission("pause", "lost")), "UNKNOWN", "Unknown current_state 'lost'"),
        (json.dumps({"session_id": "s-3", "status": "working", "last_heartbeat": "2025-10-15T20:00:00Z"}),
         "HEARTBEAT STALE", "Heartbeat is old: last beat 2h 41m ago"),
    ],
)
async def test_each_problem_has_its_own_message(tmp_path, content, badge, words):
    path = tmp_path / "agent_state.json"
    if content is not None:
        write(path, content)
    app = Host(path, now=fixed_clock, watch=False, poll_interval=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert shown(app).startswith(badge + "\n")
        assert words in shown(app)


async def test_heartbeat_file_disables_the_controls(tmp_path):
    path = write(tmp_path / "agent_state.json", {"session_id": "s-3", "status": "idle", "restart_count": 1,
                                                  "last_heartbeat": "2025-10-15T22:41:10Z"})
    app = Host(path, now=fixed_clock, watch=False, poll_interval=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Agent heartbeat file (status idle), not a Mission Control file" in shown(app)
        assert "Last beat    9s ago" in shown(app)
        assert all(panel_of(app).query_one(f"#mission-{a}", Button).disabled for a in ("start", "stop", "once", "cleanup"))
        await pilot.press("s")
        await pilot.pause()
        assert "Start (continuous): Agent heartbeat file" in shown(app)
        assert "desired_state" not in load(path)


async def test_updates_live_when_the_agent_writes(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("continuous", "pause"))
    app = Host(path, poll_interval=0)  # only the file watcher can notice
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: shown(app).startswith("IDLE"), "IDLE")
        await until(pilot, lambda: panel_of(app).watching, "the file watcher")
        write(path, mission("continuous", "continuous"))
        await until(pilot, lambda: shown(app).startswith("RUNNING"), "the watcher to show RUNNING")
        path.unlink()
        await until(pilot, lambda: shown(app).startswith("NO FILE"), "the watcher to notice the deletion")


async def test_poll_notices_changes_without_the_watcher(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("pause", "pause"))
    app = Host(path, watch=False, poll_interval=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: shown(app).startswith("IDLE"), "IDLE")
        write(path, mission("pause", "terminated"))
        await until(pilot, lambda: shown(app).startswith("TERMINATED"), "the poll to show TERMINATED")


# -- controls ---------------------------------------------------------------------------------

async def test_keys_write_desired_state_and_stop_asks_first(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("pause", "pause", session_count=3))
    app = Host(path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        await until(pilot, lambda: load(path)["desired_state"] == "continuous", "start to be written")
        await until(pilot, lambda: "desired_state set to continuous." in shown(app), "feedback")
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop confirmation")
        await pilot.press("n")
        await until(pilot, lambda: "Stop cancelled; nothing was written." in shown(app), "cancel feedback")
        assert load(path)["desired_state"] == "continuous"
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop confirmation")
        await pilot.press("y")
        await until(pilot, lambda: load(path)["desired_state"] == "pause", "stop to be written")
        await pilot.press("o")
        await until(pilot, lambda: load(path)["desired_state"] == "run_once", "once to be written")
        await pilot.press("c")
        await until(pilot, lambda: load(path)["desired_state"] == "run_cleanup", "cleanup to be written")
        final = load(path)
        assert (final["current_state"], final["setBy"], final["session_count"]) == ("pause", "human", 3)


async def test_quick_presses_end_with_the_last_choice(tmp_path):
    """Writes queue up in order; they never take each other for the agent overwriting them."""
    path = write(tmp_path / "agent_state.json", mission("pause", "pause"))
    app = Host(path, watch=False, verify_window=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s", "o", "c")
        await until(pilot, lambda: "Run cleanup session: desired_state set to run_cleanup." in shown(app),
                    "the last write")
        assert "overwrote" not in shown(app)
        assert load(path)["desired_state"] == "run_cleanup"


async def test_buttons_and_escape_on_the_confirmation(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("continuous", "continuous"))
    app = Host(path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.click("#mission-once")
        await until(pilot, lambda: "desired_state set to run_once." in shown(app), "Run once to be written")
        assert load(path)["desired_state"] == "run_once"
        # The new Pending row moves the buttons down: click only once it is there.
        await until(pilot, lambda: "switching to run_once after the current session" in shown(app), "Pending")
        await until(pilot, laid_out(app, "#mission-stop"), "the Stop button in its new place")
        await pilot.click("#mission-stop")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop confirmation")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MissionControlScreen), "back on Mission Control")
        assert load(path)["desired_state"] == "run_once"
        # A Button ignores clicks while its press effect (0.2 s by a timer) lasts: on a fast
        # run the second click came within it and was dropped. Click once it has ended.
        stop = app.screen.query_one("#mission-stop", Button)
        await until(pilot, lambda: not stop.has_class("-active"), "the Stop button's press effect to end")
        await pilot.click("#mission-stop")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop confirmation")
        # The confirmation is the screen at once; its buttons have their place after its layout.
        await until(pilot, laid_out(app, "#confirm-yes"), "the confirmation's buttons laid out")
        await pilot.click("#confirm-yes")
        await until(pilot, lambda: load(path)["desired_state"] == "pause", "Stop to be written")


async def test_missing_file_is_created_on_request_only(tmp_path):
    path = tmp_path / "agent_state.json"
    app = Host(path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Press n (Create file) to create it" in shown(app)
        await pilot.press("s")
        await until(pilot, lambda: "Press n to create it first." in shown(app), "refusal")
        assert not path.exists()
        await pilot.press("n")
        await until(pilot, lambda: shown(app).startswith("IDLE"), "the created file")
        assert (load(path)["desired_state"], load(path)["current_state"]) == ("pause", "pause")
        assert not panel_of(app).query_one("#mission-create", Button).display


async def test_malformed_file_is_overwritten_only_after_showing_what_is_lost(tmp_path):
    broken = '{"desired_state": "continuous",\n "current_state": "run_on'
    path = write(tmp_path / "agent_state.json", broken)
    app = Host(path, watch=False, poll_interval=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        confirm = await until(pilot, lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None,
                              "the overwrite confirmation")
        assert confirm.title_text == "Overwrite the unreadable agent_state.json?"
        assert confirm.body_text.endswith("This content will be lost:\n\n" + broken)
        await pilot.press("n")
        await until(pilot, lambda: "Kept the unreadable file; nothing was written." in shown(app), "refusal")
        assert path.read_text() == broken
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the overwrite confirmation")
        await pilot.press("y")
        await until(pilot, lambda: shown(app).startswith("IDLE"), "the replaced file")
        assert "Replaced the unreadable agent_state.json" in shown(app)
        assert (load(path)["desired_state"], load(path)["current_state"]) == ("continuous", "pause")


async def test_unrecognised_object_is_extended_not_replaced_after_confirmation(tmp_path):
    path = write(tmp_path / "agent_state.json", {"mode": "on"})
    app = Host(path, watch=False, poll_interval=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("o")
        confirm = await until(pilot, lambda: app.screen if isinstance(app.screen, ConfirmScreen) else None,
                              "the confirmation")
        assert confirm.body_text.endswith(
            "Run single session will add desired_state, timestamp and setBy to it; its other keys are kept.")
        await pilot.press("y")
        await until(pilot, lambda: "desired_state set to run_once." in shown(app), "the write")
        assert (load(path)["mode"], load(path)["desired_state"]) == ("on", "run_once")


async def test_command_palette_offers_the_controls(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("pause", "pause"))
    app = Host(path, open_screen=False, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"run single session")
        await until(pilot, lambda: palette_hit(app, "Mission Control: Run single session"), "the palette hit")
        await pilot.press("enter")
        await until(pilot, lambda: load(path)["desired_state"] == "run_once", "the palette command to write")
        assert isinstance(app.screen, MissionControlScreen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MissionControlScreen), "escape to close")
        assert str(app.screen.query_one("#home", Static).content) == "host home"


async def test_palette_offers_nothing_without_a_path_and_acts_on_the_open_screen(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("pause", "pause"))
    app = Host(path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.agent_state_path = None
        home = MissionControlCommands(app.screen_stack[0])
        assert [text for text, _, _ in home._commands()] == []
        on_screen = MissionControlCommands(app.screen)
        assert [text for text, _, _ in on_screen._commands()] == [
            "Mission Control: Start (continuous)",
            "Mission Control: Stop (pause)",
            "Mission Control: Run single session",
            "Mission Control: Run cleanup session",
        ]
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"cleanup")
        await until(pilot, lambda: palette_hit(app, "Mission Control: Run cleanup session"), "the palette hit")
        await pilot.press("enter")
        await until(pilot, lambda: load(path)["desired_state"] == "run_cleanup", "the palette command to write")


async def test_no_color_still_tells_states_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    path = write(tmp_path / "agent_state.json", mission("pause", "continuous"))
    app = Host(path, now=fixed_clock, watch=False, poll_interval=0)
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert shown(app).startswith("RUNNING\n")
        assert "stopping after the current session" in shown(app)


def test_snapshot_at_80x24(tmp_path, snap_compare, monkeypatch):
    write(tmp_path / "agent_state.json",
          mission("pause", "continuous", note="Stopped via Mission Control", session_count=12))
    monkeypatch.chdir(tmp_path)  # a relative path keeps the picture the same on every machine
    app = Host(Path("agent_state.json"), now=fixed_clock, watch=False, poll_interval=0)
    app.title = "prose-tui"
    assert snap_compare(app, terminal_size=(80, 24))


# -- a real agent process, driven through the UI ------------------------------------------------

def sessions(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


# Turns of our event loop are no measure of an agent process's progress: on a loaded 2-core
# machine it may get the CPU seldom. Waits on what the agent does get this many (a bound only
# against a hang, as long as the agent's own lifetime guard, not a timing).
AGENT_TURNS = 10 * TURNS


@pytest.mark.slow
async def test_ui_drives_an_agent_through_the_seed_state_machine(tmp_path):
    path = tmp_path / "agent_state.json"
    log = tmp_path / "sessions.jsonl"
    gate = tmp_path / "end-session"  # each session runs until the test creates this file
    agent = subprocess.Popen([sys.executable, str(AGENT), str(path), "--poll", "0.02", "--gate", str(gate),
                              "--log", str(log)])

    def started(kind: str) -> bool:
        events = sessions(log)
        return bool(events) and events[-1] == {**events[-1], "event": "start", "kind": kind}

    try:
        app = Host(path, poll_interval=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: shown(app).startswith("IDLE"), "the agent's default file", turns=AGENT_TURNS)
            await pilot.press("s")
            await until(pilot, lambda: shown(app).startswith("RUNNING"), "RUNNING", turns=AGENT_TURNS)
            await until(pilot, lambda: started("continuous"), "a continuous session", turns=AGENT_TURNS)
            await pilot.press("x")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop confirmation")
            await pilot.press("y")
            # The session is held open, so the pending stop is on screen until it is released.
            await until(pilot, lambda: "stopping after the current session" in shown(app), "the pending stop")
            gate.touch()
            await until(pilot, lambda: shown(app).startswith("IDLE"), "IDLE after the session", turns=AGENT_TURNS)
            events = sessions(log)
            assert events[-1]["event"] == "end", "the running session was interrupted"
            assert [e["kind"] for e in events if e["event"] == "start"] == ["continuous"], "a second session started"
            for key, kind in (("o", "once"), ("c", "cleanup")):
                await pilot.press(key)
                await until(pilot, lambda: started(kind), f"a {kind} session", turns=AGENT_TURNS)
                gate.touch()
                await until(pilot, lambda: any(e["kind"] == kind and e["event"] == "end" for e in sessions(log)),
                            f"a {kind} session to end", turns=AGENT_TURNS)
                await until(pilot, lambda: shown(app).startswith("IDLE"), f"IDLE after {kind}", turns=AGENT_TURNS)
                assert "Pending" not in shown(app)
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=120)  # a hang guard: it ends its session and exits


async def test_ui_controls_win_against_an_agent_rewriting_the_file_between_their_checks(tmp_path, monkeypatch):
    """The keys' writes race an agent process that rewrites the file between Mission Control's
    reading and its rename and between its checks, sometimes from a stale reading. The agent
    is stepped from Mission Control's pauses (``Racer``, see test_mission_control), so the race
    is the same on every machine and under any load; each key's choice is still on disk."""
    path = write(tmp_path / "agent_state.json", mission("pause", "pause", session_count=4))
    racer = Racer(path, tmp_path / "racer.json", seed=11)
    real = control.tempfile.NamedTemporaryFile

    def agent_writes_before_our_rename(*args, **kwargs):
        racer.meddle()
        return real(*args, **kwargs)

    monkeypatch.setattr(control.tempfile, "NamedTemporaryFile", agent_writes_before_our_rename)
    lost = []  # beats of the agent's writes that a write of Mission Control replaced

    def between_checks(seconds: float) -> None:
        if load(path).get("beat", 0) != racer.beat:
            lost.append(racer.beat)
        racer.step(seconds)

    monkeypatch.setattr(mission_panel, "apply_action", functools.partial(control.apply_action, sleep=between_checks))
    reapplied = []
    try:
        racer.step()
        app = Host(path, watch=False, poll_interval=0.3, verify_window=0.1)
        async with app.run_test(size=(80, 24)) as pilot:
            for keys, desired in ((("s",), "continuous"), (("o",), "run_once"), (("x", "y"), "pause"),
                                  (("c",), "run_cleanup"), (("s",), "continuous")):
                panel_of(app).say("")
                for key in keys:
                    await pilot.press(key)
                    await pilot.pause()
                await until(pilot, lambda: f"desired_state set to {desired}." in shown(app), f"{desired} written")
                reapplied.append("applied it again" in shown(app))
                assert load(path)["desired_state"] == desired
                assert load(path).get("beat", 0) == racer.beat and not lost, "a write lost the agent's last write"
                racer.step()  # the agent writes what it holds: a reading taken after the last check
                assert load(path)["desired_state"] == desired
    finally:
        last = racer.close()
    assert racer.clobbers and racer.meddles and any(reapplied), "the race did not happen"
    final = load(path)
    assert (final["desired_state"], final["current_state"], final["beat"], final["session_count"]) == (
        "continuous", last["current_state"], last["beat"], 4)
