"""The compare view (issue 14): the run on screen beside another run of the workspace.

A is the reference (the run picked, e.g. the one that worked), B the run that was on screen.
The comparison (:func:`prose_tui.history.compare.compare_runs`) is read off the UI thread.
Three tabs: statements aligned between the runs (what changed outcome, retried, took
longer), bindings and agents' memory (a line diff of the highlighted one below the table).
``c`` shows only what changed or everything, ``s`` swaps A and B, Escape goes back.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from prose_tui.history.compare import Comparison, StatementOutcome, ValueDiff
from prose_tui.history.report import describe_seconds, size_text
from prose_tui.model import Run
from prose_tui.tui.widgets.key_footer import KeyFooter

CHANGE_WORDS = {"outcome": "outcome", "retries": "retries", "slower": "slower", "faster": "faster",
                "text": "text changed", "only_a": "only in A", "only_b": "only in B"}
OUTCOME_STYLE = {"completed": "green", "rendered": "green", "failed": "bold red", "retrying": "magenta",
                 "started": "yellow", "skipped": "dim"}
STATUS_STYLE = {"completed": "green", "failed": "bold red", "running": "yellow", "interrupted": "yellow", "unknown": "dim"}


def _outcome(s: StatementOutcome | None) -> Text:
    if s is None:
        return Text("—", "dim")
    text = Text(s.outcome, OUTCOME_STYLE.get(s.outcome, ""))
    if s.attempts > 1:
        text.append(f" ×{s.attempts}", "magenta")
    if s.seconds is not None:
        text.append(f" {describe_seconds(s.seconds)}", "dim")
    return text


def _size(n: int | None) -> str:
    return "—" if n is None else size_text(n)


def diff_renderable(d: ValueDiff | None) -> Text:
    """A unified diff coloured line by line (run text as plain ``Text``: no markup)."""
    if d is None:
        return Text("Highlight a row to see its diff.", "dim")
    head = Text.assemble((d.name, "bold"), f"  {d.scope}  {_size(d.size_a)} → {_size(d.size_b)}")
    if d.note:
        head.append(f"  ({d.note})", "dim")
    lines = [head]
    if d.state == "same":
        lines.append(Text("the same in both runs", "dim"))
    elif d.state in ("only_a", "only_b"):
        lines.append(Text(f"only in {'A' if d.state == 'only_a' else 'B'}", "yellow"))
    for line in d.diff:
        style = ("dim" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else "")
        lines.append(Text(line, style))
    return Text("\n").join(lines)


class CompareScreen(Screen[None]):
    """Run ``a`` (reference) against run ``b``, both given by path."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("c", "toggle_changed", "Changed/all"),
        Binding("s", "swap", "Swap A/B"),
    ]
    HELP_GROUP = "Compare"
    DEFAULT_CSS = """
    CompareScreen { overflow: hidden; }
    CompareScreen #compare-tabs { height: 1fr; }
    CompareScreen ContentSwitcher, CompareScreen TabPane { height: 1fr; }
    CompareScreen TabPane > Vertical { height: 1fr; }
    CompareScreen #compare-head { height: auto; padding: 0 1; border-bottom: solid $primary 30%; }
    CompareScreen DataTable { height: 1fr; }
    CompareScreen .diff { height: 1fr; border-top: solid $primary 30%; padding: 0 1; }
    """

    def __init__(self, path_a: Path, path_b: Path) -> None:
        super().__init__()
        self.path_a, self.path_b = path_a, path_b
        self.comparison: Comparison | None = None
        self.only_changed = True

    def compose(self) -> ComposeResult:
        yield Static(Text("Comparing…", "dim"), id="compare-head")
        with TabbedContent(id="compare-tabs"):
            with TabPane("Statements", id="tab-statements"):
                yield DataTable(id="statements", cursor_type="row", zebra_stripes=True)
            with TabPane("Bindings", id="tab-bindings"):
                with Vertical():
                    yield DataTable(id="bindings", cursor_type="row")
                    with VerticalScroll(classes="diff"):
                        yield Static(id="binding-diff")
            with TabPane("Agents", id="tab-agents"):
                with Vertical():
                    yield DataTable(id="agents", cursor_type="row")
                    with VerticalScroll(classes="diff"):
                        yield Static(id="agent-diff")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#statements", DataTable).add_columns("statement", "A", "B", "what changed")
        self.query_one("#bindings", DataTable).add_columns("binding", "scope", "", "A", "B")
        self.query_one("#agents", DataTable).add_columns("agent", "segments A", "segments B", "memory")
        self.compare()

    @work(thread=True, exclusive=True, group="compare")
    def compare(self) -> None:
        from prose_tui.backends import NotARunError, open_run
        from prose_tui.history import history_of
        from prose_tui.history.compare import compare_runs

        workspace = getattr(self.app, "workspace", None)
        journal = getattr(self.app, "journal", None)
        kwargs = {"now": workspace.clock(), "stale_after": workspace.stale_after} if workspace is not None else {}
        try:
            a: Run = open_run(self.path_a, **kwargs)
            b: Run = open_run(self.path_b, **kwargs)
            result = compare_runs(a, history_of(a, journal=journal), b, history_of(b, journal=journal))
        except (NotARunError, OSError) as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._show, result)

    def _failed(self, message: str) -> None:
        self.query_one("#compare-head", Static).update(Text(f"Cannot compare: {message}", "red"))

    def _show(self, comparison: Comparison) -> None:
        self.comparison = comparison
        c = comparison
        head = Text()
        for label, run, failure in (("A ", c.a, c.failure_a), ("B ", c.b, c.failure_b)):
            head.append(label, "bold")
            head.append(run.id, "bold")
            head.append("  ")
            head.append(run.status.value, STATUS_STYLE.get(run.status.value, ""))
            head.append(f"  {run.program or '—'}  ")
            head.append(run.status_reason or "", "dim")
            if failure:
                head.append(f"\n   failure: {failure}", "red")
            head.append("\n")
        head.append(c.note + "\n", "italic" if c.same_program else "yellow")
        head.append(c.summary(), "bold")
        self.query_one("#compare-head", Static).update(head)
        self.sub_title = f"{c.a.id} ↔ {c.b.id}"
        self._fill()

    def _fill(self) -> None:
        c = self.comparison
        if c is None:
            return
        statements = self.query_one("#statements", DataTable)
        statements.clear()
        for p in c.statements if not self.only_changed else c.changed_statements():
            label = (p.a or p.b).label if (p.a or p.b) else ""  # type: ignore[union-attr]
            if p.a and p.b and p.a.label != p.b.label:
                label = f"{p.a.label} → {p.b.label}"
            words = []
            for change in p.changes:
                word = CHANGE_WORDS[change]
                if change in ("slower", "faster") and p.delta is not None:
                    word = f"{word} by {describe_seconds(abs(p.delta))}"
                words.append(word)
            error = p.b.error if p.b and p.b.error and (p.a is None or p.a.error != p.b.error) else ""
            changed = Text(", ".join(words), "yellow")
            if error:
                changed.append(f"  B: {error}", "red")
            statements.add_row(Text(label), _outcome(p.a), _outcome(p.b), changed)
        bindings = self.query_one("#bindings", DataTable)
        bindings.clear()
        self._binding_rows = [d for d in c.bindings if not self.only_changed or d.state != "same"]
        for d in self._binding_rows:
            bindings.add_row(Text(d.name), d.scope, Text(d.state, "dim" if d.state == "same" else "yellow"),
                             _size(d.size_a), _size(d.size_b))
        agents = self.query_one("#agents", DataTable)
        agents.clear()
        self._agent_rows = [x for x in c.agents if not self.only_changed or x.segments_a != x.segments_b
                            or (x.memory is not None and x.memory.state != "same")]
        for x in self._agent_rows:
            memory = x.memory.state if x.memory is not None else "no memory"
            agents.add_row(Text(x.name), "—" if x.segments_a is None else str(x.segments_a),
                           "—" if x.segments_b is None else str(x.segments_b), memory)
        self.query_one("#binding-diff", Static).update(diff_renderable(self._binding_rows[0] if self._binding_rows else None))
        first_agent = self._agent_rows[0].memory if self._agent_rows else None
        self.query_one("#agent-diff", Static).update(diff_renderable(first_agent))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = event.cursor_row
        if event.data_table.id == "bindings" and 0 <= row < len(self._binding_rows):
            self.query_one("#binding-diff", Static).update(diff_renderable(self._binding_rows[row]))
        elif event.data_table.id == "agents" and 0 <= row < len(self._agent_rows):
            self.query_one("#agent-diff", Static).update(diff_renderable(self._agent_rows[row].memory))

    def action_toggle_changed(self) -> None:
        self.only_changed = not self.only_changed
        self.notify("Showing only what changed" if self.only_changed else "Showing everything", markup=False)
        self._fill()

    def action_swap(self) -> None:
        self.path_a, self.path_b = self.path_b, self.path_a
        self.query_one("#compare-head", Static).update(Text("Comparing…", "dim"))
        self.compare()
