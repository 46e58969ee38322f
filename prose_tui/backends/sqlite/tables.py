"""``run``, ``imports``, ``bindings``, ``agents``/``agent_segments``, ``x_*`` extension tables and change watching (seeds/sqlite.md).

Every function reads the schema that is there (``PRAGMA table_info``) rather than the seed's.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from prose_tui.backends.common.contained import OUTSIDE_RUN, inside, run_root
from prose_tui.backends.common.execution_rows import parse_time
from prose_tui.backends.common.text import visible, visible_name
from prose_tui.backends.sqlite.connect import (
    ReadOnlyDb,
    choose_mode,
    db_path_for,
    open_readonly,
    quiet,
    quote_ident,
    read_schema,
)
from prose_tui.model import Agent, Backend, Binding, Run, RunFormat, Segment

BINDING_COLUMNS = ["name", "execution_id", "kind", "value", "source_statement", "created_at", "updated_at", "attachment_path"]
MAX_BINDINGS = 20_000
"""Most binding rows loaded with a run (metadata only; values stay in the database)."""


def _s(value: object) -> str:
    """A cell as display text: bytes decoded with replacement, control characters made visible."""
    if isinstance(value, bytes):
        return visible(value.decode("utf-8", "replace"))
    return visible(str(value))


def read_run_row(conn, schema: dict[str, list[str]], run: Run, run_dir: Path) -> str | None:
    """Read the one ``run`` row (seeds/sqlite.md, Core Schema) onto ``run``: its id, program
    (``program_path``, linked only inside the run's project), ``started_at``/``updated_at``
    and every column in ``header`` (``program_source`` as its length). Returns the row's
    ``status`` word, ``None`` when there is none; a missing table or column is a warning."""
    cols = schema.get("run")
    if cols is None:
        run.warnings.append("state.db has no 'run' table: run id, program and status are inferred.")
        return None
    missing = [c for c in ("id", "status") if c not in cols]
    if missing:
        run.warnings.append(f"table 'run' lacks column(s) {', '.join(missing)}.")
    row = conn.execute(f"SELECT {', '.join(quote_ident(c) for c in cols)} FROM run LIMIT 1").fetchone()
    if row is None:
        run.warnings.append("table 'run' is empty.")
        return None
    data = dict(zip(cols, row))
    for k, v in data.items():
        if v is not None and k != "program_source":
            run.header[k] = visible(str(v))
    if data.get("program_source"):
        run.header["program_source_chars"] = str(len(str(data["program_source"])))
    if data.get("id"):
        run.id = visible(str(data["id"]))
    prog = data.get("program_path")
    if prog:
        run.program = visible(str(prog))
        cand = Path(str(prog))
        cand = cand if cand.is_absolute() else run_dir / cand.name
        run.program_path = cand if cand.exists() and inside(cand, run_root(run_dir)) else None
        if cand.exists() and run.program_path is None:  # the database's word for a file elsewhere
            run.warnings.append(f"program {visible_name(cand.name)}: {OUTSIDE_RUN}")
    run.started = parse_time(data.get("started_at"))
    run.updated = parse_time(data.get("updated_at"))
    return str(data["status"]) if data.get("status") is not None else None


def read_imports(conn, schema: dict[str, list[str]], run: Run, dbp: Path) -> list[Run]:
    """``imports`` rows as child runs (seeds/sqlite.md, Core Schema: Import registry): one per
    row, named by ``alias``/``name``, with the row in ``header`` and the parent's bindings
    prefixed ``alias.``; ``[]`` without the table."""
    cols = schema.get("imports")
    if cols is None:
        return []
    children: list[Run] = []
    for row in conn.execute(f"SELECT {', '.join(quote_ident(c) for c in cols)} FROM imports").fetchall():
        data = {k: v for k, v in zip(cols, row) if v is not None}
        alias = str(data.get("alias") or data.get("name") or f"import-{len(children) + 1}")
        child = Run(id=alias, path=dbp, backend=Backend.SQLITE, format=RunFormat.SQLITE, import_handle=alias)
        child.program = str(data["source_url"]) if "source_url" in data else None
        child.header = {k: str(v) for k, v in data.items()}
        child.started = parse_time(data.get("fetched_at"))
        prefix = alias + "."
        child.bindings = [b for b in run.bindings if b.name.startswith(prefix)]
        children.append(child)
    return children


def load_bindings(conn: sqlite3.Connection, schema: dict[str, list[str]], dbp: Path, warnings: list[str]) -> list[Binding]:
    """Binding metadata from ``bindings`` (seeds/sqlite.md, Core Schema), values left in the db.

    ``Binding.path`` is the database path, ``bytes`` the value's size in bytes (UTF-8),
    ``source`` the ``source_statement``; ``fields`` holds ``created_at``, ``updated_at``,
    ``attachment_path`` and every extra column as text. Read the value with
    :func:`prose_tui.backends.sqlite.run.read_sqlite_binding_value`.
    """
    cols = schema.get("bindings")
    if cols is None:
        warnings.append("state.db has no 'bindings' table: no bindings to show.")
        return []
    if "name" not in cols:
        warnings.append("table 'bindings' has no 'name' column: bindings cannot be listed.")
        return []
    missing = [c for c in ("execution_id", "kind", "value") if c not in cols]
    if missing:
        warnings.append(f"table 'bindings' lacks column(s) {', '.join(missing)}.")
    other = [c for c in cols if c != "value"]
    size = "length(CAST(value AS BLOB))" if "value" in cols else "0"
    order = "rowid"
    sql = f"SELECT {size}, {', '.join(quote_ident(c) for c in other)} FROM bindings ORDER BY {order} LIMIT {MAX_BINDINGS + 1}"
    try:
        rows = conn.execute(sql).fetchall()
    except sqlite3.OperationalError:
        rows = conn.execute(sql.replace(f"ORDER BY {order} ", "")).fetchall()
    if len(rows) > MAX_BINDINGS:
        warnings.append(f"more than {MAX_BINDINGS} bindings: only the first {MAX_BINDINGS} are listed.")
        rows = rows[:MAX_BINDINGS]
    out: list[Binding] = []
    nameless = 0
    for raw in rows:
        data = dict(zip(other, raw[1:]))
        if data.get("name") is None:
            nameless += 1
            continue
        eid = data.get("execution_id")
        try:
            eid = int(eid) if eid is not None else None
        except (TypeError, ValueError):
            eid = None
        fields = {k: _s(v) for k, v in data.items() if k not in ("name", "execution_id", "kind", "source_statement") and v is not None}
        out.append(
            Binding(
                name=_s(data["name"]),
                path=dbp,
                kind=_s(data["kind"]) if data.get("kind") is not None else None,
                execution_id=eid,
                source=_s(data["source_statement"]) if data.get("source_statement") is not None else None,
                bytes=int(raw[0] or 0),
                fields=fields,
                listed=len(out),  # row order (rowid): the order the VM inserted them
            )
        )
    if nameless:
        warnings.append(f"{nameless} binding row(s) have no name and are not listed.")
    return out


def load_agents(conn: sqlite3.Connection, schema: dict[str, list[str]], dbp: Path, default_scope: str, warnings: list[str]) -> list[Agent]:
    """Agents and their segments (seeds/sqlite.md, Core Schema: ``agents``, ``agent_segments``).

    ``Agent.path`` is the database; ``details`` holds ``memory`` (the text), times and extra
    columns. Each :class:`Segment` has ``path`` = database, ``number``, ``timestamp``,
    ``prompt`` and ``bytes`` = size of its ``summary``; the summary itself is in
    ``Agent.details["segment_summary_<n>"]`` because the model's Segment has no field for it.
    """
    cols = schema.get("agents")
    seg_cols = schema.get("agent_segments")
    agents: dict[str, Agent] = {}
    if cols is not None and "name" in cols:
        for raw in conn.execute(f"SELECT {', '.join(quote_ident(c) for c in cols)} FROM agents").fetchall():
            data = dict(zip(cols, raw))
            name = _s(data["name"])
            details = {k: _s(v) for k, v in data.items() if k not in ("name", "scope") and v is not None}
            scope = _s(data["scope"]) if data.get("scope") else default_scope
            agents[name] = Agent(name=name, scope=scope, path=dbp, details=details)
    if seg_cols is not None and "agent_name" in seg_cols:
        wanted = [c for c in ("agent_name", "segment_number", "timestamp", "prompt", "summary") if c in seg_cols]
        order = "agent_name, segment_number" if "segment_number" in seg_cols else "agent_name"
        for raw in conn.execute(f"SELECT {', '.join(wanted)} FROM agent_segments ORDER BY {order}").fetchall():
            data = dict(zip(wanted, raw))
            name = _s(data["agent_name"])
            agent = agents.get(name)
            if agent is None:
                agent = agents[name] = Agent(name=name, scope=default_scope, path=dbp)
                warnings.append(f"agent_segments mention agent {name!r} that 'agents' does not list.")
            number = data.get("segment_number")
            try:
                number = int(number) if number is not None else len(agent.segments) + 1
            except (TypeError, ValueError):
                number = len(agent.segments) + 1
            summary = data.get("summary")
            agent.segments.append(
                Segment(
                    number=number,
                    path=dbp,
                    timestamp=_s(data["timestamp"]) if data.get("timestamp") is not None else None,
                    prompt=_s(data["prompt"]) if data.get("prompt") is not None else None,
                    bytes=len(_s(summary).encode()) if summary is not None else 0,
                )
            )
            if summary is not None:
                agent.details[f"segment_summary_{number}"] = _s(summary)
    return list(agents.values())


@quiet(list)
def list_extension_tables(run_dir: Path) -> list[str]:
    """Names of the ``x_*`` extension tables (seeds/sqlite.md, Schema Conventions), sorted. ``[]`` if unreadable."""
    db, _ = open_readonly(db_path_for(Path(run_dir)))
    if db is None:
        return []
    with db:
        return [t for t in read_schema(db.conn) if t.lower().startswith("x_")]


@quiet(lambda: ([], []))
def read_table_page(run_dir: Path, table: str, offset: int = 0, limit: int = 100) -> tuple[list[str], list[tuple]]:
    """One page of any table: ``(columns, rows)`` in rowid order, values as SQLite returns them.

    ``table`` must name an existing table (checked against the schema, so no SQL can be
    injected); an unknown table or unreadable database gives ``([], [])``.
    """
    db, _ = open_readonly(db_path_for(Path(run_dir)))
    if db is None:
        return [], []
    with db:
        schema = read_schema(db.conn)
        cols = schema.get(table)
        if cols is None:
            return [], []
        sql = f"SELECT {', '.join(quote_ident(c) for c in cols)} FROM {quote_ident(table)}"
        try:
            rows = db.conn.execute(f"{sql} ORDER BY rowid LIMIT ? OFFSET ?", (max(limit, 0), max(offset, 0))).fetchall()
        except sqlite3.OperationalError:
            rows = db.conn.execute(f"{sql} LIMIT ? OFFSET ?", (max(limit, 0), max(offset, 0))).fetchall()
        return cols, rows


_METRIC_WORDS = ("token", "cost", "usd", "price")


@quiet(lambda: {"tables": [], "run": {}, "by_execution": {}, "statements": {}})
def metrics_summary(run_dir: Path) -> dict:
    """Token and cost figures from ``x_*`` tables, summed per run and per execution row.

    Understands the seed's long form (``x_metrics(execution_id, metric_name, metric_value)``;
    seeds/sqlite.md, Flexibility Encouragement) for every metric name, and wide tables whose
    numeric columns are named with ``token``/``cost``/``usd``/``price``. Returns::

        {"tables": ["x_metrics", ...],
         "run": {"input_tokens": 1234.0, "cost_usd": 0.42, ...},
         "by_execution": {15: {"input_tokens": 200.0, ...}, None: {...}},
         "statements": {15: "session \\"Research\\"", ...}}

    ``by_execution`` keys are ``execution_id`` values (``None`` for rows without one);
    ``statements`` gives each execution's ``statement_text`` where known. Empty dicts
    when there are no metrics.
    """
    out: dict = {"tables": [], "run": {}, "by_execution": {}, "statements": {}}
    db, _ = open_readonly(db_path_for(Path(run_dir)))
    if db is None:
        return out
    with db:
        schema = read_schema(db.conn)
        for table, cols in schema.items():
            if not table.lower().startswith("x_"):
                continue
            lower = {c.lower(): c for c in cols}
            eid_col = lower.get("execution_id")
            eid_sql = quote_ident(eid_col) if eid_col else "NULL"
            used = False
            if "metric_name" in lower and "metric_value" in lower:
                sql = (
                    f"SELECT {eid_sql}, {quote_ident(lower['metric_name'])}, sum({quote_ident(lower['metric_value'])}) "
                    f"FROM {quote_ident(table)} GROUP BY 1, 2"
                )
                for eid, name, total in db.conn.execute(sql):
                    if name is None or total is None:
                        continue
                    _add(out, eid, _s(name), float(total))
                    used = True
            wide = [c for c in cols if any(w in c.lower() for w in _METRIC_WORDS) and c.lower() not in ("metric_name", "metric_value")]
            if wide:
                sums = ", ".join(f"sum({quote_ident(c)})" for c in wide)
                for raw in db.conn.execute(f"SELECT {eid_sql}, {sums} FROM {quote_ident(table)} GROUP BY 1"):
                    for c, total in zip(wide, raw[1:]):
                        if isinstance(total, (int, float)):
                            _add(out, raw[0], c, float(total))
                            used = True
            if used:
                out["tables"].append(table)
        ids = [k for k in out["by_execution"] if k is not None]
        ex_cols = schema.get("execution", [])
        if ids and "id" in ex_cols and "statement_text" in ex_cols:
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                marks = ",".join("?" * len(chunk))
                for eid, text in db.conn.execute(f"SELECT id, statement_text FROM execution WHERE id IN ({marks})", chunk):
                    out["statements"][eid] = _s(text) if text is not None else ""
    return out


def _add(out: dict, eid: object, name: str, value: float) -> None:
    try:  # sqlite gives int, float, str, bytes or None
        key = int(eid) if isinstance(eid, (int, float, str, bytes)) else None
    except (TypeError, ValueError):
        key = None
    out["run"][name] = out["run"].get(name, 0.0) + value
    per = out["by_execution"].setdefault(key, {})
    per[name] = per.get(name, 0.0) + value


class SqliteWatch:
    """Tell whether a run's database changed, without re-reading it (seeds/sqlite.md, Overview).

    Keeps one read-only connection open and combines ``PRAGMA data_version`` (which moves
    when another connection commits) with the size and mtime of ``state.db`` and ``-wal``
    (which catches writes an ``immutable`` connection cannot see). The connection is
    reopened when the right opening mode changes (e.g. a writer appeared and created
    ``-shm``). :meth:`data_version` returns a number that changes whenever the database
    did; compare it with the last one seen. :meth:`watch_paths` lists the files a file
    watcher should watch. Call :meth:`close` when done; also a context manager.

    Caveat (SQLite's rule, not a write by us): while this connection is open on a WAL
    database, a writer that closes is no longer the last connection, so it leaves its
    ``-wal``/``-shm`` in place instead of deleting them; they hold only committed data and
    the next writer reuses them. Close the watch when the run is no longer shown.
    """

    def __init__(self, run_dir: Path) -> None:
        self.db_path = db_path_for(Path(run_dir))
        self._db: ReadOnlyDb | None = None
        self._mode: str | None = None
        self._last: tuple | None = None
        self._counter = 0

    def watch_paths(self) -> list[Path]:
        """``[state.db, state.db-wal]``: what to watch for changes (the -wal may not exist yet)."""
        return [self.db_path, Path(f"{self.db_path}-wal")]

    def _stat(self) -> tuple:
        sig: list[tuple[int, int, int] | None] = []
        for p in self.watch_paths():
            try:
                st = os.stat(p)
                sig.append((st.st_size, st.st_mtime_ns, st.st_ino))
            except OSError:
                sig.append(None)
        return tuple(sig)

    def data_version(self) -> int:
        """A number that changes when the database changes; ``-1`` while it cannot be read."""
        try:
            mode = choose_mode(self.db_path) if self.db_path.is_file() else None
        except OSError:
            mode = None
        if mode is None:
            self.close()
            return -1
        if self._db is None or mode != self._mode:
            self.close()
            self._db, _ = open_readonly(self.db_path)
            self._mode = mode
            if self._db is None:
                return -1
        try:
            version = self._db.conn.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            self.close()
            return -1
        current = (version, self._stat())
        if current != self._last:
            self._last = current
            self._counter += 1
        return self._counter

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> SqliteWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
