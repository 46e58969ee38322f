"""``prose-tui serve``: the explorer in a browser (issue 14), answering only whoever holds its
link (issue 29).

A real server is started as a subprocess on a free port (``--port 0``); each test waits for
the link it prints, then asks for the page, its assets and the websocket (what the browser
page opens) as a browser would, with and without the token, from the right and a foreign
``Origin``, through another loopback address. A websocket session is followed until the
explorer's screen shows the fixture's run (bounded by a message count). Timeouts below only
guard against a hang; nothing is timed. The read-only explorer is tested with ``run_test``;
one test drives the page in headless Chromium (skipped, with the reason, without one).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import FIXTURES

from prose_tui.cli.main import main
from prose_tui.cli.serve import explorer_argv, is_loopback

aiohttp = pytest.importorskip("aiohttp")

PROJECT = FIXTURES / "project"
RUN_ID = "20260301-100000-a1b2c3"
HANG_GUARD = 120  # seconds: only ends a test that would otherwise hang
CHROMIUM = os.environ.get("PROSE_TUI_CHROMIUM", "/usr/bin/chromium")


@dataclass
class Served:
    """A running ``prose-tui serve``: its process, the printed link and everything it printed."""

    proc: subprocess.Popen
    link: str
    lines: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.link.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.link.split("?token=", 1)[1]

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def at(self, host: str) -> str:
        """The base URL reached through another address."""
        return f"http://{host}:{self.port}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("prose-tui serve did not exit after SIGTERM")


def start_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Served:
    """Start ``prose-tui serve ARGS --port 0`` and wait for the ``Open http://...`` line."""
    proc = subprocess.Popen([sys.executable, "-m", "prose_tui.cli.main", "serve", *args, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
                            env={**os.environ, "NO_COLOR": "1", **(env or {})})
    guard = threading.Timer(HANG_GUARD, proc.kill)
    guard.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # ends at EOF if the server exits
            lines.append(line)
            if line.startswith("Open "):
                served = Served(proc, line.split()[1], lines)
                # keep draining its output so the server never blocks on a full pipe
                threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()  # type: ignore[arg-type]
                return served
    finally:
        guard.cancel()
    proc.wait()
    pytest.fail(f"prose-tui serve exited with {proc.returncode} before printing its link: {''.join(lines)}")


@pytest.fixture
def served(tmp_path):
    server = start_serve(tmp_path, str(PROJECT))
    try:
        yield server
    finally:
        server.stop()


def get(url: str, *, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=HANG_GUARD) as response:
            return response.status, dict(response.headers), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode("utf-8", "replace")


async def screen_text(ws_url: str, *, headers: dict[str, str] | None = None, cookies: dict[str, str] | None = None,
                      until: str = RUN_ID) -> str:
    """Connect to the websocket and read the explorer's output until ``until`` shows."""
    seen = ""
    async with aiohttp.ClientSession(cookies=cookies) as session:
        async with session.ws_connect(ws_url, headers=headers or {}) as ws:
            for _ in range(3000):  # bounded: the explorer's first screens are a few dozen messages
                message = await ws.receive(timeout=HANG_GUARD)
                if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.ERROR):
                    break
                data = message.data
                seen += data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
                if until in seen:
                    break
            await ws.send_json(["stdin", "q"])
    return seen


async def handshake_status(ws_url: str, *, headers: dict[str, str] | None = None) -> int:
    """The HTTP status a websocket handshake gets (101 when it is accepted)."""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(ws_url, headers=headers or {}):
                return 101
        except aiohttp.WSServerHandshakeError as error:
            return error.status


# -- the token -----------------------------------------------------------------------------------------
def test_nothing_is_served_without_the_token(served):
    for path in ("/", "/?token=wrong", "/static/js/textual.js", "/static/fonts/RobotoMono-VariableFont_wght.ttf",
                 "/favicon.ico", "/download/anything"):
        status, _, body = get(served.base + path)
        assert status == 403, path
        assert "link prose-tui serve printed" in body
    assert asyncio.run(handshake_status(f"ws://127.0.0.1:{served.port}/ws")) == 403
    assert asyncio.run(handshake_status(f"ws://127.0.0.1:{served.port}/ws?token={served.token[:-1]}")) == 403


