"""``prose-tui diff RUN_A RUN_B [--json]``: what changed between two runs (issue 14).

RUN_A is the reference (usually the run that worked), RUN_B the one to explain. The
comparison is :func:`prose_tui.history.compare.compare_runs`; this module prints it with
Rich (run text as ``Text``, so markup in it is shown literally) or as JSON. Either run may
be a run path, ``postgresql://…/db#RUN_ID`` or ``ssh://[user@]host[:port]/path`` (issue 34). Exit status 0
whether or not the runs differ (like ``git diff`` without ``--exit-code``), 1 for a path
that is not a run.
"""

from __future__ import annotations

import argparse
import json
from rich.console import Console
from rich.text import Text

from prose_tui.history.compare import Comparison, StatementOutcome, ValueDiff
from prose_tui.cli.targets import any_target
from prose_tui.history.report import describe_seconds, size_text

__all__ = ["add_diff_parser", "print_comparison", "run_diff"]

CHANGE_WORDS = {"outcome": "outcome", "retries": "retries", "slower": "slower", "faster": "faster",
                "text": "text changed", "only_a": "only in A", "only_b": "only in B"}


def add_diff_parser(sub) -> None:
    diff = sub.add_parser("diff", help="what changed between two runs: statements, durations, bindings, memory",
                          description="Compare RUN_A (the reference, e.g. the run that worked) with RUN_B.")
    diff.add_argument("run_a", type=any_target, metavar="RUN_A",
                      help="run path, postgresql://…/db#RUN_ID or ssh://[user@]host[:port]/path")
    diff.add_argument("run_b", type=any_target, metavar="RUN_B",
                      help="run path, postgresql://…/db#RUN_ID or ssh://[user@]host[:port]/path")
    diff.add_argument("--json", action="store_true", help="the comparison as one JSON object")
    diff.add_argument("--all", action="store_true", help="list unchanged statements and bindings too")


def run_diff(args: argparse.Namespace) -> int:
    from prose_tui.cli.export import load_run_and_history
    from prose_tui.history.compare import compare_runs

    a, history_a = load_run_and_history(args.run_a, args.stale_after)
    b, history_b = load_run_and_history(args.run_b, args.stale_after)
    comparison = compare_runs(a, history_a, b, history_b)
    if args.json:
        from prose_tui.remote import shown_json  # a remote run: the host's paths, not the local copy's

        print(json.dumps(shown_json(comparison.to_json()), indent=2, ensure_ascii=False))
        return 0
    console = Console()
    print_comparison(comparison, console if console.is_terminal else Console(width=160), show_all=args.all)
    return 0


def _outcome(s: StatementOutcome | None) -> str:
    if s is None:
        return "—"
    retries = f" ×{s.attempts}" if s.attempts > 1 else ""
    took = f" {describe_seconds(s.seconds)}" if s.seconds is not None else ""
    return f"{s.outcome}{retries}{took}"


_STYLE = {"completed": "green", "rendered": "green", "failed": "bold red", "retrying": "magenta",
          "started": "yellow", "skipped": "dim"}


def _value_lines(console: Console, d: ValueDiff) -> None:
    sizes = f"{size_text(d.size_a) if d.size_a is not None else '—'} → {size_text(d.size_b) if d.size_b is not None else '—'}"
    state = {"changed": "changed", "only_a": "only in A", "only_b": "only in B", "same": "same"}[d.state]
    head = Text.assemble(("  ", ""), (d.name, "bold"), f"  {d.scope}  ", (state, "yellow" if d.state != "same" else "dim"),
                         f"  {sizes}")
    if d.note:
        head.append(f"  ({d.note})", "dim")
    console.print(head)
    for line in d.diff:
        style = ("dim" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else "")
        console.print(Text("    " + line, style), overflow="fold")


def print_comparison(c: Comparison, console: Console, *, show_all: bool = False) -> None:
    """The comparison as text: runs, note, status and failure, statements, bindings, agents."""
    for label, run, failure in (("A", c.a, c.failure_a), ("B", c.b, c.failure_b)):
        console.print(Text.assemble((f"{label} ", "bold"), (run.id, "bold"), "  ",
                                    (run.status.value, _STYLE.get(run.status.value, "")), f"  {run.program or '—'}"))
        console.print(Text(f"  why: {run.status_reason or '—'}", "dim"))
        if failure:
            console.print(Text(f"  failure: {failure}", "red"))
    console.print(Text(c.note, "italic" if c.same_program else "yellow"))
    console.print(Text(c.summary(), "bold"))
    pairs = c.statements if show_all else c.changed_statements()
    console.rule(f"statements ({len(c.changed_statements())} changed of {len(c.statements)})")
    for p in pairs:
        text = (p.a or p.b).label  # type: ignore[union-attr]
        if p.a and p.b and p.a.label != p.b.label:
            text = f"{p.a.label} → {p.b.label}"
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{text[:60]:<60} ")
        line.append(f"{_outcome(p.a):<22}", _STYLE.get(p.a.outcome, "") if p.a else "dim")
        line.append(" → ")
        line.append(f"{_outcome(p.b):<22}", _STYLE.get(p.b.outcome, "") if p.b else "dim")
        words = [CHANGE_WORDS[x] for x in p.changes]
        if p.delta is not None and ("slower" in p.changes or "faster" in p.changes):
            words = [w if w not in ("slower", "faster") else f"{w} by {describe_seconds(abs(p.delta))}" for w in words]
        line.append("  " + ", ".join(words), "yellow")
        console.print(line)
        error = p.b.error if p.b and p.b.error else None
        if error and (p.a is None or p.a.error != error):
            console.print(Text(f"    B: {error}", "red"))
    if not pairs:
        console.print(Text("  no statement changed", "dim"))
    values = c.bindings if show_all else c.changed_bindings()
    console.rule(f"bindings ({len(c.changed_bindings())} differ of {len(c.bindings)})")
    for d in values:
        _value_lines(console, d)
    if not values:
        console.print(Text("  no binding differs", "dim"))
    agents = [x for x in c.agents if show_all or x.segments_a != x.segments_b or (x.memory and x.memory.state != "same")]
    if c.agents:
        console.rule(f"agents ({len(agents)} differ of {len(c.agents)})")
    for x in agents:
        seg = lambda n: "—" if n is None else str(n)  # noqa: E731
        console.print(Text.assemble(("  ", ""), (x.name, "bold"), f"  segments {seg(x.segments_a)} → {seg(x.segments_b)}"))
        if x.memory is not None and x.memory.state != "same":
            _value_lines(console, x.memory)
