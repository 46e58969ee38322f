"""History keys for the explorer (step through events, jump to failures, go back to live)
and the failure report ``!`` shows. The moves themselves live in ``ExplorerModel``; the
screen maps these keys to them."""

from __future__ import annotations

from textual.binding import Binding

from prose_tui.history import FailureContext
from prose_tui.tui.keys import keyed

HISTORY_BINDINGS = keyed([
    Binding("left_square_bracket", "history_step(-1)", "Step back one event", show=False),
    Binding("right_square_bracket", "history_step(1)", "Step forward one event", show=False),
    Binding("left_curly_bracket", "history_start", "First event", show=False),
    Binding("right_curly_bracket", "history_live", "Back to live (last event)", show=False),
    Binding("x", "history_problem(True)", "Next failure or retry", show=False),
    Binding("X", "history_problem(False)", "Previous failure or retry", show=False),
    Binding("exclamation_mark", "history_first_failure", "The failure: what ended the run, else the first", show=False),
])


def failure_markdown(ctx: FailureContext, failures: list[str] | None = None,
                     statement: tuple[int, str] | None = None) -> str:
    """The failure view (Markdown): statement, the error quoted as recorded, the retries
    before it (never the failing attempt itself), what bindings record as failed
    (``failures``: ``name: exit 1 · make: *** Error 1``), the bindings it had as context.
    ``statement``: the statement's (line, text) as the trace shows it (an event-log run's
    program line, not its log line); the log line it failed on is quoted below it."""
    when = f" at {ctx.event.time:%Y-%m-%d %H:%M:%S}" if ctx.event.time else ""
    lines = [f"# Failure: event {ctx.event.seq}{when}", ""]
    if ctx.recovered:
        lines += ["**Recovered:** a later attempt of the same statement completed; the run went on.", ""]
    if ctx.statement is not None:
        line, text = statement or (ctx.statement.line, ctx.statement.text.strip())
        lines += [f"**Statement** (trace line {line}):", "", f"    {text}", ""]
        if ctx.attempt:
            lines += [f"**Attempt:** {ctx.attempt}", ""]
        if text != ctx.statement.text.strip():
            lines += [f"logged as `{ctx.statement.text.strip()}`", ""]
    error = ctx.error
    bare = error is None or error.strip().lower() in ("rejected", "failed", "error", "fail", "✗")
    if bare and ctx.event.text.strip():
        error = ctx.event.text.strip()  # the outcome word alone says nothing: quote the line
    lines += ["**Error:**", "", *[f"> {line}" for line in (error or "no error text recorded").splitlines()], ""]
    if failures:
        lines += ["**Recorded as failed:**", "", *[f"- `{f}`" for f in failures], ""]
    retries = [r for r in ctx.retries if r.seq != ctx.event.seq and r.text.strip() != ctx.event.text.strip()]
    if retries:
        lines += [f"**Retries before it ({len(retries)}):**", ""]
        lines += [f"- event {r.seq}: `{r.text.strip()}`" for r in retries]
        lines.append("")
    if ctx.context_bindings:
        lines += ["**Bindings it had as context:**", ""]
        lines += [f"- `{b.name}` ({b.kind or 'no kind'}, {b.scope})" for b in ctx.context_bindings]
    else:
        lines.append("No context bindings recorded for it.")
    return "\n".join(lines)
