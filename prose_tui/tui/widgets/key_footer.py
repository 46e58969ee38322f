"""The footer of key bindings: one row of text, painted again when the keys change.

Textual's ``Footer`` is a container of one widget per key: every time the screen's bindings
may have changed (every focus change, every mount of a focusable widget, every screen
resume) it removes and mounts all of them, which costs a layout of the whole screen and a
second one once the new keys have their sizes. Switching panes with 1-6 then took three
layouts and five frames (130-220 ms of the UI thread at 200x50, the footer more than half
of it), and opening a run ended with the same work just as its first live change arrived.

``KeyFooter`` keeps Textual's look (the ``$footer-*`` theme colours, the compact spacing, the
command palette key at the right edge behind a thin rule) and its clicks (a key clicked is
that key pressed; a disabled key rings the bell), but it is a single widget of fixed height:
a change of keys is a repaint of one row. Keys that do not fit the width are left out whole,
from the end, rather than cut; the palette key stays. Bindings with the same action show
once (the first, as ``Footer`` does); binding groups are not combined (no screen here has
one).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget


@dataclass(frozen=True)
class FooterItem:
    """One key as shown: ``key`` is what a click presses; ``start``/``end`` its cells in the row."""

    key: str
    display: str
    description: str
    enabled: bool
    tooltip: str
    start: int = 0
    end: int = 0


class KeyFooter(Widget, can_focus=False):
    """The screen's key bindings in one row (``compact``: less space around each key)."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {
        "key-footer--key",
        "key-footer--description",
        "key-footer--hover",
        "key-footer--rule",
    }
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .key-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-footer--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        .key-footer--rule {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, compact: bool = False, show_command_palette: bool = True, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.compact = compact
        self.show_command_palette = show_command_palette
        self._shown: tuple | None = None  # the keys on screen, as ``_keys`` gives them
        self._check_pending = False
        self._items: list[FooterItem] = []  # the keys painted, with their cells (for clicks)
        self._hover: int | None = None  # index into ``_items`` under the mouse

    # -- what to show ----------------------------------------------------------------------------------
    @property
    def up_to_date(self) -> bool:
        """Whether the footer shows the keys of the screen's bindings now: no check waiting,
        the keys on screen the ones it would show (a ready signal for scripts and tests that
        capture the screen)."""
        return not self._check_pending and self._shown == self._keys()

    @property
    def keys(self) -> list[str]:
        """The keys painted, in order (the palette key last), as ``App.simulate_key`` takes them."""
        return [item.key for item in self._items]

    def _keys(self) -> tuple:
        """What to show: the command palette key (when shown), then every shown binding's key,
        its display, description, enabled state and tooltip, the first binding of each action."""
        app = self.app
        bindings = self.screen.active_bindings
        palette = None
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            entry = bindings.get(app.COMMAND_PALETTE_BINDING)
            if entry is not None:
                _, binding, enabled, tooltip = entry
                palette = (binding.key, app.get_key_display(binding), binding.description, enabled,
                           binding.tooltip or binding.description)
        seen: set[str] = set()
        shown = []
        for _, binding, enabled, tooltip in bindings.values():
            if binding.show and binding.action not in seen:
                seen.add(binding.action)
                shown.append((binding.key, app.get_key_display(binding), binding.description, enabled, tooltip or ""))
        return palette, tuple(shown)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)
        self.bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen) -> None:
        """The screen's bindings may have changed (several signals in one turn: one check)."""
        if self.is_attached and screen is self.screen and not self._check_pending:
            self._check_pending = True
            self.call_next(self._show_if_changed)

    def _show_if_changed(self) -> None:
        self._check_pending = False
        if not self.is_attached:
            return
        keys = self._keys()
        if keys != self._shown:
            self._shown = keys
            self._hover = None
            self.refresh()

    # -- painting --------------------------------------------------------------------------------------
    def _item_text(self, item: FooterItem, hover: bool, *, compact: bool) -> Text:
        key_style = self.get_component_rich_style("key-footer--key")
        description_style = self.get_component_rich_style("key-footer--description")
        if hover:
            hover_style = self.get_component_rich_style("key-footer--hover")
            key_style, description_style = key_style + hover_style, description_style + hover_style
        if not item.enabled:
            key_style, description_style = key_style + Style(dim=True), description_style + Style(dim=True)
        text = Text()
        text.append(item.display if compact else f" {item.display} ", key_style)
        if item.description:
            text.append(f" {item.description}" if compact else f"{item.description} ", description_style)
        return text

    def render(self) -> Text:
        width = self.size.width
        palette, shown = self._shown if self._shown is not None else (None, ())
        items = [FooterItem(*entry) for entry in shown]
        palette_item = FooterItem(*palette) if palette is not None else None
        right = Text()
        if palette_item is not None:
            right = Text("▏", self.get_component_rich_style("key-footer--rule"))
            # The palette key is compact in either layout, as Textual's footer draws it.
            right.append_text(self._item_text(palette_item, self._is_hovered(palette_item), compact=True))
            right.append(" ")
        room = max(0, width - right.cell_len)
        row = Text(no_wrap=True, overflow="crop", end="")
        placed: list[FooterItem] = []
        gap = 1 if self.compact else 0
        for item in items:
            piece = self._item_text(item, self._is_hovered(item), compact=self.compact)
            start = row.cell_len + (gap if placed else 0)
            if start + piece.cell_len > room:
                break  # this key and the rest do not fit: left out whole
            if placed and gap:
                row.append(" " * gap)
            row.append_text(piece)
            placed.append(_at(item, start, row.cell_len))
        if palette_item is not None and width >= right.cell_len:
            start = width - right.cell_len
            row.append(" " * (start - row.cell_len))
            row.append_text(right)
            placed.append(_at(palette_item, start + 1, width - 1))
        self._items = placed
        return row

    def _is_hovered(self, item: FooterItem) -> bool:
        hover = self._hover
        return hover is not None and hover < len(self._items) and self._items[hover].key == item.key

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()  # a theme change: the component colours again

    # -- the mouse -------------------------------------------------------------------------------------
    def _item_at(self, x: int) -> int | None:
        return next((i for i, item in enumerate(self._items) if item.start <= x < item.end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        index = self._item_at(event.x)
        if index != self._hover:
            self._hover = index
            self.tooltip = self._items[index].tooltip or None if index is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        index = self._item_at(event.x)
        if index is None:
            return
        item = self._items[index]
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()


def _at(item: FooterItem, start: int, end: int) -> FooterItem:
    return FooterItem(item.key, item.display, item.description, item.enabled, item.tooltip, start, end)


__all__ = ["FooterItem", "KeyFooter"]
