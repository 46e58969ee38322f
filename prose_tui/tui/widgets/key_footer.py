"""The footer of key bindings, rebuilt only when what it shows changes.

Textual's ``Footer`` removes and mounts all its keys (a dozen widgets, their styles and a
layout of the screen) every time the screen's bindings may have changed: on every focus
change, every mount of a focusable widget, every screen resume, and again for each of
several such signals arriving in one turn. ``KeyFooter`` coalesces the signals of one turn
into one check and rebuilds only when the keys it would show differ from those on screen,
so a focus change between widgets with the same keys costs no footer rebuild.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A ``Footer`` (same look, same clicks) that skips rebuilds which would show the same keys."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple | None = None  # the keys on screen, as ``_keys`` gives them
        self._check_pending = False
        self._recomposing = False

    @property
    def up_to_date(self) -> bool:
        """Whether the footer shows the keys of the screen's bindings now: no check waiting,
        no rebuild under way, the keys on screen the ones it would show (a ready signal for
        scripts and tests that capture the screen)."""
        return not self._check_pending and not self._recomposing and self._shown == self._keys()

    def _keys(self) -> tuple:
        """What ``Footer.compose`` would show: every shown binding's key, label, description,
        action, group, enabled state and tooltip, and the command palette key."""
        app = self.app
        return (
            app.ENABLE_COMMAND_PALETTE and self.show_command_palette,
            app.COMMAND_PALETTE_BINDING,
            tuple(
                (binding.key, app.get_key_display(binding), binding.description, binding.action,
                 id(binding.group), enabled, tooltip, binding.show)
                for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()
                if binding.show or binding.action == "command_palette"
            ),
        )

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._check_pending:
            self._check_pending = True
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        self._check_pending = False
        if not self.is_attached:
            return
        keys = self._keys()
        if keys == self._shown:
            return
        self._shown = keys
        self._recomposing = True
        try:
            await self.recompose()
        finally:
            self._recomposing = False
