"""``prose-tui serve [PATH] [--host 127.0.0.1] [--port 8000]``: the explorer in a browser
(issue 14), through textual-serve: each browser tab that connects starts one explorer
process (``python -m prose_tui.headless.cli PATH``) whose screen is streamed over a
websocket.

Bound to the loopback interface by default: whoever can reach the port can read every run
below PATH, with no login. From another machine, forward the port over SSH
(``ssh -L 8000:localhost:8000 host``) and open http://localhost:8000. A host that is not a
loopback address is refused unless ``--allow-remote`` is given. Exit status 0 after Ctrl+C
or SIGTERM, 1 for a missing PATH or a port that cannot be bound, 2 for a refused host.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys
from pathlib import Path

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER

__all__ = ["add_serve_parser", "is_loopback", "run_serve", "serve_command"]


def add_serve_parser(sub) -> None:
    serve = sub.add_parser(
        "serve", help="the explorer in a web browser (textual-serve), on localhost by default",
        description="Serve the explorer to a web browser. Bound to 127.0.0.1: reach it from another "
                    "machine with ssh -L 8000:localhost:8000 HOST, then open http://localhost:8000.")
    serve.add_argument("path", nargs="?", default=".", type=Path,
                       help="project, .prose, runs or run folder (default: .)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--public-url", metavar="URL",
                       help="the URL the browser uses, when it differs (e.g. a forwarded port: http://localhost:9000)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="allow a non-loopback --host: anyone who reaches the port reads every run, without a login")
    serve.add_argument("--no-watch", action="store_true", help="do not watch files for changes")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_command(path: Path, *, stale_after: float = DEFAULT_STALE_AFTER, watch: bool = True) -> str:
    """The shell command textual-serve runs for each browser session: this Python, this
    package's CLI, the resolved path (quoted)."""
    argv = [sys.executable, "-m", "prose_tui.headless.cli", str(path.resolve())]
    if stale_after != DEFAULT_STALE_AFTER:
        argv += ["--stale-after", str(stale_after)]
    if not watch:
        argv.append("--no-watch")
    return shlex.join(argv)


def run_serve(args: argparse.Namespace) -> int:
    if not is_loopback(args.host) and not args.allow_remote:
        print(f"prose-tui: refusing to serve on {args.host}: it is not a loopback address, so anyone who "
              "reaches it could read every run below the path, with no login. Keep the default 127.0.0.1 "
              f"and forward the port (ssh -L {args.port}:localhost:{args.port} HOST), or pass --allow-remote "
              "if the network is trusted.", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"prose-tui: --port {args.port}: not a port (1-65535)", file=sys.stderr)
        return 2
    if not args.path.exists():
        raise FileNotFoundError(f"{args.path}: no such file or folder")
    if not is_loopback(args.host):
        print(f"prose-tui: serving on {args.host} (--allow-remote): anyone who reaches port {args.port} "
              "reads every run below the path, with no login.", file=sys.stderr)
    from textual_serve.server import Server

    command = serve_command(args.path, stale_after=args.stale_after, watch=not args.no_watch)
    host = args.host.strip("[]")
    public_url = args.public_url or f"http://{'[' + host + ']' if ':' in host else host}:{args.port}"
    server = Server(command, host=host, port=args.port, title=f"prose-tui {args.path.resolve().name}",
                    public_url=public_url.rstrip("/"))
    try:
        server.serve()
    except OSError as exc:
        print(f"prose-tui: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
