"""A live frame repaints what changed (issue 9, third pass), and shows what a full repaint shows.

The trace and the timeline turn a page when an appended event passes the bottom; their rows are put back by
what they show (``repaint.RowMemo``), the timeline keeps rows whose event did not change,
scrollbars repaint only when the thumb moves (``QuietScrollBar``), and a pane's new title
repaints its border row. Each test checks both halves: the cells on screen are the ones a
full repaint gives (a reused row that should have changed would differ), and the work
skipped is skipped (rows reused, strips the same objects)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Region

from app_helpers import wait_until

from prose_tui.model import Event, EventKind, StatementState, TraceLine
from prose_tui.tui.widgets.repaint import QuietScrollBar, set_border
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView

T0 = datetime(2026, 3, 1, 10, 0, 0, tzinfo=timezone.utc)


class _Views(App[None]):
    CSS = """
    #pane { height: 14; border: round white; }
    TraceView { height: 10; }
    Timeline { height: 8; }
    """

    def compose(self) -> ComposeResult:
        with Vertical(id="pane"):
            yield TraceView()
        yield Timeline()


def _line(i: int, state: StatementState) -> TraceLine:
    note = "executing" if state is StatementState.EXECUTING else ("done in a while" if i % 3 else None)
    return TraceLine(line=i + 1, text=f"let value_{i} = session: worker", state=state, note=note)


def _event(i: int) -> Event:
    return Event(seq=i, kind=EventKind.STATEMENT_COMPLETED, text=f"{i}→ step_{i} ✓", time=T0 + timedelta(seconds=3 * i))


def _cells(widget) -> list[list[tuple[str, object]]]:
    """What the widget's rows show (text and style per segment), as last painted."""
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


def _looks(strips) -> list[list[tuple[str, object]]]:
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


def _run_list_app(width: int, height: int) -> App[None]:
    """An app showing a run list alone, ``width`` x ``height`` cells."""
    from prose_tui.tui.widgets.run_list import RunList

    class _List(App[None]):
        CSS = f"RunList {{ width: {width}; height: {height}; }}"

        def compose(self) -> ComposeResult:
            yield RunList()

    return _List()


def _running():
    """A run at work, started at ``T0``."""
    from pathlib import Path

    from prose_tui.model import Run, RunStatus

    return Run(id="20260301-100000-abcdef", path=Path("/runs/a"), program="p.prose", status=RunStatus.RUNNING,
               started=T0, updated=T0)


async def _repainted_whole(pilot, widget) -> list[list[tuple[str, object]]]:
    """The rows a full repaint paints (every cache dropped)."""
    widget._memo.clear()
    widget._cache.clear()
    widget.refresh()
    await pilot.pause()
    return _cells(widget)


async def test_a_following_trace_turns_a_page_past_the_bottom_and_paints_only_new_rows():
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        trace = app.query_one(TraceView)
        lines = [_line(i, StatementState.COMPLETE) for i in range(40)]
        lines[-1] = _line(39, StatementState.EXECUTING)
        trace.set_lines(lines)
        await pilot.pause()
        turns = 0
        for i in range(40, 52):  # the run goes on: the executing line moves down
            lines[-1] = _line(i - 1, StatementState.COMPLETE)
            lines.append(_line(i, StatementState.EXECUTING))
            top = trace.scroll_offset.y
            painted = trace._memo.painted
            trace.lines_changed({i - 1, i})
            await pilot.pause()
            if trace.scroll_offset.y != top:  # a page turned (issue 33): the line a quarter down
                turns += 1
                assert trace.scroll_offset.y > top
                # rows shown before come back from the memo; the blank rows below the trace's
                # end are painted once between them (each painted was 20 of 29 rows at 200x50)
                assert trace._memo.painted - painted <= 4, "a page turn paints each new look once"
            else:
                assert trace._memo.painted - painted <= 5, "an append in view paints the rows that changed"
            first = trace.row_of(i) - trace.scroll_offset.y
            assert 0 <= first < trace.size.height, "the executing line is in view"
            shown = _cells(trace)
            assert any(f"value_{i} " in "".join(t for t, _ in row) for row in shown)
            assert shown == await _repainted_whole(pilot, trace), f"append {i}: the rows differ from a full repaint"
        assert 1 <= turns <= 4, f"{turns} scrolls for 12 appends: following turns pages, not rows"


