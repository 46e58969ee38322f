"""``execution`` rows as trace lines and events, for every SQL run format.

The VM owns the ``execution`` table (seeds/sqlite.md, Responsibility Separation; the same
table in openprose-0.15 state/postgres.md, Core Schema): one row per statement it
entered, ``status`` pending/executing/completed/failed/skipped, ``started_at``/
``completed_at``, ``error_message``, ``parent_id`` for nesting and a ``metadata`` JSON
object for constructs (Parallel Execution, Loop Tracking, Error Handling):
``parallel_id``/``strategy``/``branches``/``branch``,
``loop_id``/``max_iterations``/``current_iteration``/``condition``,
``retry_attempt``/``max_retries``.

Each backend reads its rows its own way (``backends.sqlite.rows.fetch_rows``,
``backends.postgres.rows.to_row``) into an :class:`ExecutionRow`; from there the trace
line, the events, the block a row calls and its state are computed here, so a SQLite and a
PostgreSQL run of one program read the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from prose_tui.model import Event, EventKind, Frame, StatementState, TraceLine

#: The columns of ``execution`` the seed names; any others go to :attr:`ExecutionRow.extra`.
EXECUTION_COLUMNS = [
    "id",
    "statement_index",
    "statement_text",
    "status",
    "started_at",
    "completed_at",
    "error_message",
    "parent_id",
    "metadata",
]

_STATE = {
    "executing": StatementState.EXECUTING,
    "running": StatementState.EXECUTING,
    "retrying": StatementState.RETRYING,
    "completed": StatementState.COMPLETE,
    "complete": StatementState.COMPLETE,
    "done": StatementState.COMPLETE,
    "success": StatementState.COMPLETE,
    "failed": StatementState.FAILED,
    "error": StatementState.FAILED,
    "skipped": StatementState.SKIPPED,
    "pending": StatementState.PENDING,
}

_DO_BLOCK = re.compile(r"^\s*do\s+([A-Za-z_][\w-]*)")


def parse_time(value: object) -> datetime | None:
    """A timestamp cell as text (SQLite's ``datetime('now')`` or ISO 8601) as a datetime, else ``None``.

    SQLite's ``datetime('now')`` is UTC without a zone, so such values stay naive UTC;
    PostgreSQL's ``timestamptz`` reaches here as ISO 8601 text with its offset.
    """
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromisoformat(str(value).strip())
    except ValueError:
        return None


@dataclass(slots=True)
class ExecutionRow:
    """One ``execution`` row. ``metadata`` is the parsed JSON object (``{}`` when absent or
    not JSON; ``metadata_raw`` keeps the text). ``extra`` holds columns the seed does not name.
    ``id`` is the ``id`` column, or the rowid when the table has none."""

    id: int
    statement_index: int | None = None
    statement_text: str | None = None
    status: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    error_message: str | None = None
    parent_id: int | None = None
    metadata: dict = field(default_factory=dict)
    metadata_raw: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


def cell_int(value: object) -> int | None:
    """A cell or metadata value as an int (SQLite's int/float/str/bytes types), else ``None``
    (NULL, other types, text that is not a whole number)."""
    if not isinstance(value, (int, float, str, bytes)):  # sqlite's types, less NULL
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def block_name(row: ExecutionRow) -> str:
    """The block a row invokes (``metadata.block``, ``do name(...)``), else its statement text."""
    meta_block = row.metadata.get("block") if row.metadata else None
    if meta_block:
        return str(meta_block)
    text = row.statement_text or ""
    m = _DO_BLOCK.match(text)
    if m:
        return m.group(1)
    return text.strip() or f"execution {row.id}"


def is_block_call(row: ExecutionRow) -> bool:
    """True when the row is a block invocation (a frame; seeds/sqlite.md, Scope Resolution Query)."""
    return bool(row.metadata.get("block")) or bool(_DO_BLOCK.match(row.statement_text or ""))


def row_state(row: ExecutionRow) -> StatementState | None:
    """The trace state for a row's ``status``; ``retrying`` when executing with a retry attempt."""
    state = _STATE.get((row.status or "").strip().lower())
    if state is StatementState.EXECUTING and cell_int(row.metadata.get("retry_attempt")):
        return StatementState.RETRYING
    return state


def row_trace_line(row: ExecutionRow, line: int, depth: int = 0) -> TraceLine:
    """The trace line for a row: statement text indented two spaces per nesting level."""
    note_parts = [row.status or "no status"]
    if row.error_message:
        note_parts.append(row.error_message)
    attempt = cell_int(row.metadata.get("retry_attempt"))
    max_attempts = cell_int(row.metadata.get("max_retries"))
    if attempt:
        note_parts.append(f"attempt {attempt}/{max_attempts}" if max_attempts else f"attempt {attempt}")
    return TraceLine(
        line=line,
        text="  " * depth + (row.statement_text or f"(execution {row.id})"),
        state=row_state(row),
        note=" — ".join(note_parts),
        attempt=attempt,
        max_attempts=max_attempts,
        step=str(row.statement_index) if row.statement_index is not None else None,
    )


def _events_for_row(row: ExecutionRow) -> list[tuple[datetime | None, int, Event]]:
    """Events one row implies, each with (time, phase) for ordering; seq filled in later."""
    meta = row.metadata
    step = str(row.statement_index) if row.statement_index is not None else None
    text = row.statement_text or ""
    status = (row.status or "").strip().lower()
    name = str(meta.get("branch") or block_name(row))
    started = parse_time(row.started_at)
    ended = parse_time(row.completed_at)
    out: list[tuple[datetime | None, int, Event]] = []

    def add(when, phase, kind, ev_text, ev_name=name, ev_status=None):
        out.append((when, phase, Event(0, kind, ev_text, time=when, step=step, name=ev_name, status=ev_status, execution_id=row.id)))

    add(started, 0, EventKind.STATEMENT_STARTED, f"#{row.id} {text}".rstrip())
    if is_block_call(row):
        add(started, 1, EventKind.FRAME_PUSHED, f"#{row.id} enter {block_name(row)}", block_name(row))
    if meta.get("parallel_id") and meta.get("branches") is not None:
        branches = meta.get("branches")
        listed = ", ".join(map(str, branches)) if isinstance(branches, list) else str(branches)
        add(started, 1, EventKind.PARALLEL_STARTED, f"parallel {meta['parallel_id']} ({meta.get('strategy', 'all')}): {listed}", str(meta["parallel_id"]))
    it = meta.get("current_iteration", meta.get("iteration"))
    if it is not None:
        mx = meta.get("max_iterations")
        label = f"{it}/{mx}" if mx is not None else f"{it}"
        add(started, 1, EventKind.LOOP_ITERATION, f"loop {meta.get('loop_id', '')} iteration {label}".replace("  ", " "), str(meta.get("loop_id") or name), label)
    if cell_int(meta.get("retry_attempt")):
        att, mx = meta.get("retry_attempt"), meta.get("max_retries")
        label = f"{att}/{mx}" if mx is not None else f"{att}"
        add(ended or started, 2, EventKind.RETRY, f"#{row.id} retry {label}", name, label)
    end_time = ended
    if status in ("completed", "complete", "done", "success"):
        if meta.get("parallel_id") and meta.get("branches") is not None:
            add(end_time, 3, EventKind.PARALLEL_JOINED, f"parallel {meta['parallel_id']} joined", str(meta["parallel_id"]), "ok")
        if is_block_call(row):
            add(end_time, 3, EventKind.FRAME_POPPED, f"#{row.id} leave {block_name(row)}", block_name(row), "ok")
        add(end_time, 4, EventKind.STATEMENT_COMPLETED, f"#{row.id} {text} ✓".strip(), ev_status="ok")
    elif status in ("failed", "error"):
        add(end_time, 4, EventKind.STATEMENT_FAILED, f"#{row.id} {text} ✗ {row.error_message or ''}".strip(), ev_status="failed")
    elif status == "skipped":
        add(end_time or started, 4, EventKind.STATEMENT_SKIPPED, f"#{row.id} {text} skipped".strip(), ev_status="skip")
    return out


def events_for_rows(rows: list[ExecutionRow], warnings: list[str] | None = None) -> list[Event]:
    """Events for a window of rows, in time order where every event has a time, else row order.

    ``seq`` is dense and 0-based within the window.
    """
    items: list[tuple[datetime | None, int, int, Event]] = []
    for order, row in enumerate(rows):
        for when, phase, ev in _events_for_row(row):
            items.append((when, order, phase, ev))
    timed = [i for i in items if i[0] is not None]
    if items and len(timed) == len(items):
        try:
            items.sort(key=lambda i: (i[0], i[2] >= 3, i[1], i[2]))
        except TypeError:  # naive and aware datetimes mixed
            if warnings is not None:
                warnings.append("execution times mix zoned and unzoned values; events kept in row order.")
    events = [i[3] for i in items]
    for seq, ev in enumerate(events):
        ev.seq = seq
    return events


def call_stack_of(chain: list[ExecutionRow]) -> list[Frame]:
    """The call stack of an executing row: ``chain`` is the row and its ancestors (innermost
    first, by ``parent_id``). Frames are the block calls in it (else every ancestor), innermost
    first; an outer frame still "executing"/"running" is "waiting" on the one inside it
    (seeds/sqlite.md and openprose-0.15 state/postgres.md, the ``execution`` table)."""
    blocks = [r for r in chain if is_block_call(r)] or chain[1:]
    frames = []
    for i, r in enumerate(blocks):
        parent = blocks[i + 1].id if i + 1 < len(blocks) else None
        status = (r.status or "").lower() or None
        if i > 0 and status in ("executing", "running"):
            status = "waiting"
        frames.append(Frame(execution_id=r.id, block=block_name(r), depth=len(blocks) - i, status=status, parent_id=parent))
    return frames
