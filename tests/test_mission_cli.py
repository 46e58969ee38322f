"""``prose-tui agent status|start|stop|once|cleanup``: headless Mission Control."""

from __future__ import annotations

import argparse
import io
import json
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from prose_tui.cli.agent import add_agent_parser, run_agent_command

AGENT = Path(__file__).with_name("mission_agent.py")
NOW = datetime(2025, 10, 15, 22, 41, 19, 372000, tzinfo=timezone.utc)
STAMP = "2025-10-15T22:39:14.372Z"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="prose-tui")
    add_agent_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["agent", *argv])


def run(*argv: str) -> tuple[int, str, str]:
    """Run in-process with a fixed clock; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    args = parse(*argv)
    code = args.func(args, now=lambda: NOW, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


# Seconds: only ends a wait that would otherwise hang (a CLI run, the agent), never a timing;
# a loaded 2-core machine may take many times what an idle one does.
HANG_GUARD = 300


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prose_tui.cli.agent", *argv],
                          capture_output=True, text=True, timeout=HANG_GUARD)


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_subcommand_is_wired_to_run_agent_command():
    args = parse("stop", "somewhere", "--agent-state", "x.json", "--json", "--note", "n", "--create")
    assert args.func is run_agent_command
    assert (args.action, args.path, args.agent_state, args.json, args.note, args.create) == (
        "stop", "somewhere", "x.json", True, "n", True)


def test_status_shows_badge_pending_age_setby_and_note(tmp_path):
    write(tmp_path / "agent_state.json", {"desired_state": "pause", "current_state": "run_cleanup",
                                           "timestamp": STAMP, "setBy": "human", "note": "tidy up"})
    code, out, _ = run("status", str(tmp_path))
    assert code == 0
    assert out.splitlines() == [
        "RUNNING  Agent is running a cleanup session.",
        f"  File         {tmp_path / 'agent_state.json'}",
        "  Current      run_cleanup",
        "  Desired      pause",
        "  Pending      stopping after the current session (pending 2m 05s)",
        f"  Updated      2m 05s ago ({STAMP})",
        "  Set by       human",
        "  Note         tidy up",
    ]


def test_status_json(tmp_path):
    write(tmp_path / "generated-app" / "agent_state.json",
          {"desired_state": "continuous", "current_state": "pause", "timestamp": STAMP, "setBy": "human"})
    code, out, _ = run("status", str(tmp_path), "--json")
    data = json.loads(out)
    assert code == 0
    assert data["path"] == str(tmp_path / "generated-app" / "agent_state.json")
    assert (data["kind"], data["badge"], data["age_seconds"]) == ("mission", "IDLE", 125.0)
    assert data["pending"] == {"description": "starting continuous sessions when the agent next polls",
                               "seconds": 125.0}


def test_status_of_heartbeat_file(tmp_path):
    write(tmp_path / "agent_state.json", {"session_id": "s-9", "status": "working", "restart_count": 0,
                                           "last_heartbeat": "2025-10-15T20:00:00Z"})
    code, out, _ = run("status", str(tmp_path))
    assert code == 0
    assert out.splitlines()[0].startswith("HEARTBEAT STALE  Agent heartbeat file (status working)")
    assert "  Warning      Heartbeat is old: last beat 2h 41m ago (more than 2m 00s); the agent may have stopped." in out


def test_status_of_missing_file_explains_how_to_create(tmp_path):
    code, out, _ = run("status", str(tmp_path))
    assert code == 1
    assert out.splitlines()[0].startswith(f"NO FILE  No agent_state.json at {tmp_path / 'agent_state.json'} or ")
    assert out.splitlines()[-1] == "  Create it with: prose-tui agent stop --create"


def test_status_of_malformed_and_unknown_files(tmp_path):
    path = write(tmp_path / "agent_state.json", "{\"desired_state\": ")
    code, out, _ = run("status", "--agent-state", str(path))
    assert code == 1
    assert out.startswith(f"UNREADABLE  {path} is not valid JSON (line 1, column 19: Expecting value).")
    write(path, {"desired_state": "sprint", "current_state": "pause"})
    code, out, _ = run("status", "--agent-state", str(path))
    assert code == 1
    assert "  Warning      Unknown desired_state 'sprint'" in out


def test_control_on_missing_file_is_refused_unless_create(tmp_path):
    code, out, err = run("start", str(tmp_path))
    assert code == 1
    assert err.startswith(f"prose-tui agent start: No agent_state.json at {tmp_path / 'agent_state.json'}.")
    assert err.rstrip().endswith("Add --create to create it.")
    assert not (tmp_path / "agent_state.json").exists()
    code, out, _ = run("start", str(tmp_path), "--create", "--note", "go")
    assert code == 0
    assert out.splitlines()[0] == "Created agent_state.json with the default state. desired_state set to continuous."
    saved = json.loads((tmp_path / "agent_state.json").read_text())
    assert (saved["desired_state"], saved["current_state"], saved["note"]) == ("continuous", "pause", "go")


def test_control_on_malformed_file_shows_what_would_be_lost(tmp_path):
    path = write(tmp_path / "agent_state.json", '{"desired_state": "pause",\n "current_state": "contin')
    code, _, err = run("stop", str(tmp_path))
    assert code == 1
    assert "Add --overwrite-malformed to replace it with the default; this content would be lost:" in err
    assert err.rstrip().endswith('{"desired_state": "pause",\n "current_state": "contin')
    assert path.read_text() == '{"desired_state": "pause",\n "current_state": "contin'
    code, out, _ = run("stop", str(tmp_path), "--overwrite-malformed")
    assert code == 0
    assert out.startswith("Replaced the unreadable agent_state.json (52 characters). desired_state set to pause. "
                          "The agent already reports pause.")


def test_control_on_unrecognised_object_says_its_keys_are_kept(tmp_path):
    write(tmp_path / "agent_state.json", {"mode": "on"})
    code, _, err = run("start", str(tmp_path))
    assert code == 1
    assert err.rstrip().endswith("Add --overwrite-malformed to add desired_state to it (its other keys are kept).")


def test_control_on_heartbeat_file_is_refused_in_json_too(tmp_path):
    write(tmp_path / "agent_state.json", {"session_id": "s", "last_heartbeat": STAMP})
    code, out, _ = run("cleanup", str(tmp_path), "--json")
    assert code == 1
    data = json.loads(out)
    assert (data["ok"], data["error"]) == (False, "NotMissionControlFile")


def test_control_json_reports_the_new_state(tmp_path):
    write(tmp_path / "agent_state.json", {"desired_state": "pause", "current_state": "pause", "extra": [1]})
    code, out, _ = run("once", str(tmp_path), "--json")
    data = json.loads(out)
    assert code == 0
    assert (data["ok"], data["desired_state"], data["state"]["badge"]) == (True, "run_once", "IDLE")
    assert json.loads((tmp_path / "agent_state.json").read_text())["extra"] == [1]


def test_module_entry_point_runs_standalone(tmp_path):
    result = cli("status", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.startswith("NO FILE")
    result = cli("pause", str(tmp_path))
    assert result.returncode == 2
    assert "invalid choice: 'pause'" in result.stderr


# -- the fake agent, driven only through the CLI ------------------------------------------------

def wait_for(predicate, what: str, timeout: float = HANG_GUARD):
    """Poll ``predicate`` (a state the agent process writes) until truthy. The bound only
    stops a hang, so a starved agent on a loaded machine is slow, not a failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def sessions(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def file_state(path: Path) -> tuple[str, str] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data.get("desired_state"), data.get("current_state")


@pytest.mark.slow
def test_cli_drives_an_agent_through_the_seed_state_machine(tmp_path):
    path = tmp_path / "agent_state.json"
    log = tmp_path / "sessions.jsonl"
    gate = tmp_path / "end-session"  # each session runs until the test creates this file
    agent = subprocess.Popen([sys.executable, str(AGENT), str(path), "--poll", "0.02", "--gate", str(gate),
                              "--log", str(log)])
    try:
        wait_for(lambda: file_state(path) == ("pause", "pause"), "the agent to create pause/pause")
        assert "IDLE" in cli("status", str(tmp_path)).stdout

        assert cli("start", str(tmp_path)).returncode == 0
        wait_for(lambda: any(s["kind"] == "continuous" for s in sessions(log)), "a continuous session")
        assert file_state(path) == ("continuous", "continuous")

        # Stop while a session runs: the agent finishes it, then pauses.
        wait_for(lambda: sessions(log) and sessions(log)[-1]["event"] == "start", "a session in progress")
        assert cli("stop", str(tmp_path)).returncode == 0
        status = cli("status", str(tmp_path)).stdout
        assert status.startswith("RUNNING")
        assert "stopping after the current session" in status
        gate.touch()  # the session in progress ends only now
        wait_for(lambda: file_state(path) == ("pause", "pause"), "the agent to pause")
        events = sessions(log)
        assert events[-1]["event"] == "end", "the session in progress was not finished"
        assert [e["event"] for e in events].count("start") == [e["event"] for e in events].count("end")

        for action, kind in (("once", "once"), ("cleanup", "cleanup")):
            done_before = sum(1 for e in sessions(log) if e["kind"] == kind and e["event"] == "end")
            assert cli(action, str(tmp_path)).returncode == 0
            wait_for(lambda: sessions(log)[-1] == {**sessions(log)[-1], "kind": kind, "event": "start"}, f"a {kind} session to start")
            gate.touch()
            wait_for(lambda: sum(1 for e in sessions(log) if e["kind"] == kind and e["event"] == "end") > done_before,
                     f"a {kind} session")
            wait_for(lambda: file_state(path) == ("pause", "pause"), f"the agent to pause after {kind}")
            assert sum(1 for e in sessions(log) if e["kind"] == kind and e["event"] == "start") == done_before + 1
            assert cli("status", str(tmp_path)).stdout.startswith("IDLE")
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=120)  # a hang guard: it ends its session and exits
    wait_for(lambda: file_state(path) == ("pause", "terminated"), "the agent to report terminated")
    assert cli("status", str(tmp_path)).stdout.startswith("TERMINATED  Agent is terminated.")
