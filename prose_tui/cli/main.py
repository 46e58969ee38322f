"""Command line: ``prose-tui [PATH]`` opens the explorer; subcommands work headless.

    prose-tui [PATH|URL] [--user] [--demo] [--stale-after SECONDS] [--agent-state FILE] [--no-watch]
              [--postgres URL] [--postgres-env VAR] [--poll SECONDS] [--listen CHANNEL] [--no-postgres]
    prose-tui runs [PATH|URL] [--user] [--json] [--postgres URL] [--postgres-env VAR] [--no-postgres]
    prose-tui show RUN_PATH|URL#RUN_ID [--json] [--at N]
    prose-tui record [PATH|URL] [--postgres URL] [--no-postgres]
    prose-tui export RUN_PATH|URL#RUN_ID [--at N] [--format html|md|json] [-o FILE]
    prose-tui diff RUN_A RUN_B [--json]          (each a RUN_PATH or URL#RUN_ID)
    prose-tui serve [PATH] [--host 127.0.0.1] [--port 8000] [--allow-remote]
    prose-tui agent status|start|stop|once|cleanup [PATH] [--agent-state FILE] [--json]
    prose-tui config path|show|edit
    prose-tui completion bash|zsh|fish

A ``postgresql://`` URL as the target reads that database alone (openprose-0.15
state/postgres.md; ``URL#RUN_ID`` one run of it); a PATH reads that path, plus
``--postgres URL`` or else ``OPENPROSE_POSTGRES_URL`` from the project's ``.env`` or the
environment (then ``DATABASE_URL``) beside it (``--no-postgres``: none). See
:mod:`prose_tui.cli.targets`. The URL and its password are never printed: messages
name ``db@host`` only, and every message passes through
:func:`~prose_tui.backends.common.dburl.redact`.

Exit status: 0 on success (also for a run that parsed with warnings), 1 for a path that
is not a run or does not exist (with a one-line message on stderr), 2 for usage errors.
Settings come from the config file (``tui.config``); flags given here override it.

The explorer's start imports what its first screen needs: the subcommands' modules (and
``json``) are imported by the subcommand that runs (issue 33).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prose_tui import __version__
from prose_tui.backends import NotARunError
from prose_tui.backends.common.dburl import Target, is_postgres_url, redact
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.cli.targets import (
    RedactingArgumentParser,
    TargetError,
    add_postgres_options,
    open_target_run,
    resolve_target,
    sources_for,
    target_argument,
)
from prose_tui.cli.usage import MAIN_EPILOG, decorate
from prose_tui.model import Run, RunStatus
from prose_tui.tui.config import LAYOUTS

SUBCOMMANDS = ("runs", "show", "agent", "record", "export", "diff", "serve", "config", "completion")


def _user_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", action="store_true",
                        help="also list the user-scope runs in ~/.agents/prose/runs (openprose 0.15)")


def _apply_user_flag(args: argparse.Namespace) -> None:
    """``--user``: discovery adds ``~/.agents/prose/runs`` for this command (never by default)."""
    from prose_tui.backends.discover import include_user_scope

    include_user_scope(bool(getattr(args, "user", False)))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stale-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a run whose executing statement has not changed for this long is interrupted "
        f"(default: the config file's stale_after, else {DEFAULT_STALE_AFTER:.0f})",
    )


def _main_parser() -> argparse.ArgumentParser:
    parser = RedactingArgumentParser(
        prog="prose-tui",
        description="Explore OpenProse runs: watch them live, inspect trace, call stack, bindings and agents.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    target_argument(parser, what="project, .prose, runs or run folder, state.db, narration file or transcript, - for stdin")
    parser.add_argument("--demo", action="store_true", help="start a simulated VM writing a run and explore it")
    parser.add_argument("--speed", type=float, default=1.0, help="demo speed factor (default 1: about a minute)")
    parser.add_argument("--agent-state", type=Path, metavar="FILE", help="agent_state.json for Mission Control")
    parser.add_argument("--no-watch", action="store_true", help="do not watch files for changes")
    parser.add_argument("--theme", metavar="NAME", help="a Textual theme (default: the config file's, else textual-dark)")
    parser.add_argument("--layout", choices=LAYOUTS, help="auto: side by side from 110 columns; wide; narrow: one pane at a time")
    parser.add_argument("--version", action="version", version=f"prose-tui {__version__}")
    _user_flag(parser)
    add_postgres_options(parser, live=True)
    _common(parser)
    return parser


def _sub_parser() -> argparse.ArgumentParser:
    parser = RedactingArgumentParser(prog="prose-tui")
    sub = parser.add_subparsers(dest="command", required=True)
    runs = sub.add_parser("runs", help="list runs below PATH, newest first")
    target_argument(runs, what="a folder")
    runs.add_argument("--json", action="store_true", help="one JSON array of run rows")
    _user_flag(runs)
    add_postgres_options(runs, live=False)
    _common(runs)
    show = sub.add_parser("show", help="print one parsed run")
    target_argument(show, metavar="RUN_PATH", default=None,
                    what="run folder, state file, state.db, narration file, - for stdin, or postgresql://…/db#RUN_ID")
    show.add_argument("--json", action="store_true", help="the parsed run as one JSON object")
    show.add_argument("--at", type=int, metavar="N", help="the state as of event N (0-based; see the events list)")
    _common(show)
    record = sub.add_parser("record", help="journal the runs below PATH without a UI, until Ctrl+C/SIGTERM/SIGHUP")
    target_argument(record, what="a project or runs folder")
    add_postgres_options(record, live=False)
    from prose_tui.cli.export import add_export_parser

    add_export_parser(sub)
    _common(sub.choices["export"])
    from prose_tui.cli.diff import add_diff_parser

    add_diff_parser(sub)
    _common(sub.choices["diff"])
    from prose_tui.cli.serve import add_serve_parser

    add_serve_parser(sub)
    _common(sub.choices["serve"])
    try:
        from prose_tui.cli.agent import add_agent_parser
    except ImportError:  # pragma: no cover - mission control is part of the package
        pass
    else:
        add_agent_parser(sub)
    from prose_tui.cli.completion import add_completion_parser
    from prose_tui.cli.config_cmd import add_config_parser

    add_config_parser(sub)
    add_completion_parser(sub)
    decorate(sub)
    return parser


def completion_parser() -> argparse.ArgumentParser:
    """The subcommands plus the explorer's own options, for shell completion scripts."""
    parser = _sub_parser()
    main = _main_parser()
    for action in main._actions:  # argparse has no public API to copy arguments between parsers
        if action.option_strings and action.dest not in ("help",):
            parser._add_action(action)
    return parser


