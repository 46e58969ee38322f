"""Pilot tests for moving through a run's history: step, jump to failure, live cursor."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from app_helpers import make_app, ready, wait_until
from conftest import FIXTURES

from prose_tui.demo import DemoVM
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.model import Event, EventKind
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.viewmodel.steps import gaps_from
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

FAILED_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"


def trace_texts(app) -> list[str]:
    return [t.text for t in app.explorer.query_one(TraceView).lines]


async def test_bang_jumps_to_the_first_failure_and_shows_its_context():
    app = make_app(FAILED_RUN)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.loaded_run is not None, what="the full read")
        await pilot.press("L", "exclamation_mark")  # L: the raw log (the program is shown annotated)
        timeline = app.explorer.query_one(Timeline)
        assert timeline.events[timeline.cursor].text == "4→ draft ✗ rate limited"
        viewer = app.explorer.query_one(ValueViewer)
        assert viewer.target.title.startswith("Failure at event")
        for expected in ("rate limited", "4→ retry:2/3", "4→ retry:3/3", "security", "perf"):
            assert expected in viewer.text
        trace = app.explorer.query_one(TraceView)
        assert trace.lines[trace.cursor].text == "4→ draft ✗ rate limited"
        # Frozen at the failure: the later gate and the ---error line are not in the trace yet.
        assert not any("gate:ship" in t for t in trace_texts(app))
        assert app.explorer.query_one(CallStackView).frames[0].block == "review"
        assert "as of event" in app.explorer.query_one("#trace-pane").border_title


async def test_brackets_step_and_braces_go_to_start_and_live():
    app = make_app(FAILED_RUN)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.loaded_run is not None, what="the full read")
        await pilot.press("L")  # the raw log (the program is shown annotated)
        total = len(app.explorer.nav.events)
        assert app.explorer.nav.live and len(trace_texts(app)) == 14
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert app.explorer.nav.position == total - 3
        assert "2 new events" in app.explorer.query_one("#trace-pane").border_subtitle
        assert "---error" not in " ".join(trace_texts(app))
        await pilot.press("left_curly_bracket")
        assert app.explorer.nav.position == 0
        assert [t for t in trace_texts(app) if t.strip()] == ["1→ fetch ✓"]
        await pilot.press("right_square_bracket")
        assert app.explorer.nav.position == 1
        await pilot.press("x")  # next failure or retry
        assert app.explorer.nav.events[app.explorer.nav.position].text == "4→ draft ✗ timeout"
        await pilot.press("right_curly_bracket")
        assert app.explorer.nav.live and len(trace_texts(app)) == 14


async def test_the_history_pane_moves_the_cursor_with_keys():
    app = make_app(FAILED_RUN)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.loaded_run is not None, what="the full read")
        await pilot.press("right_curly_bracket", "6")
        timeline = app.explorer.query_one(Timeline)
        assert timeline.has_focus and timeline.cursor == len(timeline.events) - 1
        # Each move reaches the explorer as a message bubbling from the timeline.
        await pilot.press("g")
        await wait_until(pilot, lambda: app.explorer.nav.position == 0, what="the cursor on the first event")
        await pilot.press("j", "j")
        await wait_until(pilot, lambda: app.explorer.nav.position == 2, what="the cursor on the third event")
        await pilot.press("G")
        await wait_until(pilot, lambda: app.explorer.nav.live, what="the cursor back at the live end")


async def test_a_frozen_cursor_counts_new_events_while_the_run_goes_on(tmp_path):
    ticks = [datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)]

    def clock():
        ticks[0] += timedelta(seconds=1)
        return ticks[0]

    vm = DemoVM(tmp_path, clock=clock)
    steps = vm.steps()
    for _ in range(6):
        next(steps)
    app = make_app(tmp_path, watch=True, now=ticks[0] + timedelta(minutes=1))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        next(steps)  # the first change seen live starts the journal
        await wait_until(pilot, lambda: len(app.explorer.nav.events) > 1, what="journaled events")
        await pilot.press("left_square_bracket")
        assert not app.explorer.nav.live
        frozen = trace_texts(app)
        frozen_position = app.explorer.nav.position
        for _ in range(3):
            next(steps)
        await wait_until(pilot, lambda: app.explorer.nav.pending >= 2, what="new events to be counted")
        assert app.explorer.nav.position == frozen_position
        assert trace_texts(app) == frozen
        assert "new" in str(app.explorer.query_one(StatusLine).render())
        await pilot.press("right_curly_bracket")
        assert app.explorer.nav.live and app.explorer.nav.pending == 0


async def test_events_with_times_out_of_order_draw_without_a_negative_bar(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260305-130000-0rder0"
    run_dir.mkdir(parents=True)
    (run_dir / "state.md").write_text(
        "# run:20260305-130000-0rder0 clocks.prose\n"
        "1→ [12:05:00] first ✓\n2→ [12:01:00] second ✓\n3→ [12:09:00] third ✓\n---end 2026-03-05T12:10:00Z\n"
    )
    app = make_app(run_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        timeline = app.explorer.query_one(Timeline)
        assert len(timeline.events) == 4
        rows = [timeline._row(i, 100).text for i in range(len(timeline.events))]
        # Every row's glyph sits in the same column: no negative bar pushes it right.
        assert len({r.index("✓") for r in rows[:3]}) == 1
        assert app.is_running



_BASE = datetime(2026, 11, 24, 9, 0, tzinfo=timezone.utc)
_TIMES = st.one_of(st.none(), st.integers(-5, 600).map(lambda s: _BASE + timedelta(seconds=s)),
                   st.integers(0, 600).map(lambda s: (_BASE + timedelta(seconds=s)).replace(tzinfo=None)))


def _step_seconds(here: datetime | None, there: datetime | None) -> float:
    """The rule, event by event: seconds to the next event where both have times (naive
    is UTC) and the next is not earlier, else none (NaN)."""
    if here is None or there is None:
        return math.nan
    utc = [t if t.tzinfo else t.replace(tzinfo=timezone.utc) for t in (here, there)]
    seconds = (utc[1] - utc[0]).total_seconds()
    return seconds if seconds >= 0 else math.nan


@settings(max_examples=200, deadline=None)
@given(stamps=st.lists(_TIMES, max_size=25), start=st.integers(0, 30))
def test_step_lengths_read_at_once_are_each_events_own(stamps, start):
    """The timeline's bars, computed for a whole log in one pass (an open) or from an index
    on (a live change), are each event's own: seconds to the next event, none across an
    unknown or backwards time, none yet for the last."""
    events = [Event(seq=i, kind=EventKind.STATEMENT_STARTED, text=f"e{i}", time=t) for i, t in enumerate(stamps)]
    expected = [_step_seconds(stamps[i], stamps[i + 1]) if i + 1 < len(stamps) else math.nan
                for i in range(min(start, len(stamps)), len(stamps))]
    at_once = gaps_from(events, start)
    assert len(at_once) == len(expected)
    assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(at_once, expected))


async def test_a_history_step_makes_the_run_as_of_the_cursor_once(monkeypatch):
    """Every pane shows the run as of the cursor; it is made once per step, not once per
    pane. Each was a whole fold (or a parse of the log up to the cursor): at 100,000 events
    one step made it 19 times and took minutes."""
    import prose_tui.viewmodel.navigator as navigator

    made: list[int] = []
    real = navigator.state_at

    def counted(run, history, cursor, **kwargs):
        made.append(cursor)
        return real(run, history, cursor, **kwargs)

    monkeypatch.setattr(navigator, "state_at", counted)
    app = make_app(FAILED_RUN)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.loaded_run is not None and not app.explorer.history_pending,
                         what="the full read and its history")
        nav = app.explorer.model.nav
        for _ in range(3):
            made.clear()
            wanted = nav.position - 1
            await pilot.press("left_square_bracket")
            await wait_until(pilot, lambda: nav.position == wanted and f"as of event {wanted}"
                             in app.explorer.query_one("#trace-pane").border_title, what="the step shown")
            await pilot.pause()
            assert len(made) == 1 and len(set(made)) == 1, f"the run as of the cursor was made {len(made)} times"
