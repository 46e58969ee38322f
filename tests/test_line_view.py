"""LineView's two ways in show the same rows: lines rendered as they are painted
(``set_lines``, the value viewer's raw path) and one renderable rendered whole."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from prose_tui.tui.widgets.line_view import LineView
from prose_tui.tui.widgets.value_viewer import ValueViewer


class _Two(App):
    CSS = "LineView { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield LineView(id="lazy")
        yield LineView(id="whole")


def _styled_rows(view: LineView) -> list[list[tuple[str, object]]]:
    """What is painted, cell by cell run (empty segments paint nothing)."""
    return [[(seg.text, seg.style) for seg in view.render_line(y) if seg.text]
            for y in range(view.scrollable_content_region.height)]


TEXTS = [
    "short\nlines\n",
    "no newline at the end",
    "",
    "\n\n",
    "a line far longer than the view is wide, so Rich wraps it at word boundaries " * 3 + "\nnext",
    "tab\tseparated\tvalues\n" * 3,
    "日本語のテキスト" * 12 + "\n",
    "x" * 200,
]


@pytest.mark.parametrize("text", TEXTS)
async def test_lines_painted_lazily_match_the_text_rendered_whole(text):
    app = _Two()
    async with app.run_test(size=(40, 30)) as pilot:
        lazy, whole = app.query_one("#lazy", LineView), app.query_one("#whole", LineView)
        lazy.set_lines(text.split("\n"))
        whole.set_renderable(Text(text))
        await pilot.pause()
        assert lazy.rows_text() == whole.rows_text()
        assert lazy.row_count == whole.row_count
        assert _styled_rows(lazy) == _styled_rows(whole)


class _Viewer(App):
    def compose(self) -> ComposeResult:
        yield ValueViewer(id="value")


@pytest.mark.parametrize(("old", "new", "term"), [
    ("first\nsecond\n", "third\nfourth\n", ""),
    ("first\npartial", " continued\nand more", ""),
    ("alpha beta\ngamma\n", "beta again\n", "BETA"),
])
async def test_the_raw_value_lines_are_the_raw_text_row_for_row(old, new, term):
    app = _Viewer()
    async with app.run_test(size=(40, 20)):
        viewer = app.query_one(ValueViewer)
        viewer.search_term = term
        lines = viewer._raw_lines(old, new)
        joined = viewer._raw(old, new)
        assert joined.plain.replace("▌", "") == old + new
        if new:
            assert joined.plain.count("▌") == len(new.splitlines())
        if term:
            assert any(span.style == "reverse" for span in joined.spans)
        body = viewer.body
        body.set_lines(lines)
        rows_lazy = body.rows_text()
        body.set_renderable(joined)
        assert rows_lazy == body.rows_text()
