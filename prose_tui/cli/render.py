"""Headless, human-readable output of ``prose-tui runs`` and ``prose-tui show`` (Rich).

Text from run files is printed as ``rich.text.Text`` so markup and escapes in it are shown
literally; Rich drops colour itself when stdout is not a terminal or ``NO_COLOR`` is set.
"""

from __future__ import annotations

from datetime import datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from prose_tui.backends.common.status import age, as_utc
from prose_tui.backends.common.text import short
from prose_tui.history.nodes import node_state
from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.model.write_order import ordered_bindings
from prose_tui.model.serialize import cost
from prose_tui.tui.glyphs import STATE_GLYPH, STATUS_BADGE


def _when(value: datetime | None) -> str:
    utc = as_utc(value)
    return utc.strftime("%Y-%m-%d %H:%M") if utc is not None else "—"


def _console() -> Console:
    """A console for headless output; wide when piped so scripts get whole rows."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def runs_table(runs: list[Run], console: Console | None = None) -> None:
    console = console or _console()
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("RUN", no_wrap=True, min_width=22, max_width=30, overflow="ellipsis")
    table.add_column("STATUS", no_wrap=True, min_width=9)
    table.add_column("FORMAT", no_wrap=True, min_width=9)
    table.add_column("PROGRAM", no_wrap=True, overflow="ellipsis", max_width=28)
    table.add_column("STARTED", no_wrap=True, min_width=16)
    table.add_column("AGE", no_wrap=True, justify="right")
    for run in runs:
        badge, style = STATUS_BADGE[run.status]
        table.add_row(Text(run.id), Text(badge, style), run.format.value, Text(program_name(run.program)),
                      _when(run.started), age(run.updated))
    if not runs:
        console.print("no runs found")
        return
    console.print(table)


def run_report(run: Run, console: Console | None = None) -> None:
    console = console or _console()
    badge, style = STATUS_BADGE[run.status]
    head = Text.assemble((run.id, "bold"), "  ", (badge, style), "  ", (run.format.value, "dim"))
    console.print(head)
    console.print(Text(f"program {run.program or '—'}  started {_when(run.started)}  updated {_when(run.updated)}"))
    from prose_tui.remote import shown  # a remote run: the host's path, not the local copy's

    console.print(Text(f"why: {shown(run.status_reason)}", "dim"))

    console.print(Text(shown(str(run.path)), "dim"))
    if run.trace:
        console.rule("trace")
        for t in run.trace:
            glyph, gstyle = STATE_GLYPH[t.state]
            line = Text.assemble((f"{t.line:>4} ", "dim"), (glyph, gstyle), " ", t.text)
            if t.note:
                line.append(f"  # {t.note}", "dim")
            console.print(line, overflow="ellipsis", no_wrap=True)
    if run.nodes:
        nodes_table(run, console)
    if run.call_stack:
        console.rule("call stack")
        for f in run.call_stack:
            console.print(Text(f"#{f.execution_id}  {f.block}  depth {f.depth}  {f.status or ''}"))
    if run.bindings:
        console.rule(f"bindings ({len(run.bindings)})")
        for b in ordered_bindings(run):  # the order the run wrote them, as the pane shows
            missing = "" if b.exists else "  (missing)"
            console.print(Text(f"{b.name:<24} {b.kind or '—':<7} {b.scope:<14} {b.bytes:>8} B{missing}"))
    if run.agents:
        console.rule(f"agents ({len(run.agents)})")
        for a in run.agents:
            console.print(Text(f"{a.name:<24} {a.scope or '—':<10} {len(a.segments)} segments"))
    if run.imports:
        console.rule(f"imports ({len(run.imports)})")
        for i in run.imports:
            console.print(Text(f"{i.import_handle}  {STATUS_BADGE[i.status][0]}  {i.program or ''}"))
    for warning in run.warnings:
        console.print(Text(f"warning: {shown(warning)}", "yellow"))


def nodes_table(run: Run, console: Console) -> None:
    """The node view of a run with nodes (a 0.15 skill run, a Reactor state dir): one row per
    node (glyph, name, last status, receipts, short version, fresh/reused tokens, producers,
    a chain break or failure text below its row), then the cost totals by surprise cause."""
    console.rule(f"nodes ({len(run.nodes)})")
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column(" ", no_wrap=True)
    table.add_column("NODE", no_wrap=True, overflow="ellipsis", max_width=40)
    table.add_column("STATUS", no_wrap=True)
    table.add_column("RECEIPTS", justify="right", no_wrap=True)
    table.add_column("VERSION", no_wrap=True)
    table.add_column("FRESH", justify="right", no_wrap=True)
    table.add_column("REUSED", justify="right", no_wrap=True)
    table.add_column("PRODUCERS", overflow="fold")
    for n in run.nodes:
        glyph, style = STATE_GLYPH[node_state(n.status)]
        table.add_row(Text(glyph, style), Text(n.name), Text(n.status or "—"), str(n.receipts),
                      Text(short(n.version) if n.version else "—"), f"{n.tokens_fresh:,}", f"{n.tokens_reused:,}",
                      Text(", ".join(n.producers) or "—"))
    console.print(table)
    for n in run.nodes:
        if n.status == "failed" and n.failure_reason:
            console.print(Text.assemble((f"{n.name} failed: ", "bold"), n.failure_reason))
        if not n.chain_ok:
            console.print(Text(f"{n.name}: chain broken ({n.chain_note or 'see its receipts'})", "yellow"))
    totals = cost(run.receipts)
    if totals:
        console.rule("cost")
        console.print(Text(f"{totals['tokens_fresh']:,} fresh + {totals['tokens_reused']:,} reused tokens "
                           f"over {_count(totals['receipts'], 'receipt')}"))
        for cause, row in totals["by_surprise_cause"].items():
            console.print(Text(f"  {cause:<12} {row['tokens_fresh']:>10,} fresh {row['tokens_reused']:>10,} reused "
                               f"{_count(row['receipts'], 'receipt'):>14}"))


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"
