"""A history step lays the trace out where the run as of the cursor changed (the lines a
step does not change are the same objects): the trace view then shows what a layout of
the whole new list shows."""

from __future__ import annotations

import prose_tui.backends.filesystem.history as fs_history
import pytest
from app_helpers import make_app, ready, wait_until
from test_cursor_memo import long_log

from prose_tui.tui.widgets.trace_view import TraceView


PROGRAM = """session "fetch"
parallel:
  a = session "a"
  b = session "b"
do review:
  session "draft"
session "write"
session "think"
"""


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


@pytest.mark.parametrize("program", [False, True], ids=["raw log", "program view"])
async def test_a_history_step_shows_what_a_whole_layout_shows(monkeypatch, tmp_path, program):
    """Raw log: the trace view gets a new list per step; program view: the program's lines
    annotated from the log, one list changed in place (``ProgramAnnotator`` follows the new
    log where it differs)."""
    monkeypatch.setattr(fs_history, "REPARSE_LINES", 0)  # the long-log fold, as at 100,000 events
    run = long_log(tmp_path, 120)
    if program:
        (run / "long.prose").write_text(PROGRAM, encoding="utf-8")
    app = make_app(run)
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
        mapped: list[int] = []
        from prose_tui.viewmodel import program_trace

        real_map = program_trace.ProgramAnnotator._map

        def counting_map(self, start):
            mapped.append(len(self.log or []) - start)
            return real_map(self, start)

        monkeypatch.setattr(program_trace.ProgramAnnotator, "_map", counting_map)
        keys = ["left_square_bracket"] * 12 + ["right_square_bracket"] * 3 + ["left_square_bracket"] * 40
        # the first event (the program view maps the log again whole, in place), then on from there
        keys += ["left_curly_bracket"] + ["right_square_bracket"] * 3
        for key in keys:
            wanted = {"right_square_bracket": nav.position + 1, "left_curly_bracket": 0}.get(key, nav.position - 1)
            await pilot.press(key)
            await wait_until(pilot, lambda: nav.position == wanted and f"as of event {wanted}"
                             in app.explorer.query_one("#trace-pane").border_title, what="the step shown")
            await pilot.pause()
            stepped = laid_out(trace)
            assert stepped == fresh(trace), f"as of event {wanted}"
        if program:  # the program's lines changed in place: the log mapped again where it changed
            assert "parallel" in trace.lines[1].text or any("review" in t.text for t in trace.lines)
            assert max(mapped[1:55]) < 10, mapped  # the first: the moment's annotator maps the log whole
        else:  # the steps were laid out where they changed, a few lines each
            assert len(restated) >= 50 and max(restated[1:55]) < 10, restated  # the first: live to the fold


async def test_a_list_changed_in_place_with_no_indexes_is_laid_out_whole():
    """``lines_changed(None)``: the list the view holds changed anywhere; the view cannot
    tell where by comparing it with itself, so it lays it all out again."""
    from textual.app import App

    from prose_tui.model import StatementState, TraceLine

    class One(App):
        def compose(self):
            yield TraceView()

    app = One()
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.query_one(TraceView)
        lines = [TraceLine(line=i + 1, text=f"{i + 1}→ step_{i + 1}", state=StatementState.COMPLETE) for i in range(40)]
        trace.set_lines(lines)
        await pilot.pause()
        lines[30] = TraceLine(line=31, text="31→ step_31 and a much longer text than the others", state=StatementState.EXECUTING)
        trace.lines_changed(None)
        await pilot.pause()
        assert trace.executing_index() == 30
        assert laid_out(trace) == fresh(trace)
