"""SQLite run state as a :class:`~prose_tui.model.Run` (seeds/sqlite.md).

A run folder ``.prose/runs/{id}/`` holding ``state.db`` is read read-only (see
:mod:`.connect` for how, and why nothing is ever created beside the database). The
seed's schema is a minimum the VM extends freely, and its ``CREATE TABLE bindings`` cannot
even be created as written (FORMATS.md, Known defects), so every table and column is
looked up with ``PRAGMA table_info``: missing ones give a warning in ``Run.warnings``,
extra ones are kept (``Binding.fields``, ``Agent.details``, ``Run.header``).

Scale: a run may hold millions of ``execution`` rows. :func:`load_sqlite_run` reads only the
last ``window`` rows (plus counts and the open call stack); :func:`execution_page` pages
through the rest. Binding values are never loaded with the run:
:func:`read_sqlite_binding_value` reads one on demand.

Public API: :func:`is_sqlite_run`, :func:`load_sqlite_run`, :func:`execution_page`,
:func:`execution_count`, :func:`read_sqlite_binding_value`, :func:`resolve_binding_scope`,
:func:`list_extension_tables`, :func:`read_table_page`, :func:`metrics_summary`,
:class:`SqliteWatch`, :class:`ExecutionRow`.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

from prose_tui.backends.common.contained import run_root
from prose_tui.backends.common.text import visible_name
from prose_tui.backends.sqlite.connect import (
    OPEN_ATTEMPTS,
    DbUnavailable,
    db_path_for,
    is_transient,
    open_db,
    pin,
    retry_wait,
    unpin,
    is_sqlite_file,
    open_readonly,
    quiet,
    read_schema,
)
from prose_tui.backends.common.execution_rows import (
    EXECUTION_COLUMNS,
    ExecutionRow,
    events_for_rows,
    row_trace_line,
)
from prose_tui.backends.sqlite.rows import fetch_rows, latest_failure, open_call_stack, row_depths
from prose_tui.backends.sqlite.tables import (
    SqliteWatch,
    list_extension_tables,
    load_agents,
    load_bindings,
    metrics_summary,
    read_imports,
    read_run_row,
    read_table_page,
)
from prose_tui.backends.sqlite.values import (
    read_sqlite_binding_value,
    resolve_binding_scope,
)
from prose_tui.model import Backend, Run, RunFormat, RunStatus

__all__ = [
    "ExecutionRow",
    "SqliteWatch",
    "execution_count",
    "execution_page",
    "is_sqlite_run",
    "list_extension_tables",
    "load_sqlite_run",
    "metrics_summary",
    "read_sqlite_binding_value",
    "read_table_page",
    "resolve_binding_scope",
]

DEFAULT_WINDOW = 500
"""How many of the most recent ``execution`` rows :func:`load_sqlite_run` loads."""

RUN_COLUMNS = ["id", "program_path", "program_source", "started_at", "updated_at", "status", "state_mode"]

_RUN_STATUS = {
    "running": RunStatus.RUNNING,
    "executing": RunStatus.RUNNING,
    "in_progress": RunStatus.RUNNING,
    "completed": RunStatus.COMPLETED,
    "complete": RunStatus.COMPLETED,
    "done": RunStatus.COMPLETED,
    "success": RunStatus.COMPLETED,
    "succeeded": RunStatus.COMPLETED,
    "failed": RunStatus.FAILED,
    "error": RunStatus.FAILED,
    "errored": RunStatus.FAILED,
    "interrupted": RunStatus.INTERRUPTED,
    "aborted": RunStatus.INTERRUPTED,
    "cancelled": RunStatus.INTERRUPTED,
}


def is_sqlite_run(run_dir: Path) -> bool:
    """True when ``run_dir/state.db`` (or ``run_dir`` itself, if a file) is an SQLite database.

    Checks the 16-byte header only; never opens a connection and never raises.
    """
    try:
        return is_sqlite_file(db_path_for(Path(run_dir)))
    except OSError:
        return False


def _exec_key(cols: list[str]) -> str:
    return "id" if "id" in cols else "rowid"


@quiet(int)
def execution_count(run_dir: Path) -> int:
    """Number of rows in the ``execution`` table (0 when missing or unreadable)."""
    db, _ = open_readonly(db_path_for(Path(run_dir)))
    if db is None:
        return 0
    with db:
        schema = read_schema(db.conn)
        if "execution" not in schema:
            return 0
        return int(db.conn.execute("SELECT count(*) FROM execution").fetchone()[0])


@quiet(list)
def execution_page(run_dir: Path, offset: int, limit: int) -> list[ExecutionRow]:
    """Rows ``offset .. offset+limit-1`` of ``execution`` in id order (seeds/sqlite.md, Core Schema).

    ``offset`` is 0-based from the first row. When ids are dense (the usual
    ``AUTOINCREMENT`` case) the page is found by id range, so deep pages cost the same as
    the first. Returns ``[]`` for a missing table, a bad offset or an unreadable database.
    """
    if limit <= 0 or offset < 0:
        return []
    db, _ = open_readonly(db_path_for(Path(run_dir)))
    if db is None:
        return []
    with db:
        cols = read_schema(db.conn).get("execution")
        if cols is None:
            return []
        key = _exec_key(cols)
        lo, hi, count = db.conn.execute(f"SELECT min({key}), max({key}), count(*) FROM execution").fetchone()
        if count == 0:
            return []
        if lo is not None and hi is not None and hi - lo + 1 == count:
            where, params = f"WHERE {key} >= ? AND {key} < ?", (lo + offset, lo + offset + limit)
            return fetch_rows(db.conn, cols, where + f" ORDER BY {key}", params)
        return fetch_rows(db.conn, cols, f"ORDER BY {key} LIMIT ? OFFSET ?", (limit, offset))


def load_sqlite_run(run_dir: Path, *, now: datetime | None = None, window: int = DEFAULT_WINDOW,
                    keep: dict | None = None) -> Run:
    """Read a SQLite run into a :class:`Run` (backend ``SQLITE``, format ``SQLITE``).

    ``run_dir`` is the run folder (``.prose/runs/{id}/``) or the ``.db`` file itself.
    Loads the ``run`` row (id, program, status, times; seeds/sqlite.md, Core Schema), the
    last ``window`` ``execution`` rows as ``trace`` and ``events`` (older rows through
    :func:`execution_page`), the open call stack (``parent_id`` chain of the latest
    executing row), binding metadata (values on demand, ``Binding.path`` is the db path),
    agents and segments (run, project ``.prose/agents.db`` and user ``~/.prose/agents.db``)
    and ``imports`` as child runs. ``Run.header`` gains ``execution_rows`` (total count),
    ``execution_window`` (``first-last`` ids loaded), ``bindings_rows`` and ``open_mode``.
    ``now`` is accepted for symmetry with other sources (staleness is not inferred).

    ``keep`` (a dict), when given, receives what a live tail needs to carry on from this
    read (``backends.sqlite.live``): ``cols``, ``key``, ``rows``, ``total``, ``depths``;
    and ``failed`` (the warning sentence) when the database could not be read whole for a
    transient reason (a writer's lock, a checkpoint): the caller may keep its last good run.

    A transient failure is tried again (``OPEN_ATTEMPTS`` in all, see ``connect``). Never
    raises: unreadable, locked or non-SQLite files give a run with a warning.
    """
    del now
    run_dir = Path(run_dir)
    dbp = db_path_for(run_dir)
    root = dbp.parent
    pins = []
    try:
        for attempt in range(OPEN_ATTEMPTS):
            run, failure, seen = _read_once(root, dbp, window)
            if failure is None or not failure.transient or attempt == OPEN_ATTEMPTS - 1:
                break
            pins.append(pin(dbp))  # a writer that came keeps its -wal/-shm for the next attempt
            retry_wait(attempt)
    finally:
        for key in pins:
            unpin(key)
    if failure is not None:
        run.warnings.append(failure.message)
    if keep is not None:
        keep.update(seen)
        if failure is not None and failure.transient:
            keep["failed"] = failure.message
    _load_import_folders(run, root, window)
    return run


def _read_once(root: Path, dbp: Path, window: int) -> tuple[Run, DbUnavailable | None, dict]:
    """One attempt at :func:`load_sqlite_run`: the run, why it could not be read whole (or
    ``None``) and what a live tail needs. Every query runs in one read transaction, so the
    run is one committed state of the database, not a mix of two."""
    run = Run(id=visible_name(root.name if dbp.name == "state.db" else dbp.stem), path=root,
              backend=Backend.SQLITE, format=RunFormat.SQLITE, root=run_root(root))
    run.state_file = dbp
    try:
        run.state_mtime = max(p.stat().st_mtime for p in (dbp, Path(f"{dbp}-wal")) if p.exists())
    except (ValueError, OSError):
        pass
    seen: dict = {}
    try:
        db = open_db(dbp)
    except DbUnavailable as exc:
        return run, exc, seen
    with db:
        run.warnings.extend(db.warnings)
        run.header["open_mode"] = db.mode
        try:
            db.conn.execute("BEGIN")
            try:
                _fill(db.conn, run, root, dbp, window, seen)
            finally:
                db.conn.execute("ROLLBACK")
            db.check()
        except DbUnavailable as exc:
            return run, exc, seen
        except sqlite3.Error as exc:
            return run, DbUnavailable(f"state.db could not be read completely: {exc}.", transient=is_transient(exc)), seen
        except Exception as exc:  # noqa: BLE001 - a bad database must never crash the app
            return run, DbUnavailable(f"state.db could not be read completely: {exc}.", transient=False), seen
    return run, None, seen


def _fill(conn, run: Run, root: Path, dbp: Path, window: int, keep: dict | None = None) -> None:
    schema = read_schema(conn)
    status_word = read_run_row(conn, schema, run, root)
    cols = schema.get("execution")
    rows: list[ExecutionRow] = []
    if cols is None:
        run.warnings.append("state.db has no 'execution' table: no trace or history.")
    else:
        missing = [c for c in EXECUTION_COLUMNS if c not in cols]
        if missing:
            run.warnings.append(f"table 'execution' lacks column(s) {', '.join(missing)}.")
        key = _exec_key(cols)
        total = conn.execute("SELECT count(*) FROM execution").fetchone()[0]
        rows = fetch_rows(conn, cols, f"ORDER BY {key} DESC LIMIT ?", (max(window, 0),))
        rows.reverse()
        run.header["execution_rows"] = str(total)
        if rows:
            run.header["execution_window"] = f"{rows[0].id}-{rows[-1].id}"
        known = {r.id: r for r in rows}
        depth = row_depths(conn, rows, known, key) if "parent_id" in cols else {}
        first_line = total - len(rows) + 1
        run.trace = [row_trace_line(r, first_line + i, depth.get(r.id, 0)) for i, r in enumerate(rows)]
        run.events = events_for_rows(rows, run.warnings)
        run.call_stack = open_call_stack(conn, cols, key, known)
        latest_failure(conn, cols, key, known, run)
        if keep is not None:
            keep.update(cols=cols, key=key, rows=rows, total=total, depths=depth)
    settle_status(run, status_word, (rows[-1].status or "") if rows else None)
    run.bindings = load_bindings(conn, schema, dbp, run.warnings)
    run.header["bindings_rows"] = str(len(run.bindings))
    run.agents = load_agents(conn, schema, dbp, "execution", run.warnings)
    _load_shared_agents(run, root)
    run.imports.extend(read_imports(conn, schema, run, dbp))


def settle_status(run: Run, status_word: str | None, last_row_status: str | None) -> None:
    """The run's status from the ``run`` row's word, else from its open call stack and last
    row (``last_row_status`` is ``None`` when the run has no rows, ``""`` for a row without one)."""
    run.status = _RUN_STATUS.get((status_word or "").strip().lower(), RunStatus.UNKNOWN)
    if status_word is None and last_row_status is not None:
        last = last_row_status.lower()
        run.status = RunStatus.RUNNING if run.call_stack else _RUN_STATUS.get(last, RunStatus.UNKNOWN)
    elif status_word is not None and run.status is RunStatus.UNKNOWN:
        warning = f"run status {status_word!r} is not one the seed names."
        if warning not in run.warnings:
            run.warnings.append(warning)
    if run.status is not RunStatus.FAILED and "failed_execution_id" in run.header and run.status_reason \
            and not run.status_reason.startswith("recovered after: "):
        run.status_reason = f"recovered after: {run.status_reason}"


def _load_shared_agents(run: Run, root: Path) -> None:
    """Project (``.prose/agents.db``) and user (``~/.prose/agents.db``) agents (seeds/sqlite.md, Project-Scoped and User-Scoped Agents)."""
    places: list[tuple[Path, str]] = []
    if root.parent.name == "runs":
        places.append((root.parent.parent / "agents.db", "project"))
    places.append((Path.home() / ".prose" / "agents.db", "user"))
    seen: set[Path] = set()
    for path, scope in places:
        if not path.is_file() or path.resolve() in seen:
            continue
        seen.add(path.resolve())
        db, warnings = open_readonly(path)
        run.warnings.extend(f"{scope} agents: {w}" for w in warnings)
        if db is None:
            continue
        with db:
            try:
                run.agents.extend(load_agents(db.conn, read_schema(db.conn), path, scope, run.warnings))
            except Exception as exc:  # noqa: BLE001
                run.warnings.append(f"{scope} agents in {path} could not be read: {exc}.")


def _load_import_folders(run: Run, root: Path, window: int) -> None:
    """Nested runs under ``imports/*/state.db`` are loaded as child runs (one level per call)."""
    folder = root / "imports"
    if not folder.is_dir():
        return
    for sub in sorted(folder.iterdir()):
        if sub.is_dir() and is_sqlite_run(sub):
            child = load_sqlite_run(sub, window=window)
            child.import_handle = sub.name.split("--", 1)[0]
            match = next((c for c in run.imports if c.import_handle == child.import_handle), None)
            if match is not None:
                child.header = {**match.header, **child.header}
                run.imports.remove(match)
            run.imports.append(child)
