"""``prose-tui config path|show|edit``: where the config file is, what it says, change it.

    path   print the file's path (whether or not it exists)
    show   print the effective settings as TOML, every action name ``[keys]`` may rebind,
           and one line per problem in the file (exit status 1 when there are problems)
    edit   create the file from a commented template if missing, open it in
           ``$VISUAL``/``$EDITOR``, then check it as ``show`` does
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

from prose_tui.tui.config import Config, config_path, load_config, template
from prose_tui.tui.external import editor_command


def add_config_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``config {path,show,edit}`` to an argparse ``subparsers`` object."""
    parser = subparsers.add_parser(
        "config", help="show where the config file is, what it sets, or edit it",
        description="The config file (TOML) sets the layout, stale-after, poll interval, theme, "
        "follow on start and key overrides. Command-line flags override it.",
        epilog="examples:\n  prose-tui config path\n  prose-tui config show\n  EDITOR=nano prose-tui config edit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("path", "show", "edit"),
                        help="path: print its location; show: the effective settings and problems; "
                        "edit: open it in $VISUAL/$EDITOR (created from a template if missing)")
    return parser


def known_actions() -> set[str]:
    """The action names ``[keys]`` may rebind (the app's binding ids)."""
    from prose_tui.tui.app import ProseTUI

    return ProseTUI.action_names()


def load_checked() -> Config:
    """The config file, with ``[keys]`` checked against the app's action names."""
    return load_config(known_actions=known_actions())


def run_config_command(args: argparse.Namespace) -> int:
    """Run ``config ACTION``; returns the exit status (1 when the file has problems)."""
    path = config_path()
    if args.action == "path":
        print(path)
        return 0
    if args.action == "edit":
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template(), encoding="utf-8")
            print(f"prose-tui: created {path} from the template", file=sys.stderr)
        argv = [*editor_command(), str(path)]
        try:
            status = subprocess.call(argv)
        except OSError as exc:
            print(f"prose-tui: cannot start the editor {argv[0]!r}: {exc.strerror or exc} "
                  "(set $VISUAL or $EDITOR)", file=sys.stderr)
            return 1
        if status != 0:
            print(f"prose-tui: the editor exited with status {status}", file=sys.stderr)
    return _show(load_checked(), quiet=args.action == "edit")


def _show(config: Config, *, quiet: bool = False) -> int:
    path = config_path()
    if not quiet:
        where = str(path) if config.path is not None else f"{path} (not there: the defaults)"
        print(f"# {where}")
        print(config.as_toml(), end="")
        print("\n# actions [keys] can rebind:")
        names = sorted(known_actions())
        line = "#"
        for name in names:
            if len(line) + len(name) + 1 > 88:
                print(line)
                line = "#"
            line += " " + name
        print(line)
    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.habits import binding_namespaces
    from prose_tui.tui.keys import keymap_clashes

    problems = [*config.problems, *keymap_clashes(binding_namespaces(ProseTUI), dict(config.keys))]
    for problem in problems:
        print(f"prose-tui: {problem}", file=sys.stderr)
    if quiet and not problems:
        print(f"prose-tui: {path} is valid", file=sys.stderr)
    return 1 if problems else 0
