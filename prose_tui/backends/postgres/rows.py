"""``execution`` rows of a PostgreSQL run: reading a page, nesting, the open call stack
(openprose-0.15 state/postgres.md, Core Schema, Parallel Execution, Loop Tracking, Error
Handling). Rows become a :class:`~prose_tui.backends.common.execution_rows.ExecutionRow`,
as SQLite's do, so trace lines and events are built by the same code and read the same.

Every query here is keyed by ``run_id`` and ``id`` so the spec's indexes
(``idx_execution_run_id``, the primary key, ``idx_execution_status``) answer it; a run with a
million rows costs a page, not a scan.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from prose_tui.backends.common.execution_rows import (
    call_stack_of,
    EXECUTION_COLUMNS,
    ExecutionRow,
)
from prose_tui.backends.common.text import visible
from prose_tui.backends.postgres.connect import PgReader, quote_ident
from prose_tui.backends.postgres.tables import text
from prose_tui.model import Frame

OPEN_STATUSES = ("executing", "running", "retrying", "pending")
TERMINAL = ("completed", "complete", "done", "success", "failed", "error", "skipped")


def _time(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else text(value)


def _clean(value: Any, depth: int = 0) -> Any:
    """JSON as parsed, every string in it (keys too) with control characters made visible:
    metadata values reach the screen as block, branch and loop names."""
    if isinstance(value, str):
        return visible(value)
    if depth > 64:
        return None
    if isinstance(value, dict):
        return {visible(str(k)): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, depth + 1) for v in value]
    return value


def to_row(data: dict[str, Any]) -> ExecutionRow:
    """One ``execution`` row (column -> value, psycopg types) as an :class:`ExecutionRow`."""
    meta = data.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except (ValueError, RecursionError):
            meta = None
    meta_dict = _clean(meta) if isinstance(meta, dict) else ({"value": _clean(meta)} if meta is not None else {})
    rid = data.get("id")
    parent = data.get("parent_id")
    index = data.get("statement_index")
    return ExecutionRow(
        id=rid if isinstance(rid, int) else 0,
        statement_index=index if isinstance(index, int) else None,
        statement_text=text(data.get("statement_text")),
        status=text(data.get("status")),
        started_at=_time(data.get("started_at")),
        completed_at=_time(data.get("completed_at")),
        error_message=text(data.get("error_message")),
        parent_id=parent if isinstance(parent, int) else None,
        metadata=meta_dict,
        metadata_raw=text(meta),
        extra={k: text(v) for k, v in data.items() if k not in EXECUTION_COLUMNS and k != "run_id"},
    )


class ExecutionReader:
    """Pages of one run's ``execution`` rows. ``cols`` is the table's columns as the server
    reports them; the table must have ``id`` and ``run_id`` (checked by the caller)."""

    def __init__(self, reader: PgReader, run_id: str, cols: list[str]) -> None:
        self.reader = reader
        self.run_id = run_id
        self.cols = cols
        self._select = ", ".join(quote_ident(c) for c in cols)
        self._table = reader.table("execution")

    def _rows(self, where: str, params: tuple, tail: str = "") -> list[ExecutionRow]:
        sql = f"SELECT {self._select} FROM {self._table} WHERE {where} {tail}"
        return [to_row(dict(zip(self.cols, raw))) for raw in self.reader.rows(sql, params)]

    def hot_queries(self, after: int = 0, limit: int = 500) -> dict[str, tuple[str, tuple]]:
        """The statements a first screen and every poll run, as ``{name: (sql, params)}``
        (for ``EXPLAIN`` in tests and benchmarks; the methods below run exactly these)."""
        return {
            "count": (f"SELECT count(*) FROM {self._table} WHERE run_id = %s", (self.run_id,)),
            "last": (f"SELECT {self._select} FROM {self._table} WHERE run_id = %s ORDER BY id DESC LIMIT {max(int(limit), 0)}",
                     (self.run_id,)),
            "since": (f"(SELECT {self._select} FROM {self._table} WHERE run_id = %s AND id > %s ORDER BY id LIMIT 2000)"
                      f" UNION ALL (SELECT {self._select} FROM {self._table} WHERE id = ANY(%s) AND id <= %s)",
                      (self.run_id, after, [after], after)),
        }

    def count(self) -> int:
        sql, params = self.hot_queries()["count"]
        rows = self.reader.rows(sql, params)
        return int(rows[0][0]) if rows else 0

    def last(self, limit: int) -> list[ExecutionRow]:
        """The run's last ``limit`` rows, oldest first."""
        sql, params = self.hot_queries(limit=limit)["last"]
        rows = [to_row(dict(zip(self.cols, raw))) for raw in self.reader.rows(sql, params)]
        rows.reverse()
        return rows

    def page(self, offset: int, limit: int) -> list[ExecutionRow]:
        """Rows ``offset .. offset+limit-1`` in id order (0-based from the run's first row)."""
        if offset < 0 or limit <= 0:
            return []
        return self._rows("run_id = %s", (self.run_id,), f"ORDER BY id LIMIT {int(limit)} OFFSET {int(offset)}")

    def since(self, after: int, reread: list[int]) -> list[ExecutionRow]:
        """Rows added after id ``after`` (at most 2000) and the current state of the rows
        ``reread`` (those still open), in one round trip."""
        sql = self.hot_queries(after)["since"][0]
        rows = [to_row(dict(zip(self.cols, raw))) for raw in self.reader.rows(sql, (self.run_id, after, reread, after))]
        return sorted(rows, key=lambda r: r.id)

    def by_id(self, ids: list[int]) -> list[ExecutionRow]:
        return self._rows("id = ANY(%s)", (ids,)) if ids else []

    def latest_with_status(self, statuses: tuple[str, ...]) -> ExecutionRow | None:
        if "status" not in self.cols:
            return None
        rows = self._rows("run_id = %s AND status = ANY(%s)", (self.run_id, list(statuses)), "ORDER BY id DESC LIMIT 1")
        return rows[0] if rows else None

    def latest_of_each(self, *statuses: tuple[str, ...]) -> list[ExecutionRow | None]:
        """For each tuple of ``statuses``, the run's latest row with one of them (``None``:
        none), in one round trip (``latest_with_status`` for each, as one ``UNION ALL``)."""
        if "status" not in self.cols or not statuses:
            return [None for _ in statuses]
        one = (f"(SELECT %s::int, {self._select} FROM {self._table} WHERE run_id = %s AND status = ANY(%s) "
               f"ORDER BY id DESC LIMIT 1)")
        params: list = []
        for i, wanted in enumerate(statuses):
            params += [i, self.run_id, list(wanted)]
        out: list[ExecutionRow | None] = [None for _ in statuses]
        for raw in self.reader.rows(" UNION ALL ".join(one for _ in statuses), tuple(params)):
            out[int(raw[0])] = to_row(dict(zip(self.cols, raw[1:])))
        return out

    def parents(self, ids: set[int]) -> dict[int, int | None]:
        """``{id: parent_id}`` for ``ids`` (missing rows map to ``None``)."""
        if not ids or "parent_id" not in self.cols:
            return {i: None for i in ids}
        found = dict(self.reader.rows(f"SELECT id, parent_id FROM {self._table} WHERE id = ANY(%s)", (list(ids),)))
        return {i: found.get(i) for i in ids}


STACK_STATUSES = ("executing", "running", "retrying")
FAILED_STATUSES = ("failed", "error")


def call_stack(execution: ExecutionReader, known: dict[int, ExecutionRow], latest: ExecutionRow | None = None, *,
               read: bool = True) -> list[Frame]:
    """Open frames, innermost first: the latest executing row (``latest``, read here when
    ``read``) and its ``parent_id`` chain, block invocations only (state/postgres.md, Scope
    Resolution Query)."""
    row = execution.latest_with_status(STACK_STATUSES) if read else latest
    if row is None:
        return []
    chain: list[ExecutionRow] = []
    current: ExecutionRow | None = row
    while current is not None and len(chain) < 1000 and all(r.id != current.id for r in chain):
        chain.append(current)
        pid = current.parent_id
        if pid is None:
            break
        current = known.get(pid) or next(iter(execution.by_id([pid])), None)
    return call_stack_of(chain)
