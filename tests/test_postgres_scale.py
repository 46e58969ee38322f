"""Runs kept in PostgreSQL at team scale, against a real server (tests/pg_server.py): the run
list shows the newest runs before the whole list is read, and polling keeps its cadence while
the screen is busy (a committed row is found and shown without waiting for the screen).

Speed itself is measured in benchmarks/bench_postgres.py; these tests check the behaviours
that make it, waiting on conditions (never on the clock).
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from app_helpers import wait_until
from pg_server import VmWriter

from prose_tui.tui.app import ProseTUI
from prose_tui.tui.screens.explorer_feed import FIRST_PAGE
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView

RUN = "20260116-143052-a7b3c9"


HANG_GUARD = 120.0  # seconds: only ends a wait that would otherwise hang, never a timing


def wait_for(predicate, what: str, timeout: float = HANG_GUARD):
    """Block this thread until ``predicate()`` is truthy; the bound only stops a hang."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def many_runs(url: str, n: int) -> list[str]:
    """``n`` runs, one a minute; their ids newest first (the run list's order)."""
    ids = [f"20260115-{g:06d}-abc" for g in range(1, n + 1)]
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("INSERT INTO openprose.run (id, root_path, status, started_at, updated_at) "
                  "SELECT '20260115-' || lpad(g::text, 6, '0') || '-abc', 'src/p.prose.md', 'completed', "
                  "timestamptz '2026-01-15 00:00Z' + make_interval(mins => g), timestamptz '2026-01-15 00:00Z' + make_interval(mins => g) "
                  "FROM generate_series(1, %s) g", (n,))
    return ids[::-1]


def test_first_runs_reads_only_the_newest_and_leaves_the_list_state_alone(db, sources):
    newest = many_runs(db, 30)
    source = sources(db)
    first = source.first_runs(5)
    assert [r.id for r in first] == newest[:5]
    assert source.summaries == {}  # poll_runs still compares with the whole list, once read
    assert [r.id for r in source.list_runs()] == newest


@pytest.mark.parametrize("page_after_mount", [False, True], ids=["page-read-before-mount", "page-read-after-mount"])
async def test_the_run_list_shows_the_newest_runs_before_the_whole_list_is_read(db, sources, tmp_path, page_after_mount):
    total = FIRST_PAGE + 50
    newest = many_runs(db, total)
    source = sources(db)
    release, mounted = threading.Event(), threading.Event()
    read_all, read_first = source.list_runs, source.first_runs

    def held_list():  # the whole list is read only once the test has seen the first rows
        assert release.wait(60), "the test never saw the first rows"
        return read_all()

    def late_first(limit):  # the first page read only once the screen is up
        assert mounted.wait(60), "the screen never mounted"
        return read_first(limit)

    source.list_runs = held_list  # type: ignore[method-assign]
    if page_after_mount:
        source.first_runs = late_first  # type: ignore[method-assign]
    app = ProseTUI(tmp_path, watch=False, sources=[source])
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            mounted.set()
            run_list = app.explorer.query_one(RunList)
            await wait_until(pilot, lambda: len(run_list.runs) > 0, what="the first rows", turns=1500)
            assert [r.id for r in run_list.runs] == newest[:FIRST_PAGE]
            newest_row = run_list.get_option_at_index(0)  # its text as painted now (the id cut to fit)
            assert newest_row.id == str(source.path_of(newest[0]))
            await wait_until(pilot, lambda: str(newest_row.prompt).strip() in "".join(s.text for s in run_list.render_line(0)),
                             what="the newest run painted")
            release.set()
            await wait_until(pilot, lambda: len(run_list.runs) == total, what="the whole list", turns=1500)
            assert [r.id for r in run_list.runs] == newest
    finally:
        release.set()
        mounted.set()


async def test_a_committed_row_is_found_and_shown_while_the_screen_is_busy(db, sources, tmp_path):
    vm = VmWriter(db, RUN)
    vm.start()
    vm.finish(vm.statement('session "first"'))
    source = sources(db, poll_interval=0.05)
    app = ProseTUI(tmp_path, watch=True, sources=[source])
    async with app.run_test(size=(160, 45)) as pilot:
        explorer = app.explorer
        path = source.path_of(RUN)
        await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.path == path
                         and explorer.current_run.trace, what="the database run on screen", turns=1500)
        feed = explorer.feed
        await wait_until(pilot, lambda: feed.polls > 0, what="polling", turns=1500)

        def found() -> bool:
            return any("while busy" in t.text for t in source.views[path].run.trace)

        # This test holds the UI thread from here on (a busy screen): the poller must find
        # the row, hand it over without waiting for the screen, and go on polling.
        vm.statement('session "while busy"')
        wait_for(found, "the poll to find the committed row")
        polls = feed.polls
        wait_for(lambda: feed.polls >= polls + 3, "polls to go on while the screen is busy")
        vm.statement('session "later"')
        wait_for(lambda: any("later" in t.text for t in source.views[path].run.trace), "the next row found")
        # The screen free again: both rows are shown, as deltas through the inbox.
        trace = explorer.query_one(TraceView)

        def trace_text() -> str:
            return "\n".join("".join(s.text for s in trace.render_line(y)) for y in range(trace.size.height))

        await wait_until(pilot, lambda: "while busy" in trace_text() and "later" in trace_text(),
                         what="the rows on screen", turns=1500)
        assert feed.inbox is not None and feed.inbox.shown > 0
    vm.close()


