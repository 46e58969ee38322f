"""Binding values of a SQLite run, resolved by scope (seeds/sqlite.md, Scope Resolution Query; Large Outputs)."""

from __future__ import annotations

from pathlib import Path

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun, run_root
from prose_tui.backends.common.text import open_regular
from prose_tui.backends.sqlite.connect import (
    db_path_for,
    open_readonly,
    quote_ident,
    read_schema,
)


def resolve_binding_scope(conn, name: str, execution_id: int | None, cols: list[str]) -> tuple | None:
    """The ``bindings`` row that ``name`` means inside ``execution_id`` (seeds/sqlite.md, Scope Resolution Query).

    Walks ``execution.parent_id`` from ``execution_id`` outwards and prefers the most local
    scope, then root scope (``execution_id IS NULL``). Returns the row as a tuple in
    ``cols`` order, or ``None``.
    """
    select = ", ".join(quote_ident(c) for c in cols)
    if execution_id is not None and "execution_id" in cols:
        chain: list[int] = []
        current: int | None = execution_id
        while current is not None and current not in chain and len(chain) < 10_000:
            chain.append(current)
            try:
                current = db_parent(conn, current)
            except Exception:  # noqa: BLE001 - no execution table: only this scope and root
                current = None
        for eid in chain:
            row = conn.execute(
                f"SELECT {select} FROM bindings WHERE name = ? AND execution_id = ? LIMIT 1", (name, eid)
            ).fetchone()
            if row is not None:
                return row
    root = "execution_id IS NULL" if "execution_id" in cols else "1"
    return conn.execute(f"SELECT {select} FROM bindings WHERE name = ? AND {root} LIMIT 1", (name,)).fetchone()


def db_parent(conn, execution_id: int) -> int | None:
    """``execution.parent_id`` of one row (``None`` for a top-level row or a missing row)."""
    row = conn.execute("SELECT parent_id FROM execution WHERE id = ?", (execution_id,)).fetchone()
    return row[0] if row else None


def read_sqlite_binding_value(run_dir: Path, name: str, execution_id: int | None = None) -> str:
    """The value of binding ``name`` as seen from ``execution_id`` (``None``: root scope).

    Scope is resolved as seeds/sqlite.md, Scope Resolution Query describes. When the row
    has an ``attachment_path`` (seeds/sqlite.md, Large Outputs) the attachment is read from
    the run folder (``attachments/…``; paths are taken relative to the run folder, or to the
    project for ``.prose/runs/…`` paths). Returns ``""`` when the binding is missing; a
    missing attachment gives the stored summary followed by a bracketed note. Never raises.
    """
    run_dir = Path(run_dir)
    dbp = db_path_for(run_dir)
    db, warnings = open_readonly(dbp)
    if db is None:
        return f"[{warnings[0]}]" if warnings else ""
    with db:
        cols = read_schema(db.conn).get("bindings")
        if not cols or "name" not in cols:
            return ""
        try:
            row = resolve_binding_scope(db.conn, name, execution_id, cols)
        except Exception as exc:  # noqa: BLE001 - report, never raise
            return f"[could not read binding {name!r}: {exc}]"
    if row is None:
        return ""
    data = dict(zip(cols, row))
    value = data.get("value")
    text = "" if value is None else (value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value))
    attachment = data.get("attachment_path")
    if attachment:
        target = _attachment_file(dbp.parent, str(attachment))
        if target is not None:
            try:  # a path the database names: read only inside the run folder
                with open_regular(target, root=run_root(dbp.parent)) as fh:
                    return fh.read().decode("utf-8", errors="replace")
            except OutsideRun:
                return f"{text}\n[attachment {attachment}: {OUTSIDE_RUN}]".lstrip()
            except OSError as exc:
                return f"{text}\n[attachment {attachment} could not be read: {exc}]".lstrip()
        return f"{text}\n[attachment {attachment} not found]".lstrip()
    return text


def _attachment_file(run_root: Path, attachment: str) -> Path | None:
    rel = Path(attachment)
    candidates = [rel] if rel.is_absolute() else [run_root / rel, run_root / "attachments" / rel.name]
    if not rel.is_absolute() and ".prose" in rel.parts:
        idx = rel.parts.index(".prose")
        for parent in [run_root, *run_root.parents]:
            if parent.name == ".prose":
                candidates.append(parent.joinpath(*rel.parts[idx + 1 :]))
                break
    for cand in candidates:
        if cand.is_file():
            return cand
    return None