async def test_a_trace_that_grows_taller_paints_only_the_rows_it_shows_now():
    """At 80x24 the strip under the trace gives rows back when the status reason gets
    shorter (a run's first change after a quiet spell), and the trace grows by as many. Its
    rows shown before are kept (they depend on the width, not the height): the frame paints
    the new rows, not every row of the trace again (12-15 ms with the rest of the layout)."""
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        trace = app.query_one(TraceView)
        trace.set_lines([_line(i, StatementState.COMPLETE) for i in range(40)])
        await pilot.pause()
        painted = trace._memo.painted
        trace.styles.height = 12
        app.query_one("#pane").styles.height = 16
        await wait_until(pilot, lambda: trace.size.height == 12, what="the trace growing")
        await pilot.pause()
        assert trace._memo.painted - painted <= 2, f"{trace._memo.painted - painted} rows painted for 2 new rows"
        shown = _cells(trace)
        texts = ["".join(t for t, _ in row) for row in shown]
        assert "value_28 " in texts[0] and "value_39 " in texts[-1], "the trace's last 12 lines, in order"
        assert shown == await _repainted_whole(pilot, trace), "the rows differ from a full repaint"


async def test_the_timeline_keeps_rows_whose_event_stayed_and_shows_what_a_full_repaint_shows():
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        timeline = app.query_one(Timeline)
        events = [_event(i) for i in range(30)]
        timeline.set_events(events, len(events) - 1)
        await pilot.pause()
        for i in range(30, 40):
            before = {index: entry[0] for index, entry in timeline._cache.items()}
            events.append(_event(i))
            timeline.set_events(events, len(events) - 1)
            await pilot.pause()
            kept = [index for index, entry in timeline._cache.items() if before.get(index) == entry[0]]
            # the previous row gains its step's length (its successor came), the cursor moved off it
            assert set(before) - set(kept) == {i - 1}, "only the row whose step got an end was painted again"
            shown = _cells(timeline)
            assert "step_" + str(i) in "".join(t for row in shown for t, _ in row)
            assert shown == await _repainted_whole(pilot, timeline), f"event {i}: the rows differ from a full repaint"
            # Taller than its pane: a vertical scrollbar and no horizontal one (its rows are cut
            # to the pane); one of no height, shown, laid the screen out on a first live change.
            assert timeline.show_vertical_scrollbar and not timeline.show_horizontal_scrollbar


async def test_a_timeline_row_gets_its_duration_when_the_next_event_comes_with_the_cursor_elsewhere():
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        timeline = app.query_one(Timeline)
        events = [_event(i) for i in range(3)]
        timeline.set_events(events, 0)  # the reader is on the first event: not live
        await pilot.pause()
        for i in range(3, 7):
            events.append(_event(i))
            timeline.set_events(events, 0)
            await pilot.pause()
            rows = ["".join(t for t, _ in row) for row in _cells(timeline)]
            assert "+3s" in rows[i - 1], f"the step before event {i} now has a length: {rows[i - 1]!r}"
            assert "+3s" not in rows[i]
            assert _cells(timeline) == await _repainted_whole(pilot, timeline)


async def test_a_scrollbar_repaints_only_when_its_thumb_moves():
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        trace = app.query_one(TraceView)
        lines = [_line(i, StatementState.COMPLETE) for i in range(2000)]
        lines[-1] = _line(1999, StatementState.EXECUTING)
        trace.set_lines(lines)
        await pilot.pause()
        bar = trace.vertical_scrollbar
        assert isinstance(bar, QuietScrollBar) and bar.display
        crop = Region(0, 0, bar.size.width, bar.size.height)
        lines[-1] = _line(1999, StatementState.COMPLETE)
        lines.append(_line(2000, StatementState.EXECUTING))
        trace.lines_changed({1999, 2000})  # past the bottom: a page turns
        await pilot.pause()
        lines[-1] = _line(2000, StatementState.COMPLETE)
        lines.append(_line(2001, StatementState.EXECUTING))
        trace.lines_changed({2000, 2001})  # in view: no scroll (the thumb leaves the very end)
        await pilot.pause()
        first = bar.render_lines(crop)
        lines[-1] = _line(2001, StatementState.COMPLETE)
        lines.append(_line(2002, StatementState.EXECUTING))
        trace.lines_changed({2001, 2002})
        await pilot.pause()
        assert bar.render_lines(crop) is first, "one more line of 2,000 leaves the thumb where it was"
        trace.set_following(False)
        trace.scroll_to(y=0, animate=False)
        await pilot.pause()
        moved = bar.render_lines(crop)
        assert moved is not first
        # what it shows is what Textual's own scrollbar paints for the same state
        bar._last = None
        assert _looks(moved) == _looks(super(QuietScrollBar, bar).render_lines(crop))
        assert _looks(moved) != _looks(first)


