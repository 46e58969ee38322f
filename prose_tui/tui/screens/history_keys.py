"""History keys for the explorer: step through events, jump to failures, go back to live.

A mixin for ``ExplorerScreen``: it expects ``self.nav`` (a ``HistoryNavigator``),
``self.current_run`` and ``self.refresh_view()``.
"""

from __future__ import annotations

from textual.binding import Binding

from prose_tui.history import FailureContext
from prose_tui.tui.keys import keyed
from prose_tui.tui.targets import Target

HISTORY_BINDINGS = keyed([
    Binding("left_square_bracket", "history_step(-1)", "Step back one event", show=False),
    Binding("right_square_bracket", "history_step(1)", "Step forward one event", show=False),
    Binding("left_curly_bracket", "history_start", "First event", show=False),
    Binding("right_curly_bracket", "history_live", "Back to live (last event)", show=False),
    Binding("x", "history_problem(True)", "Next failure or retry", show=False),
    Binding("X", "history_problem(False)", "Previous failure or retry", show=False),
    Binding("exclamation_mark", "history_first_failure", "First failure", show=False),
])


def failure_markdown(ctx: FailureContext) -> str:
    """The failure view: statement, error, retries before it, context bindings (Markdown)."""
    when = f" at {ctx.event.time:%Y-%m-%d %H:%M:%S}" if ctx.event.time else ""
    lines = [f"# Failure: event {ctx.event.seq}{when}", ""]
    if ctx.statement is not None:
        lines += [f"**Statement** (trace line {ctx.statement.line}):", "", f"    {ctx.statement.text.strip()}", ""]
    lines += [f"**Error:** {ctx.error or 'no error text recorded'}", ""]
    if ctx.retries:
        lines += [f"**Retries before it ({len(ctx.retries)}):**", ""]
        lines += [f"- event {r.seq}: `{r.text.strip()}`" for r in ctx.retries]
        lines.append("")
    if ctx.context_bindings:
        lines += ["**Bindings it had as context:**", ""]
        lines += [f"- `{b.name}` ({b.kind or 'no kind'}, {b.scope})" for b in ctx.context_bindings]
    else:
        lines.append("No context bindings recorded for it.")
    return "\n".join(lines)


class HistoryActions:
    """Key actions on the history cursor."""

    def _moved(self, ok: bool, nothing: str) -> None:
        if not ok:
            self.notify(nothing, severity="information", markup=False)
            return
        self.refresh_view()
        self._show_failure_if_any()

    def action_history_step(self, delta: int) -> None:
        self._moved(self.nav.step(delta), "This run has no events to step through")

    def action_history_start(self) -> None:
        self._moved(self.nav.to_start(), "This run has no events to step through")

    def action_history_live(self) -> None:
        self.nav.go_live()
        self.refresh_view()

    def action_history_problem(self, forward: bool) -> None:
        found = self.nav.next_problem(forward)
        self._moved(found is not None, f"No {'later' if forward else 'earlier'} failure or retry")

    def action_history_first_failure(self) -> None:
        found = self.nav.first_failure()
        self._moved(found is not None, "This run has no failure")

    def _show_failure_if_any(self) -> None:
        """On a failure event: show its context in the value pane and its statement in the trace."""
        run = self.current_run
        ctx = self.nav.failure_here(run) if run is not None else None
        if ctx is None:
            return
        self.viewer_follows_writes = False
        self.show_target(Target("section", f"Failure at event {ctx.event.seq}", text=failure_markdown(ctx)))
        if ctx.statement is not None:
            self.show_trace_line(ctx.statement.line)
