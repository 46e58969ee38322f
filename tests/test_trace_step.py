"""A history step lays the trace out where the run as of the cursor changed (the lines a
step does not change are the same objects): the trace view then shows what a layout of
the whole new list shows."""

from __future__ import annotations

import prose_tui.backends.filesystem.history as fs_history
from app_helpers import make_app, ready, wait_until
from test_cursor_memo import long_log

from prose_tui.tui.widgets.trace_view import TraceView


def laid_out(trace: TraceView) -> dict:
    """What the trace view shows and scrolls across: the visible rows, sizes, rows per
    line, the executing/open lines, string blocks, the cursor."""
    height = trace.scrollable_content_region.height
    return {
        "rows": [list(trace.render_line(y)) for y in range(height)],
        "virtual": trace.virtual_size,
        "width": trace._width,
        "row_index": [trace._rows.rows(i) for i in range(len(trace._rows))],
        "live": set(trace._live), "open": set(trace._open), "has_state": trace._has_state,
        "blocks": list(trace._blocks), "block_open": dict(trace._block_open),
        "cursor": trace.cursor, "scroll": trace.scroll_offset,
    }


def fresh(trace: TraceView) -> dict:
    """``laid_out`` after the same list is set on the view with nothing shown before."""
    lines = trace.lines
    trace.lines = []  # as if nothing were shown: set_lines lays the whole list out
    trace.set_lines(lines)
    return laid_out(trace)


async def test_a_history_step_shows_what_a_whole_layout_shows(monkeypatch, tmp_path):
    monkeypatch.setattr(fs_history, "REPARSE_LINES", 0)  # the long-log fold, as at 100,000 events
    app = make_app(long_log(tmp_path, 120))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.loaded_run is not None and not app.explorer.history_pending,
                         what="the full read and its history")
        trace = app.explorer.query_one(TraceView)
        nav = app.explorer.model.nav
        restated: list[int] = []
        real = trace._restate

        def counted(old, lines, changed):
            restated.append(len(changed))
            return real(old, lines, changed)

        trace._restate = counted  # type: ignore[method-assign]
        for key in ["left_square_bracket"] * 12 + ["right_square_bracket"] * 3 + ["left_square_bracket"] * 40:
            wanted = nav.position + (1 if key == "right_square_bracket" else -1)
            await pilot.press(key)
            await wait_until(pilot, lambda: nav.position == wanted and f"as of event {wanted}"
                             in app.explorer.query_one("#trace-pane").border_title, what="the step shown")
            await pilot.pause()
            stepped = laid_out(trace)
            assert stepped == fresh(trace), f"as of event {wanted}"
        # the steps were laid out where they changed, a few lines each
        assert len(restated) >= 50 and max(restated[1:]) < 10, restated  # the first: live to the fold
