"""A watched SQLite run kept current from what a commit changed (seeds/sqlite.md).

After a full read (``load_sqlite_run``, the last ``DEFAULT_WINDOW`` execution rows), a
commit by the VM (``PRAGMA data_version`` moved) is applied by :meth:`SqliteTail.apply`
on the backend's read-only connection, inside one read transaction:

* ``execution`` rows with a key above the highest seen (new statements), plus the rows
  still open (pending/executing/retrying) re-read by key: one query, whatever the
  table's size. New rows are appended to the trace, changed ones replaced in place;
  their events are appended (an event already emitted is not emitted again). At most
  ``MAX_LIVE_ROWS`` rows stay in the trace while watching; older ones drop out.
* the ``run`` row (one row) for the status; the call stack and the latest failure (one
  indexed query each);
* ``bindings``, ``agents``/``agent_segments``, ``imports`` and the ``x_*`` tables only when
  their signature (``count``/``max(rowid)``/``max(updated_at)``) moved.

A schema change (``PRAGMA schema_version``), a file of another database or a run object
the tail did not build says "read it again" (``apply`` returns ``None``).
Older rows than the window are read with :meth:`SqliteTail.older` (the trace pages back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from prose_tui.backends.sqlite.connect import quote_ident, read_schema
from prose_tui.backends.common.execution_rows import ExecutionRow, events_for_rows, row_trace_line
from prose_tui.backends.sqlite.rows import fetch_rows, latest_failure, open_call_stack, row_depths
from prose_tui.backends.sqlite.run import settle_status
from prose_tui.backends.sqlite.tables import load_agents, load_bindings, read_imports, read_run_row
from prose_tui.model import Delta, Event, Run

MAX_LIVE_ROWS = 5000
"""Execution rows kept in the trace while watching (as for PostgreSQL runs)."""
OPEN_STATUSES = ("pending", "executing", "running", "retrying", "")


def _event_key(event: Event) -> tuple:
    return (event.kind, event.execution_id, event.text, event.status)


def _differs(a: ExecutionRow, b: ExecutionRow) -> bool:
    return (a.status, a.completed_at, a.error_message, a.metadata_raw, a.statement_text, a.parent_id) != (
        b.status, b.completed_at, b.error_message, b.metadata_raw, b.statement_text, b.parent_id)


@dataclass(slots=True)
class SqliteTail:
    """What a run's last read saw: its rows in trace order, the highest key, the events
    emitted, the other tables' signatures. ``run`` is the run object it keeps current."""

    run: Run
    dbp: Path
    cols: list[str]
    key: str
    schema_version: int
    rows: dict[int, ExecutionRow] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    depth: dict[int, int] = field(default_factory=dict)
    first_line: int = 1
    total: int = 0
    max_id: int = 0
    emitted: set[tuple] = field(default_factory=set)
    signatures: dict[str, object] = field(default_factory=dict)
    schema: dict[str, list[str]] = field(default_factory=dict)  # as of ``schema_version``
    metrics_moved: bool = False  # the last apply saw an ``x_*`` table change

    @classmethod
    def start(cls, conn: sqlite3.Connection, run: Run, dbp: Path, keep: dict) -> SqliteTail | None:
        """The tail of a run just read by ``load_sqlite_run(..., keep=keep)``; ``None`` when
        it read no execution table."""
        if "rows" not in keep:
            return None
        rows: list[ExecutionRow] = keep["rows"]
        tail = cls(run, dbp, keep["cols"], keep["key"], _schema_version(conn))
        tail.rows = {r.id: r for r in rows}
        tail.order = [r.id for r in rows]
        tail.depth = dict(keep["depths"])
        tail.total = int(keep["total"])
        tail.first_line = tail.total - len(rows) + 1
        tail.max_id = max(tail.order, default=0)
        tail.emitted = {_event_key(e) for e in run.events}
        tail.schema = read_schema(conn)
        tail.signatures = _signatures(conn, tail.schema)
        return tail

    # -- a commit ----------------------------------------------------------------------------
    def apply(self, conn: sqlite3.Connection, run: Run, paths: Collection[Path]) -> Delta | None:
        """Fold what the last commits changed into ``run`` (in place); ``None`` when the run
        must be read again instead (schema changed, unknown files, another run object)."""
        if run is not self.run or any(not _db_file(p, self.dbp) for p in paths):
            return None
        conn.execute("BEGIN")  # one snapshot for every query below
        try:
            if _schema_version(conn) != self.schema_version:
                return None
            return self._apply(conn, run, paths)
        finally:
            conn.execute("ROLLBACK")

    def _apply(self, conn: sqlite3.Connection, run: Run, paths: Collection[Path]) -> Delta:
        delta = Delta(run, set(paths))
        key = self.key
        reread = [rid for rid, r in self.rows.items() if (r.status or "").strip().lower() in OPEN_STATUSES]
        marks = ",".join("?" * len(reread))
        where = f"WHERE {key} > ?" + (f" OR {key} IN ({marks})" if reread else "")
        fresh = fetch_rows(conn, self.cols, f"{where} ORDER BY {key}", (self.max_id, *reread))
        changed = [r for r in fresh if r.id not in self.rows or _differs(self.rows[r.id], r)]
        before = ([f.execution_id for f in run.call_stack], run.status, run.status_reason)
        if changed:
            self._fold_rows(conn, run, changed, delta)
        schema = self.schema  # the schema version did not move
        known = list(run.warnings)
        status_word = read_run_row(conn, schema, run, run.path)
        run.warnings[:] = known + [w for w in run.warnings[len(known):] if w not in known]
        run.call_stack = open_call_stack(conn, self.cols, key, self.rows)
        run.header.pop("failed_execution_id", None)
        run.status_reason = ""
        latest_failure(conn, self.cols, key, self.rows, run)
        last = self.rows[self.order[-1]].status or "" if self.order else None
        settle_status(run, status_word, last)
        delta.stack = before[0] != [f.execution_id for f in run.call_stack]
        delta.status = (run.status, run.status_reason) != before[1:] or bool(changed)
        signatures = _signatures(conn, schema)
        moved = {k for k, v in signatures.items() if self.signatures.get(k) != v}
        self.signatures = signatures
        warnings: list[str] = []
        if "bindings" in moved:
            old = {(b.name, b.execution_id): (b.bytes, b.fields) for b in run.bindings}
            run.bindings = load_bindings(conn, schema, self.dbp, warnings)
            run.header["bindings_rows"] = str(len(run.bindings))
            new = {(b.name, b.execution_id): (b.bytes, b.fields) for b in run.bindings}
            if old != new:
                delta.bindings = {b.path for b in run.bindings}
        if moved & {"agents", "agent_segments"}:
            shared = [a for a in run.agents if a.path != self.dbp]  # project and user agents stay
            run.agents = load_agents(conn, schema, self.dbp, "execution", warnings) + shared
            delta.agents = True
        if "imports" in moved:
            folders = [i for i in run.imports if i.path != self.dbp]  # imports/*/state.db runs stay
            run.imports = read_imports(conn, schema, run, self.dbp) + folders
            delta.imports = True
        self.metrics_moved = any(k.startswith("x_") for k in moved)
        delta.status = delta.status or self.metrics_moved  # the backend sums the metrics again
        return delta

    def _fold_rows(self, conn: sqlite3.Connection, run: Run, changed: list[ExecutionRow], delta: Delta) -> None:
        added = [r for r in changed if r.id not in self.rows]
        if added:
            self.depth.update(row_depths(conn, added, {**self.rows, **{r.id: r for r in added}}, self.key))
        position = {rid: i for i, rid in enumerate(self.order)} if len(added) < len(changed) else {}
        touched: set[int] = set()
        for r in changed:
            if r.id in self.rows:
                i = position[r.id]
                run.trace[i] = row_trace_line(r, self.first_line + i, self.depth.get(r.id, 0))
            else:
                self.order.append(r.id)
                i = len(self.order) - 1
                run.trace.append(row_trace_line(r, self.first_line + i, self.depth.get(r.id, 0)))
                self.total += 1
            self.rows[r.id] = r
            touched.add(i)
        self.max_id = max(self.max_id, *(r.id for r in added)) if added else self.max_id
        delta.trace_lines = touched
        if len(self.order) > MAX_LIVE_ROWS:
            drop = len(self.order) - MAX_LIVE_ROWS
            for rid in self.order[:drop]:
                del self.rows[rid]
                self.depth.pop(rid, None)
            del self.order[:drop], run.trace[:drop]
            self.first_line += drop
            delta.trace_lines = None
        run.header["execution_rows"] = str(self.total)
        if self.order:
            run.header["execution_window"] = f"{self.order[0]}-{self.order[-1]}"
        for event in events_for_rows(changed):
            k = _event_key(event)
            if k in self.emitted:
                continue
            self.emitted.add(k)
            event.seq = len(run.events)
            run.events.append(event)
            delta.events.append(event)

    # -- paging back ---------------------------------------------------------------------------
    def older(self, conn: sqlite3.Connection, run: Run, limit: int) -> int:
        """Put up to ``limit`` rows before the first one shown at the start of ``run.trace``
        (in place); returns how many. Their events (in order, as a read of those rows gives
        them) are put at the start of ``run.events``, every event renumbered (``seq``)."""
        if run is not self.run or not self.order or self.first_line <= 1 or limit <= 0:
            return 0
        rows = fetch_rows(conn, self.cols, f"WHERE {self.key} < ? ORDER BY {self.key} DESC LIMIT ?",
                          (self.order[0], limit))
        rows.reverse()
        if not rows:
            return 0
        known = {**self.rows, **{r.id: r for r in rows}}
        self.depth.update(row_depths(conn, rows, known, self.key))
        start = max(1, self.first_line - len(rows))
        lines = [row_trace_line(r, start + i, self.depth.get(r.id, 0)) for i, r in enumerate(rows)]
        for r in rows:
            self.rows[r.id] = r
        self.order[:0] = [r.id for r in rows]
        run.trace[:0] = lines
        self.first_line = start
        events = []
        for event in events_for_rows(rows):
            k = _event_key(event)
            if k not in self.emitted:
                self.emitted.add(k)
                events.append(event)
        if events:
            run.events[:0] = events
            for seq, event in enumerate(run.events):
                event.seq = seq
        run.header["execution_window"] = f"{self.order[0]}-{self.order[-1]}"
        return len(rows)


