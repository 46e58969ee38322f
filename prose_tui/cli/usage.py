"""The examples and exit codes ``prose-tui --help`` and each subcommand's ``--help`` end with."""

from __future__ import annotations

import argparse

EXIT_CODES = """\
exit status:
  0  success (also for a run that parsed with warnings)
  1  a path that is not a run or does not exist, a config file with problems
     (config show/edit), a tool that could not start; one line on stderr says which
  2  usage error (unknown option, missing argument)"""

MAIN_EPILOG = f"""\
examples:
  prose-tui                          explore the runs below the current folder
  prose-tui ~/proj/.prose/runs/20260301-100000-a1b2c3
                                     open one run in its trace
  prose-tui --demo                   watch a simulated VM write a run
  prose-tui --theme nord --layout narrow
  prose-tui runs --json | jq '.[0].id'
  prose-tui show RUN_PATH --at 12    a run as of event 12
  prose-tui export RUN -o failure.html
                                     a failure report anyone can open offline
  prose-tui diff RUN_OK RUN_FAILED   what changed since the run that worked
  prose-tui serve ~/proj             the explorer in a browser on 127.0.0.1:8000
  prose-tui config edit              change the defaults (theme, keys, layout, ...)
  prose-tui completion bash > ~/.local/share/bash-completion/completions/prose-tui

commands (prose-tui COMMAND --help for each):
  runs        list runs below PATH, newest first
  show        print one parsed run
  record      journal the runs below PATH without a UI
  agent       show or steer a long-running agent (agent_state.json)
  export      one self-contained HTML, Markdown or JSON report of a run
  diff        compare two runs: statements, durations, bindings, memory
  serve       the explorer in a web browser (textual-serve), on localhost
  config      where the config file is, what it sets, edit it
  completion  print a shell completion script (bash, zsh, fish)

in the app: ? lists every key; ctrl+p opens the command palette; o opens the
selection in $PAGER, O a read-only copy in $VISUAL/$EDITOR, y copies (OSC 52).

{EXIT_CODES}"""

SUB_EPILOGS = {
    "runs": "examples:\n  prose-tui runs\n  prose-tui runs ~/proj --json\n  prose-tui runs . --stale-after 600",
    "show": "examples:\n  prose-tui show .prose/runs/20260301-100000-a1b2c3\n"
            "  prose-tui show state.db --json\n  prose-tui show RUN_PATH --at 12\n"
            "  claude -p '...' | prose-tui show -",
    "record": "examples:\n  prose-tui record ~/proj      # until Ctrl+C; the explorer then replays the history\n"
              "  prose-tui record --postgres-env TEAM_DB   # a database's runs as they appear and end",
    "export": "examples:\n  prose-tui export RUN_PATH -o report.html\n  prose-tui export RUN_PATH --format md --at 40 > issue.md\n"
              "  prose-tui export 'postgresql://HOST/DB#RUN_ID' -o report.html",
    "diff": "examples:\n  prose-tui diff runs/OK runs/FAILED\n  prose-tui diff runs/OK runs/FAILED --json",
    "serve": "examples:\n  prose-tui serve ~/proj            # prints the link to open: http://127.0.0.1:8000/?token=...\n"
             "  ssh -L 8000:127.0.0.1:8000 host   # from your machine, then open that link there",
    "agent": "examples:\n  prose-tui agent status\n  prose-tui agent start ~/app --note 'resume'\n"
             "  prose-tui agent stop --json",
}


def decorate(subparsers: argparse._SubParsersAction) -> None:
    """Give each subcommand parser its examples and the exit codes, kept as written."""
    for name, parser in subparsers.choices.items():
        examples = SUB_EPILOGS.get(name)
        if examples is None and not parser.epilog:
            continue
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.epilog = (examples or parser.epilog or "") + "\n\n" + EXIT_CODES
