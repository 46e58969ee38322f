"""One PostgreSQL run read in full and kept current by polling (openprose-0.15 state/postgres.md).

:class:`RunView` reads a run's first screen (the ``run`` row, the last ``window`` execution
rows, nesting, the open call stack, bindings, agents, imports, receipts and world-model
versions, metrics) and then, on each :meth:`RunView.poll`, asks the database only what can
have changed (no spec version sends NOTIFY):

* execution rows with an ``id`` above the highest seen, plus the rows still open
  (pending/executing), re-read by primary key: one round trip;
* one row of signatures: the ``run`` row's status and ``updated_at``, ``count``/``max(updated_at)``
  of the run's bindings and agents, the highest id of the segments and receipt tables, and
  every ``SLOW_PARTS_EVERY`` seconds ``count``/``max(resolved_at)`` of its imports;
  a part is read again only when its signature moved.

The result is a :class:`~prose_tui.model.Delta` naming what changed; events are appended in
the order they were observed, continuing ``run.events``' numbering.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from datetime import datetime
from pathlib import Path
from typing import Any

from prose_tui.backends.postgres import tables as T
from prose_tui.backends.postgres.connect import (
    DatabaseUnavailable,
    PgReader,
    QueryFailed,
)
from prose_tui.backends.common.depths import depths
from prose_tui.backends.common.execution_rows import (
    ExecutionRow,
    events_for_rows,
    parse_time,
    row_trace_line,
)
from prose_tui.backends.postgres.rows import (
    FAILED_STATUSES,
    OPEN_STATUSES,
    STACK_STATUSES,
    ExecutionReader,
    call_stack,
)
from prose_tui.model import Backend, Delta, Event, Run, RunFormat, RunStatus

DEFAULT_WINDOW = 500
"""Execution rows read with a run's first screen; older ones are paged (``RunView.page``)."""
FIRST_SCREEN_ROWS = 100
"""Execution rows of the first screen shown before the rest of the run is read (a screen or two)."""
MAX_LIVE_ROWS = 5000
"""Execution rows kept in the trace while watching; older ones drop out of the window."""
SLOW_PARTS_EVERY = 2.0
"""Seconds between polls that look at the parts found only by a scan (``imports``)."""

RUN_STATUS = {
    "running": RunStatus.RUNNING, "executing": RunStatus.RUNNING,
    "completed": RunStatus.COMPLETED, "complete": RunStatus.COMPLETED, "done": RunStatus.COMPLETED,
    "failed": RunStatus.FAILED, "error": RunStatus.FAILED,
    "interrupted": RunStatus.INTERRUPTED, "aborted": RunStatus.INTERRUPTED, "cancelled": RunStatus.INTERRUPTED,
}
PROGRAM_COLUMNS = ("root_path", "program_path")


def run_path(label: str, run_id: str) -> Path:
    """The key a database run goes by (``postgres:/<db@host>/<run id>``; no such file exists)."""
    # The database's key joined with one escaped name: the same Path as parsing the whole
    # string, in half the time (a run list builds 10,000 of them).
    return _database_key(label) / (run_id.replace("/", "%2F") or "%00")


@lru_cache(maxsize=64)
def _database_key(label: str) -> Path:
    return Path(f"postgres:/{label.replace('/', '%2F')}")


def fill_from_run_row(run: Run, data: dict[str, Any], *, header: bool = True) -> str | None:
    """Header (unless not ``header``: a run list row), program, times and status of ``run``
    from its ``run`` row; returns the status word."""
    if header:  # a run list row (10,000 of them) skips the loop
        for k, v in data.items():
            if v is not None and k not in ("root_source", "program_source", "id", "_source_chars", "_activity"):
                run.header[k] = T.text(v) or ""
    if data.get("_source_chars") is not None:
        run.header["root_source_chars"] = str(data["_source_chars"])
    program = next((data[c] for c in PROGRAM_COLUMNS if data.get(c)), None)
    run.program = T.text(program)
    started, updated = data.get("started_at"), data.get("updated_at")
    run.started = started if isinstance(started, datetime) else parse_time(T.text(started))
    run.updated = updated if isinstance(updated, datetime) else parse_time(T.text(updated))
    activity = data.get("_activity")
    if isinstance(activity, datetime) and (run.updated is None or activity > run.updated):
        run.updated = activity
    word = T.text(data.get("status"))
    run.status = RUN_STATUS.get((word or "").strip().lower(), RunStatus.UNKNOWN)
    return word


