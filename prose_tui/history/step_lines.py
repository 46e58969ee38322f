"""The trace line each event of a database run belongs to, kept so a live change costs what
it added (SQLite ``execution`` rows, seeds/sqlite.md; PostgreSQL, openprose-0.15
state/postgres.md).

A database run's trace has a line per ``execution`` row, its ``step`` the row's
``statement_index``; its events carry the same step. The k-th ``statement_started`` of a
step belongs to the k-th trace line with that step; the step's other events follow the
latest start (``history.stream._log_trace_lines``, which this implements).

:class:`StepLines` keeps that mapping's state (the lines per step, the starts counted per
step) between live changes. While the trace only grows at its end (rows appended; rows
re-stated in place keep their line number and step, as a row's ``statement_index`` does),
the lines of the events already mapped do not move, so new events are mapped alone:
O(new lines + new events) per change instead of O(trace + events). Anything else (lines
dropped from the window's start, older rows paged in, another list, a step that had no
line yet or ran out of lines getting one) is refused by :meth:`StepLines.extend`; the
caller then maps every event again. No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from prose_tui.model import Event, EventKind, TraceLine

__all__ = ["StepLines"]


class StepLines:
    """The lines per step of ``trace`` (its own list, 1-based ``TraceLine.line`` numbers) and
    the starts per step of the events mapped so far (:meth:`lines_for`)."""

    __slots__ = ("_trace", "_by_step", "_started", "_unsure", "_seen", "_first", "_last")

    def __init__(self, trace: list[TraceLine]) -> None:
        self._trace = trace
        self._by_step: dict[str, list[int]] = {}
        self._started: dict[str, int] = {}
        # Steps an event found no line for, or more starts than lines: their events' lines
        # would change when the step gets a line, so such a line is refused by ``extend``.
        self._unsure: set[str] = set()
        self._seen = 0
        self._first: TraceLine | None = None  # the first line (the object): lines dropped or paged in replace it
        self._last: int | None = None  # the last line's number then (re-stated in place, it keeps it)
        self._take(trace)

    def _take(self, lines: Sequence[TraceLine]) -> None:
        by_step = self._by_step
        for t in lines:
            if t.step is not None:
                by_step.setdefault(t.step, []).append(t.line)
        self._seen = len(self._trace)
        if self._trace:
            self._first, self._last = self._trace[0], self._trace[-1].line

    def lines_for(self, events: Sequence[Event]) -> list[int | None]:
        """The trace line of each of ``events`` (the events after those mapped before, in
        order), or ``None`` for an event whose step has no line."""
        by_step, started, unsure = self._by_step, self._started, self._unsure
        out: list[int | None] = []
        for e in events:
            step = e.step or ""
            lines = by_step.get(step)
            if not lines:
                unsure.add(step)
                out.append(None)
                continue
            if e.kind is EventKind.STATEMENT_STARTED:
                k = started.get(step, -1) + 1
                if k > len(lines) - 1:
                    k = len(lines) - 1
                    unsure.add(step)
                started[step] = k
            out.append(lines[max(started.get(step, 0), 0)])
        return out

    def extend(self, trace: list[TraceLine]) -> bool:
        """Take the lines ``trace`` (the same list as before) gained at its end; ``False``
        (nothing taken) when the trace changed otherwise, or a new line's step is one an
        event found no line for (or too few): every event must then be mapped again."""
        seen = self._seen
        if trace is not self._trace or len(trace) < seen:
            return False
        if seen and (trace[0] is not self._first or trace[seen - 1].line != self._last):
            return False  # lines dropped or paged in (or the first re-stated: mapped again, once)
        new = trace[seen:]
        if self._unsure and any(t.step is not None and t.step in self._unsure for t in new):
            return False
        self._take(new)
        return True
