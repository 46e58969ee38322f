"""``prose-tui agent status|start|stop|once|cleanup``: Mission Control without a screen.

Integration: ``add_agent_parser(subparsers)`` adds the ``agent`` subcommand to an argparse
subparsers object and sets ``func=run_agent_command`` on it, so the main CLI can do
``return args.func(args)``. ``python -m prose_tui.cli.agent ...`` runs it standalone.

Exit codes: 0 done (status: a Mission Control or heartbeat file was read); 1 the file is missing,
unreadable, malformed or holds unknown states, or a control was refused; 2 usage error.
This module also holds the status wording shared with the Textual panel (:func:`status_rows`).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from prose_tui.mission.control import (
    ACTIONS,
    ControlError,
    StateFileMalformed,
    StateFileMissing,
    apply_action,
    malformed_preview,
)
from prose_tui.mission.rows import status_rows
from prose_tui.mission.state import (
    Kind,
    MissionState,
    candidate_paths,
    find_agent_state,
    read_state,
    utc_now,
)

AGENT_ACTIONS = ("status",) + tuple(ACTIONS)


def state_to_json(state: MissionState, now: datetime) -> dict[str, Any]:
    """A JSON-ready summary of ``state`` (ages in seconds at ``now``)."""
    pending = state.pending
    heartbeat = state.heartbeat
    return {
        "path": str(state.path),
        "kind": state.kind.value,
        "badge": state.badge.label,
        "message": state.message,
        "problems": list(state.problems),
        "desired_state": state.desired_state,
        "current_state": state.current_state,
        "timestamp": state.timestamp_text,
        "age_seconds": None if state.timestamp is None else round((now - state.timestamp).total_seconds(), 3),
        "setBy": state.set_by,
        "note": state.note,
        "pending": None
        if pending is None
        else {
            "description": pending.description,
            "seconds": None if pending.since is None else round((now - pending.since).total_seconds(), 3),
        },
        "heartbeat": None
        if heartbeat is None
        else {
            "session_id": heartbeat.session_id,
            "current_issue": heartbeat.current_issue,
            "status": heartbeat.status,
            "last_heartbeat": heartbeat.last_heartbeat_text,
            "restart_count": heartbeat.restart_count,
            "stale": heartbeat.stale,
        },
    }


def format_status(state: MissionState, now: datetime) -> str:
    """Plain-text status for a terminal (no colour: the badge is a word)."""
    lines = [f"{state.badge.label}  {state.message}", f"  {'File':<13}{state.path}"]
    lines += [f"  {label:<13}{value}" for label, value in status_rows(state, now)]
    return "\n".join(lines)


def add_agent_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``agent ACTION [PATH] [--agent-state FILE] [--json] [--note TEXT] [--create]
    [--overwrite-malformed]`` to an argparse ``subparsers`` object; returns the new parser
    (its default ``func`` is :func:`run_agent_command`)."""
    parser = subparsers.add_parser(
        "agent",
        help="show or steer a long-running agent through agent_state.json",
        description="Mission Control for agent_state.json (seeds/agent-state.md): status shows "
        "what the agent reports; start, stop, once and cleanup set desired_state to "
        "continuous, pause, run_once and run_cleanup.",
    )
    add_agent_arguments(parser)
    parser.set_defaults(func=run_agent_command)
    return parser


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of the ``agent`` subcommand, on any parser."""
    parser.add_argument("action", choices=AGENT_ACTIONS, help="status, or the control to apply")
    parser.add_argument("path", nargs="?", default=".", metavar="PATH",
                        help="folder holding agent_state.json or generated-app/agent_state.json (default: .)")
    parser.add_argument("--agent-state", metavar="FILE", dest="agent_state", help="use this agent_state.json")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--note", metavar="TEXT", help="store TEXT in the note field with the control")
    parser.add_argument("--create", action="store_true",
                        help="create a missing file with the default (pause/pause) first")
    parser.add_argument("--overwrite-malformed", action="store_true", dest="overwrite_malformed",
                        help="replace a file that is not valid JSON (its content is lost)")


def run_agent_command(args: argparse.Namespace, *, now=utc_now, out=None, err=None) -> int:
    """Run a parsed ``agent`` command; returns the exit code (see the module docstring)."""
    out = out or sys.stdout
    err = err or sys.stderr
    root = Path(args.path)
    path = find_agent_state(root, args.agent_state)
    searched = () if args.agent_state or root.is_file() else candidate_paths(root)
    if args.action == "status":
        state = read_state(path, now=now, searched=searched)
        if args.json:
            print(json.dumps(state_to_json(state, now()), indent=2), file=out)
        else:
            print(format_status(state, now()), file=out)
            if state.kind is Kind.MISSING:
                print("  Create it with: prose-tui agent stop --create", file=out)
        return 0 if state.kind in (Kind.MISSION, Kind.HEARTBEAT) else 1
    try:
        result = apply_action(
            path, args.action, note=args.note, create=args.create,
            overwrite_malformed=args.overwrite_malformed, now=now,
        )
    except ControlError as error:
        message = error.message
        if isinstance(error, StateFileMissing):
            message += " Add --create to create it."
        elif isinstance(error, StateFileMalformed) and error.state is not None and error.state.kind is Kind.UNRECOGNISED:
            message += "\nAdd --overwrite-malformed to add desired_state to it (its other keys are kept)."
        elif isinstance(error, StateFileMalformed):
            message += (
                "\nAdd --overwrite-malformed to replace it with the default; this content would be lost:\n"
                + malformed_preview(error.lost)
            )
        if args.json:
            print(json.dumps({"ok": False, "action": args.action, "error": type(error).__name__,
                              "message": message}, indent=2), file=out)
        else:
            print(f"prose-tui agent {args.action}: {message}", file=err)
        return 1
    after = read_state(path, now=now)
    if args.json:
        print(json.dumps({"ok": True, "action": args.action, "desired_state": result.desired_state,
                          "reapplied": result.reapplied, "created": result.created,
                          "message": result.message, "state": state_to_json(after, now())}, indent=2), file=out)
    else:
        print(result.message, file=out)
        print(format_status(after, now()), file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry: ``python -m prose_tui.cli.agent ACTION [PATH] [options]``."""
    parser = argparse.ArgumentParser(prog="prose-tui agent", description=add_agent_parser.__doc__)
    add_agent_arguments(parser)
    return run_agent_command(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
