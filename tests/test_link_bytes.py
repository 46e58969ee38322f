"""Bytes on the link (issue 33): what the app hands its terminal while a log grows, and idle.

Counted as screen rows in the frames Textual is given to write (``App._display``), not as
time: an event appended to a followed log sends the rows that changed, not the trace; an
idle app's timers send nothing. The writer is a second process, as a VM is.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from textual._compositor import ChopsUpdate, LayoutUpdate
from textual.app import App
from textual.geometry import Region

from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.app import ProseTUI
from tests.app_helpers import FIXED_NOW, make_app, settled, wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bytes import WRITER  # noqa: E402
from generate import EventLogWriter  # noqa: E402


def _append(writer: EventLogWriter, n: int = 1) -> None:
    """Append ``n`` events from another process (the VM's side)."""
    subprocess.run([sys.executable, "-c", WRITER, str(writer.state), str(writer.count), str(n), "1000"], check=True)
    writer.count += n


def _pieces_sent(update: object) -> set[tuple[int, int, int]]:
    """``(row, first cell, end)`` of each piece of a row a frame writes."""
    if isinstance(update, LayoutUpdate):
        return {(y, update.region.x, update.region.right) for y in range(update.region.y, update.region.bottom)}
    if not isinstance(update, ChopsUpdate):
        return set()
    pieces = set()
    for y, x1, x2 in update.spans:
        for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items()):
            if strip is not None and x < x2 and end > x1 and strip.cell_length:
                pieces.add((y, x, min(end, x2)))
    return pieces


class _Frames:
    """Every frame handed to Textual's ``App._display`` (what goes to the terminal)."""

    def __init__(self, monkeypatch) -> None:
        self.pieces: list[set[tuple[int, int, int]]] = []
        real = App._display

        def display(app, screen, renderable):
            if renderable is not None:
                self.pieces.append(_pieces_sent(renderable))
            return real(app, screen, renderable)

        monkeypatch.setattr(App, "_display", display)

    def rows_since(self, mark: int, region: Region | None = None) -> set[int]:
        """Rows written since frame ``mark`` (only cells within ``region`` when given)."""
        return {y for frame in self.pieces[mark:] for y, x, end in frame
                if region is None or (region.y <= y < region.bottom and x < region.right and end > region.x)}


async def test_an_event_appended_to_a_followed_log_sends_the_rows_that_changed_not_the_trace(tmp_path, monkeypatch):
    frames = _Frames(monkeypatch)
    writer = EventLogWriter(tmp_path)
    writer.append(200)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.lines and "step_200" in trace.lines[-1].text, what="the log shown")
        _append(writer)  # the first event past the bottom may turn a page
        await wait_until(pilot, lambda: "step_201" in trace.lines[-1].text and trace.cursor == len(trace.lines) - 1,
                         what="the first event followed")
        await pilot.pause()
        text = trace.scrollable_content_region  # the trace's text, not its scrollbar
        for n in (202, 203):
            mark = len(frames.pieces)
            _append(writer)
            await wait_until(pilot, lambda n=n: f"step_{n}" in trace.lines[-1].text
                             and trace.cursor == len(trace.lines) - 1, what=f"step_{n} followed")
            await pilot.pause()
            first = trace.row_of(trace.cursor) - round(trace.scroll_offset.y)
            assert 0 <= first < text.height, "the new event is on screen"
            rows = frames.rows_since(mark, text)
            # the new event's row and the row the cursor left (not the 16 rows of the trace)
            assert len(rows) <= 2, f"event {n} resent trace rows {sorted(rows)}"


async def test_an_idle_app_sends_nothing_when_its_timers_fire_and_an_age_that_moves_on_repaints_its_row(
        tmp_path, monkeypatch):
    frames = _Frames(monkeypatch)
    writer = EventLogWriter(tmp_path)
    writer.append(50)
    now = [FIXED_NOW]
    app = ProseTUI(tmp_path, watch=True, clock=lambda: now[0], stale_after=1800)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        trace = app.explorer.query_one(TraceView)
        run_list = app.explorer.query_one(RunList)
        await wait_until(pilot, lambda: trace.lines and "step_50" in trace.lines[-1].text, what="the log shown")
        await pilot.pause()
        painted = []
        real = run_list.render_line
        monkeypatch.setattr(run_list, "render_line", lambda y: painted.append(y) or real(y))
        mark = len(frames.pieces)
        for _ in range(3):  # what the screen's and the run list's intervals do, nothing on disk changed
            app.explorer.feed.tick()
            run_list.tick()
            await pilot.pause()
        assert frames.rows_since(mark) == set(), "an idle app resent rows the terminal shows already"
        assert painted == [], "an age tick repainted run-list rows whose age text did not change"
        row = run_list.region.y + 0  # the run's row: the first of the list
        before = app.explorer.query_one(RunList)._aged.get(0)
        now[0] = FIXED_NOW + timedelta(days=400)  # the age shown moves on
        run_list.tick()
        await wait_until(pilot, lambda: run_list._aged.get(0) != before, what="the age repainted")
        await pilot.pause()
        assert row in frames.rows_since(mark), "the run's new age went to the terminal"


def test_a_piece_the_terminal_shows_is_not_sent_again_and_a_full_repaint_forgets():
    from rich.segment import Segment
    from rich.style import Style
    from textual.geometry import Size
    from textual.strip import Strip

    from prose_tui.tui.sent_cells import SentCells

    def frame(left: str, right: str) -> ChopsUpdate:
        style = Style(bgcolor="blue")
        chops = [{0: Strip([Segment(left, style)], 4), 4: Strip([Segment(right, style)], 4)}]
        return ChopsUpdate(chops, [(0, 0, 8)], [[4, 8]])

    sent = SentCells()
    size = Size(8, 1)
    assert _pieces_sent(sent.filter(frame("abcd", "efgh"), size)) == {(0, 0, 4), (0, 4, 8)}
    assert sent.filter(frame("abcd", "efgh"), size) is None, "the same frame again: nothing to send"
    assert _pieces_sent(sent.filter(frame("abcd", "EFGH"), size)) == {(0, 4, 8)}, "only the piece that changed"
    sent.filter(LayoutUpdate([[Strip([Segment("x" * 8)], 8)]], Region(0, 0, 8, 1)), size)
    assert _pieces_sent(sent.filter(frame("abcd", "EFGH"), size)) == {(0, 0, 4), (0, 4, 8)}, \
        "after a full repaint every piece is sent"
    assert _pieces_sent(sent.filter(frame("abcd", "EFGH"), Size(9, 1))) == {(0, 0, 4), (0, 4, 8)}, \
        "a new size forgets what was sent"
