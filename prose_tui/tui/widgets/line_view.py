"""A scrollable view of any Rich renderable, rendered to lines once and painted lazily.

Rendering (Markdown above all) happens once per content change and per width; scrolling
and repainting only crop cached lines (Textual's Line API), so a long value costs what the
screen shows and updating it does not reflow the rest of the screen.
"""

from __future__ import annotations

from rich.console import RenderableType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from prose_tui.tui.widgets.repaint import set_virtual_size


class LineView(ScrollView, can_focus=False):
    """Shows one renderable. ``set_renderable`` keeps the scroll position unless told otherwise."""

    DEFAULT_CSS = """
    LineView { background: $surface; scrollbar-size-horizontal: 0; }
    """

    class NearEnd(Message):
        """The reader scrolled to within a screen of the end (a windowed value may grow)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._near_end_sent = False
        self._renderable: RenderableType = ""
        self._strips: list[Strip] = []
        self._width = 0

    def set_renderable(self, renderable: RenderableType, *, scroll: str = "keep") -> None:
        """Show ``renderable``; ``scroll`` is ``keep``, ``home`` or ``end``."""
        self._renderable = renderable
        self._width = 0
        self._near_end_sent = False
        self._render_lines()
        if scroll == "home":
            self.scroll_to(y=0, animate=False)
        elif scroll == "end":
            self.call_after_refresh(self.scroll_end, animate=False)
        self.refresh()

    def _render_lines(self) -> None:
        width = self.scrollable_content_region.width or self.size.width
        if width <= 0:
            return
        if width == self._width:
            return
        self._width = width
        console = self.app.console
        options = console.options.update_width(width)
        lines = console.render_lines(self._renderable, options, style=self.rich_style, pad=False)
        self._strips = [Strip(line).simplify() for line in lines]
        set_virtual_size(self, Size(width, len(self._strips)))  # no screen-wide layout (repaint.py)

    def on_resize(self) -> None:
        self._render_lines()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        height = self.scrollable_content_region.height
        if not self._near_end_sent and self.max_scroll_y > 0 and new >= self.max_scroll_y - height:
            self._near_end_sent = True
            self.post_message(self.NearEnd())

    def render_line(self, y: int) -> Strip:
        self._render_lines()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= len(self._strips):
            return Strip.blank(width, self.rich_style)
        return self._strips[index].crop_extend(0, width, self.rich_style)

