"""``prose-tui serve [PATH|URL]``: the explorer in a web browser (issues 14, 29), through
textual-serve: each browser tab that connects starts one explorer process whose screen is
streamed over a websocket (:mod:`prose_tui.cli.serve_web`).

Security model. A run is other people's text, and the explorer can act on the machine it
runs on; so the server answers only whoever holds its link, and a browser tab cannot write.

- **A secret token per server**, as Jupyter does: 256 random bits (``secrets``), printed once
  at start inside the URL to open (``http://127.0.0.1:PORT/?token=...``), or chosen with
  ``--token-file FILE`` (first line) or ``PROSE_TUI_SERVE_TOKEN``, never on the command line
  (argv is public on the machine), and then not printed. The page, its assets, downloads and
  the websocket answer 403 without it. It is accepted as ``?token=`` and as the cookie the
  page sets (``HttpOnly``: no script reads it; ``SameSite=Strict``: no other site's page
  sends it; named after the port). Compared in constant time.
- **Origin**: a websocket handshake (any request) that names an ``Origin`` must name the one
  the browser reached the server at (``Host``) or ``--public-url``'s: another site's page
  that guessed the port is refused, token or not.
- **Host**: on loopback (the default), only ``localhost``/loopback names and ``--public-url``'s
  host are answered, which stops DNS-rebinding pages before the token is even needed.
  ``--allow-remote`` (for a non-loopback ``--host``) answers any ``Host``: the page's asset and
  websocket URLs follow the one the browser used, the token is still required. Without TLS
  the token crosses the network in clear: prefer ``ssh -L`` or a TLS proxy (``--public-url``).
- **Read-only tabs**: unless ``--allow-write``, each explorer is told (``PROSE_TUI_SERVED``,
  :mod:`prose_tui.tui.served`) that it is served read-only: an export becomes a download in
  the browser, and Mission Control's controls, the editor and config writes are refused.
- **No secrets in argv or output**: the explorers start without a shell; a PostgreSQL URL
  reaches them in their environment (:mod:`prose_tui.cli.serve_child`), and messages
  name the database ``db@host`` only. No access log (request lines carry the token); pages
  say ``Referrer-Policy: no-referrer``, may not be framed, and load nothing from elsewhere
  (the font textual-serve ships, a favicon of our own; ``Content-Security-Policy``).
- **Stopping**: SIGINT/SIGTERM end every explorer (quit, then SIGTERM, SIGKILL to its process
  group) and the server within about 2 s.

Exit status 0 after Ctrl+C or SIGTERM, 1 for a missing PATH or a port that cannot be bound,
2 for a refused host, a bad port or an unusable token.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.cli.serve_guard import TOKEN_ENV, TokenError, choose_token, is_loopback, origin_of

__all__ = ["DATABASE_ENV", "POSTGRES_ENV", "add_serve_parser", "explorer_argv", "is_loopback", "run_serve"]

DATABASE_ENV = "PROSE_TUI_SERVE_DATABASE"
"""The variable that hands a tab's explorer the URL given as the target (``serve URL``)."""
POSTGRES_ENV = "PROSE_TUI_SERVE_POSTGRES"
"""The variable that hands a tab's explorer ``serve --postgres URL``."""