def test_the_printed_link_opens_the_page_and_sets_the_cookie(served):
    status, headers, page = get(served.link)
    assert status == 200
    cookie = headers["Set-Cookie"]
    assert cookie.startswith(f"prose-tui-token-{served.port}={served.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert headers["Referrer-Policy"] == "no-referrer"
    assert served.token not in page  # the page itself never holds the token
    assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in page
    # with the cookie alone, the page's assets and the favicon load
    jar = {"Cookie": f"prose-tui-token-{served.port}={served.token}"}
    for path in ("/static/js/textual.js", "/static/css/xterm.css", "/static/fonts/RobotoMono-VariableFont_wght.ttf"):
        assert get(served.base + path, headers=jar)[0] == 200, path
    status, headers, icon = get(served.base + "/favicon.ico", headers=jar)
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml") and "<svg" in icon


def test_the_page_loads_nothing_from_another_host(served):
    _, headers, page = get(served.link)
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(["']?([^"')]+)""", page)
    urls = [a or b for a, b in urls]
    assert urls, "the page names its assets"
    assert all(u.startswith(served.base + "/") for u in urls), urls
    ws = "ws" + served.base[len("http"):]
    assert "googleapis" not in page and "://" not in page.replace(served.base, "").replace(ws, "")
    assert "default-src 'self'" in headers["Content-Security-Policy"]


def test_the_websocket_runs_the_explorer_with_the_token_or_the_cookie(served):
    ws = f"ws://127.0.0.1:{served.port}/ws"
    assert RUN_ID in asyncio.run(screen_text(f"{ws}?token={served.token}&width=110&height=30",
                                             headers={"Origin": served.base}))
    cookies = {f"prose-tui-token-{served.port}": served.token}  # what the page's cookie gives the browser
    assert RUN_ID in asyncio.run(screen_text(f"{ws}?width=110&height=30", cookies=cookies,
                                             headers={"Origin": served.base}))


@pytest.mark.parametrize("origin", ["http://evil.example", "null", f"http://127.0.0.1:1", "http://localhost.evil.example"])
def test_a_foreign_origin_is_refused_even_with_the_token(served, origin):
    url = f"ws://127.0.0.1:{served.port}/ws?token={served.token}"
    assert asyncio.run(handshake_status(url, headers={"Origin": origin})) == 403
    assert get(served.link, headers={"Origin": origin})[0] == 403


def test_a_rebound_host_name_is_refused_on_loopback(served):
    """DNS rebinding: evil.example resolving to 127.0.0.1 reaches the port with its own Host."""
    status, _, body = get(served.link, headers={"Host": f"evil.example:{served.port}"})
    assert status == 403 and "does not answer to the host" in body
    assert get(served.link, headers={"Host": f"localhost:{served.port}"})[0] == 200


def test_a_chosen_token_is_used_and_not_printed(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("a-token-from-a-file-0123456789\n", encoding="utf-8")
    server = start_serve(tmp_path, str(PROJECT), "--token-file", str(token_file))
    try:
        assert "a-token-from-a-file" not in "".join(server.lines)
        assert server.link.endswith("?token=...")
        assert get(server.base + "/?token=a-token-from-a-file-0123456789")[0] == 200
    finally:
        server.stop()
    server = start_serve(tmp_path, str(PROJECT), env={"PROSE_TUI_SERVE_TOKEN": "from-the-environment-42"})
    try:
        assert "from-the-environment-42" not in "".join(server.lines)
        assert get(server.base + "/?token=from-the-environment-42")[0] == 200
        assert get(server.base + "/?token=a-token-from-a-file-0123456789")[0] == 403
    finally:
        server.stop()


def test_an_empty_token_file_is_refused(tmp_path, capsys):
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    assert main(["serve", str(PROJECT), "--token-file", str(tmp_path / "empty")]) == 2
    assert "is empty" in capsys.readouterr().err
    assert main(["serve", str(PROJECT), "--token-file", str(tmp_path / "missing")]) == 2


# -- --allow-remote ------------------------------------------------------------------------------------
def test_allow_remote_follows_the_host_the_browser_used(tmp_path):
    server = start_serve(tmp_path, str(PROJECT), "--host", "0.0.0.0", "--allow-remote")
    try:
        other = server.at("127.0.0.2")  # another loopback address than the one printed
        assert get(other + "/")[0] == 403
        status, _, page = get(f"{other}/?token={server.token}")
        assert status == 200
        assert f'data-session-websocket-url="ws://127.0.0.2:{server.port}/ws"' in page
        assert f'src="{other}/static/js/textual.js"' in page
        assert asyncio.run(handshake_status(f"ws://127.0.0.2:{server.port}/ws")) == 403
        assert RUN_ID in asyncio.run(screen_text(f"ws://127.0.0.2:{server.port}/ws?token={server.token}",
                                                 headers={"Origin": other}))
        assert asyncio.run(handshake_status(f"ws://127.0.0.2:{server.port}/ws?token={server.token}",
                                            headers={"Origin": server.at("127.0.0.1")})) == 403
    finally:
        server.stop()


def test_a_remote_host_is_refused_and_says_why(capsys):
    assert main(["serve", str(PROJECT), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0" in err and "--allow-remote" in err and "ssh -L" in err


def test_loopback_hosts():
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.5.0.1"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "example.org", "::"))


# -- stopping ------------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_with_tabs_open_ends_the_explorers_and_the_server(served):
    async def tabs_then_sigterm() -> list[int]:
        async with aiohttp.ClientSession() as session:
            sockets = []
            for _ in range(2):
                ws = await session.ws_connect(f"ws://127.0.0.1:{served.port}/ws?token={served.token}")
                seen = ""
                for _ in range(3000):
                    data = (await ws.receive(timeout=HANG_GUARD)).data
                    seen += data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
                    if RUN_ID in seen:
                        break
                sockets.append(ws)
            explorers = _children(served.proc.pid)
            served.proc.send_signal(signal.SIGTERM)
            for ws in sockets:  # each tab is told the session ended
                while not ws.closed:
                    if (await ws.receive(timeout=HANG_GUARD)).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                        break
            return explorers

    explorers = asyncio.run(tabs_then_sigterm())
    assert len(explorers) == 2
    assert served.proc.wait(timeout=HANG_GUARD) == 0
    assert not [pid for pid in explorers if _running(pid)]


# -- what the explorers get ----------------------------------------------------------------------------
def test_explorer_argv_has_no_shell_and_no_url(tmp_path):
    odd = tmp_path / "a b; rm -rf x"
    odd.mkdir()
    argv = explorer_argv(odd, watch=False)
    assert argv[1:4] == ["-m", "prose_tui.cli.serve_child", str(odd.resolve())] and argv[-1] == "--no-watch"


def test_a_database_url_never_reaches_argv_or_output(tmp_path):
    url = "postgresql://team:S3cretPW99@127.0.0.1:1/openprose"
    server = start_serve(tmp_path, url)
    try:
        status, _, page = get(server.link)
        assert status == 200 and "S3cretPW99" not in page and "openprose@127.0.0.1:1" in page

        async def tab_then_argv() -> list[bytes]:
            async with aiohttp.ClientSession() as session:
                async with session.ws_connect(f"ws://127.0.0.1:{server.port}/ws?token={server.token}") as ws:
                    await ws.receive(timeout=HANG_GUARD)  # the explorer has started and drawn
                    return [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _children(server.proc.pid)]

        cmdlines = asyncio.run(tab_then_argv())
        assert cmdlines and all(b"serve_child" in c and b"S3cretPW99" not in c for c in cmdlines)
    finally:
        server.stop()
    printed = "".join(server.lines)
    assert "S3cretPW99" not in printed and "openprose@127.0.0.1:1" in printed


def test_the_explorer_gets_the_urls_from_its_environment_and_keeps_none():
    from prose_tui.cli.serve_child import DATABASE_ENV, POSTGRES_ENV, explorer_arguments

    env = {DATABASE_ENV: "postgresql://u:pw@h/db", "HOME": "/home/u"}
    assert explorer_arguments(["/srv/proj", "--no-watch"], env) == ["postgresql://u:pw@h/db", "--no-watch"]
    assert env == {"HOME": "/home/u"}
    env = {POSTGRES_ENV: "postgresql://u:pw@h/db"}
    assert explorer_arguments(["/srv/proj"], env) == ["/srv/proj", "--postgres", "postgresql://u:pw@h/db"]
    assert env == {}


def test_read_only_unless_the_environment_says_read_write():
    from prose_tui.tui.served import served_read_only

    assert not served_read_only({}) and not served_read_only({"PROSE_TUI_SERVED": ""})
    assert not served_read_only({"PROSE_TUI_SERVED": "read-write"})
    assert served_read_only({"PROSE_TUI_SERVED": "read-only"})
    assert served_read_only({"PROSE_TUI_SERVED": "yes please"})  # a typo never opens writes


def test_usage_errors_say_what_is_wrong(capsys):
    assert main(["serve", str(PROJECT), "--public-url", "localhost:9000"]) == 2
    assert "--public-url" in capsys.readouterr().err
    assert main(["serve", str(PROJECT), "--port", "70000"]) == 2
    assert "not a port" in capsys.readouterr().err


def test_missing_path_is_one_line(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err.startswith("prose-tui: ")


# -- the read-only explorer ----------------------------------------------------------------------------
def messages(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_read_only_explorer_writes_nothing(tmp_path, monkeypatch):
    from app_helpers import ready, wait_until

    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.widgets.mission_panel import MissionPanel

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROSE_TUI_SERVED", "read-only")
    state = tmp_path / "agent_state.json"
    app = ProseTUI(FIXTURES / "eventlog", watch=False, agent_state=state)  # read-only from the environment
    assert app.read_only
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run")
        await pilot.press("E")
        await wait_until(pilot, lambda: any("served read-only" in m for m in messages(app)), what="the refusal")
        app.action_open_editor()
        app.action_keep_theme()
        await wait_until(pilot, lambda: sum("served read-only" in m for m in messages(app)) == 3, what="two refusals")
        await pilot.press("m")
        panel = await _panel(pilot, app, MissionPanel)
        await pilot.press("n")  # create the missing agent_state.json
        await wait_until(pilot, lambda: "served read-only" in panel.feedback, what="the create refusal")
        state.write_text('{"desired_state": "pause", "current_state": "pause"}', encoding="utf-8")
        await pilot.press("s")
        await wait_until(pilot, lambda: "Start" in panel.feedback and "served read-only" in panel.feedback,
                         what="the start refusal")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent_state.json"]
    assert state.read_text(encoding="utf-8") == '{"desired_state": "pause", "current_state": "pause"}'


async def _panel(pilot, app, panel_type):
    from app_helpers import wait_until

    await wait_until(pilot, lambda: bool(app.screen.query(panel_type)), what="Mission Control")
    return app.screen.query_one(panel_type)


async def test_terminal_export_asks_before_replacing_a_file(tmp_path, monkeypatch):
    from app_helpers import make_app, ready, wait_until

    from prose_tui.tui.screens.confirm import ConfirmScreen

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_TUI_SERVED", raising=False)
    existing = tmp_path / "prose-20260305-120000-e1e2e3.html"
    existing.write_text("my notes", encoding="utf-8")
    app = make_app(FIXTURES / "eventlog")
    assert not app.read_only
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run")
        await pilot.press("E")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("n")
        await wait_until(pilot, lambda: any("was kept" in m for m in messages(app)), what="the cancel notice")
        assert existing.read_text(encoding="utf-8") == "my notes"
        await pilot.press("E")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: any(str(existing) in m and m.startswith("Wrote") for m in messages(app)),
                         what="the export notification")
    assert "rate limited" in existing.read_text(encoding="utf-8")


# -- in a real browser ---------------------------------------------------------------------------------
@pytest.fixture
def browser_context(tmp_path_factory):
    """A headless system Chromium with a fresh profile, or a skip saying what is missing."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set PROSE_TUI_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            accept_downloads=True, timeout=HANG_GUARD * 1000,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"])
        context.set_default_timeout(HANG_GUARD * 1000)  # Playwright's 30 s: a loaded machine's Chromium may take longer
        try:
            yield context
        finally:
            context.close()


def test_in_chromium_the_link_works_exports_download_and_other_sites_are_refused(browser_context, tmp_path):
    server = start_serve(tmp_path, str(FIXTURES / "eventlog"))
    try:
        page = browser_context.new_page()
        console: list[tuple[str, str]] = []
        requests: list[str] = []
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(server.link, wait_until="load")
        page.wait_for_selector("body.-first-byte", timeout=HANG_GUARD * 1000)  # the explorer's screen arrived
        assert page.title() == "prose-tui eventlog"
        assert requests and all(u.startswith(server.base + "/") or u.startswith(f"ws://127.0.0.1:{server.port}/")
                                for u in requests), requests
        assert [m for m in console if m[0] == "error"] == []
        cookies = {c["name"]: c for c in browser_context.cookies()}
        assert cookies[f"prose-tui-token-{server.port}"]["httpOnly"] is True
        assert page.evaluate("document.cookie") == ""

        # E exports: served read-only, the report arrives as a download, nothing is written on the server
        downloads: list = []  # the page opens /download/KEY in a new tab; Playwright reports it on the opener
        page.on("download", lambda d: downloads.append(d))
        page.focus("textarea")  # xterm's input (a click would land on the explorer's screen)
        for _ in range(HANG_GUARD):  # E until a download starts: the first may come before the run is chosen
            page.keyboard.press("E")
            for _ in range(20):
                if downloads:
                    break
                page.wait_for_timeout(100)
            if downloads:
                break
        assert downloads, "no download started"
        report = Path(downloads[0].path()).read_text(encoding="utf-8")
        assert downloads[0].suggested_filename == "prose-20260305-120000-e1e2e3.html"
        assert "rate limited" in report
        assert sorted(p.name for p in tmp_path.iterdir()) == []

        # a page on another site, in the same browser (it holds the cookie), cannot open the websocket
        evil = browser_context.new_page()
        evil.route("http://evil.example/**", lambda route: route.fulfill(body="<p>hello</p>", content_type="text/html"))
        evil.goto("http://evil.example/")
        outcome = evil.evaluate("""url => new Promise(done => {
            const ws = new WebSocket(url);
            ws.onopen = () => done("open");
            ws.onerror = () => done("refused");
        })""", f"ws://127.0.0.1:{server.port}/ws")
        assert outcome == "refused"
    finally:
        server.stop()
