"""A scrollable view of any Rich renderable, or of lines of text rendered as they are painted.

Two ways in (Textual's Line API either way, so scrolling and repainting only crop cached
lines and updating the view does not reflow the rest of the screen):

* ``set_renderable``: any renderable (Markdown above all), rendered to lines once per
  content change and per width;
* ``set_lines``: lines of text (``str`` or ``Text``, no newlines), each rendered with Rich
  when it is first painted (a bounded cache), so a 32 KiB value of 3,000 short lines costs
  what the screen shows (rendering it whole took about 200 ms). Rows are counted without
  rendering: a line that fits the width is one row; only longer lines (and lines with
  tabs) are wrapped up front. The rows are those Rich gives the whole text (a text is
  wrapped line by line).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from itertools import accumulate

from rich.cells import cell_len
from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from prose_tui.tui.widgets.repaint import set_virtual_size

Line = str | Text
CACHE_LINES = 2048  # rendered source lines kept (many screens)


class LineView(ScrollView, can_focus=False):
    """Shows one renderable or a list of lines. Both setters keep the scroll position unless told otherwise."""

    DEFAULT_CSS = """
    LineView { background: $surface; scrollbar-size-horizontal: 0; }
    """

    class NearEnd(Message):
        """The reader scrolled to within a screen of the end (a windowed value may grow)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._near_end_sent = False
        self._renderable: RenderableType = ""
        self._lines: Sequence[Line] | None = None  # set_lines: the source lines
        self._starts: list[int] | None = None  # first row of each line (None: one row per line)
        self._line_cache: OrderedDict[int, list[Strip]] = OrderedDict()
        self._strips: list[Strip] = []
        self._width = 0

    def set_renderable(self, renderable: RenderableType, *, scroll: str = "keep") -> None:
        """Show ``renderable``; ``scroll`` is ``keep``, ``home`` or ``end``."""
        self._renderable = renderable
        self._lines = None
        self._shown(scroll)

    def set_lines(self, lines: Sequence[Line], *, scroll: str = "keep") -> None:
        """Show ``lines`` (one row or more each, wrapped at the width), rendered when painted;
        ``scroll`` as for ``set_renderable``. Lines shown before at the same width, kept in
        place, keep their rendering and their rows on screen: only the rows of lines that
        changed are painted again (and every row below one whose height changed)."""
        old = self._lines
        self._lines = lines
        self._renderable = ""
        if old is not None and scroll == "keep" and self._restated(old):
            return
        self._shown(scroll)

    def _restated(self, old: Sequence[Line]) -> bool:
        """``_lines`` replaced ``old`` at the width they were counted at: the rendered lines
        that did not change are kept, and the rows of those that did are repainted (a live
        value's appended text repaints its last line's rows, not the pane). False (nothing
        done) when the view was not laid out at its width yet."""
        width = self.scrollable_content_region.width or self.size.width
        if width <= 0 or width != self._width or not self.is_mounted:
            return False
        new = self._lines
        assert new is not None
        kept = min(len(old), len(new))
        changed = [i for i in range(kept) if old[i] is not new[i] and old[i] != new[i]]
        old_starts = self._starts
        for i in changed:
            self._line_cache.pop(i, None)
        for i in [i for i in self._line_cache if i >= len(new)]:
            del self._line_cache[i]
        self._near_end_sent = False
        self._starts = self._count_rows(new, width)
        rows = self._starts[-1] if self._starts is not None else len(new)

        def span(starts: list[int] | None, i: int) -> tuple[int, int]:
            return (starts[i], starts[i + 1]) if starts is not None else (i, i + 1)

        spans = [span(self._starts, i) for i in changed]
        below = None if len(new) == len(old) else span(self._starts, kept)[0] if kept < len(new) else rows
        for i, (first, last) in zip(changed, spans):
            if span(old_starts, i) != (first, last):  # another height: the rows under it moved
                below = first if below is None else min(below, first)
                break
        set_virtual_size(self, Size(width, rows), repaint=False)
        top, height = round(self.scroll_offset.y), self.scrollable_content_region.height
        if below is not None:  # rows past both ends were blank and stay blank
            spans.append((below, max(rows, old_starts[-1] if old_starts is not None else len(old))))
        dirty = [Region(0, first - top, width, last - first) for first, last in
                 ((max(a, top), min(b, top + height)) for a, b in spans) if first < last]
        if dirty:
            self.refresh(*dirty)
        return True

    @property
    def row_count(self) -> int:
        """Rows the content takes at the current width."""
        return self.virtual_size.height

    def _shown(self, scroll: str) -> None:
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
        self._line_cache.clear()
        if self._lines is not None:
            self._strips = []
            self._starts = self._count_rows(self._lines, width)
            rows = self._starts[-1] if self._starts is not None else len(self._lines)
        else:
            self._starts = None
            console = self.app.console
            options = console.options.update_width(width)
            lines = console.render_lines(self._renderable, options, style=self.rich_style, pad=False)
            self._strips = [Strip(line).simplify() for line in lines]
            rows = len(self._strips)
        set_virtual_size(self, Size(width, rows))  # no screen-wide layout (repaint.py)

    def _count_rows(self, lines: Sequence[Line], width: int) -> list[int] | None:
        """The first row of every line and the total (``None`` when every line is one row)."""
        counts: list[int] | None = None
        for i, line in enumerate(lines):
            plain = line if isinstance(line, str) else line.plain
            if "\t" not in plain and (len(plain) <= width if plain.isascii() else cell_len(plain) <= width):
                if counts is not None:
                    counts.append(1)
                continue
            if counts is None:
                counts = [1] * i
            counts.append(len(self._line_strips(i)))
        if counts is None:
            return None
        return [0, *accumulate(counts)]

    def _line_strips(self, index: int) -> list[Strip]:
        cached = self._line_cache.get(index)
        if cached is not None:
            self._line_cache.move_to_end(index)
            return cached
        assert self._lines is not None
        line = self._lines[index]
        console = self.app.console
        options = console.options.update_width(self._width)
        text = Text(line) if isinstance(line, str) else line
        rows = console.render_lines(text, options, style=self.rich_style, pad=False)
        # An empty line renders as one empty segment (the whole text gives none): dropped.
        strips = [Strip([seg for seg in row if seg.text]).simplify() for row in rows]
        self._line_cache[index] = strips
        while len(self._line_cache) > CACHE_LINES:
            self._line_cache.popitem(last=False)
        return strips

    def on_resize(self) -> None:
        self._render_lines()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_cache.clear()  # rendered with the old base style

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
        if self._lines is not None:
            strip = self._row(index)
            if strip is None:
                return Strip.blank(width, self.rich_style)
            return strip.crop_extend(0, width, self.rich_style)
        if index >= len(self._strips):
            return Strip.blank(width, self.rich_style)
        return self._strips[index].crop_extend(0, width, self.rich_style)

    def _row(self, row: int) -> Strip | None:
        """Row ``row`` of ``set_lines`` content (``None`` past the end)."""
        assert self._lines is not None
        starts = self._starts
        if starts is None:
            if not 0 <= row < len(self._lines):
                return None
            line, sub = row, 0
        else:
            if not 0 <= row < starts[-1]:
                return None
            line = bisect_right(starts, row) - 1
            sub = row - starts[line]
        strips = self._line_strips(line)
        return strips[sub] if sub < len(strips) else Strip([])

    def rows_text(self) -> list[str]:
        """Every row's text at the current width (tests compare the two ways in)."""
        self._render_lines()
        if self._lines is None:
            return ["".join(seg.text for seg in strip) for strip in self._strips]
        return ["".join(seg.text for seg in (self._row(r) or Strip([]))) for r in range(self.virtual_size.height)]
