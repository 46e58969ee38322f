"""What a user sees of a remote run (issue 34): the host's ``ssh://`` paths, never the private
local copy's; ``diff`` of remote runs; ``record``'s link state; a big log's newest events
before the rest of it. Through a real OpenSSH server on 127.0.0.1 (``ssh_server``)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from app_helpers import wait_until
from ssh_server import HOST, sshd_missing, start_sshd
from test_remote_ssh import RUN_ID, _cli, _project, _screen_text

pytestmark = pytest.mark.skipif(sshd_missing() is not None, reason=str(sshd_missing()))

COPY = "prose-tui-ssh-"  # the private copy's folder name: never shown


@pytest.fixture(scope="module")
def sshd():
    server = start_sshd()
    yield server
    server.stop()


def test_diff_takes_ssh_targets(sshd, tmp_path):
    a = _project(tmp_path / "a")
    b = _project(tmp_path / "b")
    (b / "vm.log.md").write_text((b / "vm.log.md").read_text().replace("2b→ perf ✓", "2b→ perf ✗ timeout"))
    local = _cli(sshd, "diff", "--json", str(a), str(b))
    remote = _cli(sshd, "diff", "--json", sshd.target(a), f"{HOST}:{b}")  # the URL and the scp form
    assert remote.returncode == 0, remote.stderr
    assert COPY not in remote.stdout
    expected = local.stdout.replace(str(a), f"ssh://{HOST}{a}").replace(str(b), f"ssh://{HOST}{b}")
    assert json.loads(remote.stdout) == json.loads(expected)
    text = _cli(sshd, "diff", sshd.target(a), sshd.target(b))
    assert text.returncode == 0, text.stderr
    assert "perf" in text.stdout and COPY not in text.stdout


def test_runs_and_show_text_name_the_host_never_the_copy(sshd, tmp_path):
    run = _project(tmp_path)
    (run / "vm.log.md").write_text((run / "vm.log.md").read_text() + "3→ draft ✗ cannot read " + str(run) + "/x\n")
    for args in (("runs", sshd.target(tmp_path / "proj")), ("show", sshd.target(run))):
        out = _cli(sshd, *args)
        assert out.returncode == 0, out.stderr
        assert RUN_ID in out.stdout and COPY not in out.stdout + out.stderr


async def test_the_explorer_shows_the_hosts_paths_never_the_copy(sshd, tmp_path, monkeypatch):
    from prose_tui.remote import RemoteState, close, localize, mirror_of, remote_path
    from prose_tui.tui.app import ProseTUI

    run = _project(tmp_path)
    project = tmp_path / "proj"
    (project / "agent_state.json").write_text(json.dumps({"desired_state": "continuous",
                                                          "current_state": "continuous"}))
    (tmp_path / "empty" / ".prose").mkdir(parents=True)
    monkeypatch.setenv("PROSE_TUI_SSH_COMMAND", sshd.command)
    local = localize(remote_path(sshd.target(project)))
    empty = localize(remote_path(sshd.target(tmp_path / "empty")))
    try:
        app = ProseTUI(local, watch=True, sources=[RemoteState(mirror_of(local))])
        copied: list[str] = []
        notified: list[str] = []
        async with app.run_test(size=(200, 50)) as pilot:
            app.copy_to_clipboard = copied.append  # what OSC 52 would send the terminal
            notify = app.notify
            app.notify = lambda message, **kw: (notified.append(message + " " + kw.get("title", "")),
                                                notify(message, **kw))[1]
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.id == RUN_ID,
                             what="the remote run on screen", turns=3000)
            screens = [_screen_text(app)]
            app.action_copy("path")
            app.action_mission_control()
            await wait_until(pilot, lambda: "File" in _screen_text(app), what="Mission Control", turns=3000)
            screens.append(_screen_text(app))
            app.screen.panel.say(f"Created {local / 'agent_state.json'}")  # its feedback line
            await pilot.pause()
            screens.append(_screen_text(app))
        assert copied == [f"ssh://{HOST}{run}"]
        assert f"File         ssh://{HOST}{project}/agent_state.json" in screens[1]
        assert f"Mission Control — ssh://{HOST}{project}/agent_state.json" in screens[1]  # the title
        assert f"Created ssh://{HOST}{project}/agent_state.json" in screens[2]
        assert any(f"ssh://{HOST}{run}" in n or "Copied" in n for n in notified)
        app = ProseTUI(empty, watch=True, sources=[RemoteState(mirror_of(empty))])
        async with app.run_test(size=(200, 50)) as pilot:
            from textual.widgets import Static

            head = app.explorer.query_one("#run-head", Static)
            await wait_until(pilot, lambda: "No runs found" in str(head.content), what="no runs", turns=3000)
            screens += [_screen_text(app), str(head.content)]
        assert str(head.content).startswith(f"No runs found under ssh://{HOST}{tmp_path / 'empty'}:")
        for text in screens + copied + notified:
            assert COPY not in text
    finally:
        close(local)
        close(empty)


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from /proc), children first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo += children.get(p, [])
    return out


def test_record_says_the_links_state_as_it_moves(tmp_path):
    run = _project(tmp_path)
    server = start_sshd()  # its own: this test drops its sessions
    env = dict(os.environ, PROSE_TUI_SSH_COMMAND=server.command, PROSE_TUI_CONFIG="/nonexistent/config.toml",
               XDG_STATE_HOME=str(tmp_path / "state"))
    record = subprocess.Popen([sys.executable, "-m", "prose_tui", "record", server.target(tmp_path / "proj")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in record.stdout or ()], daemon=True).start()
    said: list[str] = []

    def until(wanted: str) -> None:
        while not any(wanted in line for line in said):
            said.append(lines.get(timeout=300))  # bounds a hang only

    try:
        until(f"ssh {HOST}: watching")
        until("recording 1 run below")
        sessions = _descendants(server.process.pid)
        server.pause()  # no new login until resumed: the link stays down
        for pid in sessions:
            try:
                os.kill(pid, signal.SIGTERM)  # the sessions of this test's own sshd: the link drops
            except ProcessLookupError:
                pass
        until(f"reconnecting to {HOST}…")
        server.resume()
        said.clear()
        until(f"ssh {HOST}: watching")
        (run / "vm.log.md").write_text((run / "vm.log.md").read_text() + "3→ draft ✓\n")  # still recorded
    finally:
        record.send_signal(signal.SIGTERM)
        record.wait(timeout=60)
        server.stop()
    assert record.returncode == 0
    assert not any(COPY in line for line in said)


async def test_a_big_logs_newest_events_are_on_screen_before_the_rest_is_copied(sshd, tmp_path):
    from ssh_server import gate_command

    from prose_tui.remote import RemoteState
    from prose_tui.remote.client import Mirror, RemoteSpec, ssh_argv
    from prose_tui.tui.app import ProseTUI

    run = tmp_path / "proj" / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    events = 20_000  # a 700 KB event log
    log = run / "state.md"
    log.write_text(f"# run:{RUN_ID} long.prose\n" + "".join(f"{i}→ step_{i} ✓\n" for i in range(1, events + 1)))
    fifo = tmp_path / "gate"
    spec = RemoteSpec(HOST, str(tmp_path / "proj"))
    # the link passes the login, the reader's hello, the preview (about 64 KB of lines: some 10 KB
    # compressed) and stalls before the whole log (some 100 KB compressed) until the gate opens
    command = gate_command(sshd, 60_000, fifo)
    mirror = Mirror(spec, ssh_command=ssh_argv(spec, {"PROSE_TUI_SSH_COMMAND": command}), preview=100_000)
    opened = threading.Thread(target=lambda: open(fifo, "wb").close(), daemon=True)
    try:
        mirror.start(timeout=120, complete=False)
        copy = mirror.local / ".prose" / "runs" / RUN_ID / "state.md"
        held = copy.read_text()
        assert mirror.behind == {f".prose/runs/{RUN_ID}/state.md"}
        assert held.startswith(f"# run:{RUN_ID} long.prose\n") and held.endswith(f"{events}→ step_{events} ✓\n")
        assert len(held) < len(log.read_text()) // 4  # the header and the newest events only
        app = ProseTUI(mirror.local, watch=True, sources=[RemoteState(mirror)])
        async with app.run_test(size=(160, 40)) as pilot:
            explorer = app.explorer
            newest = f"step_{events}"
            await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.trace
                             and newest in explorer.current_run.trace[-1].text and newest in _screen_text(app),
                             what="the newest event on screen while the rest is behind", turns=3000)
            assert not mirror.wait_complete(0)  # still behind the gate
            assert f"ssh {HOST}: copying the rest of 1 log…" in _screen_text(app)
            opened.start()  # the link moves again
            def state() -> str:
                run = explorer.current_run
                return (f"complete={mirror.wait_complete(0)} copy={copy.stat().st_size}/{log.stat().st_size} "
                        f"trace={len(run.trace) if run else None} first={run.trace[0].text if run and run.trace else None}")

            try:
                await wait_until(pilot, lambda: mirror.wait_complete(0) and explorer.current_run is not None
                                 and explorer.current_run.trace[0].text.startswith("1→ step_1 ")
                                 and len(explorer.current_run.trace) == events,
                                 what="the whole run once the rest arrived", turns=6000)
            except AssertionError as exc:
                raise AssertionError(f"{exc}: {state()}") from None
            await wait_until(pilot, lambda: f"ssh {HOST}: watching" in _screen_text(app), what="watching")
        assert copy.read_bytes() == log.read_bytes()
    finally:
        if not opened.is_alive() and opened.ident is None:
            opened.start()  # never leave the relay blocked
        mirror.close()
