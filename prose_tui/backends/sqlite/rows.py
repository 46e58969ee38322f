"""Reading the ``execution`` table of a SQLite ``state.db`` (seeds/sqlite.md, Core Schema):
rows, the open call stack, the latest failure and nesting depths.

What the rows become (trace lines, events) is shared with PostgreSQL:
:mod:`prose_tui.backends.common.execution_rows`.
"""

from __future__ import annotations

import json
import sqlite3

from prose_tui.backends.common.depths import depths
from prose_tui.backends.common.execution_rows import (
    call_stack_of,
    EXECUTION_COLUMNS,
    ExecutionRow,
    cell_int,
)
from prose_tui.backends.common.text import visible
from prose_tui.backends.sqlite.connect import quote_ident
from prose_tui.model import Frame, Run


def _str(value: object) -> str | None:
    """A cell as display text: bytes decoded with replacement, control characters made visible."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return visible(value.decode("utf-8", "replace"))
    return visible(str(value))


def fetch_rows(conn: sqlite3.Connection, cols: list[str], tail_sql: str, params: tuple = ()) -> list[ExecutionRow]:
    """Run ``SELECT rowid, <cols> FROM execution <tail_sql>`` and build :class:`ExecutionRow` s."""
    select = ", ".join(quote_ident(c) for c in cols)
    try:
        cur = conn.execute(f"SELECT rowid, {select} FROM execution {tail_sql}", params)
    except sqlite3.OperationalError:  # WITHOUT ROWID table
        cur = conn.execute(f"SELECT NULL, {select} FROM execution {tail_sql}", params)
    out = []
    for raw in cur:
        data = dict(zip(cols, raw[1:]))
        rid = cell_int(data.get("id"))
        if rid is None:
            rid = cell_int(raw[0]) or 0
        meta_raw = _str(data.get("metadata"))
        meta: dict = {}
        if meta_raw:
            try:
                parsed = json.loads(meta_raw)
                meta = parsed if isinstance(parsed, dict) else {"value": parsed}
            except (ValueError, RecursionError):  # RecursionError: nesting too deep to decode
                meta = {}
        out.append(
            ExecutionRow(
                id=rid,
                statement_index=cell_int(data.get("statement_index")),
                statement_text=_str(data.get("statement_text")),
                status=_str(data.get("status")),
                started_at=_str(data.get("started_at")),
                completed_at=_str(data.get("completed_at")),
                error_message=_str(data.get("error_message")),
                parent_id=cell_int(data.get("parent_id")),
                metadata=meta,
                metadata_raw=meta_raw,
                extra={k: v for k, v in data.items() if k not in EXECUTION_COLUMNS},
            )
        )
    return out


def open_call_stack(conn, cols: list[str], key: str, known: dict[int, ExecutionRow]) -> list[Frame]:
    """The open call stack, innermost first: the latest executing/running/retrying row and
    its ``parent_id`` chain, block calls only (seeds/sqlite.md, Scope Resolution Query).

    ``cols`` are the ``execution`` table's columns, ``key`` its key column (``id`` or
    ``rowid``); rows already in ``known`` (by key) are not read again. ``[]`` without a
    ``status`` column."""
    if "status" not in cols:
        return []
    row = conn.execute(
        f"SELECT {key} FROM execution WHERE lower(status) IN ('executing','running','retrying') "
        f"ORDER BY {key} DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return []
    chain: list[ExecutionRow] = []
    current: int | None = row[0]
    while current is not None and len(chain) < 1000 and all(r.id != current for r in chain):
        found = known.get(current)
        if found is None:
            rows = fetch_rows(conn, cols, f"WHERE {key} = ?", (current,))
            if not rows:
                break
            found = rows[0]
        chain.append(found)
        current = found.parent_id
    return call_stack_of(chain)


def latest_failure(conn, cols: list[str], key: str, known: dict[int, ExecutionRow], run: Run) -> None:
    """Put the latest failed/error row on ``run``: its id in ``header['failed_execution_id']``
    and ``statement N failed: message`` in ``status_reason``; nothing when none failed.
    ``cols``, ``key`` and ``known`` as for :func:`open_call_stack`."""
    failed = conn.execute(
        f"SELECT {key} FROM execution WHERE lower(status) IN ('failed','error') ORDER BY {key} DESC LIMIT 1"
    ).fetchone() if "status" in cols else None
    if failed is not None:
        frow = known.get(failed[0]) or next(iter(fetch_rows(conn, cols, f"WHERE {key} = ?", (failed[0],))), None)
        if frow is not None:
            run.header["failed_execution_id"] = str(frow.id)
            run.status_reason = f"statement {frow.statement_index} failed: {frow.error_message or 'no error message'}"


def row_depths(conn, rows: list[ExecutionRow], known: dict[int, ExecutionRow], key: str) -> dict[int, int]:
    """Nesting depth of each of ``rows`` by id (number of ``parent_id`` hops; 0 at the top),
    looking up the parents not in ``known`` in batches."""

    def lookup(ids: set[int]) -> dict[int, int | None]:
        marks = ",".join("?" * len(ids))
        found = dict(conn.execute(f"SELECT {key}, parent_id FROM execution WHERE {key} IN ({marks})", tuple(ids)).fetchall())
        return {i: found.get(i) for i in ids}

    return depths(rows, {r.id: r.parent_id for r in known.values()}, lookup)
