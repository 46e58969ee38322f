"""How long each step of a run took: seconds from each event to the next (the history pane's
durations and bars, ``tui.widgets.timeline``).

Textual-free, so a run's full read works its steps out on the thread that read it (the
workspace's reader, ``Panes.prepare``) without importing the history pane's widget. There a
pass over every event goes ``SLICE`` events at a time, and between two the read gives way to
a live change on its way to the screen (``foreground.wait_turn``, issue 33; a no-op on the UI
thread): 100,000 events held the interpreter 50-75 ms in one go.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import compress, repeat
from operator import attrgetter, gt, sub

from prose_tui.backends.common.foreground import in_turns
from prose_tui.model import Event

__all__ = ["SLICE", "Steps", "gaps_from"]

SLICE = 4096  # events a pass hands to C at once (well under 5 ms) between two ``wait_turn``

_TIME, _TZINFO = attrgetter("time"), attrgetter("tzinfo")


def _aware(time: datetime) -> datetime:
    return time if time.tzinfo else time.replace(tzinfo=timezone.utc)


@dataclass(slots=True)
class Steps:
    """How long each of ``events``' steps took (``gaps``: seconds to the next event, NaN
    where unknown, as ``gaps_from``) and the longest (``longest``, 0 for none), worked out
    by ``of`` on any thread: a run's full read on the thread that read it, so the UI thread
    only takes them (``Timeline.set_events``). ``events`` is the list they were worked out
    for (it may grow or have its last events replaced until taken; the taker catches up)."""

    events: list[Event]
    gaps: array
    longest: float

    @classmethod
    def of(cls, events: list[Event]) -> Steps:
        """The steps of ``events``, O(events), a slice at a time (``gaps_from``)."""
        found = gaps_from(events, 0)
        gaps, longest = array("d"), 0.0
        for start, stop in in_turns(len(found), SLICE):
            piece = found[start:stop]
            gaps.extend(piece)
            longest = max(longest, max(compress(piece, map(gt, piece, repeat(0.0))), default=0.0))
        return cls(events, gaps, longest)


def gaps_from(events: list[Event], start: int) -> list[float]:
    """How long each step took, for every event from ``start`` on: seconds from the event
    to the next, NaN where either has no time, the next came earlier (out-of-order times
    say nothing about durations) or there is no next yet. Naive times are UTC (a log's bare
    clock times beside its Z stamps), as on screen. One pass that makes each time aware once
    (100,000 events: 0.3 s of the UI thread event by event, 0.15-0.2 s so); when every
    event has a time, all naive or all aware, the steps are taken in C (about 0.05 s). Each
    pass goes ``SLICE`` events at a time, giving way to a live change between two."""
    times: list[datetime | None] = []
    for first, stop in in_turns(len(events), SLICE, start=start):
        times.extend(map(_TIME, events[first:stop]))
    count = len(times)
    every, naive = True, 0  # every event has a time; how many of them are naive
    for first, stop in in_turns(count, SLICE):
        piece = times[first:stop]
        every = all(map(isinstance, piece, repeat(datetime)))
        if not every:
            break
        naive += list(map(_TZINFO, piece)).count(None)
    out: list[float] = []
    if count and every and naive in (0, count):
        # Every event has a time (a log's usual case), all naive or all aware: the steps
        # worked out in C (map), each the same timedelta the loop below takes.
        # (Two naive times read as UTC are as far apart as they are naive.)
        for first, stop in in_turns(count, SLICE):
            steps = list(map(timedelta.total_seconds, map(sub, times[first + 1:stop + 1], times[first:stop])))
            if steps and min(steps) < 0:  # a time earlier than the one before (rare): no duration
                steps = [s if s >= 0 else math.nan for s in steps]
            out.extend(steps)
        out.append(math.nan)  # the last event: no next one yet
        return out
    aware: list[datetime | None] = []
    for first, stop in in_turns(count, SLICE):
        aware.extend(_aware(t) if isinstance(t, datetime) else None for t in times[first:stop])
    for first, stop in in_turns(count - 1, SLICE):
        for here, there in zip(aware[first:stop], aware[first + 1:stop + 1]):
            seconds = (there - here).total_seconds() if here is not None and there is not None else math.nan
            out.append(seconds if seconds >= 0 else math.nan)
    if aware:
        out.append(math.nan)  # the last event: no next one yet
    return out
