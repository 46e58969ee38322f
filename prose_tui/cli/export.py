"""``prose-tui export RUN [--at N] [--format html|md|json] [-o FILE]`` (issue 14).

``RUN`` is a run path, ``-`` (a narration on stdin) or ``postgresql://…/db#RUN_ID`` (a run
kept in PostgreSQL; see :mod:`prose_tui.cli.targets`).

Writes one self-contained file describing the run (see
:mod:`prose_tui.history.report_html` for what the HTML page holds and why it is safe to open)
and prints its path; ``-o -`` prints the export itself. Exit status 0, 1 for a path that
is not a run or an ``--at`` outside the events (one line on stderr), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prose_tui.backends.common.dburl import Target, parse_target

__all__ = ["add_export_parser", "load_run_and_history", "run_export"]


def add_export_parser(sub) -> None:
    """The ``export`` subcommand on an argparse subparsers object."""
    export = sub.add_parser(
        "export", help="write one run as a self-contained HTML page, Markdown or JSON",
        description="Write one run as a self-contained file anyone can open offline: header and status "
                    "reason, annotated trace, failures with their context, timeline, bindings, agent "
                    "memory, warnings.")
    from prose_tui.cli.targets import any_target

    export.add_argument("path", type=any_target, metavar="RUN",
                        help="run folder, state file, state.db, narration file, - for stdin, or postgresql://…/db#RUN_ID")
    export.add_argument("--at", type=int, metavar="N", help="the state as of event N (0-based; see show --json)")
    export.add_argument("--format", choices=("html", "md", "json"), default=None,
                        help="html (default; or from -o's extension), md for an issue, json = show --json plus history")
    export.add_argument("-o", "--output", metavar="FILE",
                        help="file or folder to write (default: prose-<run id>.<ext> in the current folder); - for stdout")


def load_run_and_history(target: Target | Path, stale_after: float):
    """The run ``target`` names (a path, ``-`` for a narration on stdin, or ``URL#RUN_ID``;
    see :func:`~prose_tui.cli.targets.open_target_run` for its errors) and its history
    (journal included)."""
    from prose_tui.cli.targets import open_target_run
    from prose_tui.history import Journal, history_of

    run = open_target_run(parse_target(target) if isinstance(target, Path) else target, stale_after)
    return run, history_of(run, journal=Journal())


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    suffix = Path(args.output).suffix.lower() if args.output and args.output != "-" else ""
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(suffix, "html")


def run_export(args: argparse.Namespace) -> int:
    from prose_tui.history.exporting import export_text, write_export
    from prose_tui.remote import mirror_of, shown

    run, history = load_run_and_history(args.path, args.stale_after)
    fmt = _format(args)
    if args.at is not None and not 0 <= args.at < len(history.events):
        print(f"prose-tui: --at {args.at}: this run has {len(history.events)} events"
              f"{f' (0-{len(history.events) - 1})' if history.events else ''}", file=sys.stderr)
        return 1
    trace = None
    if fmt != "json":
        from prose_tui.history import Journal
        from prose_tui.viewmodel.explorer_model import trace_as_shown

        trace = trace_as_shown(run, args.at, Journal())  # the explorer's program view and marks
    if args.output == "-":
        sys.stdout.write(shown(export_text(run, history, fmt, args.at, trace)))
        return 0
    try:
        written = write_export(run, history, fmt, args.at, Path(args.output) if args.output else None, trace)
    except OSError as exc:
        print(f"prose-tui: cannot write {args.output or 'the export'}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if mirror_of(run.path) is not None:  # a remote run: the host's paths, not the local copy's
        written.write_text(shown(written.read_text(encoding="utf-8")), encoding="utf-8")
    print(written)
    return 0
