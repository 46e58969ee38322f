"""A generic yes/no confirmation modal.

Usage::

    def done(confirmed: bool | None) -> None: ...
    app.push_screen(ConfirmScreen("Stop the agent?", "It finishes the current session first."), done)

or ``confirmed = await app.push_screen_wait(ConfirmScreen(...))`` inside a worker. Dismisses with
True for yes (key ``y`` or the yes button) and False for no (``n``, ``escape`` or the no button).
The body is shown as plain text (never parsed as markup), scrolls when long, and is focusable so
long content can be read with the arrow keys. Works at 80x24 and with NO_COLOR (the buttons carry
their key in their label, so nothing depends on colour).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Ask a yes/no question. ``title`` is one line; ``body`` is any plain text (may be long);
    ``yes_label``/``no_label`` name the choices; ``danger`` styles yes as destructive and focuses
    no first, so a stray enter does not confirm."""

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
    }
    ConfirmScreen > #confirm-dialog {
        width: 72;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: thick $warning 80%;
        background: $surface;
        padding: 0 1;
    }
    ConfirmScreen #confirm-title {
        text-style: bold;
        width: 100%;
        padding: 0 0 1 0;
    }
    ConfirmScreen #confirm-body {
        height: auto;
        max-height: 14;
        border: none;
    }
    ConfirmScreen #confirm-body:focus {
        border: tall $accent;
    }
    ConfirmScreen #confirm-buttons {
        height: auto;
        width: 100%;
        align-horizontal: right;
        padding: 1 0 0 0;
    }
    ConfirmScreen #confirm-buttons Button {
        margin-left: 2;
    }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("n", "answer(False)", "No", show=False),
        Binding("escape", "answer(False)", "No", show=False),
    ]

    def __init__(
        self,
        title: str,
        body: str = "",
        *,
        yes_label: str = "Yes",
        no_label: str = "No",
        danger: bool = False,
        name: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id)
        self.title_text = title
        self.body_text = body
        self.yes_label = yes_label
        self.no_label = no_label
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Static(Text(self.title_text), id="confirm-title")
            if self.body_text:
                with VerticalScroll(id="confirm-body"):
                    yield Static(Text(self.body_text), id="confirm-body-text")
            with Horizontal(id="confirm-buttons"):
                yield Button(
                    f"{self.yes_label} (y)", id="confirm-yes", variant="error" if self.danger else "primary"
                )
                yield Button(f"{self.no_label} (n)", id="confirm-no", variant="default")

    def on_mount(self) -> None:
        self.query_one("#confirm-no" if self.danger else "#confirm-yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
