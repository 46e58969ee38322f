"""The pane bar: numbered panes, the active one highlighted (the narrow layout shows one pane)."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import Static


class PaneBar(Static):
    """``1 Runs  2 Trace  3 Stack  4 Data  5 Value``; clicking a name posts ``PaneClicked``."""

    DEFAULT_CSS = """
    PaneBar { height: 1; background: $panel; padding: 0 1; }
    """

    class PaneClicked(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, names: list[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.names = names
        self.active = 0
        self._spans: list[tuple[int, int]] = []

    def set_active(self, index: int) -> None:
        """Highlight pane ``index``; the same index again changes nothing (no repaint, no layout)."""
        if index == self.active and self._spans:
            return
        self.active = index
        text = Text(no_wrap=True)
        self._spans = []
        for i, name in enumerate(self.names):
            start = text.cell_len + 1
            label = f" {i + 1} {name} "
            text.append(label, "reverse bold" if i == index else "")
            self._spans.append((start, start + len(label)))
            text.append(" ")
        self.update(text, layout=False)  # one row, as wide as the screen: a repaint will do

    def on_click(self, event) -> None:
        for i, (start, end) in enumerate(self._spans):
            if start <= event.x < end:
                self.post_message(self.PaneClicked(i))
