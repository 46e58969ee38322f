"""``repaint.show_text`` lays the screen out exactly when a widget needs another height.

A header with a border under it showed a blank row after its text lost a line (the height
check compared the content plus its border with the content area alone)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from prose_tui.tui.widgets.repaint import show_text


class _Boxed(App[None]):
    CSS = "#box { height: auto; border-bottom: solid red; padding: 0 1; }"

    def compose(self) -> ComposeResult:
        yield Static(id="box")


async def test_a_bordered_auto_height_widget_shrinks_and_grows_with_its_text():
    app = _Boxed()
    async with app.run_test(size=(40, 12)) as pilot:
        box = app.query_one("#box", Static)
        for lines in (3, 2, 1, 4, 4, 2):
            show_text(box, "\n".join(f"line {i}" for i in range(lines)))
            await pilot.pause()
            assert box.size.height == lines, f"{lines} lines of text in {box.size.height} rows"
            assert box.outer_size.height == lines + 1  # the border under it
