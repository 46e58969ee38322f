"""The web server behind ``prose-tui serve``: textual-serve's ``Server``, hooked where it
lets itself be (its app construction, index and websocket handlers), not forked.

What it changes (see :mod:`prose_tui.cli.serve` for the security model):

- every route sits behind :class:`~prose_tui.cli.serve_guard.Guard` (token, Origin, Host);
- the page comes from this package's own template (``serve_page/``): no Google Fonts, the
  Roboto Mono that textual-serve ships is served from ``/static``, a favicon; its asset and
  websocket URLs follow the ``Host`` the browser used unless ``--public-url`` is given;
- each tab's explorer is started without a shell (``argv``, never a command line to parse),
  in a process group of its own, with the environment the caller gives (the database URL,
  the read-only mode) and without the token;
- SIGINT/SIGTERM end every explorer (``quit``, then SIGTERM, then SIGKILL to its group,
  :data:`QUIT_GRACE` seconds apart), close the websockets and stop within about 2 s;
- no access log: request lines carry the token.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from prose_tui.cli.serve_guard import TOKEN_ENV, Guard

log = logging.getLogger("textual-serve")

PAGE = Path(__file__).with_name("serve_page")
"""This package's template folder (``app_index.html``) and favicon."""
QUIT_GRACE = 0.5
"""Seconds an explorer gets to quit (then to die of SIGTERM) before the next step."""
CLOSE_TIMEOUT = 0.5
"""Seconds a closing websocket waits for the browser's reply."""


class ExplorerSession(AppService):
    """One browser tab's explorer process: ``argv`` run directly (no shell) in a new session
    (its own process group), with ``environment`` over textual-serve's, and without
    :data:`~prose_tui.cli.serve_guard.TOKEN_ENV`."""

    def __init__(self, argv: Sequence[str], environment: Mapping[str, str], **options: Any) -> None:
        super().__init__(shlex.join(argv), **options)
        self.argv = list(argv)
        self.environment = dict(environment)

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width=width, height=height)
        env.update(self.environment)
        env.pop(TOKEN_ENV, None)
        return env

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
            start_new_session=True)
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        await super().run()
        # The explorer is gone (q, a crash, a signal): so is the tab's session.
        try:
            await self.remote_close()
        except Exception:  # noqa: BLE001 - the websocket may be closed already
            pass

    async def end(self, grace: float = QUIT_GRACE) -> None:
        """Ask the explorer to quit; after ``grace`` s SIGTERM its process group, after
        another ``grace`` s SIGKILL it. Returns once the process is reaped."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
            await self.send_meta({"type": "quit"})
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    await asyncio.wait_for(asyncio.shield(process.wait()), grace)
                    break
                except TimeoutError:
                    try:
                        os.killpg(process.pid, sig)  # the leader is not reaped yet: its group is ours
                    except (ProcessLookupError, PermissionError):
                        pass
            await process.wait()
        if self._task is not None:
            await self._task
            self._task = None


class ExplorerServer(Server):
    """textual-serve's ``Server`` for the explorer. ``argv`` and ``environment`` start one
    explorer per tab (:class:`ExplorerSession`); ``guard`` decides who gets in;
    ``announce(host, port)`` is called once the port is bound (``port`` as bound, for ``--port 0``)."""

    def __init__(self, argv: Sequence[str], environment: Mapping[str, str], *, guard: Guard, host: str,
                 port: int, title: str, public_url: str | None,
                 announce: Callable[[str, int], None]) -> None:
        super().__init__(shlex.join(argv), host=host, port=port, title=title, public_url=public_url,
                         templates_path=PAGE)
        self.argv = list(argv)
        self.environment = dict(environment)
        self.guard = guard
        self.announce = announce
        self.given_public_url = public_url.rstrip("/") if public_url else None
        self._sessions: dict[ExplorerSession, web.WebSocketResponse] = {}
        self._closing = False

    # -- the aiohttp application -----------------------------------------------------------------
    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard.middleware)
        app.router.add_get("/favicon.ico", self.handle_favicon)
        app.router.add_get("/favicon.svg", self.handle_favicon)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Nothing to print here: :meth:`serve` announces the URL once the port is bound."""

    def initialize_logging(self) -> None:
        """textual-serve's errors (an explorer that failed to start) as plain lines on stderr,
        without its rich tracebacks that show local variables."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("prose-tui serve: %(message)s"))
        log.handlers[:] = [handler]
        log.setLevel(logging.DEBUG if self.debug else logging.WARNING)
        log.propagate = False

    async def handle_favicon(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(PAGE / "favicon.svg", headers={"Content-Type": "image/svg+xml"})

    def base_url(self, request: web.Request) -> str:
        """``--public-url``, else the scheme and ``Host`` the browser used."""
        return self.given_public_url or f"{request.scheme}://{request.host}"

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = self.base_url(request)
        router = request.app.router
        scheme, rest = base.split("://", 1)
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if scheme == 'https' else 'ws'}://{rest}{router['websocket'].url_for()}",
            "config": {"static": {"url": f"{base}{router['static'].url_for(filename='/')}".rstrip("/") + "/"}},
            "favicon_url": f"{base}/favicon.svg",
            "application": {"name": self.title},
        }

    # -- one explorer per websocket ----------------------------------------------------------------
    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if self._closing:
            raise web.HTTPServiceUnavailable(text="prose-tui serve is stopping\n")
        websocket = web.WebSocketResponse(heartbeat=15, timeout=CLOSE_TIMEOUT)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        await websocket.prepare(request)
        session = ExplorerSession(self.argv, self.environment, write_bytes=websocket.send_bytes,
                                  write_str=websocket.send_str, close=websocket.close,
                                  download_manager=self.download_manager, debug=self.debug)
        self._sessions[session] = websocket
        try:
            await session.start(width, height)
            await self._process_messages(websocket, session)
        except asyncio.CancelledError:
            pass
        except Exception as error:  # noqa: BLE001 - one tab's failure, logged; the server goes on
            log.warning("a browser session ended with an error: %s", error)
        finally:
            await session.end()
            self._sessions.pop(session, None)
            await websocket.close()
        return websocket

    async def close_sessions(self) -> None:
        """End every explorer and close every websocket (SIGINT/SIGTERM)."""
        self._closing = True
        sessions = list(self._sessions.items())
        await asyncio.gather(*(session.end() for session, _ in sessions), return_exceptions=True)
        await asyncio.gather(*(ws.close(code=WSCloseCode.GOING_AWAY, message=b"prose-tui serve stopped")
                               for _, ws in sessions), return_exceptions=True)

    # -- running -----------------------------------------------------------------------------------
    def serve(self, debug: bool = False) -> None:
        """Listen until SIGINT or SIGTERM, then stop (about 2 s at most). Raises ``OSError``
        when the port cannot be bound."""
        self.debug = debug
        self.initialize_logging()
        asyncio.run(self._serve())
        # Everything is closed. Leave the objects of aiohttp & co to the process's end: the
        # interpreter's final garbage collection over them took 0.3-0.9 s of the 2 s budget.
        gc.freeze()

    async def _serve(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        runner = web.AppRunner(await self._make_app(), access_log=None, handle_signals=False,
                               shutdown_timeout=CLOSE_TIMEOUT)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
            port = int(runner.addresses[0][1])
            self.port = port
            self.guard.bind(port)
            self.announce(self.host, port)
            await stop.wait()
            await self.close_sessions()
        finally:
            await runner.cleanup()