async def test_a_new_pane_title_repaints_the_border_row_and_shows():
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        pane = app.query_one("#pane")
        set_border(pane, title="History (1)")
        await pilot.pause()
        set_border(pane, title="History (2)")
        assert pane._styles_cache._dirty_lines == {0}, "the top border row only"
        await pilot.pause()
        top = "".join(seg.text for seg in app.screen._compositor.render_strips()[pane.region.y])
        assert "History (2)" in top
        set_border(pane, subtitle="3 new")
        assert pane._styles_cache._dirty_lines == {pane.outer_size.height - 1}, "the bottom border row only"
        await pilot.pause()
        bottom = "".join(seg.text for seg in app.screen._compositor.render_strips()[pane.region.bottom - 1])
        assert "3 new" in bottom


async def test_a_run_list_row_that_looks_the_same_is_not_repainted_and_a_changed_one_is():
    from dataclasses import replace
    from pathlib import Path

    from prose_tui.model import RunStatus
    from prose_tui.tui.glyphs import STATUS_SHORT
    from prose_tui.tui.widgets.run_list import RunList

    app = _run_list_app(50, 10)
    async with app.run_test(size=(60, 14)) as pilot:
        runs = app.query_one(RunList)
        live = _running()
        runs.set_runs([live, replace(live, id="20260301-090000-abcdef", path=Path("/runs/b"))], clock=lambda: T0)
        await pilot.pause()
        refreshed: list[int] = []
        original = runs.refresh_line
        runs.refresh_line = lambda y: (refreshed.append(y), original(y))  # type: ignore[method-assign]
        runs.update_run(live)  # first news of it: painted
        live.trace = []  # a live run changes in place; what its row shows did not
        runs.update_run(live)
        runs.update_run(live)
        assert refreshed == [0], "a row that looks the same is not repainted"
        live.status = RunStatus.FAILED
        runs.update_run(live)
        assert refreshed == [0, 0], "a new status is"
        await pilot.pause()
        assert STATUS_SHORT[RunStatus.FAILED][0] in "".join(seg.text for seg in runs.render_line(0))


async def test_a_run_list_whose_columns_widen_repaints_its_runs_rows_not_the_blank_ones():
    """A run whose program name is known now (a long log's first screen did not have it)
    widens the column: every run's row changes, the blank rows below the runs do not. A
    45-row pane repainted all 45 rows (6 ms at 200x50) on such a run's first live change."""
    from prose_tui.tui.widgets.run_list import RunList

    app = _run_list_app(60, 20)
    async with app.run_test(size=(70, 24)) as pilot:
        runs = app.query_one(RunList)
        run = _running()
        runs.set_runs([run], clock=lambda: T0)
        await pilot.pause()
        widths = runs._widths
        painted: list[int] = []
        real = runs.render_line
        runs.render_line = lambda y: (painted.append(y), real(y))[1]  # type: ignore[method-assign]
        run.program = "a_much_longer_program_name.prose"
        runs.update_run(run)
        await pilot.pause()
        assert runs._widths != widths, "the program column widened"
        assert painted == [0], f"rows {painted} painted for one run's row"
        shown = _cells(runs)
        assert "a_much_longe" in "".join(t for t, _ in shown[0])  # (cut to the column)
        runs._strips.clear()  # a full repaint: every cache dropped
        runs._styles_cache.clear()
        runs.refresh()
        await pilot.pause()
        assert shown == _cells(runs), "the rows differ from a full repaint"


async def test_off_the_live_end_the_timeline_fills_its_pane_again():
    """A page turn at the live end leaves blank rows below the last event, as ``less`` does;
    once the cursor moves back (``!`` on a failure, ``[``) they go and the pane shows events
    to its bottom. They stayed: at 200x50 a failed run's History showed five blank rows or
    none, depending on whether the layout came before the live end's page turn."""
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        timeline = app.query_one(Timeline)
        height = timeline.scrollable_content_region.height
        events = [_event(i) for i in range(height)]
        timeline.set_events(events, len(events) - 1)
        await pilot.pause()
        events.append(_event(height))
        timeline.set_events(events, len(events) - 1)  # just past the bottom: a page turn
        await pilot.pause()
        rows = ["".join(t for t, _ in row).strip() for row in _cells(timeline)]
        assert rows[-1] == "", "the live end's page turn leaves blank rows below the last event"
        timeline.set_cursor(len(events) - 2)
        await pilot.pause()
        await pilot.pause()
        rows = ["".join(t for t, _ in row).strip() for row in _cells(timeline)]
        assert f"step_{height}" in rows[-1], f"the pane ends on the last event, not on blank rows: {rows[-3:]}"
        assert any(f"step_{height - 1}" in row for row in rows)


