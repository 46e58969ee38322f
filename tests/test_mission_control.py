"""Mission Control writes: only its own keys, atomic, race-checked (seeds/agent-state.md, "Summary")."""

from __future__ import annotations

import json
import os
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
from mission_agent import Racer

from prose_tui.mission import control
from prose_tui.mission.control import (
    AgentKeepsOverwriting,
    ControlError,
    NotMissionControlFile,
    StateFileMalformed,
    StateFileMissing,
    apply_action,
    create_default,
    set_desired_state,
)

NOW = datetime(2025, 10, 15, 22, 41, 19, 5000, tzinfo=timezone.utc)


def clock() -> datetime:
    return NOW


def state_file(tmp_path: Path, data) -> Path:
    path = tmp_path / "agent_state.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def seed_file(tmp_path: Path, **extra) -> Path:
    return state_file(tmp_path, {
        "desired_state": "continuous", "current_state": "continuous",
        "timestamp": "2025-10-15T22:39:14.372Z", "setBy": "agent", "note": "old note",
        "session_count": 7, **extra,
    })


def test_write_sets_only_desired_timestamp_setby_and_keeps_everything_else(tmp_path):
    path = seed_file(tmp_path)
    result = apply_action(path, "stop", now=clock, verify_window=0)
    assert load(path) == {
        "desired_state": "pause",
        "current_state": "continuous",
        "timestamp": "2025-10-15T22:41:19.005Z",
        "setBy": "human",
        "note": "old note",
        "session_count": 7,
    }
    assert result.message == "desired_state set to pause."


def test_note_is_written_when_given(tmp_path):
    path = seed_file(tmp_path)
    apply_action(path, "once", note="one more", now=clock, verify_window=0)
    assert load(path)["note"] == "one more"
    assert load(path)["desired_state"] == "run_once"


@pytest.mark.parametrize(("action", "desired"), [("start", "continuous"), ("stop", "pause"),
                                                 ("once", "run_once"), ("cleanup", "run_cleanup")])
def test_actions_map_to_the_four_states(tmp_path, action, desired):
    path = seed_file(tmp_path, desired_state="pause", current_state="pause")
    apply_action(path, action, now=clock, verify_window=0)
    assert load(path)["desired_state"] == desired
    assert load(path)["current_state"] == "pause"


