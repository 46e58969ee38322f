"""A database run's history grows with it (issue 13): the trace line of each new event is
mapped alone (``history.step_lines``), and the result is the history built from the whole
run again, whatever the live run did (rows appended, re-stated, dropped from the window,
paged in, a step with no line yet, more starts than lines, a new list)."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.backends.common.execution_rows import ExecutionRow, row_trace_line
from prose_tui.history.stream import _log_trace_lines, history_of
from prose_tui.model import Backend, Event, EventKind, Run, RunFormat

_paths = itertools.count()

op = st.one_of(
    st.tuples(st.just("append"), st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=1, max_size=4)),
    st.tuples(st.just("complete"), st.integers(0, 50)),
    st.tuples(st.just("orphan"), st.integers(5, 6)),  # an event whose step has no line (yet)
    st.tuples(st.just("restart"), st.integers(0, 4)),  # a start with no row of its own (more starts than lines)
    st.tuples(st.just("drop"), st.integers(1, 3)),  # the window's first lines go
    st.tuples(st.just("page"), st.integers(1, 3)),  # older rows put before the first
    st.tuples(st.just("relist"), st.just(0)),  # the trace as a new list
)


class LiveRun:
    """A database run as ``RunView``/the SQLite live tail keep it: the trace and the events
    grow in place."""

    def __init__(self, fmt: RunFormat) -> None:
        self.run = Run(id="r", path=Path(f"/db/run-{next(_paths)}"), backend=Backend.POSTGRES, format=fmt)
        self.rows: list[ExecutionRow] = []
        self.first_line = 1
        self.next_id = 1

    def _line(self, i: int):
        return row_trace_line(self.rows[i], self.first_line + i)

    def _event(self, kind: EventKind, step: int | None) -> None:
        events = self.run.events
        events.append(Event(len(events), kind, "e", step=None if step is None else str(step)))

    def apply(self, name: str, arg) -> None:
        run = self.run
        if name == "append":
            for step in arg:
                self.rows.append(ExecutionRow(self.next_id, step, f"s{self.next_id}", "executing"))
                self.next_id += 1
                run.trace.append(self._line(len(self.rows) - 1))
                self._event(EventKind.STATEMENT_STARTED, step)
        elif name == "complete" and self.rows:
            i = arg % len(self.rows)
            row = self.rows[i]
            row.status = "completed"
            run.trace[i] = self._line(i)  # re-stated in place: same line number, same step
            self._event(EventKind.STATEMENT_COMPLETED, row.statement_index)
        elif name == "orphan":
            self._event(EventKind.NOTE, arg)
        elif name == "restart":
            self._event(EventKind.STATEMENT_STARTED, arg)
        elif name == "drop" and len(self.rows) > arg:
            del self.rows[:arg], run.trace[:arg]
            self.first_line += arg
        elif name == "page" and self.first_line > arg:
            self.first_line -= arg
            older = [ExecutionRow(-(self.first_line + k), 1, "old", "completed") for k in range(arg)]
            self.rows[:0] = older
            run.trace[:0] = [self._line(k) for k in range(arg)]
        elif name == "relist":
            run.trace = list(run.trace)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([RunFormat.POSTGRES, RunFormat.SQLITE]), st.lists(op, min_size=1, max_size=25))
def test_a_live_database_runs_history_equals_the_one_built_from_the_whole_run(fmt, ops):
    live = LiveRun(fmt)
    for name, arg in ops:
        before = len(live.run.events)
        live.apply(name, arg)
        if len(live.run.events) == before:
            continue  # a history is looked at again when the run has new events (as before)
        history = history_of(live.run)
        assert [r.trace_line for r in history.refs] == _log_trace_lines(live.run, live.run.events), (name, arg)
        assert [e.seq for e in history.events] == list(range(len(live.run.events)))


def test_rows_appended_extend_the_same_history():
    live = LiveRun(RunFormat.POSTGRES)
    live.apply("append", [0, 1, 1])
    first = history_of(live.run)
    live.apply("append", [1, 2])
    live.apply("complete", 3)
    again = history_of(live.run)
    assert again is first  # extended, not built again
    assert [r.trace_line for r in again.refs] == [1, 2, 3, 4, 5, 4]