def add_serve_parser(sub) -> None:
    serve = sub.add_parser(
        "serve", help="the explorer in a web browser (textual-serve), on localhost, behind a secret link",
        description="Serve the explorer to a web browser. Bound to 127.0.0.1, it prints the link to open "
                    "(with its secret token). From another machine: ssh -L 8000:localhost:8000 HOST, then open "
                    "the printed link there. Browser tabs are read-only unless --allow-write.")
    serve.add_argument("path", nargs="?", default=".",
                       help="project, .prose, runs or run folder, or a postgresql:// URL (default: .)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000; 0: any free port)")
    serve.add_argument("--public-url", metavar="URL",
                       help="the URL the browser uses, when it differs (e.g. a TLS proxy: https://runs.example.org)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="allow a non-loopback --host: whoever reaches the port and holds the link reads every run")
    serve.add_argument("--allow-write", action="store_true",
                       help="let browser tabs write on this machine: export to its disk, Mission Control, the editor")
    serve.add_argument("--token-file", type=Path, metavar="FILE",
                       help=f"read the token from FILE's first line (or set {TOKEN_ENV}); default: a new random one")
    serve.add_argument("--postgres", metavar="URL", help="also read the runs of this PostgreSQL database")
    serve.add_argument("--no-postgres", action="store_true", help="do not look for a PostgreSQL database")
    serve.add_argument("--no-watch", action="store_true", help="do not watch files for changes")


def explorer_argv(path: Path, *, stale_after: float = DEFAULT_STALE_AFTER, watch: bool = True,
                  no_postgres: bool = False) -> list[str]:
    """The argv textual-serve runs (without a shell) for each browser tab: this Python, the
    serve child module (:mod:`prose_tui.cli.serve_child`), the resolved path, options.
    Never a URL: those travel in the environment."""
    argv = [sys.executable, "-m", "prose_tui.cli.serve_child", str(path.resolve())]
    if stale_after != DEFAULT_STALE_AFTER:
        argv += ["--stale-after", str(stale_after)]
    if not watch:
        argv.append("--no-watch")
    if no_postgres:
        argv.append("--no-postgres")
    return argv


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def run_serve(args: argparse.Namespace) -> int:
    from prose_tui.backends.common.dburl import is_postgres_url, safe_label
    from prose_tui.tui.served import READ_ONLY, READ_WRITE, SERVED_ENV

    host = args.host.strip().strip("[]")
    if not is_loopback(host) and not args.allow_remote:
        print(f"prose-tui: refusing to serve on {args.host}: it is not a loopback address, so anyone who "
              "reaches it and holds the link could read every run below the path. Keep the default 127.0.0.1 "
              f"and forward the port (ssh -L {args.port}:localhost:{args.port} HOST), or pass --allow-remote "
              "if the network is trusted.", file=sys.stderr)
        return 2
    if not 0 <= args.port < 65536:
        print(f"prose-tui: --port {args.port}: not a port (1-65535, or 0 for any free port)", file=sys.stderr)
        return 2
    if args.public_url and origin_of(args.public_url) is None:
        print(f"prose-tui: --public-url {args.public_url!r}: not an http:// or https:// URL with a host", file=sys.stderr)
        return 2
    target = str(args.path)
    database = target if is_postgres_url(target) else None
    path = Path(".") if database else Path(target)
    if database is None and not path.exists():
        raise FileNotFoundError(f"{target}: no such file or folder")
    try:
        token, token_origin = choose_token(args.token_file)
    except TokenError as exc:
        print(f"prose-tui: {exc}", file=sys.stderr)
        return 2

    environment = {SERVED_ENV: READ_WRITE if args.allow_write else READ_ONLY}
    if database:
        environment[DATABASE_ENV] = database
    if args.postgres:
        environment[POSTGRES_ENV] = args.postgres
    argv = explorer_argv(path, stale_after=args.stale_after, watch=not args.no_watch, no_postgres=args.no_postgres)
    what = safe_label(database) if database else str(path.resolve())
    public_url = args.public_url.rstrip("/") if args.public_url else None

    def announce(bound_host: str, port: int) -> None:
        shown = "127.0.0.1" if bound_host in ("0.0.0.0", "::", "") else bound_host
        base = public_url or f"http://{_bracketed(shown)}:{port}"
        mode = ("browser tabs may write on this machine (--allow-write)" if args.allow_write
                else "read-only: exports download in the browser")
        print(f"prose-tui serve: {what} ({mode})", flush=True)
        if not is_loopback(host):
            print(f"prose-tui serve: listening on {_bracketed(host)}:{port} (--allow-remote): whoever reaches it "
                  "and holds the link reads every run; the link crosses the network unencrypted.", flush=True)
        if token_origin is None:
            print(f"Open {base}/?token={token}", flush=True)
        else:
            print(f"Open {base}/?token=... (the token in {token_origin})", flush=True)

    from prose_tui.cli.serve_guard import Guard
    from prose_tui.cli.serve_web import ExplorerServer

    server = ExplorerServer(argv, environment, guard=Guard(token, public_url=public_url, allow_remote=args.allow_remote),
                            host=host, port=args.port, title=f"prose-tui {Path(what).name if not database else what}",
                            public_url=public_url, announce=announce)
    try:
        server.serve()
    except OSError as exc:
        print(f"prose-tui: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