def test_write_is_atomic_leaves_no_temporary_file_and_keeps_permissions(tmp_path):
    path = seed_file(tmp_path)
    os.chmod(path, 0o640)
    inode = os.stat(path).st_ino
    apply_action(path, "stop", now=clock, verify_window=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent_state.json"]
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.stat(path).st_ino != inode  # replaced by rename, never rewritten in place


def test_missing_file_is_refused_and_not_created(tmp_path):
    path = tmp_path / "agent_state.json"
    with pytest.raises(StateFileMissing) as caught:
        apply_action(path, "start", now=clock)
    assert caught.value.message.startswith(f"No agent_state.json at {path}.")
    assert not path.exists()


def test_missing_file_is_created_from_the_seed_default_on_request(tmp_path):
    path = tmp_path / "agent_state.json"
    result = apply_action(path, "start", create=True, now=clock, verify_window=0)
    assert load(path) == {"desired_state": "continuous", "current_state": "pause",
                          "timestamp": "2025-10-15T22:41:19.005Z", "setBy": "human"}
    assert result.message == "Created agent_state.json with the default state. desired_state set to continuous."


def test_create_default_writes_pause_pause_and_never_overwrites(tmp_path):
    path = tmp_path / "agent_state.json"
    create_default(path, now=clock)
    assert load(path)["desired_state"] == load(path)["current_state"] == "pause"
    path.write_text("not json")
    with pytest.raises(ControlError) as caught:
        create_default(path, now=clock)
    assert caught.value.message == f"{path} already exists; nothing was changed."
    assert path.read_text() == "not json"


def test_create_in_a_missing_folder_says_so(tmp_path):
    path = tmp_path / "nowhere" / "agent_state.json"
    with pytest.raises(ControlError) as caught:
        create_default(path, now=clock)
    assert caught.value.message == f"Folder {path.parent} does not exist."


def test_malformed_file_is_never_overwritten_without_the_flag(tmp_path):
    path = state_file(tmp_path, '{"desired_state": "pause", "current_state": "contin')
    with pytest.raises(StateFileMalformed) as caught:
        apply_action(path, "start", now=clock)
    assert caught.value.lost == '{"desired_state": "pause", "current_state": "contin'
    assert "is not valid JSON" in caught.value.message
    assert path.read_text() == '{"desired_state": "pause", "current_state": "contin'


def test_malformed_file_is_replaced_with_the_default_when_confirmed(tmp_path):
    path = state_file(tmp_path, "{garbage")
    result = apply_action(path, "start", overwrite_malformed=True, now=clock, verify_window=0)
    assert load(path)["desired_state"] == "continuous"
    assert load(path)["current_state"] == "pause"
    assert result.replaced == "{garbage"
    assert result.message.startswith("Replaced the unreadable agent_state.json (8 characters).")


def test_unrecognised_object_keeps_its_keys_when_confirmed(tmp_path):
    path = state_file(tmp_path, {"mode": "on"})
    with pytest.raises(StateFileMalformed):
        apply_action(path, "stop", now=clock)
    apply_action(path, "stop", overwrite_malformed=True, now=clock, verify_window=0)
    assert load(path)["mode"] == "on" and load(path)["desired_state"] == "pause"


def test_heartbeat_file_is_not_written(tmp_path):
    path = state_file(tmp_path, {"session_id": "s", "status": "working", "last_heartbeat": "2025-10-15T22:41:00Z"})
    before = path.read_text()
    with pytest.raises(NotMissionControlFile) as caught:
        apply_action(path, "start", now=clock)
    assert "heartbeat file" in caught.value.message
    assert path.read_text() == before


def test_unknown_desired_state_is_replaced_by_a_control(tmp_path):
    path = seed_file(tmp_path, desired_state="warp")
    apply_action(path, "stop", now=clock, verify_window=0)
    assert load(path)["desired_state"] == "pause"


def test_unknown_action_or_state_is_a_value_error(tmp_path):
    path = seed_file(tmp_path)
    with pytest.raises(ValueError):
        apply_action(path, "reboot")
    with pytest.raises(ValueError):
        set_desired_state(path, "terminated")


def test_agent_write_during_ours_keeps_the_agents_current_state(tmp_path, monkeypatch):
    """The agent writes after our read but before our rename: we rebuild from its text."""
    path = seed_file(tmp_path, desired_state="pause", current_state="pause")
    real = control.tempfile.NamedTemporaryFile
    calls = []

    def agent_writes_meanwhile(*args, **kwargs):
        if not calls:
            data = load(path)
            data["current_state"] = "run_once"
            data["session_count"] = 8
            path.write_text(json.dumps(data))
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(control.tempfile, "NamedTemporaryFile", agent_writes_meanwhile)
    apply_action(path, "start", now=clock, verify_window=0)
    final = load(path)
    assert (final["desired_state"], final["current_state"], final["session_count"]) == ("continuous", "run_once", 8)
    assert len(calls) == 2


def test_agent_overwriting_desired_state_is_reapplied_and_reported(tmp_path):
    """The agent wrote from a reading taken before ours: desired_state went back to continuous."""
    path = seed_file(tmp_path)
    overwrites = []

    def agent_clobbers_once(seconds: float) -> None:
        if not overwrites:
            data = load(path)
            data.update(desired_state="continuous", current_state="continuous", session_count=9)
            path.write_text(json.dumps(data))
            overwrites.append(1)

    result = apply_action(path, "stop", now=clock, verify_window=0.05, sleep=agent_clobbers_once)
    final = load(path)
    assert (final["desired_state"], final["current_state"], final["session_count"]) == ("pause", "continuous", 9)
    assert result.reapplied == 1
    assert result.message == "desired_state set to pause. The agent overwrote it once; applied it again."


def test_agent_that_never_lets_go_is_reported(tmp_path):
    path = seed_file(tmp_path)

    def agent_always_clobbers(seconds: float) -> None:
        data = load(path)
        data["desired_state"] = "continuous"
        path.write_text(json.dumps(data))

    with pytest.raises(AgentKeepsOverwriting) as caught:
        apply_action(path, "stop", now=clock, verify_window=0.05, max_reapply=3, sleep=agent_always_clobbers)
    assert caught.value.message == (
        "The agent keeps overwriting desired_state (now 'continuous'); gave up after applying pause 3 more times."
    )


def test_agent_acknowledging_ends_the_check_and_its_one_shot_reset_is_not_undone(tmp_path):
    path = seed_file(tmp_path, desired_state="pause", current_state="pause")
    steps = []

    def agent_runs_once_and_resets(seconds: float) -> None:
        steps.append(1)
        data = load(path)
        if len(steps) == 1:
            data["current_state"] = "run_once"
        else:
            data.update(desired_state="pause", current_state="pause")
        path.write_text(json.dumps(data))

    result = apply_action(path, "once", now=clock, verify_window=0.05, sleep=agent_runs_once_and_resets)
    assert result.acknowledged and result.reapplied == 0
    assert result.message == "desired_state set to run_once. The agent has picked it up."
    assert load(path)["current_state"] == "run_once"


def test_race_with_an_agent_rewriting_the_file_between_our_checks(tmp_path, monkeypatch):
    """An agent process rewrites the file all through each control: between Mission Control's
    reading and its rename, and between its checks, sometimes from a reading taken before
    Mission Control's write (the clobber the verify window catches). The agent is stepped by
    the test (``Racer``), so every run races the same way whatever the scheduler does. After
    each control the file holds the user's choice and the agent's last write (never lossy);
    when the agent stops the file holds its last current_state and every other key."""
    path = seed_file(tmp_path, desired_state="pause", current_state="pause")
    racer = Racer(path, tmp_path / "racer.json", seed=5)
    real = control.tempfile.NamedTemporaryFile

    def agent_writes_before_our_rename(*args, **kwargs):
        racer.meddle()
        return real(*args, **kwargs)

    monkeypatch.setattr(control.tempfile, "NamedTemporaryFile", agent_writes_before_our_rename)

    def between_checks(seconds: float) -> None:
        assert load(path).get("beat", 0) == racer.beat, "Mission Control's write dropped the agent's last write"
        racer.step(seconds)

    chooser = random.Random(5)
    chosen = None
    reapplied = 0
    try:
        racer.step()
        for _ in range(12):
            action = chooser.choice(["start", "stop", "once", "cleanup"])
            result = apply_action(path, action, note=f"choice {action}", verify_window=0.1, sleep=between_checks)
            chosen = result.desired_state
            reapplied += result.reapplied
            seen = load(path)
            assert seen["desired_state"] == chosen, f"the agent undid {action}"
            assert seen["note"] == f"choice {action}"
            assert seen.get("beat", 0) == racer.beat, "Mission Control lost the agent's last write"
            racer.step()  # the agent writes what it holds: a reading taken after our last check
            assert load(path)["desired_state"] == chosen, f"the agent undid {action} after the check"
    finally:
        last = racer.close()
    print(f"clobbers {racer.clobbers}, writes before our rename {racer.meddles}, re-applied {reapplied}")
    assert racer.clobbers >= 3 and racer.meddles >= 3 and reapplied >= 3, "the race did not happen"
    final = load(path)
    assert final["desired_state"] == chosen
    assert final["current_state"] == last["current_state"]
    assert final["beat"] == last["beat"]
    assert final["session_count"] == 7