async def test_an_ended_runs_history_turns_no_page_past_its_last_event():
    """The history of a run that has ended fills in (from a worker) as one more batch: that is
    no live event arriving, so the pane ends on the last event, never on blank rows."""
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        timeline = app.query_one(Timeline)
        height = timeline.scrollable_content_region.height
        events = [_event(i) for i in range(height)]
        timeline.set_events(events, len(events) - 1, live=False)
        await pilot.pause()
        events.append(_event(height))
        timeline.set_events(events, len(events) - 1, live=False)
        await pilot.pause()
        await pilot.pause()
        rows = ["".join(t for t, _ in row).strip() for row in _cells(timeline)]
        assert f"step_{height}" in rows[-1], f"the pane ends on the last event: {rows[-3:]}"


def _strip_app(width: int) -> App[None]:
    """An app showing the compact layout's context strip alone, ``width`` cells wide."""
    from prose_tui.tui.widgets.context_strip import ContextStrip

    class _Strip(App[None]):
        CSS = f"ContextStrip {{ width: {width}; }}"

        def compose(self) -> ComposeResult:
            yield ContextStrip(id="strip")

    return _Strip()


def _strip_rows(strip) -> list[list[tuple[str, object]]]:
    """What the strip's rows show, padding included (``size`` is its content alone)."""
    return _looks(strip.render_lines(Region(0, 0, strip.outer_size.width, strip.outer_size.height)))


def _strip_run(reason: str):
    from pathlib import Path

    from prose_tui.model import Binding, Frame

    run = _running()
    run.status_reason = reason
    run.call_stack = [Frame(execution_id=4, block="step", status="executing"),
                      Frame(execution_id=3, block="step", status="waiting")]
    run.bindings = [Binding(name="summary", path=Path("/runs/a/bindings/summary.md"), bytes=176)]
    return run


async def test_a_live_change_of_the_status_reason_repaints_its_strip_row_alone():
    """At 80x24 the strip under the trace says the status, the call stack and the newest
    binding; a snapshot rewrite changes the first (the executing line's number). Only that
    row is painted again (the whole strip was, 1.5-2 ms of each frame), and the strip shows
    what a full repaint shows."""
    from prose_tui.tui.widgets.context_strip import ContextStrip

    app = _strip_app(70)
    async with app.run_test(size=(80, 12)) as pilot:
        strip = app.query_one(ContextStrip)
        binding = _strip_run("").bindings[0]
        strip.show(_strip_run("line 12 is EXECUTING; last change 0 s ago"), binding, None, value_line="first line")
        await pilot.pause()
        assert strip.size.height == 3
        drawn: list[int] = []  # the rows drawn again (Textual keeps the others it drew)
        draw = strip.render_line
        strip.render_line = lambda y: (drawn.append(y), draw(y))[1]
        strip.show(_strip_run("line 14 is EXECUTING; last change 0 s ago"), binding, None, value_line="first line")
        await pilot.pause()
        assert drawn == [0], f"strip rows {drawn} drawn again for one changed row"
        rows = ["".join(t for t, _ in row).strip() for row in _strip_rows(strip)]
        assert rows[0].endswith("line 14 is EXECUTING; last change 0 s ago")
        assert rows[1].startswith("⤷ step#4 executing") and rows[2].startswith("◆ summary 176 B  first line")
        shown = _strip_rows(strip)
        strip._strips.clear()
        strip.refresh()
        await pilot.pause()
        assert shown == _strip_rows(strip), "the rows differ from a full repaint"


async def test_a_long_status_reason_wraps_over_strip_rows_and_a_shorter_one_gives_them_back():
    """The status reason is said in full: a long one wraps at words over as many rows as it
    needs (at most five in all), and the strip shrinks again when the reason gets short."""
    from prose_tui.tui.widgets.context_strip import ContextStrip

    app = _strip_app(50)
    async with app.run_test(size=(80, 14)) as pilot:
        strip = app.query_one(ContextStrip)
        long = ("line 461 is still EXECUTING but nothing changed for over 30 min (last change 317 d ago, "
                "per its updated: header)")
        strip.show(_strip_run(long), None, None)
        await pilot.pause()
        rows = ["".join(t for t, _ in row).strip() for row in _strip_rows(strip)]
        assert len(rows) == strip.size.height == 4  # three rows of reason and the call stack
        assert " ".join(" ".join(rows[:3]).split()).endswith(long) and rows[3].startswith("⤷ step#4")
        assert all(len(row) <= 48 for row in rows)
        strip.show(_strip_run("line 463 is EXECUTING"), None, None)
        await wait_until(pilot, lambda: strip.size.height == 2, what="the strip giving its rows back")
        assert ["".join(t for t, _ in row).strip() for row in _strip_rows(strip)][0].endswith("line 463 is EXECUTING")


