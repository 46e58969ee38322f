"""The help screen: every key binding, grouped by where it works, generated from the bindings."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

_KEY_NAMES = {"question_mark": "?", "slash": "/", "escape": "Esc", "enter": "Enter", "tab": "Tab",
              "shift+tab": "Shift+Tab", "pagedown": "PgDn", "pageup": "PgUp", "home": "Home", "end": "End",
              "left": "←", "right": "→", "up": "↑", "down": "↓", "space": "Space", "exclamation_mark": "!",
              "left_square_bracket": "[", "backspace": "Backspace", "right_square_bracket": "]", "left_curly_bracket": "{",
              "right_curly_bracket": "}", "less_than_sign": "<", "greater_than_sign": ">"}


def key_name(key: str) -> str:
    """A key as a user types it: ``question_mark`` -> ``?``, ``ctrl+d`` -> ``Ctrl+D``."""
    key = key.strip()
    if key in _KEY_NAMES:
        return _KEY_NAMES[key]
    for modifier in ("ctrl+", "shift+", "alt+"):
        if key.startswith(modifier):
            rest = key_name(key[len(modifier):])
            return modifier[:-1].capitalize() + "+" + (rest.upper() if len(rest) == 1 else rest)
    if len(key) > 1 and key.isalpha() and key.islower():
        return key.capitalize()  # a named key: "delete" -> "Delete"
    return key


def describe_key(key: str) -> str:
    """``ctrl+d,pagedown`` -> ``Ctrl+D / PgDn``."""
    return " / ".join(key_name(k) for k in key.split(","))


def bindings_table(groups: list[tuple[str, list[Binding]]]) -> Group:
    """One heading per group (a line of its own, never cut) over a table of its keys."""
    parts: list[RenderableType] = []
    for title, bindings in groups:
        if not bindings:
            continue
        table = Table(box=None, show_header=False, pad_edge=False, expand=True)
        table.add_column("key", style="bold", no_wrap=True, min_width=14, ratio=1)
        table.add_column("what", ratio=3)
        seen = set()
        for b in bindings:
            key = describe_key(b.key)
            if (key, b.description) in seen or not b.description:
                continue
            seen.add((key, b.description))
            table.add_row(key, b.description)
        parts += [Text(title, "bold underline"), table, Text("")]
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    """Lists the bindings passed in; ``?``, ``q`` or Escape closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90%; max-width: 90; height: 90%; border: round $accent; padding: 0 1; background: $surface; }
    """

    def __init__(self, groups: list[tuple[str, list[Binding]]], intro: str) -> None:
        super().__init__()
        self.groups = groups
        self.intro = intro

    def compose(self):
        with VerticalScroll() as scroll:
            scroll.border_title = "Help · Esc to close"
            yield Static(Text(self.intro))
            yield Static(bindings_table(self.groups))

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
