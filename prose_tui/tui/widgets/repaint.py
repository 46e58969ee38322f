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
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static

_UNSET: Any = object()


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


def set_virtual_size(view: Widget, size: Size) -> None:
    """Give a scroll view its new scrollable ``size`` without a screen-wide layout when its
    own size does not depend on it (see the module doc)."""
    if size == view.virtual_size:
        return
    styles = view.styles
    auto = (styles.height is not None and styles.height.is_auto) or (styles.width is not None and styles.width.is_auto)
    if auto or not view.is_mounted or not view.container_size:
        view.virtual_size = size
        return
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)  # scrollbars, and the scroll offset kept within the new size
    view.refresh()


def set_border(widget: Widget, *, title: str | None = _UNSET, subtitle: str | None = _UNSET) -> None:
    """Set ``widget``'s border title and/or subtitle, only those that changed (an assignment
    repaints the whole widget with its children, even when the text is the same). Compared
    with what the widget holds, so titles assigned directly elsewhere are seen."""
    if title is not _UNSET and widget.border_title != title:
        widget.border_title = title
    if subtitle is not _UNSET and widget.border_subtitle != subtitle:
        widget.border_subtitle = subtitle
