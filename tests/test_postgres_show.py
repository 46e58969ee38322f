"""Showing a run kept in PostgreSQL (issue 13), against a real server (tests/pg_server.py): a
big run chosen in the run list shows its last rows before the rest of it is read, and a row
committed while the explorer watches reaches the trace and the history as a change (the
run's own trace grows in place; the history extends).

Speed itself is measured in benchmarks/bench_postgres.py; these tests wait on conditions.
"""

from __future__ import annotations

import threading

import psycopg
from app_helpers import wait_until
from pg_server import VmWriter

from prose_tui.backends.postgres.run import FIRST_SCREEN_ROWS, RunView
from prose_tui.tui.app import ProseTUI
from prose_tui.tui.widgets.trace_view import TraceView

BIG = "20260101-000000-bigrun"
NEWER = "20260116-143052-a7b3c9"


def trace_text(trace: TraceView) -> str:
    return "\n".join("".join(seg.text for seg in trace.render_line(y)) for y in range(trace.size.height))


def big_run(url: str, rows: int) -> None:
    """A completed run of ``rows`` execution rows and a binding, older than a newer small run."""
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("INSERT INTO openprose.run (id, root_path, status, started_at) VALUES (%s, 'src/big.prose.md', 'completed', "
                  "timestamptz '2026-01-01 00:00Z')", (BIG,))
        c.execute("INSERT INTO openprose.execution (run_id, statement_index, statement_text, status, started_at, completed_at) "
                  "SELECT %s, g %% 7, 'session \"row ' || g || '\"', 'completed', timestamptz '2026-01-01 00:00Z' + make_interval(secs => g), "
                  "timestamptz '2026-01-01 00:00Z' + make_interval(secs => g + 1) FROM generate_series(1, %s) g", (BIG, rows))
        c.execute("INSERT INTO openprose.bindings (name, run_id, binding, value) VALUES ('answer', %s, 'let', 'forty-two')", (BIG,))
    vm = VmWriter(url, NEWER)
    vm.start()
    vm.finish(vm.statement('session "newer run"'))
    vm.close()


async def test_a_chosen_big_run_shows_its_last_rows_before_the_rest_is_read(db, sources, tmp_path, monkeypatch):
    rows = FIRST_SCREEN_ROWS * 3
    big_run(db, rows)
    source = sources(db)
    release = threading.Event()
    load_bindings = RunView._load_bindings

    def held(self: RunView) -> None:  # the big run's read waits after its first screen
        if self.run.id == BIG:
            assert release.wait(60), "the test never saw the first screen"
        load_bindings(self)

    monkeypatch.setattr(RunView, "_load_bindings", held)
    app = ProseTUI(tmp_path, watch=False, sources=[source])
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.first_read_done and explorer.loaded_run == source.path_of(NEWER),
                             what="the newer run read", turns=1500)
            path = source.path_of(BIG)
            explorer.open_run_at(path)
            trace = explorer.query_one(TraceView)
            await wait_until(pilot, lambda: f'row {rows}"' in trace_text(trace), what="the big run's last row on screen",
                             turns=1500)
            shown = explorer.current_run
            assert shown is not None and shown.path == path and explorer.loaded_run is None  # its first screen
            assert len(shown.trace) == FIRST_SCREEN_ROWS and shown.trace[-1].line == rows and not shown.bindings
            release.set()
            await wait_until(pilot, lambda: explorer.loaded_run == path, what="the full read on screen", turns=1500)
            full = explorer.current_run
            assert full is not None and len(full.trace) == rows and [b.name for b in full.bindings] == ["answer"]
            assert f'row {rows}"' in trace_text(trace)  # still following the last row
            assert shown.warnings == full.warnings == []  # said once, not once per read
    finally:
        release.set()


