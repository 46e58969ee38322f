"""Live updates that repaint a widget, not the screen.

Textual lays out the whole screen (every widget's geometry, then a repaint of every widget
whose region moved) whenever one widget asks for a layout, and several common calls ask
for one: ``Static.update`` (``layout=True`` by default), a new ``virtual_size`` of a scroll
view (a reactive with ``layout=True``), and setting a pane's ``border_title`` repaints the
whole pane with everything in it even when the title did not change. On a 200x50 screen
that was about 80 % of the cost of showing a live change (docs/performance.md). The
helpers here ask for a layout only when the widget's size really changes:

* ``show_text(static, text)``: nothing when the text is the one shown; a repaint of the
  widget alone when its height stays the same (fixed-height widgets always; ``height:
  auto`` widgets when the new text needs as many rows, within ``min/max-height``);
* ``set_virtual_size(view, size)``: a scroll view whose own size does not follow its
  content (not ``height: auto``) gets the new scrollable size and updated scrollbars
  without a layout (a scrollbar appearing or going still lays out, by Textual's reactive);
* ``set_border(widget, title=..., subtitle=...)``: assigns only what changed.

``repaint_regions_only(screen)`` gives a screen a compositor that, for a partial update,
asks each widget for the rows the update repaints within it, not for the rows of the box
around every region repainted (see ``RegionCompositor``).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import count
from math import ceil
from typing import Any

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

_UNSET: Any = object()
_SERIALS = count(1)


def serial() -> int:
    """A number no other call in this process returns: names one painted line in a
    ``RowMemo`` key (painted again, it gets another)."""
    return next(_SERIALS)


def text_strip(text: Text, console: Console, base: Style) -> Strip:
    """One row of ``text`` as a strip, each segment's style laid over ``base`` (the widget's
    look: colours, the cursor's), for a widget drawn a row at a time (Textual's line API)."""
    return Strip([Segment(s.text, base + s.style if s.style else base) for s in text.render(console)]).simplify()


def height_changes(widget: Widget) -> bool:
    """Whether ``widget`` (its content just replaced, not laid out yet) needs another height.

    True when unsure (not mounted or not laid out yet, ``width: auto``)."""
    if not widget.is_mounted or not widget.display:
        return not widget.is_mounted
    styles = widget.styles
    if styles.width is not None and styles.width.is_auto:
        return True
    if styles.height is not None and not styles.height.is_auto:
        return False  # cells, fr or %: the content does not size it
    width = widget.content_region.width
    if width <= 0 or not widget.size:
        return True
    viewport = widget.app.size
    parent = widget.parent.size if isinstance(widget.parent, Widget) else viewport
    height = widget.get_content_height(widget.container_size, viewport, width) + styles.gutter.height
    if styles.max_height is not None:
        height = min(height, int(styles.max_height.resolve(parent, viewport)))
    if styles.min_height is not None:
        height = max(height, int(styles.min_height.resolve(parent, viewport)))
    return height != widget.outer_size.height  # ``size`` is the content area, without the gutter


def show_text(widget: Static, content: RenderableType, *, shown: object = _UNSET) -> bool:
    """Show ``content`` in ``widget``; returns False (and does nothing) when ``shown`` (what
    the caller last showed; by default what this function last showed) equals it. Lays the
    screen out only when the widget's height changes."""
    last = getattr(widget, "_repaint_shown", _UNSET) if shown is _UNSET else shown
    if last is not _UNSET and _same(last, content):
        return False
    widget._repaint_shown = content  # type: ignore[attr-defined]
    widget.update(content, layout=False)
    if height_changes(widget):
        widget.refresh(layout=True)
    return True


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception:  # renderables without equality: take them as new
        return False


def set_virtual_size(view: Widget, size: Size, *, repaint: bool = True) -> None:
    """Give a scroll view its new scrollable ``size`` without a screen-wide layout when its
    own size does not depend on it (see the module doc). ``repaint=False``: the view's rows
    are left as painted (the caller repaints those that changed; a scroll the new size
    forces repaints the view itself), only the scrollbars are redrawn."""
    if size == view.virtual_size:
        return
    styles = view.styles
    auto = (styles.height is not None and styles.height.is_auto) or (styles.width is not None and styles.width.is_auto)
    if auto or not view.is_mounted:
        view.virtual_size = size
        return
    if not view.container_size:
        # Mounted, never laid out (its pane hidden, as the run list is at 80x24): the layout
        # that shows it gives it its size and scrollbars from the size kept here; a layout of
        # the screen now changes nothing shown (issue 33: 7-15 ms of CPU at 80x24).
        view.set_reactive(Widget.virtual_size, size)
        return
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)  # scrollbars, and the scroll offset kept within the new size
    if repaint:
        view.refresh()


