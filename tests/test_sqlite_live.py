"""A watched SQLite run follows commits from the rows they changed (backends/sqlite/live.py):
the result is the run a fresh read gives, without reading the run again; the trace pages
back past the window."""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import datetime, timezone

from sqlite_fixture import build_sqlite_run

import prose_tui.backends.sqlite.backend as sqlite_backend
from prose_tui.backends.sqlite.backend import SqliteBackend

NOW = datetime(2026, 1, 16, 14, 42, tzinfo=timezone.utc)


def _shape(run):
    return (
        [(t.line, t.text, t.state, t.note) for t in run.trace],
        [(f.execution_id, f.block, f.status) for f in run.call_stack],
        sorted((b.name, b.execution_id, b.bytes) for b in run.bindings),
        sorted((a.name, len(a.segments)) for a in run.agents),
        run.status, run.status_reason, run.header.get("execution_rows"), run.header.get("failed_execution_id"),
        Counter((e.kind, e.execution_id, e.text, e.status) for e in run.events),
    )


def _commit(db, *statements):
    conn = sqlite3.connect(db)
    for sql, params in statements:
        conn.execute(sql, params)
    conn.commit()
    conn.close()


def test_a_commit_is_applied_from_the_rows_it_changed_and_ends_where_a_fresh_read_does(tmp_path, monkeypatch):
    run_dir = build_sqlite_run(tmp_path)
    db = run_dir / "state.db"
    backend = SqliteBackend()
    run = backend.open(run_dir, now=NOW)
    reads = []
    real = sqlite_backend.load_sqlite_run
    monkeypatch.setattr(sqlite_backend, "load_sqlite_run", lambda *a, **k: reads.append(a) or real(*a, **k))

    # The executing row completes, a new one starts, a binding and a segment are written.
    _commit(db,
            ("UPDATE execution SET status='completed', completed_at='2026-01-16 14:41:30' WHERE id=13", ()),
            ("INSERT INTO execution (id, statement_index, statement_text, status, started_at, parent_id) "
             "VALUES (14, 12, 'let summary = session \"Summarise\"', 'executing', '2026-01-16 14:41:31', 12)", ()),
            ("INSERT INTO bindings (name, execution_id, kind, value, source_statement) "
             "VALUES ('result', 12, 'let', 'chunk done', 'let result = session')", ()),
            ("INSERT INTO agent_segments (agent_name, segment_number, timestamp, prompt, summary) "
             "VALUES ('captain', 3, '2026-01-16 14:41:00', 'Check', 'Checked.')", ()))
    delta = backend.apply(run, {db}, now=NOW)

    assert reads == []  # applied from the changed rows, not read again
    assert delta.run is run and not delta.reread
    assert delta.trace_lines == {12, 13}  # row 13 re-stated, row 14 appended
    assert {e.execution_id for e in delta.events} == {13, 14}
    assert delta.agents and delta.bindings
    fresh = SqliteBackend().open(run_dir, now=NOW)
    assert _shape(run) == _shape(fresh)

    # The run fails: status and reason follow the run row and the failed execution.
    _commit(db,
            ("UPDATE execution SET status='failed', error_message='boom', completed_at='2026-01-16 14:42:00' WHERE id=14", ()),
            ("UPDATE run SET status='failed'", ()))
    reads.clear()  # the fresh read above counted
    backend.apply(run, {db}, now=NOW)
    assert reads == []
    assert _shape(run) == _shape(SqliteBackend().open(run_dir, now=NOW))
    assert run.status.value == "failed" and "boom" in run.status_reason


def test_a_schema_change_reads_the_run_again(tmp_path):
    run_dir = build_sqlite_run(tmp_path)
    db = run_dir / "state.db"
    backend = SqliteBackend()
    run = backend.open(run_dir, now=NOW)
    _commit(db, ("ALTER TABLE execution ADD COLUMN cost REAL", ()))
    delta = backend.apply(run, {db}, now=NOW)
    assert delta.reread and delta.run is not run


