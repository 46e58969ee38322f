"""Runs kept in PostgreSQL (openprose-0.15 state/postgres.md), against a real server.

One private server per module (tests/pg_server.py: pgserver's bundled PostgreSQL or the
system's), one database per test. Nothing is mocked: the VM side writes with psycopg as the
spec's ``psql`` commands do, the explorer reads through its own read-only connection.
"""

from __future__ import annotations

import json
import secrets
import threading
import time

import psycopg
import pytest
from app_helpers import wait_until
from pg_server import VmWriter

from prose_tui.backends.postgres import DatabaseUnavailable, DatabaseUrl, PostgresSource, QueryFailed, find_url
from prose_tui.backends.postgres.backend import PostgresBackend
from prose_tui.backends.postgres.rows import ExecutionReader
from prose_tui.cli.main import main
from prose_tui.model import EventKind, RunStatus
from prose_tui.tui.app import ProseTUI

RUN = "20260116-143052-a7b3c9"


# Seconds: only ends a wait that would otherwise hang (a loaded machine's PostgreSQL may take
# long to come back after a restart), never a timing.
HANG_GUARD = 120.0


def wait_for(predicate, what: str, timeout: float = HANG_GUARD):
    """Poll ``predicate`` until it returns something truthy; the bound only stops a hang."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def write_full_run(url: str) -> dict[str, int]:
    """A run with every part the spec names: nesting, parallel, loop, retry, failure, scoped
    bindings, agents and segments, an import, receipts, world-model versions, metrics."""
    vm = VmWriter(url, RUN)
    vm.start(source="do review(topic)")
    ids: dict[str, int] = {}
    ids["research"] = vm.statement("let research = session: researcher")
    vm.finish(ids["research"])
    vm.bind("research", "root research value", source="let research = session: researcher")
    ids["block"] = vm.statement("do review(topic)", metadata={"block": "review"})
    ids["inner"] = vm.statement("let result = session \"Process chunk\"", parent=ids["block"])
    vm.finish(ids["inner"])
    vm.bind("result", "scoped result", execution_id=ids["block"])
    vm.bind("research", "shadowing research", execution_id=ids["block"])
    ids["parallel"] = vm.statement("parallel:", parent=ids["block"],
                                   metadata={"parallel_id": "p1", "strategy": "all", "branches": ["a", "b"]})
    for branch in ("a", "b"):
        eid = vm.statement(f'{branch} = session "Branch {branch}"', parent=ids["parallel"],
                           metadata={"parallel_id": "p1", "branch": branch})
        vm.finish(eid)
    vm.finish(ids["parallel"])
    ids["loop"] = vm.statement("loop until **done** (max: 5):", parent=ids["block"],
                               metadata={"loop_id": "l1", "max_iterations": 5, "current_iteration": 2, "condition": "**done**"})
    ids["retry"] = vm.statement('session "flaky"', parent=ids["loop"], metadata={"retry_attempt": 2, "max_retries": 3})
    vm.finish(ids["retry"], "failed", "Connection timeout after 30s")
    c = vm.conn
    c.execute("INSERT INTO openprose.agents (name, run_id, scope, memory) VALUES ('captain', %s, 'execution', 'captain memory'),"
              " ('advisor', NULL, 'project', 'advisor memory')", (RUN,))
    c.execute("INSERT INTO openprose.agent_segments (agent_name, run_id, segment_number, prompt, summary) VALUES"
              " ('captain', %s, 1, 'first prompt', 'first summary'), ('captain', %s, 2, 'second prompt', 'second summary')", (RUN, RUN))
    c.execute("INSERT INTO openprose.imports (alias, run_id, source_ref, content_hash) VALUES ('research', %s, 'github:acme/research', 'sha256:aa')", (RUN,))
    c.execute("INSERT INTO openprose.world_model_version (version, node, artifact) VALUES ('sha256:v1', 'brief', 'v1'), ('sha256:v2', 'brief', 'version two')")
    c.execute("INSERT INTO openprose.world_model_published (node, version) VALUES ('brief', 'sha256:v2')")
    for status, prev in (("rendered", None), ("failed", "sha256:r1")):
        c.execute("INSERT INTO openprose.receipt (run_id, node, contract_fingerprint, wake, input_fingerprints, fingerprints, "
                  "semantic_diff, prev, status, cost, sig) VALUES (%s, 'brief', 'cf', '{\"source\": \"input\"}', '[]', "
                  "'{\"@atomic\": \"t\"}', %s, %s, %s, '{\"tokens\": 300, \"model\": \"m\"}', '{\"scheme\": \"none\"}')",
                  (RUN, json.dumps({"failure_reason": "validator rejected"} if status == "failed" else {}), prev, status))
    c.execute("INSERT INTO openprose.x_metrics (run_id, execution_id, metric_name, metric_value) VALUES"
              " (%s, %s, 'input_tokens', 1200), (%s, %s, 'input_tokens', 300), (%s, %s, 'cost_usd', 0.42)",
              (RUN, ids["research"], RUN, ids["inner"], RUN, ids["inner"]))
    vm.end("failed")
    vm.close()
    return ids


# -- the spec's schema, as a VM really creates it ----------------------------------------------------
def test_a_vm_run_reads_with_the_same_views_as_sqlite(db, sources):
    ids = write_full_run(db)
    source = sources(db)
    [row] = source.list_runs()
    assert row.id == RUN and row.status is RunStatus.FAILED and row.location == f"postgres {source.label}"
    run = source.open(row.path)
    texts = [t.text for t in run.trace]
    assert texts[0] == "let research = session: researcher"
    assert '  let result = session "Process chunk"' in texts  # parent_id nesting
    assert '    a = session "Branch a"' in texts
    assert run.trace[-1].attempt == 2 and run.trace[-1].max_attempts == 3
    assert "statement 8 failed: Connection timeout after 30s" in run.status_reason
    kinds = {e.kind for e in run.events}
    assert {EventKind.PARALLEL_STARTED, EventKind.PARALLEL_JOINED, EventKind.LOOP_ITERATION, EventKind.RETRY,
            EventKind.FRAME_PUSHED, EventKind.STATEMENT_FAILED, EventKind.RECEIPT_RENDERED, EventKind.RECEIPT_FAILED} <= kinds
    # Bindings by scope, values read on demand with the spec's scope resolution.
    scoped = {(b.name, b.execution_id) for b in run.bindings}
    assert scoped == {("research", None), ("result", ids["block"]), ("research", ids["block"])}
    backend = PostgresBackend()
    research = next(b for b in run.bindings if b.name == "research" and b.execution_id is None)
    assert backend.read_value(run, research).text == "root research value"
    assert source.read_value(run, "research", ids["inner"])[0] == "shadowing research"  # the most local scope
    assert source.read_value(run, "research", ids["research"])[0] == "root research value"
    # Agents: execution-scoped with segments, and project-scoped.
    agents = {a.name: a for a in run.agents}
    assert agents["captain"].scope == "execution" and [s.number for s in agents["captain"].segments] == [1, 2]
    assert agents["captain"].details["memory"] == "captain memory"
    assert agents["advisor"].scope == "project"
    assert [i.import_handle for i in run.imports] == ["research"] and run.imports[0].program == "github:acme/research"
    # Receipts and world-model versions.
    assert [r.status for r in run.receipts] == ["rendered", "failed"]
    [node] = run.nodes
    assert node.name == "brief" and node.version == "sha256:v2" and node.receipts == 2
    assert node.failure_reason == "validator rejected"
    world = next(s for s in run.sections if s.title == "World model")
    assert "sha256:v2 (published)" in world.text and "sha256:v1" in world.text
    # x_* tables are viewable; token and cost metrics summed.
    assert run.tables == ["x_metrics"]
    cols, rows = backend.read_table(run, "x_metrics")
    assert "metric_name" in cols and len(rows) == 3
    assert run.metrics["input_tokens"] == 1500 and run.metrics["cost_usd"] == pytest.approx(0.42)
    assert any(s.title == "Metrics" for s in run.sections)
    assert run.warnings == []


def test_show_and_runs_accept_a_url_and_never_print_it(db, capsys, cluster):
    write_full_run(db)
    assert main(["runs", db, "--json"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out)
    assert rows[0]["id"] == RUN and rows[0]["location"].startswith("postgres ")
    assert main(["show", f"{db}#{RUN}", "--json"]) == 0
    out = capsys.readouterr().out
    detail = json.loads(out)
    assert detail["id"] == RUN and any(e["kind"] == "loop_iteration" for e in detail["events"])
    for text in (out, json.dumps(rows)):
        assert cluster.password not in text and db not in text
    assert main(["show", f"{db}#no-such-run"]) == 1
    err = capsys.readouterr().err
    assert "no run 'no-such-run'" in err and cluster.password not in err


def test_the_url_is_found_as_the_vm_finds_it(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    monkeypatch.delenv("OPENPROSE_POSTGRES_URL", raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:pw@fallback/db2")
    assert find_url(project).label == "db2@fallback"
    monkeypatch.setenv("OPENPROSE_POSTGRES_URL", "postgresql://u:pw@envhost:5433/envdb")
    assert find_url(project).label == "envdb@envhost:5433"
    (project / ".env").write_text("OPENPROSE_POSTGRES_URL=postgresql://u:s3cret@dotenv/prose\n")
    found = find_url(project / "src")
    assert found.label == "prose@dotenv" and "s3cret" not in repr(found) and "s3cret" not in str(found)


# -- schemas that do not match the spec ------------------------------------------------------------------
def test_missing_tables_and_columns_degrade_with_a_note(cluster, sources):
    name = "t_" + secrets.token_hex(4)
    cluster.create_db(name)
    url = cluster.url(db=name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA openprose; CREATE TABLE openprose.run (id TEXT PRIMARY KEY, status TEXT);"
                     "CREATE TABLE openprose.execution (id SERIAL PRIMARY KEY, run_id TEXT, statement_text TEXT, status TEXT);"
                     "INSERT INTO openprose.run VALUES ('r1', 'running');"
                     "INSERT INTO openprose.execution (run_id, statement_text, status) VALUES ('r1', 'session \"x\"', 'executing')")
    source = sources(url)
    [row] = source.list_runs()
    run = source.open(row.path)
    assert [t.text for t in run.trace] == ['session "x"']
    notes = " ".join(run.warnings)
    assert "lacks column(s) statement_index" in notes and "parent_id" in notes and "metadata" in notes
    assert "no 'bindings' table" in notes
    assert run.receipts == [] and run.nodes == [] and run.tables == []
    assert source.poll() == {}  # polling a reduced schema works too


def test_an_empty_database_lists_no_runs(cluster, sources):
    name = "t_" + secrets.token_hex(4)
    cluster.create_db(name)
    assert sources(cluster.url(db=name)).list_runs() == []


# -- read-only, always ---------------------------------------------------------------------------------------
def test_a_select_only_role_is_enough_and_nothing_can_write(db, cluster, sources):
    write_full_run(db)
    role, pw = "reader_" + secrets.token_hex(3), secrets.token_urlsafe(10)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{pw}'")
        conn.execute(f"GRANT USAGE ON SCHEMA openprose TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA openprose TO {role}")
    dbname = db.rsplit("/", 1)[1]
    source = sources(cluster.url(role, pw, dbname))
    [row] = source.list_runs()
    run = source.open(row.path)
    assert len(run.trace) == 8 and run.bindings and run.receipts and run.warnings == []
    assert source.poll() == {}
    # Even the superuser's session cannot write: it is read-only from the first statement.
    admin = sources(db)
    with pytest.raises(QueryFailed, match="read-only transaction"):
        admin.reader.rows("CREATE TABLE openprose.x_evil (id int)")
    with pytest.raises(QueryFailed, match="read-only transaction"):
        admin.reader.rows("DELETE FROM openprose.run")


def test_hot_queries_use_indexes(db, sources):
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("INSERT INTO openprose.run (id) SELECT 'run-' || g FROM generate_series(1, 300) g")
        conn.execute("INSERT INTO openprose.execution (run_id, statement_index, statement_text, status) "
                     "SELECT 'run-' || (g % 300 + 1), g, 'session', 'completed' FROM generate_series(1, 60000) g")
        conn.execute("ANALYZE")
    source = sources(db)
    reader = source.reader
    execution = ExecutionReader(reader, "run-7", reader.tables()["execution"])
    max_id = reader.rows("SELECT max(id) FROM openprose.execution")[0][0]
    for name, (sql, params) in execution.hot_queries(after=max_id - 5).items():
        plan = "\n".join(r[0] for r in reader.rows("EXPLAIN " + sql, params))
        assert "Index" in plan and "Seq Scan" not in plan, f"{name} does not use an index:\n{plan}"


# -- live --------------------------------------------------------------------------------------------------------
async def test_the_explorer_follows_a_vm_committing_rows(db, sources, tmp_path):
    vm = VmWriter(db, RUN)
    vm.start()
    first = vm.statement('session "first"')
    for n in range(80):  # more rows than the screen has lines: new ones show only if the view follows
        vm.finish(vm.statement(f'session "earlier {n}"'))
    source = sources(db, poll_interval=0.1)
    app = ProseTUI(tmp_path, watch=True, sources=[source])
    stop = threading.Event()

    def vm_process() -> None:  # the VM, committing while the explorer watches
        writer = VmWriter(db, RUN)
        writer.index = 81
        writer.finish(first)
        for n in range(3):
            eid = writer.statement(f'session "step {n}"')
            writer.finish(eid)
        writer.statement('session "the newest statement"')
        writer.bind("answer", "forty-two")
        writer.close()
        stop.set()

    async with app.run_test(size=(200, 40)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.trace,
                         what="the database run on screen", turns=1500)
        assert explorer.current_run.location == f"postgres {source.label}"
        thread = threading.Thread(target=vm_process)
        thread.start()

        def trace_text() -> str:
            from prose_tui.tui.widgets.trace_view import TraceView

            view = explorer.query_one(TraceView)
            return "\n".join("".join(seg.text for seg in view.render_line(y)) for y in range(view.size.height))

        await wait_until(pilot, lambda: "the newest statement" in trace_text(), what="the new row on screen", turns=1500)
        await wait_until(pilot, lambda: any(b.name == "answer" for b in explorer.current_run.bindings),
                         what="the new binding", turns=1500)
        thread.join()
        assert 'session "first"' not in trace_text()  # scrolled to follow the newest row
        await wait_until(pilot, lambda: f"connected to {source.label}" in screen_text(app), what="the database in the status line")
    vm.close()


def screen_text(app) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


def test_the_server_restarted_mid_watch(db, cluster, sources):
    vm = VmWriter(db, RUN)
    vm.start()
    vm.statement('session "before"')
    source = sources(db)
    [row] = source.list_runs()
    run = source.open(row.path)
    assert source.poll() == {}
    cluster.stop()
    try:
        delta = wait_for(lambda: source.poll().get(run.path), "the lost connection to be noticed")
        assert delta.status and source.label in run.status_reason
        assert "connect" in run.status_reason and cluster.password not in run.status_reason
        assert "reconnecting" in source.state or "cannot connect" in source.state
    finally:
        cluster.start()
    vm = VmWriter(db, RUN)
    vm.index = 1
    vm.statement('session "after the restart"')
    wait_for(lambda: source.poll() and any("after the restart" in t.text for t in run.trace), "rows after the restart")
    assert "(reconnected)" in source.state and run.status_reason == ""
    assert [t.text for t in run.trace] == ['session "before"', 'session "after the restart"']
    vm.close()


def test_a_wrong_password_says_so_without_the_url_or_password(db, cluster, capsys):
    wrong = "Wr0ng-" + secrets.token_hex(6)
    url = db.replace(cluster.password, wrong)
    source = PostgresSource(DatabaseUrl(url))
    with pytest.raises(DatabaseUnavailable) as info:
        source.list_runs()
    message = str(info.value)
    assert "password authentication failed" in message and source.label in message
    assert wrong not in message and url not in message and cluster.password not in message
    assert main(["runs", url]) == 1
    err = capsys.readouterr().err
    assert "password authentication failed" in err and wrong not in err and url not in err


# -- hostile values ---------------------------------------------------------------------------------------------
HOSTILE = "\x1b[31mRED\x1b[0m [bold]markup[/bold] [link=http://x]y[/link] \x1b]0;pwned\x07"


async def test_a_hostile_value_in_every_text_column_is_shown_literally(db, sources, tmp_path):
    with psycopg.connect(db, autocommit=True) as c:
        c.execute("INSERT INTO openprose.run (id, root_path, root_source) VALUES (%s, %s, %s)", (RUN, HOSTILE, HOSTILE))
        eid = c.execute("INSERT INTO openprose.execution (run_id, statement_index, statement_text, status, error_message, metadata)"
                        " VALUES (%s, 1, %s, 'executing', %s, %s) RETURNING id",
                        (RUN, HOSTILE, HOSTILE, json.dumps({"block": HOSTILE, "branch": HOSTILE}))).fetchone()[0]
        c.execute("INSERT INTO openprose.bindings (name, run_id, binding, value, source_statement, attachment_path) "
                  "VALUES (%s, %s, 'let', %s, %s, %s)", ("hostile", RUN, HOSTILE, HOSTILE, HOSTILE))
        c.execute("INSERT INTO openprose.agents (name, run_id, scope, memory) VALUES (%s, %s, 'execution', %s)", (HOSTILE, RUN, HOSTILE))
        c.execute("INSERT INTO openprose.agent_segments (agent_name, run_id, segment_number, prompt, summary) VALUES (%s, %s, 1, %s, %s)",
                  (HOSTILE, RUN, HOSTILE, HOSTILE))
        c.execute("INSERT INTO openprose.imports (alias, run_id, source_ref) VALUES (%s, %s, %s)", (HOSTILE, RUN, HOSTILE))
        c.execute("INSERT INTO openprose.x_metrics (run_id, execution_id, metric_name, metric_value) VALUES (%s, %s, %s, 1)",
                  (RUN, eid, HOSTILE))
    source = sources(db)
    [row] = source.list_runs()
    run = source.open(row.path)
    everything = json.dumps([run.program, [t.text for t in run.trace], [t.note for t in run.trace],
                             [b.name for b in run.bindings], [b.source for b in run.bindings],
                             [a.name for a in run.agents], [a.details for a in run.agents],
                             [i.program for i in run.imports], [s.text for s in run.sections], [e.text for e in run.events]])
    assert "\x1b" not in everything and "\x07" not in everything
    assert "␛[31mRED␛[0m [bold]markup[/bold]" in run.trace[0].text
    assert "\x1b" not in source.read_value(run, "hostile", None)[0]
    app = ProseTUI(tmp_path, watch=False, sources=[source])
    async with app.run_test(size=(160, 45)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.trace,
                         what="the hostile run on screen", turns=1500)
        await pilot.pause()
        screen = screen_text(app)
        assert "[bold]markup[/bold]" in screen  # Rich markup shown as written, not applied
        for line in screen.splitlines():
            assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in line), repr(line)


def test_the_run_list_follows_new_changed_and_removed_runs_reading_only_those(db, sources, monkeypatch):
    hostile = "r\x1b[31m-red"  # its Run.id is made safe to show; the database's id still matches
    with psycopg.connect(db, autocommit=True) as vm:
        for n, run_id in enumerate([f"r{n:03d}" for n in range(40)] + [hostile]):
            vm.execute("INSERT INTO openprose.run (id, root_path, status, started_at) "
                       "VALUES (%s, 'p.prose.md', 'completed', now() - make_interval(mins => %s))", (run_id, n + 1))
    source = sources(db)
    assert len(source.list_runs()) == 41
    assert source.poll_runs(force=True).empty  # nothing moved: one signature query
    with psycopg.connect(db, autocommit=True) as vm:
        vm.execute("INSERT INTO openprose.run (id, root_path, status) VALUES ('new', 'q.prose.md', 'running')")
        vm.execute("UPDATE openprose.run SET status = 'failed' WHERE id = 'r007'")
        vm.execute("DELETE FROM openprose.run WHERE id = 'r010'")
    read: list = []
    read_list = source._read_list

    def spy(cols, ids=None):
        read.append(ids)
        return read_list(cols, ids)

    monkeypatch.setattr(source, "_read_list", spy)
    change = source.poll_runs(force=True)
    assert [r.id for r in change.added] == ["new"]
    assert [(r.id, r.status) for r in change.changed] == [("r007", RunStatus.FAILED)]
    assert [source.run_id_of(p) for p in change.removed] == ["r010"]
    assert [sorted(ids) for ids in read] == [["new", "r007"]]  # the new, the changed and the running rows only
    assert set(source.summaries) == {f"r{n:03d}" for n in range(40) if n != 10} | {hostile, "new"}
    assert source.summaries["r007"].status is RunStatus.FAILED


def test_listen_wakes_the_poller_on_notify(db, sources):
    VmWriter(db, RUN).start()
    source = sources(db, poll_interval=60.0, listen="openprose_changes")
    source.list_runs()  # starts the listener
    with psycopg.connect(db, autocommit=True) as vm:
        def notified() -> bool:
            vm.execute("NOTIFY openprose_changes")
            return source.wait(0.2)  # far shorter than the 60 s poll: only a notification ends it early

        assert wait_for(notified, "a NOTIFY to wake the poller")


@pytest.mark.parametrize("url", ["postgresql://u:s3cr%40t@127.0.0.1:notaport/db", "postgresql://u:s3cr3t@127.0.0.1:1/db?bogus=1",
                                 "postgresql://u:s3cr3t@127.0.0.1:1/db", "postgres://u:s3cr3t@[::1/db"])
def test_a_malformed_or_unreachable_url_never_appears_in_the_message(url):
    with pytest.raises(DatabaseUnavailable) as info:
        PostgresSource(DatabaseUrl(url)).list_runs()
    message = str(info.value)
    assert message.startswith("cannot connect to PostgreSQL ") and "s3cr" not in message and url not in message