def new_run(run_id: str, label: str, location: str) -> Run:
    return Run(id=T.text(run_id) or "", path=run_path(label, run_id), backend=Backend.POSTGRES,
               format=RunFormat.POSTGRES, location=location)


@dataclass(slots=True)
class RunView:
    """The reading state of one run: its window of rows, what events were emitted, the last
    signatures. ``run`` is the model the views show; :meth:`poll` updates it in place."""

    reader: PgReader
    run: Run
    window: int = DEFAULT_WINDOW
    rows: dict[int, ExecutionRow] = field(default_factory=dict)
    parents: dict[int, int | None] = field(default_factory=dict)
    depth: dict[int, int] = field(default_factory=dict)
    first_line: int = 1
    max_id: int = 0
    receipt_id: int = 0
    emitted: set[tuple] = field(default_factory=set)
    signatures: dict[str, object] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)  # ids of the rows in the trace, in trace order
    base_reason: str = ""
    offline: bool = False
    slow_at: float = 0.0  # time.monotonic() of the last poll that looked at the slow parts
    execution: ExecutionReader | None = None

    # -- first read ---------------------------------------------------------------------
    def load(self, first_screen: Callable[[Run], None] | None = None) -> Run:
        """Read the run in full (its first screen). Raises ``DatabaseUnavailable``; a failing
        statement (a column the VM dropped) becomes a warning and the rest is still read.

        ``first_screen(run)``, when given, is called first with what a screen shows at once:
        the ``run`` row and the last ``FIRST_SCREEN_ROWS`` execution rows (trace, events,
        call stack; no bindings, agents, imports or receipts yet), as a copy of the run that
        is never changed afterwards; the whole window and the rest are read after it returns
        (two more short queries in all: the row count and the open call stack again)."""
        run = self.run
        run.warnings.clear()
        run.sections.clear()
        tables = self.reader.tables(refresh=True)
        if not tables:
            run.warnings.append(f"schema '{self.reader.schema}' has no tables this role can read.")
            return run
        parts = [self._load_run_row, self._load_execution, self._load_bindings, self._load_agents,
                 self._load_imports, self._load_receipts, self._load_metrics]
        if first_screen is not None and self._first_screen(first_screen):
            del parts[0]  # the run row is read
        for part in parts:
            try:
                part()
            except QueryFailed as exc:
                run.warnings.append(f"{part.__name__.removeprefix('_load_').replace('_', ' ')} could not be read: {exc}.")
        self.signatures = self._signatures()
        self.slow_at = time.monotonic()
        run.tables = T.extension_tables(self.reader)
        run.header["database"] = self.reader.label
        return run

    def _first_screen(self, show: Callable[[Run], None]) -> bool:
        """The run row and the last rows, given to ``show`` as a copy; ``True`` when the run
        row was read (the execution rows are read again, the whole window, by ``load``)."""
        run = self.run
        try:
            self._load_run_row()
        except QueryFailed:
            run.warnings.clear()  # the full read says why
            return False
        kept = len(run.warnings)
        try:
            self._load_execution(min(FIRST_SCREEN_ROWS, self.window))
            first: Run | None = replace(run, header=dict(run.header), warnings=list(run.warnings))
        except QueryFailed:
            first = None  # the full read says why
        del run.warnings[kept:]  # the execution rows' warnings come again with the whole window
        if first is not None:
            show(first)
        return True

    def _load_run_row(self) -> None:
        run = self.run
        cols = self.reader.tables().get("run")
        if cols is None or "id" not in cols:
            run.warnings.append("the database has no 'run' table (or it has no 'id'): program and status are unknown.")
            return
        wanted = [c for c in cols if c not in ("root_source", "program_source")]
        source = next((c for c in ("root_source", "program_source") if c in cols), None)
        extra = f", char_length({T.quote_ident(source)}) AS _source_chars" if source else ""
        rows = self.reader.rows(f"SELECT {', '.join(T.quote_ident(c) for c in wanted)}{extra} FROM {self.reader.table('run')} "
                                f"WHERE id = %s", (run.id,))
        if not rows:
            run.warnings.append("the run's row is gone from table 'run'.")
            return
        names = wanted + (["_source_chars"] if source else [])
        word = fill_from_run_row(run, dict(zip(names, rows[0])))
        if word is not None and run.status is RunStatus.UNKNOWN:
            run.warnings.append(f"run status {word!r} is not one the spec names.")

    def _load_execution(self, window: int | None = None) -> None:
        """The last ``window`` (default: the view's) execution rows: trace, events, call stack."""
        run = self.run
        cols = self.reader.tables().get("execution")
        if cols is None:
            run.warnings.append("the database has no 'execution' table: no trace or history.")
            return
        if "id" not in cols or "run_id" not in cols:
            run.warnings.append("table 'execution' lacks 'id' or 'run_id': its rows cannot be told apart by run.")
            return
        missing = [c for c in ("statement_index", "statement_text", "status", "started_at", "completed_at",
                               "error_message", "parent_id", "metadata") if c not in cols]
        if missing:
            run.warnings.append(f"table 'execution' lacks column(s) {', '.join(missing)}.")
        self.execution = ExecutionReader(self.reader, run.id, cols)
        total = self.execution.count()
        rows = self.execution.last(self.window if window is None else window)
        self.rows = {r.id: r for r in rows}
        self.first_line = total - len(rows) + 1
        self.max_id = max(self.rows, default=0)
        self.depth = depths(rows, self.parents, self.execution.parents)
        run.header["execution_rows"] = str(total)
        if rows:
            run.header["execution_window"] = f"{rows[0].id}-{rows[-1].id}"
        run.events = events_for_rows(rows, run.warnings)
        self.emitted = {_key(e) for e in run.events}
        self._rebuild_trace()
        self._stack_and_failure()

    def _rebuild_trace(self) -> None:
        rows = sorted(self.rows.values(), key=lambda r: r.id)
        self.order = [r.id for r in rows]
        self.run.trace = [row_trace_line(r, self.first_line + i, self.depth.get(r.id, 0)) for i, r in enumerate(rows)]
        self._note_activity(rows[-50:])

    def _note_activity(self, rows: list[ExecutionRow]) -> None:
        """``run.updated`` follows the newest time of ``rows`` (a VM rarely touches run.updated_at)."""
        times = [t for r in rows for t in (parse_time(r.completed_at), parse_time(r.started_at)) if t is not None]
        if times:
            try:
                latest = max(times)
                if self.run.updated is None or latest > self.run.updated:
                    self.run.updated = latest
            except TypeError:
                pass

    def _stack_and_failure(self) -> None:
        run = self.run
        assert self.execution is not None
        latest, failed = self.execution.latest_of_each(STACK_STATUSES, FAILED_STATUSES)  # one round trip
        run.call_stack = call_stack(self.execution, self.rows, latest, read=False)
        reason = ""
        if failed is not None:
            run.header["failed_execution_id"] = str(failed.id)
            reason = f"statement {failed.statement_index} failed: {failed.error_message or 'no error message'}"
            if run.status is not RunStatus.FAILED:
                reason = f"recovered after: {reason}"
        if run.status is RunStatus.UNKNOWN and self.rows:
            last = max(self.rows.values(), key=lambda r: r.id)
            run.status = RunStatus.RUNNING if run.call_stack else RUN_STATUS.get((last.status or "").lower(), RunStatus.UNKNOWN)
        self.base_reason = reason
        if not self.offline:
            run.status_reason = reason

    def _load_bindings(self) -> None:
        self.run.bindings = T.load_bindings(self.reader, self.run)
        self.run.header["bindings_rows"] = str(len(self.run.bindings))

    def _load_agents(self) -> None:
        self.run.agents = T.load_agents(self.reader, self.run)

    def _load_imports(self) -> None:
        self.run.imports = T.load_imports(self.reader, self.run)

    def _load_receipts(self) -> None:
        self.run.receipts, self.receipt_id = T.load_receipts(self.reader, self.run)
        self._nodes()
        self._append_events(_receipt_events(self.run.receipts), Delta(self.run))

    def _nodes(self) -> None:
        self.run.nodes = T.summarise_nodes(self.reader, self.run)
        section = T.world_model_section(self.reader, self.run.nodes)
        self.run.sections = [s for s in self.run.sections if s.title != "World model"] + ([section] if section else [])

    def _load_metrics(self) -> None:
        self.run.metrics = {}
        T.load_metrics(self.reader, self.run)

    # -- polling --------------------------------------------------------------------------
    def _signatures(self, slow: bool = True) -> dict[str, object]:
        """One round trip: a value per part that moves when the part changes. The parts the
        spec gives no index to find a run's rows by (``imports``) only when ``slow``."""
        tables = self.reader.tables()
        parts: list[tuple[str, str, int]] = []  # (name, SQL, number of run-id parameters)
        cols: list[str]
        run_cols = tables.get("run", [])
        if "id" in run_cols:
            cols = [c for c in ("status", "updated_at") if c in run_cols]
            expr = " || '|' || ".join(f"coalesce({c}::text, '')" for c in cols) or "''"
            parts.append(("run", f"SELECT {expr} FROM {self.reader.table('run')} WHERE id = %s", 1))
        for name, where, n in (("bindings", "run_id = %s", 1), ("agents", "run_id = %s OR run_id IS NULL", 1),
                               ("agent_segments", "run_id = %s OR run_id IS NULL", 1), ("imports", "run_id = %s", 1)):
            cols = tables.get(name, [])
            if "run_id" not in cols:
                continue
            if name == "imports" and not slow:
                # Its primary key is (alias, run_id): a run's imports are a scan of the
                # whole table, and it has no id to take the highest of. Looked at every
                # SLOW_PARTS_EVERY seconds (a VM resolves imports as a run starts), not every poll.
                continue
            if name == "agent_segments" and "id" in cols:
                # The spec indexes segments by (agent_name, run_id) only: a run's segments are
                # a scan of the whole table, every poll. The table's highest id is one primary
                # key lookup; it moves when any run writes a segment, and then this run's
                # agents are read again (that read scans, but only after a write).
                parts.append((name, f"SELECT max(id)::text FROM {self.reader.table(name)}", 0))
                continue
            stamp = next((c for c in ("updated_at", "timestamp", "created_at", "resolved_at") if c in cols), None)
            expr = f"count(*)::text || '|' || coalesce(max({stamp})::text, '')" if stamp else "count(*)::text"
            parts.append((name, f"SELECT {expr} FROM {self.reader.table(name)} WHERE {where}", n))
        if {"id", "run_id"} <= set(tables.get("receipt", [])):
            # No index on run_id in the spec either: the table's highest id (one primary key
            # lookup) moves when any run writes a receipt; this run's new ones are then read
            # by id (``load_receipts``: ``id >`` the last seen, a range of the primary key).
            parts.append(("receipt", f"SELECT max(id)::text FROM {self.reader.table('receipt')}", 0))
        if not parts:
            return {}
        sql = "SELECT " + ", ".join(f"({q})" for _, q, _ in parts)
        params = tuple(self.run.id for _, _, n in parts for _ in range(n))
        rows = self.reader.rows(sql, params)
        return dict(zip((p[0] for p in parts), rows[0])) if rows else {}

    def poll(self) -> Delta | None:
        """What changed since the last read, or ``None`` when nothing did. While the server
        cannot be reached the run's ``status_reason`` says so (one delta when that starts and
        one when it ends); nothing is lost, the next successful poll catches up."""
        try:
            delta = self._poll()
        except DatabaseUnavailable as exc:
            first = not self.offline
            self.offline = True
            self.run.status_reason = f"{exc}" + (f"; last known: {self.base_reason}" if self.base_reason else "")
            return Delta(self.run, status=True) if first else None
        except QueryFailed as exc:  # the schema changed under us: read it again next time
            self.reader.tables(refresh=True)
            note = f"could not poll: {exc}."
            if note in self.run.warnings:
                return None
            self.run.warnings.append(note)
            return Delta(self.run, status=True)
        if self.offline:
            self.offline = False
            self.run.status_reason = self.base_reason
            delta = delta or Delta(self.run)
            delta.status = True
        return delta

    def _poll(self) -> Delta | None:
        run = self.run
        delta = Delta(run)
        if self.execution is not None:
            reread = [r.id for r in self.rows.values() if (r.status or "").lower() in OPEN_STATUSES]
            fresh = self.execution.since(self.max_id, reread)
            changed = [r for r in fresh if r.id not in self.rows or _differs(self.rows[r.id], r)]
            if changed:
                self._apply_rows(changed, delta)
        now = time.monotonic()
        slow = now - self.slow_at >= SLOW_PARTS_EVERY
        if slow:
            self.slow_at = now
        signatures = self._signatures(slow)
        moved = {k for k, v in signatures.items() if self.signatures.get(k) != v}
        receipts_seen = self.signatures.get("receipt")  # the receipt table's highest id at the last poll
        self.signatures = {**self.signatures, **signatures}  # a part not asked this time keeps its value
        if "run" in moved:
            before = (run.status, run.program)
            self._load_run_row()
            if self.execution is not None:
                self._stack_and_failure()
            delta.status = True
            delta.program = before[1] != run.program
        if "bindings" in moved:
            old = {b.path: (b.bytes, b.fields) for b in run.bindings}
            self._load_bindings()
            new = {b.path: (b.bytes, b.fields) for b in run.bindings}
            delta.bindings = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
        if moved & {"agents", "agent_segments"}:
            self._load_agents()
            delta.agents = True
        if "imports" in moved:
            self._load_imports()
            delta.imports = True
        receipts: list = []
        if "receipt" in moved:
            receipts, top = T.load_receipts(self.reader, run, self.receipt_id)
            # Next time from the highest id the last poll saw (other runs' receipts below it
            # are not looked at again), or this run's own highest when that is higher.
            seen = int(receipts_seen) if isinstance(receipts_seen, str) and receipts_seen.isdigit() else 0
            self.receipt_id = max(top, seen)
        if receipts:  # another run's receipts move the signature too
            run.receipts.extend(receipts)
            self._nodes()
            self._append_events(_receipt_events(receipts), delta)
            delta.status = True
        if delta.events or receipts:
            self._load_metrics()
        return None if delta.empty else delta

    def _apply_rows(self, changed: list[ExecutionRow], delta: Delta) -> None:
        """Fold new and changed rows into the trace: new rows (ids above the highest seen)
        are appended, changed ones replaced in place; the cost follows the change."""
        assert self.execution is not None
        before = [f.execution_id for f in self.run.call_stack]
        added = [r for r in changed if r.id not in self.rows]
        self.depth.update(depths(added, self.parents, self.execution.parents))
        position = {rid: i for i, rid in enumerate(self.order)} if len(added) < len(changed) else {}
        touched: set[int] = set()
        # The run's own list grows and is re-stated in place, as a SQLite run's does: the
        # delta names the lines (``trace_lines``), so a view repaints those and the history
        # extends by the new events; a new list would make both start again per change.
        for r in changed:
            if r.id in self.rows:
                i = position[r.id]
                self.run.trace[i] = row_trace_line(r, self.first_line + i, self.depth.get(r.id, 0))
            else:
                self.order.append(r.id)
                i = len(self.order) - 1
                self.run.trace.append(row_trace_line(r, self.first_line + i, self.depth.get(r.id, 0)))
            self.rows[r.id] = r
            touched.add(i)
        self.max_id = max(self.max_id, *(r.id for r in changed))
        delta.trace_lines = touched
        if len(self.order) > MAX_LIVE_ROWS:
            drop = len(self.order) - MAX_LIVE_ROWS
            for rid in self.order[:drop]:
                del self.rows[rid]
            del self.order[:drop], self.run.trace[:drop]
            self.first_line += drop
            delta.trace_lines = None
        self.run.header["execution_rows"] = str(self.first_line + len(self.order) - 1)
        self.run.header["execution_window"] = f"{self.order[0]}-{self.order[-1]}"
        self._note_activity(changed)
        self._append_events(events_for_rows(changed), delta)
        self._stack_and_failure()
        delta.stack = before != [f.execution_id for f in self.run.call_stack]
        delta.status = True

    def _append_events(self, events: list[Event], delta: Delta) -> None:
        for event in events:  # appended in place, as for the trace
            key = _key(event)
            if key in self.emitted:
                continue
            self.emitted.add(key)
            event.seq = len(self.run.events)
            self.run.events.append(event)
            delta.events.append(event)

    def page(self, offset: int, limit: int) -> list[ExecutionRow]:
        """Older execution rows, 0-based ``offset`` from the run's first row (id order)."""
        return self.execution.page(offset, limit) if self.execution is not None else []


def _key(event: Event) -> tuple:
    return (event.kind, event.execution_id, event.text, event.status)


def _differs(a: ExecutionRow, b: ExecutionRow) -> bool:
    return (a.status, a.completed_at, a.error_message, a.metadata_raw, a.statement_text) != (
        b.status, b.completed_at, b.error_message, b.metadata_raw, b.statement_text)


def _receipt_events(receipts: list) -> list[Event]:
    from prose_tui.model import EventKind

    kinds = {"rendered": EventKind.RECEIPT_RENDERED, "skipped": EventKind.RECEIPT_SKIPPED, "failed": EventKind.RECEIPT_FAILED}
    out = []
    for r in receipts:
        kind = kinds.get(r.status.lower())
        if kind is not None:
            out.append(Event(0, kind, f"{r.node} {r.status}" + (f": {r.failure_reason}" if r.failure_reason else ""),
                             time=r.time, name=r.node, status=r.status))
    return out