def load_runs(path: Path | None, stale_after: float = DEFAULT_STALE_AFTER, sources: list | None = None) -> list[Run]:
    """Every run below ``path`` (``None``: no folder, the sources' runs alone) and in
    ``sources``, newest first (by start time, then id), read as summaries (a row needs the
    state file only). Raises ``FileNotFoundError`` for a missing path and ``OSError`` (a
    safe message) for a database that cannot be read."""
    from prose_tui.live.workspace import Workspace

    workspace = Workspace(path or Path("."), stale_after=stale_after, sources=sources or (), disk=path is not None)
    if path is not None and not workspace.root.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    for source in sources or ():
        source.list_runs()  # raises with the reason (unreachable, wrong password)
    return workspace.scan(detail_first=False)


def _print_runs(runs: list[Run], as_json: bool) -> None:
    if as_json:
        import json

        from prose_tui.model.serialize import run_row
        from prose_tui.remote import shown_json  # a remote target's runs show their remote paths

        print(json.dumps(shown_json([run_row(r) for r in runs]), indent=2, ensure_ascii=False))
        return
    from prose_tui.cli.render import runs_table

    runs_table(runs)


def _show(args: argparse.Namespace) -> int:
    """``show``: the parsed run, its history's events, or its state as of event ``--at``."""
    from prose_tui.history import Journal, events_json, failure_events, history_of, state_at
    from prose_tui.history.report import chain_json

    run = open_target_run(args.path, args.stale_after)
    if run.status is RunStatus.UNREADABLE:  # nothing was read: no report to print, and not a success
        return _fail(f"{run.path}: unreadable: {run.status_reason}")
    history = history_of(run, journal=Journal())
    failures = None
    if args.at is not None:
        if not 0 <= args.at < len(history.events):
            return _fail(f"--at {args.at}: this run has {len(history.events)} events (0-{len(history.events) - 1})")
        run = state_at(run, history, args.at)
    elif args.json:
        failures = failure_events(run, history)
    if args.json:
        import json

        from prose_tui.model.serialize import run_detail

        detail = run_detail(run, failures)
        detail["events"] = events_json(history)
        detail["history"] = {"origin": history.origin, "note": history.note, "at": args.at}
        detail["chain"] = chain_json(run)
        from prose_tui.remote import shown_json  # a remote target's run shows its remote paths

        print(json.dumps(shown_json(detail), indent=2, ensure_ascii=False))
        return 0
    from prose_tui.cli.render import run_report

    run_report(run)
    if args.at is not None:
        event = history.events[args.at]
        print(f"as of event {args.at}/{len(history.events) - 1}: {event.text}")
    return 0