async def test_a_shorter_status_reason_is_shown_in_place_before_the_strip_shrinks():
    """The run's first change after a quiet spell: "interrupted · ... nothing changed for over
    30 min ..." (three rows at 80 columns) gives way to a one-row reason. The change's frame
    shows the new rows where the old ones were, the rows below blank, and the strip shrinks
    in a later frame: a new height lays out the whole screen (12-15 ms at 80x24), which the
    change then does not wait for (issue 33). The rows it ends with are a full repaint's."""
    from prose_tui.tui.widgets.context_strip import ContextStrip

    app = _strip_app(50)
    frames: list[tuple[int, list[str]]] = []  # (the strip's height, its rows) as each frame went out
    async with app.run_test(size=(80, 14)) as pilot:
        strip = app.query_one(ContextStrip)
        display = app._display

        def displayed(screen, renderable) -> None:
            frames.append((strip.size.height, ["".join(t for t, _ in row).strip() for row in _strip_rows(strip)]))
            display(screen, renderable)

        app._display = displayed
        strip.show(_strip_run("line 461 is still EXECUTING but nothing changed for over 30 min (last change "
                              "317 d ago, per its updated: header)"), None, None)
        await wait_until(pilot, lambda: strip.size.height == 4, what="the long reason laid out")
        frames.clear()
        strip.show(_strip_run("line 463 is EXECUTING"), None, None)
        await wait_until(pilot, lambda: strip.size.height == 2, what="the strip giving its rows back")
        first = next(rows for _height, rows in frames if rows[0].endswith("line 463 is EXECUTING"))
        height = next(height for height, rows in frames if rows[0].endswith("line 463 is EXECUTING"))
        assert height == 4, "the shorter reason waited for the screen's layout"
        assert first[1].startswith("⤷ step#4") and first[2:] == ["", ""], first
        shown = _strip_rows(strip)
        strip._strips.clear()
        strip.refresh()
        await pilot.pause()
        assert shown == _strip_rows(strip), "the rows differ from a full repaint"


async def test_a_following_snapshot_trace_paints_the_next_page_ahead_and_turns_to_it_painted():
    """A snapshot's trace holds the statements still to come: while following, the lines
    of the page below are painted after the frame (a few per turn of the event loop), so
    the live change that turns the page paints only the lines it changed, not a page of
    lines never painted (12-28 of them, 5-10 ms of its frame, issue 33)."""
    app = _Views()
    async with app.run_test(size=(70, 30)) as pilot:
        trace = app.query_one(TraceView)
        lines = [_line(i, StatementState.COMPLETE if i < 3 else StatementState.PENDING) for i in range(60)]
        lines[3] = _line(3, StatementState.EXECUTING)
        trace.set_lines(lines)
        await pilot.pause()
        fresh: list[int] = []  # lines painted (highlighted) by a change's frame, not ahead of it
        ahead = [False]
        styled = trace._styled
        trace._styled = lambda index: (ahead[0] or fresh.append(index), styled(index))[1]
        if hasattr(trace, "_paint_ahead"):
            paint_ahead = trace._paint_ahead

            def painting_ahead() -> None:
                ahead[0] = True
                try:
                    paint_ahead()
                finally:
                    ahead[0] = False

            trace._paint_ahead = painting_ahead
        turns = 0
        for i in range(4, 30):  # the run goes on: the executing marker moves down one statement
            await wait_until(pilot, lambda: not getattr(trace, "painting_ahead", False), what="the next page painted ahead")
            lines[i - 1] = _line(i - 1, StatementState.COMPLETE)
            lines[i] = _line(i, StatementState.EXECUTING)
            top = trace.scroll_offset.y
            fresh.clear()
            trace.lines_changed({i - 1, i})
            await pilot.pause()
            assert trace.cursor == i and trace.row_of(i) - trace.scroll_offset.y < trace.size.height
            if trace.scroll_offset.y != top:
                turns += 1
                assert sorted(set(fresh)) == [i - 1, i], f"a page turn painted lines {sorted(set(fresh))}"
                # (a full repaint drops every painted line: the changes after it paint ahead again)
                shown = _cells(trace)
                assert shown == await _repainted_whole(pilot, trace), f"statement {i}: the rows differ from a full repaint"
        assert turns >= 2
