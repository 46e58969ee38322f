"""Where a run's time went, per statement: seconds from each start (or retry) to the next
event with a time, summed per statement and sorted slowest first (the history pane's
``time:`` line). Textual-free; ``ExplorerModel.statement_times`` keeps one
``StatementClock`` per history so following a live run costs what it appended.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from prose_tui.backends.common.status import as_utc
from prose_tui.model import Event, EventKind

__all__ = ["STATEMENT_STARTS", "StatementClock", "StatementTime"]

STATEMENT_STARTS = (EventKind.STATEMENT_STARTED, EventKind.RETRY, EventKind.RUN_RESUMED)
"""The events that start a statement's clock (a retry starts another attempt)."""

_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class StatementTime:
    """Seconds spent on one statement (summed over its attempts), how many times it began."""

    name: str
    seconds: float
    attempts: int


class StatementClock:
    """``ExplorerModel.statement_times`` carried forward over a growing list of events, and
    back when the history cursor steps back.

    ``done`` events are counted; ``pending`` holds the start (name, time) still waiting for
    the next event with a time (at most one: a start has a time itself, and each event with
    a time ends the one before it); ``totals`` maps a name to [microseconds, starts], whole
    numbers so that a step back takes off exactly what the step forward added. Times without
    a zone count as UTC (``backends.common.status.as_utc``)."""

    def __init__(self) -> None:
        self.done = 0
        self.last: object = None  # the last event counted (the list may be a new one that grew)
        self.pending: list[tuple[str, datetime]] = []
        self.totals: dict[str, list[int]] = {}
        self.sorted: list[StatementTime] | None = None

    def same_events(self, events: list[Event]) -> bool:
        """True when ``events`` begins with the events counted (the same objects)."""
        if self.done == 0:
            return True
        return len(events) >= self.done and events[self.done - 1] is self.last

    def advance(self, events: list[Event], end: int) -> list[StatementTime]:
        """Count ``events[:end]`` (from where the last call stopped: ``same_events`` says
        whether it may), forward or back, and return the statements' times, slowest first.
        A step back takes off what the events stepped over added: a history step at 100,000
        events cost a count from the first event (25-40 ms a key) before."""
        if end < self.done:
            self.retreat(events, end)
        else:
            self.count(events, end)
        if self.sorted is None:
            out = [StatementTime(name, us / 1_000_000, int(n)) for name, (us, n) in self.totals.items()]
            self.sorted = sorted(out, key=lambda s: (-s.seconds, s.name))
        return self.sorted

    def count(self, events: list[Event], end: int) -> None:
        """``advance`` without the sorted list: a caller counting a long history in slices
        (``explorer_model.prepare_read``) sorts once, at the end."""
        end = min(end, len(events))
        if end > self.done:
            totals, pending = self.totals, self.pending
            for event in events[self.done:end]:
                time = event.time
                if time is not None and pending:
                    for name, began in pending:
                        totals[name][0] += _spent(began, time)
                    pending.clear()
                if time is not None and event.kind in STATEMENT_STARTS:
                    name = _name(event)
                    entry = totals.setdefault(name, [0, 0])
                    entry[1] += 1
                    pending.append((name, time))
            self.done = end
            self.last = events[end - 1]
            self.sorted = None

    def retreat(self, events: list[Event], end: int) -> None:
        """Take ``events[end:done]`` back (the same events ``count`` counted), last first:
        what ``advance`` gives for ``end`` equals a count of ``events[:end]`` from nothing.
        Costs the events stepped back over (and the run of events without a time before
        each one with a time)."""
        end = max(0, end)
        if end >= self.done:
            return
        totals = self.totals
        for i in range(self.done - 1, end - 1, -1):
            event = events[i]
            time = event.time
            if time is None:
                continue
            if event.kind in STATEMENT_STARTS:  # it began here: still pending, nothing later ended it now
                name, _began = self.pending.pop()
                entry = totals[name]
                entry[1] -= 1
                if entry[1] == 0:
                    del totals[name]
            before = _start_pending_at(events, i)  # what this event ended
            if before is not None:
                name, began = before
                totals[name][0] -= _spent(began, time)
                self.pending = [before]
            else:
                self.pending = []
        self.done = end
        self.last = events[end - 1] if end else None
        self.sorted = None


def _name(event: Event) -> str:
    return event.name or event.step or event.text.strip()[:40]


def _spent(began: datetime, ended: datetime) -> int:
    """Microseconds from ``began`` to ``ended``, 0 when time runs backwards."""
    return max(0, (as_utc(ended) - as_utc(began)) // _MICROSECOND)


def _start_pending_at(events: list[Event], i: int) -> tuple[str, datetime] | None:
    """The start waiting for an event with a time when ``events[i]`` came: the last event
    with a time before ``i``, when that is a start."""
    for k in range(i - 1, -1, -1):
        event = events[k]
        if event.time is not None:
            return (_name(event), event.time) if event.kind in STATEMENT_STARTS else None
    return None