async def test_a_row_committed_while_watching_shows_in_the_trace_and_the_history(db, sources, tmp_path):
    vm = VmWriter(db, NEWER)
    vm.start()
    for n in range(60):
        vm.finish(vm.statement(f'session "earlier {n}"'))
    source = sources(db, poll_interval=0.05)
    app = ProseTUI(tmp_path, watch=True, sources=[source])
    async with app.run_test(size=(160, 45)) as pilot:
        explorer = app.explorer
        path = source.path_of(NEWER)
        await wait_until(pilot, lambda: explorer.loaded_run == path and explorer.feed.polls > 0,
                         what="the run read and polled", turns=1500)
        trace = explorer.query_one(TraceView)
        run = explorer.current_run
        assert run is not None
        lines = run.trace
        marker = vm.statement('session "the committed row"')
        await wait_until(pilot, lambda: "the committed row" in trace_text(trace), what="the row on screen", turns=1500)
        vm.statement('session "one more"')
        await wait_until(pilot, lambda: "one more" in trace_text(trace) and not explorer.history_pending
                         and explorer.nav.events and "one more" in explorer.nav.events[-1].text,
                         what="the next row in the trace and the history", turns=1500)
        assert explorer.current_run is run and run.trace is lines and trace.lines is lines  # grown in place
        # One event back from live: the committed row's start, its line under the trace cursor.
        explorer.action_history_step(-1)
        await pilot.pause()
        event = explorer.nav.events[explorer.nav.position]
        assert "the committed row" in event.text and event.execution_id == marker
        assert "the committed row" in trace.lines[trace.cursor].text
    vm.close()


async def test_a_committed_row_is_shown_while_the_run_list_check_is_still_reading(db, sources, tmp_path):
    vm = VmWriter(db, NEWER)
    vm.start()
    vm.finish(vm.statement('session "first"'))
    source = sources(db, poll_interval=0.05)
    committed, fresh, release = threading.Event(), threading.Event(), threading.Event()
    poll, poll_runs = source.poll, source.poll_runs

    def polling():  # the runs read in full, polled: from a poll that began after the commit on,
        if committed.is_set():  # the list check after it is held
            fresh.set()
        return poll()

    def slow_list(**kw):  # the run list moved (a team's runs come and go): its check reads for a while
        if fresh.is_set():
            assert release.wait(60), "the test never released the run list's check"
        return poll_runs(**kw)

    source.poll = polling  # type: ignore[method-assign]
    source.poll_runs = slow_list  # type: ignore[method-assign]
    app = ProseTUI(tmp_path, watch=True, sources=[source])
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            explorer = app.explorer
            path = source.path_of(NEWER)
            await wait_until(pilot, lambda: explorer.loaded_run == path and explorer.feed.polls > 0,
                             what="the run read and polled", turns=1500)
            vm.statement('session "committed meanwhile"')
            committed.set()  # a poll that had checked the runs before the commit is not held
            trace = explorer.query_one(TraceView)
            await wait_until(pilot, lambda: "committed meanwhile" in trace_text(trace), what="the row on screen",
                             turns=1500)
            assert not release.is_set()
    finally:
        release.set()
    vm.close()


async def test_a_chosen_run_whose_rows_are_late_shows_its_summary_meanwhile(db, sources, tmp_path, monkeypatch):
    big_run(db, 10)
    source = sources(db)
    release = threading.Event()
    load_execution = RunView._load_execution

    def held(self: RunView, window=None) -> None:  # the database answers the big run's rows late
        if self.run.id == BIG:
            assert release.wait(60), "the test never saw the summary"
        load_execution(self, window)

    monkeypatch.setattr(RunView, "_load_execution", held)
    app = ProseTUI(tmp_path, watch=False, sources=[source])
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.first_read_done and explorer.loaded_run == source.path_of(NEWER),
                             what="the newer run read", turns=1500)
            path = source.path_of(BIG)
            explorer.open_run_at(path)
            await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.path == path,
                             what="the summary shown", turns=3000)
            assert not explorer.current_run.trace and explorer.loaded_run is None  # the run list's row, not read yet
            release.set()
            await wait_until(pilot, lambda: explorer.loaded_run == path, what="the full read on screen", turns=1500)
            assert len(explorer.current_run.trace) == 10
    finally:
        release.set()