def _db_file(path: Path, dbp: Path) -> bool:
    """``path`` is the database or one of its journal files."""
    return path == dbp or path.name in (f"{dbp.name}-wal", f"{dbp.name}-shm", f"{dbp.name}-journal") \
        and path.parent == dbp.parent


def _schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA schema_version").fetchone()[0])


def _signatures(conn: sqlite3.Connection, schema: dict[str, list[str]]) -> dict[str, object]:
    """A value per table that moves when the table changes: row count, highest rowid and
    newest ``updated_at``/``timestamp`` where it has one."""
    out: dict[str, object] = {}
    names: list[str] = [n for n in ("bindings", "agents", "agent_segments", "imports") if n in schema]
    names += [n for n in schema if n.lower().startswith("x_")]
    for name in names:
        cols = schema[name]
        stamp = next((c for c in ("updated_at", "timestamp", "created_at") if c in cols), None)
        parts = ["count(*)"] + ([f"max({quote_ident(stamp)})"] if stamp else [])
        try:
            row = conn.execute(f"SELECT {', '.join(parts)}, max(rowid) FROM {quote_ident(name)}").fetchone()
        except sqlite3.OperationalError:  # WITHOUT ROWID
            row = conn.execute(f"SELECT {', '.join(parts)} FROM {quote_ident(name)}").fetchone()
        out[name] = tuple(row)
    return out