def set_border(widget: Widget, *, title: str | None = _UNSET, subtitle: str | None = _UNSET) -> None:
    """Set ``widget``'s border title and/or subtitle, only those that changed (Textual's
    assignment repaints the whole widget with its children, even when the text is the
    same). A changed text on a widget with a border repaints the border's row only.
    Compared with what the widget holds, so titles assigned directly elsewhere are seen."""
    if title is not _UNSET and widget.border_title != title:
        _set_label(widget, "border_title", title, top=True)
    if subtitle is not _UNSET and widget.border_subtitle != subtitle:
        _set_label(widget, "border_subtitle", subtitle, top=False)


def _set_label(widget: Widget, name: str, text: str | None, *, top: bool) -> None:
    descriptor = type(widget).__dict__.get(name) or Widget.__dict__.get(name)
    internal = getattr(descriptor, "_internal_name", None)
    gutter = widget.styles.gutter
    edge = gutter.top if top else gutter.bottom
    height = widget.outer_size.height
    if internal is None or text is None or not widget.is_mounted or not edge or not height:
        setattr(widget, name, text)  # Textual's way: the whole widget
        return
    setattr(widget, internal, widget.render_str(text).expand_tabs(4).split()[0])  # as Textual stores it
    # refresh() takes regions of the content area: the border row lies before (or after) it
    row = -gutter.top if top else height - 1 - gutter.top
    widget.refresh(Region(-gutter.left, row, widget.outer_size.width, 1))


class RowMemo:
    """A scroll view's painted rows kept by what they show, so a scroll repaints only new rows.

    Textual keeps a widget's painted rows (its styles applied) by their place on screen,
    and a scroll view that scrolls repaints every row. A live trace or timeline scrolls by
    one row per appended event, so each frame painted again rows it had painted one row
    lower the frame before (29 + 10 rows at 200x50, most of a frame's cost). Here each row
    has a *key*, hashable, naming everything its cells depend on (the widget's own cache
    entry for the line, the row within it, the horizontal scroll, the width); a row whose
    key was painted before is put back in Textual's line cache with the strip Textual made
    for it then, and only the other rows are painted. The strip being the same object,
    Textual's later steps (colour filters, cuts, the terminal's escape codes) hit the
    caches each ``Strip`` keeps, so a row painted before costs a few lookups.

    Only for widgets whose rows are all content (no border, padding or outline: a row's
    strip then does not depend on its place); others, and a Textual whose line cache has
    another shape, are painted as usual. ``clear()`` when the widget's styles change.
    Keeps at most ``limit`` rows (``0``: 4 screens)."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit
        self._rows: dict[object, Any] = {}
        self._context: object = None
        self.reused = 0  # rows put back (for tests and measurements)
        self.painted = 0  # rows Textual painted

    def clear(self) -> None:
        self._rows.clear()

    def render_lines(self, widget: Widget, crop: Any, key_of: Any, render: Any) -> list[Any]:
        """``widget.render_lines(crop)`` with reuse: ``key_of(y)`` is row ``y``'s key (``None``:
        not to reuse), ``render(crop)`` Textual's own ``render_lines``."""
        cache = getattr(widget._styles_cache, "_cache", None)
        dirty = getattr(widget._styles_cache, "_dirty_lines", None)
        styles = widget.styles
        if (not isinstance(cache, dict) or not isinstance(dirty, set) or any(styles.gutter)
                or any(edge for edge, _color in styles.outline)):
            return render(crop)
        # Rows Textual kept (painted before, not refreshed since) cost nothing: only the others
        # are looked up.
        wanted = [y for y in crop.line_range if y in dirty or y not in cache]
        if not wanted:
            return render(crop)
        # The width is in every key; the height is not in any row's look: a pane that grows
        # or shrinks (the strip below it changing its number of rows) keeps its rows.
        context = (widget.size.width, widget.background_colors)
        if context != self._context:
            self._rows.clear()
            self._context = context
        rows = self._rows
        keys = []
        first_of: dict[object, int] = {}  # a key no row had: the first row showing it here
        alike: list[tuple[int, int]] = []  # (row, the row above it showing the same)
        for y in wanted:
            key = key_of(y)
            keys.append((y, key))
            if key is None:
                continue
            strip = rows.get(key)
            if strip is not None:
                cache[y] = strip
                dirty.discard(y)
                self.reused += 1
            elif key in first_of:  # (the blank rows a page turn shows below a trace's end)
                alike.append((y, first_of[key]))
                self.reused += 1
            else:
                first_of[key] = y
                self.painted += 1
        for y, like in alike:  # painted once, put back for the rest
            if like not in cache or like in dirty:
                render(Region(crop.x, like, crop.width, 1))
            if like in cache:
                cache[y] = cache[like]
                dirty.discard(y)
        strips = render(crop)
        for y, key in keys:
            if key is not None and y in cache:
                rows.pop(key, None)
                rows[key] = cache[y]  # newest last
        limit = self.limit or 4 * max(1, widget.size.height)
        while len(rows) > limit:
            del rows[next(iter(rows))]
        return strips


