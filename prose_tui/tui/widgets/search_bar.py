"""The ``/`` search prompt: searches the pane that had focus, ``n``/``N`` repeat it."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class SearchBar(Input):
    """Hidden until ``open``; Enter posts ``SearchSubmitted``, Escape posts ``SearchClosed``."""

    BINDINGS = [Binding("escape", "close", "Close search", show=False)]
    DEFAULT_CSS = """
    SearchBar { display: none; height: 1; border: none !important; padding: 0 1; background: $boost; }
    SearchBar.-open { display: block; }
    """

    class SearchSubmitted(Message):
        def __init__(self, term: str) -> None:
            super().__init__()
            self.term = term

    class SearchClosed(Message):
        pass

    def __init__(self) -> None:
        super().__init__(placeholder="search… (Enter to find, Esc to close)", id="search", compact=True)

    def open(self, pane_name: str) -> None:
        """Show the prompt for ``pane_name``; the screen focuses it at once (``set_focus``)."""
        self.placeholder = f"/ search {pane_name}…  Enter: find · Esc: close · then n/N: next/previous"
        self.add_class("-open")
        self.value = ""
        self.focus()

    def action_close(self) -> None:
        self.remove_class("-open")
        self.post_message(self.SearchClosed())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.remove_class("-open")
        self.post_message(self.SearchSubmitted(event.value))
