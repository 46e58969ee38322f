"""Where a run's time went, per statement: seconds from each start (or retry) to the next
event with a time, summed per statement and sorted slowest first (the history pane's
``time:`` line). Textual-free; ``ExplorerModel.statement_times`` keeps one
``StatementClock`` per history so following a live run costs what it appended.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from prose_tui.backends.common.status import as_utc
from prose_tui.model import Event, EventKind

__all__ = ["STATEMENT_STARTS", "StatementClock", "StatementTime"]

STATEMENT_STARTS = (EventKind.STATEMENT_STARTED, EventKind.RETRY, EventKind.RUN_RESUMED)
"""The events that start a statement's clock (a retry starts another attempt)."""


@dataclass(frozen=True, slots=True)
class StatementTime:
    """Seconds spent on one statement (summed over its attempts), how many times it began."""

    name: str
    seconds: float
    attempts: int


class StatementClock:
    """``ExplorerModel.statement_times`` carried forward over a growing list of events.

    ``done`` events are counted; ``pending`` are the starts (name, time) still waiting for
    the next event with a time; ``totals`` maps a name to [seconds, starts]. Times without a
    zone count as UTC (``backends.common.status.as_utc``)."""

    def __init__(self) -> None:
        self.done = 0
        self.last: object = None  # the last event counted (the list may be a new one that grew)
        self.pending: list[tuple[str, datetime]] = []
        self.totals: dict[str, list[float]] = {}
        self.sorted: list[StatementTime] | None = None

    def continues(self, events: list[Event], end: int) -> bool:
        """True when ``events[:end]`` extends what was counted (same events, not fewer)."""
        if end < self.done:
            return False
        if self.done == 0:
            return True
        return len(events) >= self.done and events[self.done - 1] is self.last

    def advance(self, events: list[Event], end: int) -> list[StatementTime]:
        """Count ``events[:end]`` (from where the last call stopped: ``continues`` says whether
        it may) and return the statements' times, slowest first."""
        self.count(events, end)
        if self.sorted is None:
            out = [StatementTime(name, seconds, int(n)) for name, (seconds, n) in self.totals.items()]
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
                        totals[name][0] += max(0.0, (as_utc(time) - as_utc(began)).total_seconds())
                    pending.clear()
                if event.kind in STATEMENT_STARTS and time is not None:
                    name = event.name or event.step or event.text.strip()[:40]
                    entry = totals.setdefault(name, [0.0, 0])
                    entry[1] += 1
                    pending.append((name, time))
            self.done = end
            self.last = events[end - 1]
            self.sorted = None