def _config():
    """The config file, checked; its problems are shown by the app (or printed for headless commands).
    ``[keys]`` is checked against the action names of every screen's bindings, which imports
    every screen: only when the file has such a table."""
    from prose_tui.tui.config import load_config

    config = load_config()
    if not config.keys:
        return config
    from prose_tui.cli.config_cmd import load_checked

    return load_checked()


def _stale_after(args: argparse.Namespace) -> float:
    """``--stale-after`` if given, else the config file's (problems go to stderr, one line each)."""
    if args.stale_after is not None:
        return float(args.stale_after)
    from prose_tui.tui.config import load_config

    config = load_config()  # [keys] are not checked here: that needs the app's bindings (Textual)
    for problem in config.problems:
        print(f"prose-tui: {problem}", file=sys.stderr)
    return config.stale_after
def _reachable(sources: list) -> list:
    """The sources that answer; for each that does not, one warning on stderr (safe message)."""
    out = []
    for source in sources:
        try:
            source.list_runs()
        except OSError as exc:
            print(redact(f"prose-tui: warning: {exc} ({source.reader.origin}); listing runs on disk only"), file=sys.stderr)
            continue
        out.append(source)
    return out


def _fail(message: str) -> int:
    print(f"prose-tui: {redact(message)}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the process's entry point: its tracebacks pass through redact too
        from prose_tui.cli.targets import install_redacting_excepthooks

        install_redacting_excepthooks()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        args = _sub_parser().parse_args(argv)
        _apply_user_flag(args)
        if getattr(args, "stale_after", False) is None:
            args.stale_after = _stale_after(args)
        try:
            if args.command == "runs":
                target: Target = resolve_target(args)
                sources = sources_for(target, args)
                if sources and target.database is None and args.postgres is None:
                    sources = _reachable(sources)  # found in .env/the environment: a warning, not a failure
                _print_runs(load_runs(target.path, args.stale_after, sources), args.json)
                return 0
            if args.command == "show":
                return _show(args)
            if args.command == "export":
                from prose_tui.cli.export import run_export

                return run_export(args)
            if args.command == "diff":
                from prose_tui.cli.diff import run_diff

                return run_diff(args)
            if args.command == "serve":
                from prose_tui.cli.serve import run_serve

                return run_serve(args)
            if args.command == "config":
                from prose_tui.cli.config_cmd import run_config_command

                return run_config_command(args)
            if args.command == "completion":
                from prose_tui.cli.completion import completion_script

                print(completion_script(args.shell, completion_parser()), end="")
                return 0
            if args.command == "record":
                from prose_tui.live.record import main_record

                target = resolve_target(args)
                sources = sources_for(target, args)
                if sources and target.database is None and args.postgres is None:
                    sources = _reachable(sources)
                from prose_tui.remote import follow_state, mirror_of

                if (mirror := mirror_of(target.path)) is not None:  # ssh: the link's state as it moves
                    follow_state(mirror)
                return main_record(target.path, sources=sources)
            if is_postgres_url(args.path):
                return _fail("agent: agent_state.json lives in a project folder; a PostgreSQL URL has none")
            from prose_tui.cli.agent import run_agent_command

            return run_agent_command(args)
        except BrokenPipeError:
            return 0
        except (OSError, NotARunError, TargetError) as exc:  # OSError: a database that cannot be read (safe message)
            return _fail(str(exc))
    args = _main_parser().parse_args(argv)
    _apply_user_flag(args)
    args.config = _config()
    try:
        target = resolve_target(args, complete=False)  # ssh: a big log's newest events first, the rest behind
    except TargetError as exc:
        return _fail(str(exc))
    args.path = target.path if target.path is not None else Path(".")
    args.disk = target.database is None  # a URL: that database alone
    try:
        args.sources = [] if args.demo or str(args.path) == "-" else sources_for(target, args)
    except OSError as exc:
        return _fail(str(exc))
    from prose_tui.remote import RemoteState, mirror_of

    if (mirror := mirror_of(target.path)) is not None:  # ssh: the link's state in the status line
        args.sources = [RemoteState(mirror)]
    if target.run_id is not None and args.sources:  # URL#RUN_ID: open on that run
        args.initial = args.sources[0].path_of(target.run_id)
    from prose_tui.cli.launch import launch

    return launch(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
