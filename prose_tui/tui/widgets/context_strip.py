"""The compact strip under the trace at small sizes (lazygit-style: every panel's gist on
screen): the status reason in full, the innermost frames or active constructs, the newest
binding (name, size, first line). It shows the moment under the history cursor."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from prose_tui.model import Binding, Run
from prose_tui.tui.glyphs import STATUS_BADGE
from prose_tui.tui.widgets.value_viewer import human_size


def first_line(binding: Binding, limit: int = 4096) -> str:
    """The first non-empty line of a file binding's value (after its header), ``""`` when it
    cannot be read (missing, encrypted, not a file of its own)."""
    if binding.encrypted or not binding.exists:
        return ""
    try:
        with open(binding.path, "rb") as f:
            f.seek(binding.value_offset)
            chunk = f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""
    return next((line.strip() for line in chunk.splitlines() if line.strip() and line.strip() != "---"), "")


def strip_text(view: Run, binding: Binding | None, value_line: str, moment: str | None) -> Text:
    """The strip's lines for ``view`` (the run as of the cursor)."""
    text = Text()
    badge, style = STATUS_BADGE[view.status]
    text.append(badge, style)
    text.append(f" {moment}" if moment else "", "bold")
    text.append(f" · {view.status_reason}" if view.status_reason else "", "italic")
    if view.call_stack:
        text.append("\n⤷ ", "blue")
        for i, frame in enumerate(view.call_stack[:3]):
            if i:
                text.append("  ‹ ", "dim")
            eid = f"#{frame.execution_id}" if frame.execution_id is not None else ""
            text.append(f"{frame.block}{eid}", "bold" if i == 0 else "")
            if frame.status:
                text.append(f" {frame.status}", "dim")
        if len(view.call_stack) > 3:
            text.append(f"  ‹ +{len(view.call_stack) - 3}", "dim")
    for construct in view.constructs[:2]:
        text.append("\n∥ ", "blue")
        text.append(construct.title, "bold")
        if construct.items:
            text.append(" · " + " · ".join(i.strip() for i in construct.items[:4]), "dim")
    if binding is not None:
        text.append("\n◆ ", "cyan")
        text.append(binding.name, "bold")
        text.append(f" {human_size(binding.bytes)}", "dim")
        if binding.failure:
            text.append(f" ✗ {binding.failure}", "bold red")
        if value_line:
            text.append(f"  {value_line}")
    return text


class ContextStrip(Static):
    """Shown under the trace in the compact layout; ``show`` with the run as of the cursor."""

    DEFAULT_CSS = """
    ContextStrip { height: auto; max-height: 6; padding: 0 1; background: $boost; }
    """

    shown: Text = Text()

    def show(self, view: Run | None, binding: Binding | None, moment: str | None) -> None:
        """Show ``view`` (the run as of the cursor), its newest ``binding``, the ``moment``
        label when the cursor is not live. ``shown`` keeps the text on screen."""
        if view is None:
            self.shown = Text("no run selected", "dim")
        else:
            self.shown = strip_text(view, binding, first_line(binding) if binding is not None else "", moment)
        self.update(self.shown)
