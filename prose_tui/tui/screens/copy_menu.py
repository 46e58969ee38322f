"""The ``y`` menu: what to copy to the clipboard. A key per choice (its first letter, as
lazygit's menus), or the arrows and Enter; Escape cancels. Dismisses with the choice's
name or ``None``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

KEYS = {"value": "v", "line": "l", "failure": "f", "path": "p"}


class CopyMenu(ModalScreen[str | None]):
    """``choices`` maps a name (``value``, ``line``, ``failure``, ``path``) to what it copies."""

    DEFAULT_CSS = """
    CopyMenu { align: center middle; }
    CopyMenu > Vertical { width: 52; max-width: 100%; height: auto; border: round $accent;
                          background: $surface; padding: 0 1; }
    CopyMenu OptionList, CopyMenu OptionList:focus { height: auto; border: none; padding: 0; }
    """
    BINDINGS = [
        Binding("escape,q", "choose(None)", "Cancel", show=False),
        *[Binding(key, f"choose('{name}')", f"Copy {name}", show=False) for name, key in KEYS.items()],
    ]

    def __init__(self, choices: dict[str, str]) -> None:
        super().__init__()
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Copy to clipboard · Esc cancels"
            options = []
            for name, label in self.choices.items():
                prompt = Text()
                prompt.append(f"{KEYS.get(name, ' ')}  ", "bold")
                prompt.append(label)
                options.append(Option(prompt, id=name))
            yield OptionList(*options)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_choose(self, name: str | None) -> None:
        self.dismiss(name)