def _bar_key(bar: ScrollBar) -> object:
    """What a scrollbar shows, as ``ScrollBarRender.render_bar`` draws it: the thumb's ends
    in eighths of a cell (a new position or length that leaves them alone draws the same
    bar), with everything else the drawing depends on. ``None``: not known."""
    renderer = bar.renderer
    if renderer is not ScrollBarRender or bar.parent is None:
        return None
    size = bar.size.height if bar.vertical else bar.size.width
    virtual = ceil(bar.window_virtual_size)
    window = ceil(bar.window_size if bar.window_size < bar.window_virtual_size else 0)
    thumb: tuple[int, int] | None = None
    if window and size and virtual and size != virtual:
        bars = len(renderer.VERTICAL_BARS if bar.vertical else renderer.HORIZONTAL_BARS)
        thumb_size = max(1, window / (virtual / size))
        position = (size - thumb_size) * (bar.position / (virtual - window))
        start = int(position * bars)
        thumb = (start, start + ceil(thumb_size * bars))
    styles = bar.parent.styles
    return (bar.size, bar.vertical, bar.thickness, thumb, bool(bar.grabbed), bar.mouse_over,
            styles.scrollbar_background, styles.scrollbar_color, styles.scrollbar_background_active,
            styles.scrollbar_color_active, styles.scrollbar_background_hover, styles.scrollbar_color_hover,
            bar.parent.background_colors, bar.screen.styles.scrollbar_color.a == 0)


class QuietScrollBar(ScrollBar):
    """A ``ScrollBar`` that paints again only when its bar looks different.

    A live view's scroll bounds and position move with every appended row, and Textual
    repaints the scrollbar each time (2-3 ms a frame for the trace's and the timeline's);
    on a long run the thumb moves one eighth of a cell every few hundred rows. The rows
    painted for the same look (``_bar_key``) and the same part of the bar are given back,
    the same strips, so the rest of the frame's work on them hits Textual's caches."""

    _last: tuple[object, Any, list[Any]] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        key = _bar_key(self)
        last = self._last
        if key is not None and last is not None and last[0] == key and last[1] == crop:
            return last[2]
        strips = super().render_lines(crop)
        self._last = (key, crop, strips) if key is not None else None
        return strips


class QuietScrollbars:
    """Mixin for a ``ScrollView``: its vertical scrollbar is a ``QuietScrollBar``."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        widget: Any = self
        if widget._vertical_scrollbar is None:
            bar = QuietScrollBar(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
            bar.display = False
            widget._vertical_scrollbar = bar
            widget.app._start_widget(widget, bar)  # as Textual's own property does
        return widget._vertical_scrollbar


SPAN_GAP = 8  # rows: two repainted spans of a widget this close are asked for in one call
SPANS_MOST = 3  # spans asked for apart in one widget; more: the box around them


class RegionCompositor(Compositor):
    """Textual's compositor, with a partial update that paints only what it repaints.

    For a partial update Textual takes the box around every region repainted (a live
    change: the run header's row at the top of a 200x50 screen, two trace rows, the
    timeline's rows near the bottom, a row of the bindings tree on the right) and asks
    every widget the box overlaps for every row of it within the widget, then cuts each
    of those rows at every widget's edge; only the pieces within the repainted regions
    are sent. At 200x50 that was 20 widgets and up to 46 rows per live change, most of a
    frame's cost, for a few rows that changed. Here each widget is asked only for the rows
    where a region repainted overlaps it (rows between two such regions included, from
    its cache), and a widget no region overlaps is not asked at all: the pieces sent are
    the same, each taken from the same widget.

    Full updates (a new size or layout) are Textual's own."""

    _repainted: list[Region] | None = None

    def render_partial_update(self) -> ChopsUpdate | None:
        self._repainted = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._repainted = None

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        repainted = self._repainted
        if repainted is None or crop is None:
            yield from super()._get_renders(crop)
            return
        for widget, (region, clip) in self.visible_widgets.items():
            visible = region.intersection(clip)
            spans = sorted((part.y, part.bottom) for part in (visible.intersection(dirty) for dirty in repainted)
                           if part.width and part.height)
            merged: list[list[int]] = []
            for top, bottom in spans:
                # Rows between two spans close together come from the widget's cache: one
                # call costs less than two (each works out the widget's styles again).
                if merged and top <= merged[-1][1] + SPAN_GAP:
                    merged[-1][1] = max(merged[-1][1], bottom)
                else:
                    merged.append([top, bottom])
            if len(merged) > SPANS_MOST:  # many regions (an open's frames): one call, as Textual
                merged = [[merged[0][0], max(bottom for _top, bottom in merged)]]
            for top, bottom in merged:
                # Whole rows of what the widget shows (the pieces are cut at its edges), the
                # rows the regions repainted: ``_render_chops`` crops to ``region & rows``.
                rows = Region(visible.x, top, visible.width, bottom - top)
                yield region, rows, widget.render_lines(rows.translate(-region.offset))


def repaint_regions_only(screen: Screen[Any]) -> None:
    """Give ``screen`` (just created) a ``RegionCompositor``; a Textual whose screens keep
    their compositor elsewhere keeps its own."""
    if isinstance(getattr(screen, "_compositor", None), Compositor):
        screen._compositor = RegionCompositor()
