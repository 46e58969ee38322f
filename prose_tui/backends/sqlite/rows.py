"""Reading ``execution`` rows from a SQLite ``state.db`` (seeds/sqlite.md, Core Schema).

What the rows become (trace lines, events) is shared with PostgreSQL:
:mod:`prose_tui.backends.common.execution_rows`.
"""

from __future__ import annotations

import json
import sqlite3

from prose_tui.backends.common.execution_rows import EXECUTION_COLUMNS, ExecutionRow, cell_int
from prose_tui.backends.common.text import visible
from prose_tui.backends.sqlite.connect import quote_ident


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
