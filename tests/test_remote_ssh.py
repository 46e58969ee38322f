"""Runs on another machine through a real OpenSSH server on 127.0.0.1 (issue 34).

Each test reaches the "host" through Debian's sshd (started by ``ssh_server.start_sshd`` with
throwaway keys) and the system ``ssh`` client named by ``PROSE_TUI_SSH_COMMAND``; the run
files are written by a second process, as a VM on the host would. Skipped, saying why, where
sshd is not installed.
"""

from __future__ import annotations

import json
import sqlite3
import os
import subprocess
import sys
from pathlib import Path

import pytest
from app_helpers import wait_until
from ssh_server import HOST, sshd_missing, start_sshd

from prose_tui.remote import RemoteState
from prose_tui.remote.client import Mirror, RemoteError, RemoteSpec, ssh_argv

pytestmark = pytest.mark.skipif(sshd_missing() is not None, reason=str(sshd_missing()))

RUN_ID = "20260301-100000-abcdef"
LOG = (f"# run:{RUN_ID} triage.prose\n1→ fetch ✓\n2→ ∥start security,perf\n2a→ security ✓\n2b→ perf ✓\n"
       "2→ ∥done\n")


@pytest.fixture(scope="module")
def sshd():
    server = start_sshd()
    yield server
    server.stop()


def _project(root: Path) -> Path:
    run = root / "proj" / ".prose" / "runs" / RUN_ID
    (run / "bindings").mkdir(parents=True)
    (run / "vm.log.md").write_text(LOG)
    (run / "program.prose").write_text('session "fetch"\nparallel:\n  security = session "s"\n  perf = session "p"\n'
                                       'session "draft"\nsession "ship"\n')
    (run / "bindings" / "security.md").write_text("# security\n\nkind: let\n\n---\n\nno findings\n")
    return run


