"""A run's step durations are worked out without the history pane's widget, a slice at a time (issue 33).

A long log's full read works out how long each step took (``Steps.of``) on the thread that
read it, while the VM keeps appending. That lived in the timeline widget's module, which the
reader imported (Textual and all) to prepare a run, and went over 100,000 events in one go
(50-75 ms holding the interpreter, a live change waiting behind it). ``viewmodel.steps`` is
Textual-free, and each pass goes a slice at a time with ``wait_turn`` between two; the
durations are the ones worked out in one go.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.backends.common import foreground
from prose_tui.backends.common.foreground import background_read
from prose_tui.model import Event, EventKind
from prose_tui.viewmodel import steps


LONG = 100_000
START = datetime(2026, 3, 1, 9, 0, 0)


def _events(times: list[datetime | None]) -> list[Event]:
    return [Event(seq=i, kind=EventKind.STATEMENT_STARTED, text=f"{i + 1}→ s{i + 1} ✓", time=t) for i, t in enumerate(times)]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


@pytest.mark.parametrize("kind", ["stamped", "mixed"])
def test_steps_of_100000_events_in_a_background_read_give_way_every_slice(monkeypatch, kind) -> None:
    times: list[datetime | None] = [START + timedelta(seconds=i) for i in range(LONG)]
    if kind == "mixed":  # some events without a time, some aware: worked out event by event
        times[::7] = [None] * len(times[::7])
        times[1::5] = [t.replace(tzinfo=timezone.utc) if t else None for t in times[1::5]]
    events = _events(times)
    gone_over = 0  # events gone over since the last wait_turn
    most = waits = 0
    real_time = steps._TIME

    def timed(event: Event):
        nonlocal gone_over, most
        gone_over += 1
        most = max(most, gone_over)
        return real_time(event)

    def wait_turn() -> None:
        nonlocal gone_over, waits
        waits += 1
        gone_over = 0

    monkeypatch.setattr(steps, "_TIME", timed)
    monkeypatch.setattr(foreground, "wait_turn", wait_turn)  # (``foreground.in_turns``)
    with background_read():
        found = steps.Steps.of(events)
    assert len(found.gaps) == LONG and found.longest == 1.0
    assert most <= steps.SLICE <= 8192, most
    assert waits >= 3 * LONG // steps.SLICE, waits  # each pass over the events, in slices


_TIMES = st.one_of(st.none(), st.datetimes(min_value=datetime(2026, 3, 1), max_value=datetime(2026, 3, 2)),
                   st.datetimes(min_value=datetime(2026, 3, 1), max_value=datetime(2026, 3, 2), timezones=st.just(timezone.utc)))


@settings(max_examples=200, deadline=None)
@given(times=st.lists(_TIMES, max_size=30), start=st.integers(0, 30), every=st.booleans())
def test_steps_in_slices_are_the_steps_in_one_go(times, start, every) -> None:
    if every:  # every event with a time, all naive: the path in C
        times = [START + timedelta(seconds=3 * i - 20 * (i % 4 == 3)) for i in range(len(times))]
    events = _events(times)
    whole, whole_from = steps.Steps.of(events), steps.gaps_from(events, start)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(steps, "SLICE", 3)
        with background_read():
            sliced, sliced_from = steps.Steps.of(events), steps.gaps_from(events, start)
    assert _same(sliced.gaps, whole.gaps) and sliced.longest == whole.longest
    assert _same(sliced_from, whole_from)


def test_working_out_a_runs_steps_loads_no_textual() -> None:
    code = ("import sys; from datetime import datetime; from prose_tui.model import Event, EventKind;"
            "from prose_tui.viewmodel.steps import Steps;"
            "Steps.of([Event(seq=0, kind=EventKind.STATEMENT_STARTED, text='1→ a ✓', time=datetime(2026, 3, 1))]);"
            "print(sorted(m for m in sys.modules if m == 'textual' or m.startswith('prose_tui.tui')))")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # this tree's package
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "[]"