def test_the_trace_pages_back_to_the_first_row(tmp_path):
    run_dir = build_sqlite_run(tmp_path)
    db = run_dir / "state.db"
    rows = [(100 + i, 20 + i, f'session "step {i}"', "completed", "2026-01-16 14:50:00", "2026-01-16 14:50:01")
            for i in range(1200)]
    _commit(db, *[("INSERT INTO execution (id, statement_index, statement_text, status, started_at, completed_at) "
                   "VALUES (?,?,?,?,?,?)", r) for r in rows])
    backend = SqliteBackend()
    run = backend.open(run_dir, now=NOW)
    total = 13 + 1200
    assert len(run.trace) == 500 and run.trace[0].line == total - 499
    got = backend.older(run, 500)
    assert got == 500 and len(run.trace) == 1000 and run.trace[0].line == total - 999
    assert [t.line for t in run.trace] == list(range(total - 999, total + 1))
    while backend.older(run, 500):
        pass
    assert len(run.trace) == total and run.trace[0].text.startswith("let research")
    assert [t.line for t in run.trace] == list(range(1, total + 1))


async def test_going_up_to_the_first_line_shown_loads_the_rows_before_it(tmp_path):
    from app_helpers import make_app, settled, wait_until

    from prose_tui.tui.widgets.trace_view import TraceView

    run_dir = build_sqlite_run(tmp_path)
    rows = [(100 + i, 20 + i, f'session "step {i}"', "completed", "2026-01-16 14:50:00", "2026-01-16 14:50:01")
            for i in range(1200)]
    _commit(run_dir / "state.db", *[("INSERT INTO execution (id, statement_index, statement_text, status, started_at, "
                                     "completed_at) VALUES (?,?,?,?,?,?)", r) for r in rows])
    total = 13 + 1200
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await settled(pilot)
        trace = explorer.query_one(TraceView)
        assert trace.lines[0].line == total - 499
        explorer.set_focus(trace)
        await pilot.press("g")  # to the first line shown
        await wait_until(pilot, lambda: trace.lines[0].line == total - 999, what="the page before the window")
        assert trace.lines[trace.cursor].line == total - 500  # just above where the reader was
        assert not trace.following


def test_rows_paged_back_bring_their_events_and_a_frozen_cursor_stays_on_its_event(tmp_path):
    from prose_tui.history import history_of
    from prose_tui.viewmodel.navigator import HistoryNavigator

    run_dir = build_sqlite_run(tmp_path)
    db = run_dir / "state.db"
    rows = [(100 + i, 20 + i, f'session "step {i}"', "completed", f"2026-01-16 15:{i // 60:02d}:{i % 60:02d}",
             f"2026-01-16 15:{i // 60:02d}:{i % 60:02d}.5") for i in range(1200)]
    _commit(db, *[("INSERT INTO execution (id, statement_index, statement_text, status, started_at, completed_at) "
                   "VALUES (?,?,?,?,?,?)", r) for r in rows])
    backend = SqliteBackend()
    run = backend.open(run_dir, now=NOW)
    nav = HistoryNavigator()
    nav.load(run)
    window = [(e.kind, e.text) for e in nav.events]
    assert window and all('step 699' not in text for _, text in window)  # the window's rows only
    nav.move_to(10)
    here = nav.events[10]

    assert backend.older(run, 500) == 500
    nav.load(run)
    events = nav.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert [(e.kind, e.text) for e in events][-len(window):] == window  # the page's events come first
    page = [(e.kind, e.text) for e in events[:-len(window)]]
    assert ('session "step 200"' in " ".join(t for _, t in page)) and len(page) >= 500
    assert len(set(page)) == len(page)  # each row's events once
    assert nav.events[nav.cursor] is here  # the cursor is on the same event
    assert history_of(run).events is events  # the same history, grown at its start
    started = [e.text for e in events if e.kind.value == "statement_started" and "step " in e.text]
    assert started == sorted(started, key=lambda t: int(t.rsplit("step ", 1)[1].rstrip('"')))  # in order
