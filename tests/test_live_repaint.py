"""A live change repaints the rows it changed, and the frame paints only those (issue 33).

Counted with Textual's own hooks, not time: the rows each widget is asked to paint
(``render_lines``) in the frame after an event a second process appends, at 200x50 where
the trace, the timeline and the value pane stand side by side. Before, the trace and the
timeline were refreshed whole (29 and 10 rows) and every widget inside the box around the
repainted regions painted every row of it (the value pane 28 rows for a change it does not
show). The pieces a frame sends are the ones Textual's own compositor sends
(``RegionCompositor``), and a line that changes height repaints the rows below it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.widgets.repaint import RegionCompositor
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_layout import _ONE_CELL, not_one_cell, one_cell
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer
from tests.app_helpers import count_rows, make_app, settled, wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bytes import WRITER  # noqa: E402
from generate import EventLogWriter  # noqa: E402


def _append(writer: EventLogWriter, n: int = 1) -> None:
    """Append ``n`` events from another process (the VM's side)."""
    subprocess.run([sys.executable, "-c", WRITER, str(writer.state), str(writer.count), str(n), "1000"], check=True)
    writer.count += n


def _within(widget: Widget, outer: type[Widget]) -> bool:
    return any(isinstance(node, outer) for node in (widget, *widget.ancestors))


async def test_an_appended_event_repaints_the_new_rows_and_widgets_it_did_not_change_paint_nothing(tmp_path):
    writer = EventLogWriter(tmp_path)
    writer.append(300)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        explorer = app.explorer
        trace, timeline = explorer.query_one(TraceView), explorer.query_one(Timeline)
        await wait_until(pilot, lambda: trace.lines and "step_300" in trace.lines[-1].text, what="the log shown")
        _append(writer)  # the first event past the bottom may turn a page
        await wait_until(pilot, lambda: "step_301" in trace.lines[-1].text and trace.cursor == len(trace.lines) - 1
                         and timeline.cursor == len(timeline.events) - 1, what="the first event followed")
        await pilot.pause()
        assert timeline.display and timeline.size.height > 2, "the history pane is on screen at 200x50"
        asked: Counter[Widget] = Counter()
        count_rows([explorer, *explorer.walk_children()], asked)
        quiet = 0  # appends that turned no page (a page turn repaints the pane, as a scroll must)
        for n in (302, 303, 304):
            asked.clear()
            top, timeline_top = trace.scroll_offset.y, timeline.scroll_offset.y
            _append(writer)
            await wait_until(pilot, lambda n=n: f"step_{n}" in trace.lines[-1].text
                             and trace.cursor == len(trace.lines) - 1 and timeline.cursor == len(timeline.events) - 1,
                             what=f"step_{n} followed")
            await pilot.pause()
            assert asked[trace] > 0, "the frame after the change was painted"
            value_rows = sum(rows for widget, rows in asked.items() if _within(widget, ValueViewer))
            assert value_rows == 0, "the value pane painted rows for a change it does not show"
            if trace.scroll_offset.y == top and timeline.scroll_offset.y == timeline_top:
                quiet += 1
                # the new event's row and the row the cursor left (the trace has 29 rows here)
                assert asked[trace] <= 2, f"event {n}: the trace painted {asked[trace]} rows"
                assert asked[timeline] <= 2, f"event {n}: the timeline painted {asked[timeline]} rows"
        assert quiet >= 1, "some appends turned no page"


async def test_a_frame_sends_the_pieces_textuals_own_compositor_sends(tmp_path):
    writer = EventLogWriter(tmp_path)
    writer.append(120)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.lines and "step_120" in trace.lines[-1].text, what="the log shown")
        await pilot.pause()
        compositor = app.screen._compositor
        assert isinstance(compositor, RegionCompositor)
        # Regions far apart and across several widgets (header, trace, timeline, the
        # bindings and value column, the status line), as a live change repaints them.
        regions = [Region(55, 2, 84, 1), Region(55, 14, 82, 2), Region(55, 40, 82, 2), Region(141, 5, 58, 1),
                   Region(0, 48, 200, 1), Region(3, 10, 40, 3)]
        compositor._dirty_regions.update(regions)
        textual_own = Compositor.render_partial_update(compositor)  # Textual's painting of the same regions
        compositor._dirty_regions.update(regions)
        ours = compositor.render_partial_update()
        assert textual_own is not None and ours is not None
        console = app.console
        assert ours.render_segments(console) == textual_own.render_segments(console)


class _Trace(App[None]):
    CSS = "TraceView { height: 12; width: 60; }"

    def compose(self) -> ComposeResult:
        yield TraceView()


def _cells(widget: Widget) -> list[str]:
    """The text of the widget's rows as painted now (Textual's line cache, what is on screen)."""
    return [strip.text for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))]


async def test_a_line_that_grows_a_row_repaints_the_rows_below_it():
    app = _Trace()
    async with app.run_test(size=(70, 20)) as pilot:
        trace = app.query_one(TraceView)
        lines = [TraceLine(line=i + 1, text=f"let v{i} = session: w", state=StatementState.COMPLETE) for i in range(8)]
        lines.append(TraceLine(line=9, text="let v8 = session: w", state=StatementState.EXECUTING))
        trace.set_lines(lines)
        await pilot.pause()
        before = _cells(trace)
        # line 3 re-stated with an annotation too long for its row: it takes three rows,
        # and every line below moves down
        lines[3] = TraceLine(line=4, text="let v3 = session: w", state=StatementState.FAILED,
                             note="failed: " + "the worker gave up after three attempts " * 2)
        trace.lines_changed({3})
        await pilot.pause()
        shown = _cells(trace)
        assert shown != before
        trace._memo.clear()
        trace._cache.clear()
        trace.refresh()
        await pilot.pause()
        assert shown == _cells(trace), "the rows below a line that grew were left as they were"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab →✓日\t\x1b\u200d\n\ufe0fé"), max_size=12), max_size=30))
def test_the_texts_of_another_width_are_those_a_per_text_test_finds(texts):
    found = not_one_cell(texts)
    assert found == [i for i, text in enumerate(texts) if not one_cell(text, learn=True)]
    assert "\u200d" not in _ONE_CELL and "日" not in _ONE_CELL
