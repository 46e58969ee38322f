"""The call-stack pane as a user reads it in a side column (issue 11's follow-up)."""

from __future__ import annotations

from app_helpers import wait_until
from textual.app import App, ComposeResult

from prose_tui.model import Frame
from prose_tui.tui.widgets.call_stack import EMPTY_NOTE, CallStackView


class _Side(App):
    """The call stack alone in a column as wide as the side pane's inside at 120x40 (34 cells)."""

    CSS = "CallStackView { width: 34; height: 8; }"

    def compose(self) -> ComposeResult:
        yield CallStackView(id="stack")


def _screen_text(app: App) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_an_empty_stack_is_one_sentence_that_fits_a_side_pane():
    app = _Side()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(CallStackView)
        await wait_until(pilot, lambda: table.row_count == 1, what="the empty-stack sentence")
        await pilot.pause()
        assert EMPTY_NOTE in _screen_text(app)  # whole, not cut at the pane's edge
        assert table.virtual_size.width <= table.scrollable_content_region.width  # no sideways scroll
        assert not table.show_header


async def test_frames_get_their_columns_back_after_an_empty_stack():
    app = _Side()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(CallStackView)
        await wait_until(pilot, lambda: table.row_count == 1, what="the empty-stack sentence")
        table.set_frames([Frame(execution_id=43, block="review", depth=2, status="executing"),
                          Frame(execution_id=42, block="process", depth=1, status="waiting")])
        await wait_until(pilot, lambda: table.row_count == 2, what="two frames")
        await pilot.pause()
        text = _screen_text(app)
        assert table.show_header and "id  block" in text and "review" in text and "executing" in text
        assert table.virtual_size.width <= table.scrollable_content_region.width  # short names fit whole
        assert EMPTY_NOTE not in text