def test_a_poll_reads_no_table_whole_where_the_spec_gives_an_index_or_a_primary_key(db, sources):
    """The poll's signature query on tables big enough for the planner to prefer an index:
    agent_segments has none on run_id in the spec (its signature is the table's max(id))."""
    vm = VmWriter(db, RUN)
    vm.start()
    vm.finish(vm.statement('session "one"'))
    vm.close()
    with psycopg.connect(db, autocommit=True) as c:
        c.execute("INSERT INTO openprose.run (id) SELECT 'r' || g FROM generate_series(1, 2000) g")
        c.execute("INSERT INTO openprose.bindings (name, run_id, binding, value) "
                  "SELECT 'b' || g, 'r' || (g % 2000 + 1), 'let', 'v' FROM generate_series(1, 50000) g")
        c.execute("INSERT INTO openprose.agent_segments (agent_name, run_id, segment_number, prompt) "
                  "SELECT 'a' || (g % 50), 'r' || (g % 2000 + 1), g, 'p' FROM generate_series(1, 50000) g")
        c.execute("ANALYZE")
    source = sources(db)
    source.open(source.path_of(RUN))
    view = source.views[source.path_of(RUN)]
    seen: list[tuple[str, object]] = []
    reader = view.reader
    rows = reader.rows

    def capture(sql, params=None):
        seen.append((sql, params))
        return rows(sql, params)

    reader.rows = capture  # type: ignore[method-assign]
    try:
        view.poll()
    finally:
        reader.rows = rows  # type: ignore[method-assign]
    signature = next((sql, params) for sql, params in seen if "count(*)" in sql)
    plan = "\n".join(r[0] for r in rows("EXPLAIN " + signature[0], signature[1]))
    for table in ("bindings", "agent_segments", "run"):
        assert f"Seq Scan on {table}" not in plan, f"the poll scans {table} whole:\n{plan}"
    with psycopg.connect(db, autocommit=True) as c:  # a segment written for this run moves the signature
        c.execute("INSERT INTO openprose.agent_segments (agent_name, run_id, segment_number, prompt) VALUES ('helper', %s, 1, 'p')", (RUN,))
    delta = view.poll()
    assert delta is not None and delta.agents and any(a.name == "helper" for a in view.run.agents)


def test_a_poll_scans_neither_imports_nor_receipts_and_still_finds_them(db, sources, monkeypatch):
    """The spec indexes neither ``imports`` nor ``receipt`` by run_id: a poll asks the receipt
    table for its highest id (its primary key) and looks at imports only every few seconds;
    this run's new receipts and imports are still found, another run's receipts change nothing."""
    from prose_tui.backends.postgres import run as run_module

    vm = VmWriter(db, RUN)
    vm.start()
    vm.finish(vm.statement('session "one"'))
    vm.close()
    receipt = ("INSERT INTO openprose.receipt (run_id, node, contract_fingerprint, wake, input_fingerprints, fingerprints, "
               "status, sig) VALUES (%s, %s, 'c', '{}', '{}', '{}', 'rendered', '{}')")
    with psycopg.connect(db, autocommit=True) as c:
        c.execute("INSERT INTO openprose.run (id) SELECT 'r' || g FROM generate_series(1, 2000) g")
        c.execute("INSERT INTO openprose.imports (alias, run_id, source_ref) "
                  "SELECT 'i' || g, 'r' || (g % 2000 + 1), 'src' FROM generate_series(1, 50000) g")
        c.execute("INSERT INTO openprose.receipt (run_id, node, contract_fingerprint, wake, input_fingerprints, fingerprints, "
                  "status, sig) SELECT 'r' || (g % 2000 + 1), 'n', 'c', '{}', '{}', '{}', 'rendered', '{}' "
                  "FROM generate_series(1, 50000) g")
        c.execute("ANALYZE")
    source = sources(db)
    source.open(source.path_of(RUN))
    view = source.views[source.path_of(RUN)]
    reader = view.reader
    rows = reader.rows
    seen: list[tuple[str, object]] = []

    def capture(sql, params=None):
        seen.append((sql, params))
        return rows(sql, params)

    reader.rows = capture  # type: ignore[method-assign]
    try:
        assert view.poll() is None  # right after the read: the slow parts are not due
    finally:
        reader.rows = rows  # type: ignore[method-assign]
    signature = next((sql, params) for sql, params in seen if "count(*)" in sql)
    assert "imports" not in signature[0]
    plan = "\n".join(r[0] for r in rows("EXPLAIN " + signature[0], signature[1]))
    assert "Seq Scan on receipt" not in plan, f"the poll scans receipt whole:\n{plan}"
    with psycopg.connect(db, autocommit=True) as c:
        c.execute(receipt, ("r7", "other"))
    assert view.poll() is None and view.run.receipts == []  # another run's receipt
    with psycopg.connect(db, autocommit=True) as c:
        c.execute(receipt, (RUN, "brief"))
        c.execute("INSERT INTO openprose.imports (alias, run_id, source_ref) VALUES ('lib', %s, 'std/lib')", (RUN,))
    delta = view.poll()
    assert delta is not None and [r.node for r in view.run.receipts] == ["brief"] and not delta.imports
    monkeypatch.setattr(run_module, "SLOW_PARTS_EVERY", 0.0)  # the slow parts due now
    delta = view.poll()
    assert delta is not None and delta.imports and [i.id for i in view.run.imports] == ["lib"]
