"""Reading and classifying agent_state.json (seeds/agent-state.md; FORMATS.md known defects)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.mission.rows import status_rows
from prose_tui.mission.state import (
    Kind,
    classify,
    describe_age,
    describe_duration,
    find_agent_state,
    read_state,
)

STAMP = "2025-10-15T22:39:14.372Z"
NOW = datetime(2025, 10, 15, 22, 41, 19, 372000, tzinfo=timezone.utc)  # 2m 05s after STAMP


def clock() -> datetime:
    return NOW


def write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def mission(desired="continuous", current="continuous", **extra) -> dict:
    return {"desired_state": desired, "current_state": current, "timestamp": STAMP, "setBy": "human", **extra}


@pytest.mark.parametrize(
    ("current", "label", "tone"),
    [
        ("continuous", "RUNNING", "running"),
        ("run_once", "RUNNING", "running"),
        ("run_cleanup", "RUNNING", "running"),
        ("pause", "IDLE", "idle"),
        ("terminated", "TERMINATED", "terminated"),
    ],
)
def test_badge_follows_the_seed_status_mapping_plus_terminated(tmp_path, current, label, tone):
    desired = "pause" if current == "terminated" else current
    state = read_state(write(tmp_path / "agent_state.json", mission(desired, current)), now=clock)
    assert state.kind is Kind.MISSION
    assert (state.badge.label, state.badge.tone) == (label, tone)
    assert state.problems == ()


def test_terminated_agent_is_named_in_the_headline(tmp_path):
    state = read_state(write(tmp_path / "agent_state.json", mission("pause", "terminated")), now=clock)
    assert state.message == "Agent is terminated."
    assert state.pending is None
    state = read_state(write(tmp_path / "agent_state.json", mission("continuous", "terminated")), now=clock)
    assert state.pending.description == "the agent has terminated; it will act on continuous only when restarted"


def test_stop_requested_while_running_shows_pending_transition_and_its_age(tmp_path):
    path = write(tmp_path / "agent_state.json", mission("pause", "continuous", note="Stopped via Mission Control"))
    state = read_state(path, now=clock)
    assert state.badge.label == "RUNNING"
    assert state.pending.description == "stopping after the current session"
    rows = dict(status_rows(state, NOW))
    assert rows["Pending"] == "stopping after the current session (pending 2m 05s)"
    assert rows["Updated"] == f"2m 05s ago ({STAMP})"
    assert rows["Set by"] == "human"
    assert rows["Note"] == "Stopped via Mission Control"


@pytest.mark.parametrize(
    ("desired", "current", "words"),
    [
        ("continuous", "pause", "starting continuous sessions"),
        ("run_once", "pause", "starting a single session"),
        ("run_cleanup", "pause", "starting a cleanup session"),
        ("continuous", "run_once", "switching to continuous after the current session"),
    ],
)
def test_pending_transition_wording(tmp_path, desired, current, words):
    state = read_state(write(tmp_path / "agent_state.json", mission(desired, current)), now=clock)
    assert words in state.pending.description


def test_heartbeat_file_is_recognised_by_its_keys_not_called_broken(tmp_path):
    beat = {
        "session_id": "s-42",
        "current_issue": "#17 fix parser",
        "status": "working",
        "last_heartbeat": "2025-10-15T22:41:00Z",
        "restart_count": 2,
    }
    state = read_state(write(tmp_path / "agent_state.json", beat), now=clock)
    assert state.kind is Kind.HEARTBEAT
    assert state.badge.label == "HEARTBEAT"
    assert "heartbeat file" in state.message and "not a Mission Control file" in state.message
    assert state.problems == ()
    rows = dict(status_rows(state, NOW))
    assert rows["Agent status"] == "working"
    assert rows["Session"] == "s-42"
    assert rows["Issue"] == "#17 fix parser"
    assert rows["Last beat"].startswith("19s ago")
    assert rows["Restarts"] == "2"


def test_old_heartbeat_gets_a_warning(tmp_path):
    beat = {"session_id": "s-1", "status": "working", "last_heartbeat": "2025-10-15T21:00:00Z"}
    state = read_state(write(tmp_path / "agent_state.json", beat), now=clock)
    assert state.badge.label == "HEARTBEAT STALE"
    assert state.problems == (
        "Heartbeat is old: last beat 1h 41m ago (more than 2m 00s); the agent may have stopped.",
    )


def test_heartbeat_in_epoch_seconds_is_understood(tmp_path):
    beat = {"session_id": "s-1", "last_heartbeat": NOW.timestamp() - 5}
    state = read_state(write(tmp_path / "agent_state.json", beat), now=clock)
    assert state.heartbeat.last_heartbeat == NOW - timedelta(seconds=5)
    assert not state.heartbeat.stale


def test_missing_file_says_where_it_looked(tmp_path):
    from prose_tui.mission.state import candidate_paths

    state = read_state(find_agent_state(tmp_path), now=clock, searched=candidate_paths(tmp_path))
    assert state.kind is Kind.MISSING
    assert state.badge.label == "NO FILE"
    assert state.message.startswith(
        f"No agent_state.json at {tmp_path / 'agent_state.json'} or "
        f"{tmp_path / 'generated-app' / 'agent_state.json'}."
    )
    assert "default (desired_state and current_state both pause)" in state.message


@pytest.mark.parametrize(
    ("text", "message_end"),
    [
        ('{"desired_state": "pause",', "is not valid JSON (line 1, column 27: Expecting property name enclosed in double quotes)"),
        ("", "is empty."),
        ("   \n", "is empty."),
        ('["pause"]', "holds a list, not a JSON object."),
        ('"pause"', "holds a string, not a JSON object."),
    ],
)
def test_malformed_file_messages(tmp_path, text, message_end):
    path = write(tmp_path / "agent_state.json", text)
    state = read_state(path, now=clock, retries=0)
    assert state.kind is Kind.MALFORMED
    assert state.badge.label == "UNREADABLE"
    assert state.message.startswith(f"{path} {message_end}")
    assert state.raw == text


def test_invalid_json_message_promises_not_to_overwrite(tmp_path):
    state = read_state(write(tmp_path / "agent_state.json", "{oops"), now=clock, retries=0)
    assert state.message.endswith(
        "The agent treats this as pause; Mission Control will not overwrite it without confirmation."
    )


def test_json_object_of_neither_kind_lists_its_keys(tmp_path):
    state = read_state(write(tmp_path / "agent_state.json", {"mode": "on", "x": 1}), now=clock)
    assert state.kind is Kind.UNRECOGNISED
    assert state.message.endswith("Keys: mode, x.")


def test_unknown_state_values_are_named(tmp_path):
    state = read_state(write(tmp_path / "agent_state.json", mission("warp", "dreaming")), now=clock)
    assert state.kind is Kind.UNKNOWN_STATE
    assert state.badge.label == "UNKNOWN"
    assert state.problems == (
        "Unknown desired_state 'warp' (expected one of continuous, pause, run_once, run_cleanup); "
        "the agent treats it as pause.",
        "Unknown current_state 'dreaming' reported by the agent "
        "(expected one of continuous, pause, run_once, run_cleanup or terminated).",
    )
    assert state.controllable


def test_missing_current_state_and_bad_timestamp_are_warnings(tmp_path):
    state = read_state(
        write(tmp_path / "agent_state.json", {"desired_state": "continuous", "timestamp": "yesterday"}), now=clock
    )
    assert state.kind is Kind.MISSION
    assert state.badge.label == "NO REPORT"
    assert state.problems == (
        "current_state is missing: the agent has not reported its state yet.",
        "timestamp 'yesterday' is not an ISO 8601 time.",
    )


def test_unreadable_path_is_reported_not_raised(tmp_path):
    folder = tmp_path / "agent_state.json"
    folder.mkdir()
    state = read_state(folder, now=clock)
    assert state.kind is Kind.UNREADABLE
    assert state.message == f"{folder} is a folder, not a file."


def test_find_prefers_the_folder_then_generated_app_then_explicit(tmp_path):
    nested = tmp_path / "generated-app" / "agent_state.json"
    nested.parent.mkdir()
    assert find_agent_state(tmp_path) == tmp_path / "agent_state.json"  # missing: the default place
    write(nested, mission())
    assert find_agent_state(tmp_path) == nested
    top = write(tmp_path / "agent_state.json", mission())
    assert find_agent_state(tmp_path) == top
    assert find_agent_state(tmp_path, explicit=tmp_path / "other.json") == tmp_path / "other.json"
    assert find_agent_state(nested) == nested


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (65, "1m 05s"), (3600 + 120, "1h 02m"), (86400 * 2 + 3600 * 5, "2d 5h")],
)
def test_durations_read_naturally(seconds, text):
    assert describe_duration(timedelta(seconds=seconds)) == text


def test_future_timestamp_is_flagged_as_clock_skew():
    assert describe_age(NOW + timedelta(seconds=30), NOW) == "in 30s (clock skew?)"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_classified_without_raising(text):
    state = classify(Path("agent_state.json"), text, now=clock)
    assert state.message
    state.badge, state.pending  # noqa: B018 - derived properties must not raise either


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["desired_state", "current_state", "timestamp", "setBy", "note", "session_id",
                         "status", "last_heartbeat", "restart_count", "other"]),
        json_values,
    )
)
def test_any_json_object_is_classified_and_described_without_raising(data):
    state = classify(Path("agent_state.json"), json.dumps(data), now=clock)
    assert state.message
    status_rows(state, NOW)


def test_the_core_runs_without_textual():
    """state, control and cli must work over SSH scripts without loading the UI toolkit."""
    import subprocess
    import sys

    code = ("import sys, prose_tui.mission, prose_tui.cli.agent; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == "[]", result.stderr