def _cli(sshd, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PROSE_TUI_SSH_COMMAND=sshd.command, PROSE_TUI_CONFIG="/nonexistent/config.toml")
    return subprocess.run([sys.executable, "-m", "prose_tui", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def _append(path: Path, text: str) -> None:
    """The VM on the host appends (a second process)."""
    subprocess.run(["sh", "-c", 'printf "%s" "$1" >> "$2"', "sh", text, str(path)], check=True)


def _mirror(sshd, path: Path) -> Mirror:
    spec = RemoteSpec(HOST, str(path))
    return Mirror(spec, ssh_command=ssh_argv(spec, {"PROSE_TUI_SSH_COMMAND": sshd.command})).start(timeout=120)


def test_show_json_of_a_remote_run_equals_the_local_one(sshd, tmp_path):
    run = _project(tmp_path)
    local = _cli(sshd, "show", "--json", str(run))
    remote = _cli(sshd, "show", "--json", sshd.target(run))
    assert remote.returncode == 0, remote.stderr
    assert "prose-tui-ssh-" not in remote.stdout  # the private copy's path is never shown
    assert json.loads(remote.stdout) == json.loads(local.stdout.replace(str(run), f"ssh://{HOST}{run}"))
    listed = _cli(sshd, "runs", "--json", f"{HOST}:{tmp_path / 'proj'}")  # the scp form
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["path"] == f"ssh://{HOST}{run}" and row["id"] == RUN_ID
    for args in (("show",), ("export", "--format", "md", "-o", "-")):  # text a user reads
        out = _cli(sshd, *args, sshd.target(run))
        assert out.returncode == 0, out.stderr
        assert f"ssh://{HOST}{run}" in out.stdout and "prose-tui-ssh-" not in out.stdout


def test_a_remote_path_that_is_missing_or_a_host_without_python3_is_said_plainly(sshd, tmp_path):
    missing = _cli(sshd, "show", sshd.target(tmp_path / "nope"))
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"prose-tui: {HOST}: {tmp_path / 'nope'}: no such file or folder"
    # a host where python3 is not found: every login runs its command with a PATH that has none
    bare = start_sshd(force_command='/usr/bin/env PATH=/nonexistent /bin/sh -c "$SSH_ORIGINAL_COMMAND"')
    try:
        out = _cli(bare, "show", bare.target(tmp_path))
    finally:
        bare.stop()
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "python3 is not installed on the host" in out.stderr


def test_the_reader_does_not_follow_a_symlink_out_of_the_served_path(sshd, tmp_path):
    run = _project(tmp_path)
    (tmp_path / "secret.md").write_text("# secret\n\nkind: let\n\n---\n\nthe password\n")
    (run / "bindings" / "leak.md").symlink_to(tmp_path / "secret.md")
    out = _cli(sshd, "show", "--json", sshd.target(run))
    assert out.returncode == 0, out.stderr
    assert "the password" not in out.stdout and "leak" not in out.stdout


def test_mission_controls_write_lands_on_the_host(sshd, tmp_path):
    from prose_tui.mission import read_state, set_desired_state

    _project(tmp_path)
    remote_file = tmp_path / "proj" / "agent_state.json"
    remote_file.write_text(json.dumps({"desired_state": "continuous", "current_state": "continuous",
                                       "owner": "agent-7"}))
    mirror = _mirror(sshd, tmp_path / "proj")
    try:
        set_desired_state(mirror.local / "agent_state.json", "pause", verify_window=0.5, verify_step=0.1)
        assert mirror.wait_for(lambda: mirror.desired and read_state(mirror.local / "agent_state.json").raw
                               == remote_file.read_text(), 60)  # the host's answer, and its file back here
        written = json.loads(remote_file.read_text())
        assert written["desired_state"] == "pause" and written["setBy"] == "human"
        assert written["current_state"] == "continuous" and written["owner"] == "agent-7"  # the agent's keys kept
        assert read_state(mirror.local / "agent_state.json").desired_state == "pause"
        assert [m["ok"] for m in mirror.desired] == [True]
    finally:
        mirror.close()


def _screen_text(app) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


async def test_the_explorer_follows_a_remote_run_and_rides_out_a_dropped_link(tmp_path):
    from prose_tui.tui.app import ProseTUI

    server = start_sshd()  # its own: this test stops it listening
    run = _project(tmp_path)
    (run / "bindings" / "perf.md").write_text("# perf\n\nkind: let\n\n---\n\n" + "measured\n" * 20000)
    mirror = _mirror(server, tmp_path / "proj")
    try:
        app = ProseTUI(mirror.local, watch=True, sources=[RemoteState(mirror)])
        async with app.run_test(size=(200, 40)) as pilot:
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.id == RUN_ID,
                             what="the remote run on screen", turns=3000)
            await wait_until(pilot, lambda: f"ssh {HOST}: watching" in _screen_text(app),
                             what="the link in the status line")
            _append(run / "vm.log.md", "3→ draft ✓\n")
            await wait_until(pilot, lambda: "draft" in _screen_text(app) and explorer.current_run.events
                             and "draft" in explorer.current_run.events[-1].text, what="the appended event on screen",
                             turns=3000)
            shown_before = explorer.current_run.events[-1].text
            server.pause()
            mirror.disconnect()
            await wait_until(pilot, lambda: f"reconnecting to {HOST}…" in _screen_text(app),
                             what="reconnecting in the status line", turns=3000)
            _append(run / "vm.log.md", "4→ ship ✓\n---end 2026-03-01T10:09:00Z\n")
            assert explorer.current_run.id == RUN_ID and explorer.current_run.events[-1].text == shown_before  # kept
            received = mirror.bytes_in
            server.resume()
            await wait_until(pilot, lambda: "ship" in explorer.current_run.events[-1].text or
                             any("ship" in e.text for e in explorer.current_run.events[-3:]),
                             what="the events written while the link was down", turns=6000)
            await wait_until(pilot, lambda: f"ssh {HOST}: watching" in _screen_text(app), what="watching again")
            assert mirror.connects == 2
            assert mirror.bytes_in - received < 4000  # what changed, not the 180 KB binding again
    finally:
        mirror.close()
        server.stop()


def test_a_host_that_cannot_be_reached_is_said_plainly(tmp_path):
    spec = RemoteSpec("127.0.0.1", "/tmp", port=1)
    with pytest.raises(RemoteError, match="ssh could not connect"):
        Mirror(spec, ssh_command=ssh_argv(spec, {"PROSE_TUI_SSH_COMMAND": "ssh -o BatchMode=yes -F /dev/null"})
               ).start(60)


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
def test_a_remote_sqlite_run_shows_as_the_local_one(sshd, tmp_path, journal_mode):
    from sqlite_fixture import build_sqlite_run

    run = build_sqlite_run(tmp_path / "proj", journal_mode=journal_mode)
    (tmp_path / "proj" / ".prose" / "agents.db").unlink()  # project scope: above the path served, not read
    keep_open = sqlite3.connect(run / "state.db")  # a VM with the database open: WAL keeps -wal and -shm
    keep_open.execute("SELECT 1").fetchall()
    try:
        local = _cli(sshd, "show", "--json", str(run))
        remote = _cli(sshd, "show", "--json", sshd.target(run))
    finally:
        keep_open.close()
    assert remote.returncode == 0, remote.stderr
    shown, expected = json.loads(remote.stdout), json.loads(local.stdout.replace(str(run), f"ssh://{HOST}{run}"))
    # how the local backend opened the file (the host's WAL database read in place, the copy
    # a rollback one) is the one difference
    assert shown["header"].pop("open_mode") in ("ro", "copy") and expected["header"].pop("open_mode")
    assert shown == expected
    assert not list(run.glob("*.prose-tui*"))  # nothing written on the host


def test_rows_a_vm_commits_on_the_host_reach_the_copy(sshd, tmp_path):
    from prose_tui.backends import open_run

    run = tmp_path / "proj" / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    writer = subprocess.Popen([sys.executable, str(Path(__file__).with_name("sqlite_vm_writer.py")), "statements",
                               str(run / "state.db"), "3", "python", "wal"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdin is not None
        while writer.stdout.readline().strip() != "3":
            pass
        mirror = _mirror(sshd, tmp_path / "proj")
        copy = mirror.local / ".prose" / "runs" / RUN_ID
        try:
            assert len(open_run(copy).trace) >= 3 or len(open_run(copy).events) >= 3
            before = mirror.bytes_in
            writer.stdin.write("more 2\n")
            writer.stdin.flush()
            while writer.stdout.readline().strip() != "5":
                pass
            expected = len(open_run(run).events)
            assert mirror.wait_for(lambda: len(open_run(copy).events) == expected, 60), \
                (len(open_run(copy).events), expected, mirror.changes)
            assert mirror.bytes_in - before < 8 * 4096  # changed pages, not the database again and again
        finally:
            mirror.close()
    finally:
        writer.stdin.close() if writer.stdin else None
        writer.wait(timeout=30)


def test_a_remote_runs_journal_is_the_same_from_one_session_to_the_next(sshd, tmp_path, monkeypatch):
    from prose_tui.history import Journal
    from prose_tui.remote import close, localize, remote_path

    run = _project(tmp_path)
    monkeypatch.setenv("PROSE_TUI_SSH_COMMAND", sshd.command)
    journal = Journal(tmp_path / "state")
    folders = []
    for _ in range(2):  # two sessions: each has its own private copy
        local = localize(remote_path(sshd.target(run)))
        assert local is not None and local.exists() and "prose-tui-ssh-" in str(local)
        folders.append(journal.folder(local))
        close(local)
        assert not local.exists()
    assert folders[0] == folders[1]  # the history recorded in one session is there in the next


def test_a_remote_state_file_is_a_target_too(sshd, tmp_path):
    from sqlite_fixture import build_sqlite_run

    run = build_sqlite_run(tmp_path / "proj", journal_mode="delete")
    out = _cli(sshd, "show", "--json", sshd.target(run / "state.db"))  # the file alone is served
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["id"] == "20260116-143052-a7b3c9" and shown["path"].startswith(f"ssh://{HOST}{run}")
