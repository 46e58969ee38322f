"""The SQLite backend (seeds/sqlite.md) read as a Run: the facts a user checks, and read-only safety."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlite_fixture import RUN_ID, build_sqlite_run

from prose_tui.backends.sqlite.run import (
    SqliteWatch,
    execution_count,
    execution_page,
    is_sqlite_run,
    list_extension_tables,
    load_sqlite_run,
    metrics_summary,
    read_sqlite_binding_value,
    read_table_page,
)
from prose_tui.model import Backend, EventKind, RunFormat, RunStatus, StatementState


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return build_sqlite_run(tmp_path)


def tree_digest(root: Path, *, skip_shm_content: bool = False) -> dict[str, str]:
    """Every file under ``root`` with a hash of its bytes (``-shm`` content optionally ignored)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = str(p.relative_to(root))
            if skip_shm_content and rel.endswith("-shm"):
                out[rel] = "present"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --- detection and the run row -------------------------------------------------------------


def test_detects_sqlite_runs_by_content(run_dir: Path, tmp_path: Path) -> None:
    assert is_sqlite_run(run_dir)
    assert is_sqlite_run(run_dir / "state.db")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "state.db").write_text("not a database")
    assert not is_sqlite_run(fake)
    assert not is_sqlite_run(tmp_path / "missing")


