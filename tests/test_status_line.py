"""The status line's words as a user reads them: no stray separators, the status said once."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from prose_tui.model import Run, RunFormat, RunStatus
from prose_tui.tui.widgets.status_line import StatusLine

RUN = Run(id="20260301-100000-a1b2c3", path=Path("/runs/20260301-100000-a1b2c3"), format=RunFormat.EVENT_LOG,
          status=RunStatus.COMPLETED, status_reason="the log's last line says the run completed")


class _Bottom(App):
    def compose(self) -> ComposeResult:
        yield StatusLine()


@pytest.mark.parametrize("said_above", [True, False])
@pytest.mark.parametrize("last_change", ["—", "12 s"])
async def test_the_line_starts_with_words_never_a_separator(said_above, last_change):
    app = _Bottom()
    async with app.run_test(size=(120, 3)):
        line = app.query_one(StatusLine)
        line.show(RUN, last_change=last_change, watcher="watching 1 folder", following=True, said_above=said_above)
        text = line.shown.plain
        assert not text.lstrip().startswith("·") and "·  ·" not in text and "· ·" not in text
        assert ("completed" in text) is not said_above  # said once: above, or here
        assert ("the log's last line" in text) is not said_above
        assert ("changed 12 s ago" in text) is (last_change == "12 s")
        assert "follow on · watching 1 folder" in text


async def test_a_past_moment_says_where_the_cursor_is_and_how_to_go_live():
    app = _Bottom()
    async with app.run_test(size=(120, 3)):
        line = app.query_one(StatusLine)
        line.show(RUN, last_change="12 s", watcher="watching", following=False, pending=3,
                  as_of="as of event 4 of 0–13 · 12:00:05", said_above=True)
        assert line.shown.plain == "as of event 4 of 0–13 · 12:00:05 · 3 new · } live · watching"
