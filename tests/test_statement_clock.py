"""statement_times carried forward (statement_clock.StatementClock) gives what counting every event
again gives, whatever the history grows by and wherever the cursor moves."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.history.stream import History
from prose_tui.model import Event, EventKind, Run
from prose_tui.viewmodel.explorer_model import ExplorerModel
from prose_tui.viewmodel.statement_clock import STATEMENT_STARTS

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _recount(events: list[Event], end: int) -> list[tuple[str, float, int]]:
    """The definition: each start runs until the next event with a time (0 when none)."""
    totals: dict[str, list[float]] = {}
    for i, event in enumerate(events[:end]):
        if event.kind not in STATEMENT_STARTS or event.time is None:
            continue
        name = event.name or event.step or event.text.strip()[:40]
        nxt = next((e.time for e in events[i + 1:end] if e.time is not None), None)
        entry = totals.setdefault(name, [0.0, 0])
        entry[0] += max(0.0, (nxt - event.time).total_seconds()) if nxt is not None else 0.0
        entry[1] += 1
    return sorted(((n, round(s, 6), int(c)) for n, (s, c) in totals.items()), key=lambda t: (-t[1], t[0]))


_event = st.tuples(st.sampled_from([EventKind.STATEMENT_STARTED, EventKind.RETRY, EventKind.STATEMENT_COMPLETED,
                                    EventKind.NOTE]),
                   st.one_of(st.none(), st.integers(0, 100)), st.sampled_from(["a", "b", "c", None]))
_step = st.tuples(st.lists(_event, max_size=6), st.one_of(st.none(), st.integers(0, 200)))


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, min_size=1, max_size=12))
def test_carried_forward_equals_counting_again(steps):
    events: list[Event] = []
    model = ExplorerModel()
    model.run = Run(id="r", path=Path("/r"))
    model.nav.history = History(events=events, origin="log", note="")
    for appended, cursor in steps:
        for kind, second, name in appended:
            time = T0 + timedelta(seconds=second) if second is not None else None
            events.append(Event(len(events), kind, "x", time=time, name=name))
        if not events:
            continue
        model.nav.cursor = None if cursor is None else cursor % len(events)
        got = [(t.name, round(t.seconds, 6), t.attempts) for t in model.statement_times()]
        assert got == _recount(events, model.nav.position + 1)


def test_a_step_back_takes_off_what_it_stepped_over_instead_of_counting_again():
    """Stepping back through a 10,000-event history: the clock is taken back over the events
    stepped over (the first step back at 100,000 events counted every event again: 25-40 ms
    of each ``[``), and says what counting from the first event says."""
    events = []
    for i in range(10_000):
        kind = EventKind.STATEMENT_STARTED if i % 3 == 0 else (EventKind.NOTE if i % 3 == 1 else EventKind.STATEMENT_COMPLETED)
        events.append(Event(i, kind, "x", time=T0 + timedelta(seconds=i * 7 % 13 + i), name=f"s{i % 40}"))
    model = ExplorerModel()
    model.run = Run(id="r", path=Path("/r"))
    model.nav.history = History(events=events, origin="log", note="")
    model.statement_times()
    clock = model._clock
    looked: list[int] = []
    real = type(clock).retreat

    def counted(self, evs, end):
        looked.append(self.done - end)
        return real(self, evs, end)

    type(clock).retreat = counted
    try:
        for cursor in (9_998, 9_997, 9_990, 5_000):
            model.nav.cursor = cursor
            got = [(t.name, round(t.seconds, 6), t.attempts) for t in model.statement_times()]
            assert got == _recount(events, cursor + 1)
            assert model._clock is clock, "the clock was counted again from the first event"
    finally:
        type(clock).retreat = real
    assert looked == [1, 1, 7, 4_990]
