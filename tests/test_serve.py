"""``prose-tui serve``: the explorer in a browser through textual-serve (issue 14).

A real server is started on a free loopback port, the page is fetched over HTTP, and a
websocket session (what the browser page opens) is followed until the explorer's screen
shows the fixture's runs. The wait for the port polls a bounded number of times; the wait
for the screen reads messages until the run id appears, bounded by a message count.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import closing

import pytest
from conftest import FIXTURES

from prose_tui.headless.cli import main
from prose_tui.headless.serve import is_loopback, serve_command

PROJECT = FIXTURES / "project"


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen, tries: int = 600) -> None:
    """Poll until ``port`` accepts a connection (at most ``tries`` times, 0.1 s apart)."""
    for _ in range(tries):
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"prose-tui serve exited with {proc.returncode}: {out}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"nothing listened on 127.0.0.1:{port} after {tries} tries")


@pytest.fixture
def server(tmp_path):
    port = free_port()
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "prose_tui.headless.cli", "serve", str(PROJECT), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_serves_the_page_on_loopback(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server}/", timeout=60) as response:
        assert response.status == 200
        page = response.read().decode()
    assert "/static/js/textual.js" in page or "/static/js/" in page
    assert f'data-session-websocket-url="ws://127.0.0.1:{server}/ws"' in page


def test_the_browser_session_runs_the_explorer(server):
    aiohttp = pytest.importorskip("aiohttp")

    async def screen_text() -> str:
        seen = ""
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"ws://127.0.0.1:{server}/ws?width=110&height=30") as ws:
                for _ in range(2000):  # bounded: the explorer's first screens are a few dozen messages
                    message = await ws.receive(timeout=120)
                    if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        break
                    data = message.data
                    seen += data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
                    if "20260301-100000-a1b2c3" in seen:
                        break
                await ws.send_json(["stdin", "q"])
        return seen

    assert "20260301-100000-a1b2c3" in asyncio.run(screen_text())


def test_a_remote_host_is_refused_and_says_why(capsys):
    assert main(["serve", str(PROJECT), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0" in err and "--allow-remote" in err and "ssh -L" in err


def test_loopback_hosts():
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.5.0.1"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "example.org", "::"))


def test_missing_path_is_one_line(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err.startswith("prose-tui: ")


def test_command_quotes_the_path(tmp_path):
    odd = tmp_path / "a b; rm -rf x"
    odd.mkdir()
    command = serve_command(odd, watch=False)
    assert f"'{odd}'" in command and command.endswith("--no-watch")