def test_run_row_gives_id_program_status_and_times(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    assert run.backend is Backend.SQLITE and run.format is RunFormat.SQLITE
    assert run.id == RUN_ID
    assert run.program == "program.prose"
    assert run.program_path == run_dir / "program.prose"
    assert run.status is RunStatus.RUNNING
    assert run.started is not None and run.started.isoformat() == "2026-01-16T14:30:52"
    assert run.state_file == run_dir / "state.db"
    assert run.header["execution_rows"] == "13"
    assert run.warnings == []


def test_failed_run_names_the_failing_statement_and_its_error(tmp_path: Path) -> None:
    run = load_sqlite_run(build_sqlite_run(tmp_path, failed=True))
    assert run.status is RunStatus.FAILED
    assert "statement 11" in run.status_reason and "Context window exceeded" in run.status_reason
    last = run.trace[-1]
    assert last.state is StatementState.FAILED and "Context window exceeded" in (last.note or "")
    failed = [e for e in run.events if e.kind is EventKind.STATEMENT_FAILED]
    assert failed[-1].execution_id == 13


def test_retry_after_failure_is_visible(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    first, second = run.trace[7], run.trace[8]
    assert first.state is StatementState.FAILED and "Connection timeout after 30s" in (first.note or "")
    assert (first.attempt, first.max_attempts) == (1, 3)
    assert second.state is StatementState.COMPLETE and second.attempt == 2
    assert [e.status for e in run.events if e.kind is EventKind.RETRY] == ["1/3", "2/3"]
    assert "recovered after" in run.status_reason


def test_parallel_and_loop_metadata_become_events(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    started = [e for e in run.events if e.kind is EventKind.PARALLEL_STARTED]
    assert len(started) == 1 and started[0].name == "p1" and "a, b" in started[0].text
    assert any(e.kind is EventKind.PARALLEL_JOINED for e in run.events)
    branches = {e.name for e in run.events if e.kind is EventKind.STATEMENT_COMPLETED and e.execution_id in (3, 4)}
    assert branches == {"a", "b"}
    loops = [e.status for e in run.events if e.kind is EventKind.LOOP_ITERATION]
    assert loops == ["2/3", "1", "2"]
    assert [e.seq for e in run.events] == list(range(len(run.events)))


def test_trace_nests_children_under_their_parent(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    assert [t.indent for t in run.trace] == [0, 0, 2, 2, 0, 2, 2, 0, 0, 0, 2, 2, 4]
    assert run.executing is not None and run.executing.step == "11"


def test_call_stack_walks_parent_id_through_open_blocks(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    stack = [(f.execution_id, f.block, f.depth, f.status, f.parent_id) for f in run.call_stack]
    assert stack == [(12, "process", 2, "executing", 10), (10, "process", 1, "waiting", None)]
    assert run.binding_named("parts", 12).execution_id == 12


def test_binding_values_resolve_by_scope(run_dir: Path) -> None:
    assert read_sqlite_binding_value(run_dir, "parts", 13) == "inner parts: [q0, q1]"
    assert read_sqlite_binding_value(run_dir, "parts", 11) == "outer parts: [p0, p1, p2]"
    assert read_sqlite_binding_value(run_dir, "research", 13).startswith("AI safety research")
    assert read_sqlite_binding_value(run_dir, "parts") == ""
    assert read_sqlite_binding_value(run_dir, "nothing", 13) == ""


def test_attachment_values_are_read_from_attachments(run_dir: Path) -> None:
    assert read_sqlite_binding_value(run_dir, "full_report").startswith("# Full report")
    (run_dir / "attachments" / "full_report.md").unlink()
    value = read_sqlite_binding_value(run_dir, "full_report")
    assert "see attachment" in value and "not found" in value


def test_bindings_keep_metadata_and_extra_columns(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    names = [(b.name, b.execution_id) for b in run.bindings]
    assert ("parts", 10) in names and ("parts", 12) in names and ("research", None) in names
    research = next(b for b in run.bindings if b.name == "research")
    assert research.path == run_dir / "state.db"
    assert research.kind == "let" and research.source == "let research = session: researcher"
    assert research.fields["token_count"] == "412"
    assert research.bytes == len("AI safety research covers alignment, robustness...")
    report = next(b for b in run.bindings if b.name == "full_report")
    assert report.fields["attachment_path"] == "attachments/full_report.md"


def test_agents_segments_and_shared_agent_databases(run_dir: Path, tmp_path: Path, _isolated_user_dirs: Path) -> None:
    user_db = _isolated_user_dirs / ".prose" / "agents.db"
    user_db.parent.mkdir(parents=True)
    with sqlite3.connect(user_db) as conn:
        conn.execute("CREATE TABLE agents (name TEXT PRIMARY KEY, scope TEXT, memory TEXT)")
        conn.execute("INSERT INTO agents VALUES ('mentor', NULL, 'Across projects.')")
    run = load_sqlite_run(run_dir)
    by_name = {a.name: a for a in run.agents}
    captain = by_name["captain"]
    assert captain.scope == "execution" and captain.details["memory"].startswith("Remembers")
    assert captain.details["model"] == "opus"
    assert [(s.number, s.prompt) for s in captain.segments] == [(1, "Plan the research"), (2, "Review the synthesis")]
    assert captain.details["segment_summary_2"] == "Asked for one more iteration."
    assert by_name["librarian"].scope == "project" and by_name["librarian"].path == tmp_path / ".prose" / "agents.db"
    assert by_name["mentor"].scope == "user"


def test_imports_are_child_runs(run_dir: Path) -> None:
    run = load_sqlite_run(run_dir)
    (child,) = run.imports
    assert child.import_handle == "research" and child.program == "@alice/research"
    assert child.header["outputs_schema"] == '["findings", "sources"]'
    assert [b.name for b in child.bindings] == ["research.findings"]


def test_metrics_are_summed_per_run_and_per_statement(run_dir: Path) -> None:
    m = metrics_summary(run_dir)
    assert m["tables"] == ["x_metrics"]
    assert m["run"]["input_tokens"] == 2810 and m["run"]["output_tokens"] == 300
    assert m["run"]["cost_usd"] == pytest.approx(0.027)
    assert m["by_execution"][1] == {"input_tokens": 1200, "output_tokens": 300, "cost_usd": pytest.approx(0.012)}
    assert m["statements"][3] == 'a = session "Analyze risk A"'


def test_extension_tables_are_listed_and_paged(run_dir: Path) -> None:
    assert list_extension_tables(run_dir) == ["x_metrics"]
    cols, rows = read_table_page(run_dir, "x_metrics", 1, 2)
    assert cols[:3] == ["execution_id", "metric_name", "metric_value"]
    assert [r[:2] for r in rows] == [(1, "output_tokens"), (1, "cost_usd")]
    assert read_table_page(run_dir, 'x_metrics"; DROP TABLE run; --', 0, 5) == ([], [])


def test_paging_and_bounded_window(run_dir: Path) -> None:
    assert execution_count(run_dir) == 13
    assert [r.id for r in execution_page(run_dir, 10, 5)] == [11, 12, 13]
    assert execution_page(run_dir, 20, 5) == []
    run = load_sqlite_run(run_dir, window=5)
    assert [t.line for t in run.trace] == [9, 10, 11, 12, 13]
    assert run.header["execution_window"] == "9-13"
    assert [f.execution_id for f in run.call_stack] == [12, 10]


# --- tolerance --------------------------------------------------------------------------------


def test_missing_tables_and_columns_degrade_with_warnings(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    with sqlite3.connect(run_dir / "state.db") as conn:
        conn.execute("CREATE TABLE execution (id INTEGER PRIMARY KEY, statement_text TEXT, status TEXT, extra_col TEXT)")
        conn.execute("INSERT INTO execution VALUES (1, 'session \"A\"', 'completed', 'kept')")
        conn.execute("INSERT INTO execution VALUES (2, 'session \"B\"', 'executing', NULL)")
    run = load_sqlite_run(run_dir)
    text = " ".join(run.warnings)
    assert "no 'run' table" in text and "no 'bindings' table" in text and "parent_id" in text
    assert run.status is RunStatus.RUNNING
    assert len(run.trace) == 2
    assert execution_page(run_dir, 0, 1)[0].extra == {"extra_col": "kept"}


@pytest.mark.parametrize("content", [b"plain text, not sqlite", b"SQLite format 3\x00" + b"\xff" * 200])
def test_bad_files_give_a_warning_not_an_exception(tmp_path: Path, content: bytes) -> None:
    run_dir = tmp_path / "bad"
    run_dir.mkdir()
    (run_dir / "state.db").write_bytes(content)
    before = tree_digest(run_dir)
    run = load_sqlite_run(run_dir)
    assert run.warnings and run.warnings[0].endswith(".")
    assert run.trace == [] and run.backend is Backend.SQLITE
    assert execution_page(run_dir, 0, 10) == [] and metrics_summary(run_dir)["run"] == {}
    assert read_sqlite_binding_value(run_dir, "x").startswith("[")
    assert tree_digest(run_dir) == before


# --- read-only guarantees -----------------------------------------------------------------------


def _read_everything(run_dir: Path) -> None:
    load_sqlite_run(run_dir)
    execution_page(run_dir, 0, 5)
    read_sqlite_binding_value(run_dir, "parts", 13)
    metrics_summary(run_dir)
    read_table_page(run_dir, "x_metrics", 0, 5)
    with SqliteWatch(run_dir) as watch:
        watch.data_version()


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_reading_leaves_the_tree_byte_identical(tmp_path: Path, journal_mode: str) -> None:
    run_dir = build_sqlite_run(tmp_path, journal_mode=journal_mode)
    before = tree_digest(tmp_path)
    assert not any(name.endswith(("-wal", "-shm", "-journal")) for name in before)
    _read_everything(run_dir)
    assert tree_digest(tmp_path) == before


def test_reading_while_a_wal_writer_holds_a_transaction(tmp_path: Path) -> None:
    run_dir = build_sqlite_run(tmp_path, journal_mode="wal")
    writer = sqlite3.connect(run_dir / "state.db", isolation_level=None)
    try:
        writer.execute("UPDATE run SET updated_at = '2026-01-16 14:42:00'")  # committed: lands in -wal
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE run SET status = 'completed'")  # not committed
        names_before = set(tree_digest(tmp_path))
        before = tree_digest(tmp_path, skip_shm_content=True)
        run = load_sqlite_run(run_dir)
        assert run.status is RunStatus.RUNNING  # the uncommitted change is not visible
        assert run.header["updated_at"] == "2026-01-16 14:42:00"  # the committed one in -wal is
        assert run.header["open_mode"] == "ro"
        _read_everything(run_dir)
        # -shm is SQLite's shared-memory index: readers may record read marks in it (see sqlite_open).
        assert tree_digest(tmp_path, skip_shm_content=True) == before
        assert set(tree_digest(tmp_path)) == names_before
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_reading_while_a_rollback_writer_holds_a_transaction(tmp_path: Path) -> None:
    run_dir = build_sqlite_run(tmp_path)
    writer = sqlite3.connect(run_dir / "state.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE run SET status = 'completed'")
        before = tree_digest(tmp_path)  # includes the writer's -journal
        run = load_sqlite_run(run_dir)
        assert run.status is RunStatus.RUNNING and run.warnings == []
        assert tree_digest(tmp_path) == before
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_an_exclusively_locked_database_is_a_warning(tmp_path: Path) -> None:
    run_dir = build_sqlite_run(tmp_path)
    writer = sqlite3.connect(run_dir / "state.db", isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        run = load_sqlite_run(run_dir)
        assert any("locked" in w for w in run.warnings)
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_wal_left_without_shm_is_read_from_a_private_copy(tmp_path: Path) -> None:
    src = build_sqlite_run(tmp_path / "src", journal_mode="wal")
    writer = sqlite3.connect(src / "state.db", isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE run SET status = 'completed'")
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copyfile(src / "state.db", crashed / "state.db")
    shutil.copyfile(src / "state.db-wal", crashed / "state.db-wal")
    writer.close()
    before = tree_digest(crashed)
    run = load_sqlite_run(crashed)
    assert run.status is RunStatus.COMPLETED
    assert run.header["open_mode"] == "copy" and any("-shm" in w for w in run.warnings)
    assert tree_digest(crashed) == before


# --- live ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_watch_sees_a_commit_from_another_writer(tmp_path: Path, journal_mode: str) -> None:
    run_dir = build_sqlite_run(tmp_path, journal_mode=journal_mode)
    with SqliteWatch(run_dir) as watch:
        assert watch.watch_paths() == [run_dir / "state.db", run_dir / "state.db-wal"]
        first = watch.data_version()
        assert watch.data_version() == first

        def write() -> None:
            with sqlite3.connect(run_dir / "state.db") as conn:
                conn.execute(
                    "INSERT INTO execution (statement_index, statement_text, status, parent_id) "
                    "VALUES (12, 'session \"Merge\"', 'executing', 12)"
                )
            conn.close()

        t = threading.Thread(target=write)
        t.start()
        t.join()
        assert watch.data_version() != first
    run = load_sqlite_run(run_dir)
    assert run.trace[-1].text.strip() == 'session "Merge"'
    assert run.header["execution_rows"] == "14"


def test_hot_journal_from_a_crashed_writer_is_rolled_back_in_a_private_copy(tmp_path: Path) -> None:
    src = build_sqlite_run(tmp_path / "src")
    writer = sqlite3.connect(src / "state.db", isolation_level=None)
    writer.execute("PRAGMA cache_size=1")  # make the writer spill changes into state.db before commit
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE run SET status = 'completed'")
    for _ in range(500):
        writer.execute("INSERT INTO execution (statement_text) VALUES (?)", ("x" * 500,))
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copyfile(src / "state.db", crashed / "state.db")
    shutil.copyfile(src / "state.db-journal", crashed / "state.db-journal")
    writer.execute("ROLLBACK")
    writer.close()
    before = tree_digest(crashed)
    run = load_sqlite_run(crashed)
    assert any("leftover rollback journal" in w for w in run.warnings)
    assert run.status is RunStatus.RUNNING and run.header["open_mode"] == "copy"  # the half-written change undone
    assert int(run.header["execution_rows"]) < 500
    assert tree_digest(crashed) == before


def test_a_schema_without_ids_or_parents_still_loads(tmp_path: Path) -> None:
    run_dir = tmp_path / "odd"
    run_dir.mkdir()
    with sqlite3.connect(run_dir / "state.db") as conn:
        conn.executescript(
            """CREATE TABLE run (status TEXT);
            INSERT INTO run VALUES ('COMPLETED');
            CREATE TABLE execution (statement_text TEXT, status TEXT, metadata TEXT);
            INSERT INTO execution VALUES ('session "A"', 'completed', 'not json'), ('session "B"', 'failed', '[1, 2]');
            CREATE TABLE bindings (name TEXT, value BLOB);
            INSERT INTO bindings VALUES ('blob', X'00FF'), (NULL, 'nameless');
            CREATE TABLE agents (name TEXT);
            INSERT INTO agents VALUES ('solo');
            CREATE TABLE x_usage (tokens INTEGER, cost_usd TEXT, note TEXT);
            INSERT INTO x_usage VALUES (10, 'n/a', 'x'), (5, '0.5', 'y');"""
        )
    run = load_sqlite_run(run_dir)
    assert run.status is RunStatus.COMPLETED  # the run row says so, whatever the last statement did
    assert [t.state for t in run.trace] == [StatementState.COMPLETE, StatementState.FAILED]
    assert [r.id for r in execution_page(run_dir, 0, 5)] == [1, 2]
    assert "could not be read completely" not in " ".join(run.warnings)
    assert [b.name for b in run.bindings] == ["blob"]
    assert "1 binding row(s) have no name and are not listed." in run.warnings
    assert [a.name for a in run.agents] == ["solo"]
    assert metrics_summary(run_dir)["run"]["tokens"] == 15
    assert read_sqlite_binding_value(run_dir, "blob") == "\x00\ufffd"


def test_imported_program_folders_with_their_own_state_db_are_child_runs(run_dir: Path) -> None:
    child_dir = run_dir / "imports" / "research--alice-research"
    child_dir.mkdir(parents=True)
    shutil.copyfile(run_dir / "state.db", child_dir / "state.db")
    run = load_sqlite_run(run_dir)
    (child,) = run.imports
    assert child.import_handle == "research"
    assert child.header["source_url"] == "@alice/research"  # merged with the imports-table row
    assert len(child.trace) == 13 and child.path == child_dir
