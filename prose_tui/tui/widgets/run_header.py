"""The run header above the trace: status (as of the cursor), id, program, format, then why
(or the cursor's moment), metrics and warnings."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.tui.glyphs import STATUS_BADGE
from prose_tui.tui.widgets.repaint import show_text


def header_text(run: Run | None, view: Run | None, *, moment: str | None, compact: bool, banner: str | None) -> Text:
    """``view`` is ``run`` as of the cursor; ``moment`` its label when not live (``as of
    event 4 of 0–13 · 12:00:05``). Compact layouts leave the reason and the moment to the
    strip and the title."""
    head = Text(no_wrap=False)
    if run is None or view is None:
        return head
    badge, style = STATUS_BADGE[view.status]
    head.append(badge, style)
    head.append(f" {run.id}", "bold")
    head.append(f"  {program_name(run.program)}  {run.format.value}", "dim")
    if not compact:
        head.append(f"\n{moment}" if moment else f"\n{view.status_reason}", "bold" if moment else "italic")
    if run.metrics:
        head.append("\n" + " · ".join(f"{k} {v:,.4g}" for k, v in sorted(run.metrics.items())), "cyan")
    for warning in run.warnings[:2]:
        head.append(f"\n⚠ {warning}", "yellow")
    if banner:
        head.append(f"\n⚠ {banner}", "yellow")
    return head


class RunHeader(Static):
    """``show`` redraws only when the text changed, and lays the screen out only when the
    header needs another number of rows; ``shown`` is the text on screen."""

    shown: Text = Text()

    def show(self, text: Text) -> None:
        if show_text(self, text, shown=self.shown):
            self.shown = text
