"""The SQLite backend: ``state.db`` runs (seeds/sqlite.md), always opened read-only."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.common.state_files import state_file_of
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.backends.sqlite.connect import (
    DbUnavailable,
    ReadOnlyDb,
    db_path_for,
    is_sqlite_file,
    open_db,
)
from prose_tui.backends.sqlite.live import SqliteTail
from prose_tui.backends.sqlite.run import is_sqlite_run, load_sqlite_run
from prose_tui.backends.sqlite.tables import list_extension_tables, metrics_summary, read_table_page
from prose_tui.backends.sqlite.values import read_sqlite_binding_value
from prose_tui.model import Backend, Binding, Delta, Run, Section


class SqliteBackend(RunBackend):
    """A ``state.db`` file, or a run folder holding one and no ``state.md``/``vm.log.md``."""

    kind: ClassVar[Backend] = Backend.SQLITE
    name: ClassVar[str] = "sqlite"
    priority: ClassVar[int] = 10  # first: a folder with only state.db

    def __init__(self) -> None:
        # Per database: a read-only connection kept open and the ``PRAGMA data_version`` seen
        # when the run was last read. The value changes only when another connection (the
        # VM) commits, so a watcher event for the -wal/-shm files of a read, or a commit
        # that has not happened yet, costs one pragma instead of reading the run again.
        # Kept only on the run's own file (``mode == "ro"``), never on a private copy.
        self._versions: dict[Path, tuple[ReadOnlyDb, int]] = {}
        # Per database: the run object last read whole (its ``id()``) and when, so a re-read
        # that fails for a transient reason keeps that run on screen with a note.
        self._good: dict[Path, tuple[int, datetime]] = {}
        # Per database: what the last read saw, to apply a commit from the rows it changed
        # (live.py) instead of reading the run again.
        self._tails: dict[Path, SqliteTail] = {}
        self._lock = threading.Lock()

    def _data_version(self, dbp: Path) -> int | None:
        """The database's data version on this backend's connection, or ``None`` when the
        file cannot be watched that way now (read from a private copy, or locked)."""
        with self._lock:
            held = self._versions.get(dbp)
        db = held[0] if held is not None else None
        if db is None:
            try:
                db = open_db(dbp)
            except DbUnavailable:
                return None
            if db.mode != "ro":
                db.close()
                return None
        try:
            version = int(db.conn.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            if held is None:
                db.close()
            return None
        if held is None:
            with self._lock:
                kept = self._versions.setdefault(dbp, (db, -1))
            if kept[0] is not db:
                db.close()
        return version

    def _remember(self, dbp: Path, version: int | None) -> None:
        with self._lock:
            held = self._versions.get(dbp)
            if held is not None:
                self._versions[dbp] = (held[0], version if version is not None else -1)

    def forget(self, path: Path) -> None:
        with self._lock:
            held = self._versions.pop(db_path_for(path), None)
            self._tails.pop(db_path_for(path), None)
        if held is not None:
            held[0].close()
        with self._lock:
            self._good.pop(db_path_for(path), None)

    def claims(self, path: Path) -> bool:
        if path.is_file():
            return is_sqlite_file(path)
        return state_file_of(path) is None and is_sqlite_run(path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run, _ = self._read(path, now=now, stale_after=stale_after, observed=observed)
        return run

    def _read(self, path: Path, *, now: datetime | None, stale_after: float,
              observed: datetime | None) -> tuple[Run, str | None]:
        """The run read whole, and why it could not be (a transient reason) or ``None``."""
        run_dir = path.parent if path.is_file() else path
        dbp = db_path_for(path)
        version = self._data_version(dbp)  # before reading: a commit during the read shows as a change
        keep: dict = {}
        run = load_sqlite_run(run_dir, now=now, keep=keep)
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        failed = keep.get("failed")
        if failed is not None:
            return run, failed
        _add_tables_and_metrics(run, run_dir)
        self._start_tail(dbp, run, keep, version)
        self._remember(dbp, version)
        with self._lock:
            self._good[dbp] = (id(run), now or datetime.now().astimezone())
        return run, None

    def _start_tail(self, dbp: Path, run: Run, keep: dict, version: int | None) -> None:
        """Keep what this read saw, for ``apply`` (only on a connection that sees commits)."""
        with self._lock:
            held = self._versions.get(dbp)
            self._tails.pop(dbp, None)
        if version is None or held is None:
            return
        try:
            tail = SqliteTail.start(held[0].conn, run, dbp, keep)
        except sqlite3.Error:
            return
        if tail is not None:
            with self._lock:
                self._tails[dbp] = tail

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        dbp = run.state_file or db_path_for(run.path)
        version = self._data_version(dbp)
        with self._lock:
            held = self._versions.get(dbp)
        if version is not None and held is not None and held[1] == version:
            before = (run.status, run.status_reason, len(run.warnings))
            _drop_note(run)  # nothing committed since the last read: the run shown is current
            apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
            return Delta(run, set(paths), status=(run.status, run.status_reason, len(run.warnings)) != before)
        delta = self._apply_commit(dbp, run, paths, version, now=now, stale_after=stale_after, observed=observed)
        if delta is not None:
            _drop_note(run)
            return delta
        fresh, failed = self._read(run.path, now=now, stale_after=stale_after, observed=observed)
        with self._lock:
            good = self._good.get(dbp)
        if failed is not None and good is not None and good[0] == id(run):
            # A writer's lock or checkpoint outlasted the retries: the last good state stays.
            shown = (run.status, run.status_reason, list(run.warnings))
            _drop_note(run)
            run.warnings.insert(0, f"{NOTE} ({failed}); showing it as read at {good[1]:%H:%M:%S}.")
            apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
            return Delta(run, set(paths), status=(run.status, run.status_reason, run.warnings) != shown)
        delta = Delta.whole(fresh, paths)
        delta.reread = True
        return delta

    def _apply_commit(self, dbp: Path, run: Run, paths: Collection[Path], version: int | None, *, now: datetime | None,
                      stale_after: float, observed: datetime | None) -> Delta | None:
        """A commit applied from the rows it changed (live.py); ``None``: read the run again."""
        with self._lock:
            held = self._versions.get(dbp)
            tail = self._tails.get(dbp)
        if tail is None or held is None or version is None:
            return None
        try:
            delta = tail.apply(held[0].conn, run, paths)
        except sqlite3.Error:
            delta = None
        if delta is None:
            return None
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        if tail.metrics_moved:
            run.sections = [s for s in run.sections if s.title != "Metrics"]
            _add_tables_and_metrics(run, run.path)
        self._remember(dbp, version)
        return delta

    def older(self, run: Run, limit: int) -> int:
        """Page the trace back: up to ``limit`` execution rows before the first one shown are
        put at the start of ``run.trace`` (in place); returns how many (0 at the first row or
        when the run is not the one last read)."""
        dbp = run.state_file or db_path_for(run.path)
        with self._lock:
            held = self._versions.get(dbp)
            tail = self._tails.get(dbp)
        if tail is None or held is None:
            return 0
        try:
            return tail.older(held[0].conn, run, limit)
        except sqlite3.Error:
            return 0

    def read_value(self, run: Run, binding: Binding) -> Value:
        return Value(text=read_sqlite_binding_value(run.path, binding.name, binding.execution_id),
                     warning=binding.warning)

    def read_table(self, run: Run, table: str, offset: int = 0, limit: int = 200) -> tuple[list[str], list[tuple]]:
        """One page of an ``x_*`` table of the run's ``state.db`` (read-only)."""
        return read_table_page(run.path, table, offset, limit)


NOTE = "state.db could not be read just now"
"""How the warning starts that says the run shown is the last one read whole."""


def _drop_note(run: Run) -> None:
    run.warnings[:] = [w for w in run.warnings if not w.startswith(NOTE)]


def _add_tables_and_metrics(run: Run, run_dir: Path) -> None:
    """List the x_* tables as viewable and sum token/cost metrics per run and per statement
    (seeds/sqlite.md, Flexibility Encouragement)."""
    run.tables = list_extension_tables(run_dir)
    summary = metrics_summary(run_dir)
    run.metrics = dict(summary["run"])
    rows = [(eid, figures) for eid, figures in summary["by_execution"].items() if eid is not None]
    if rows:
        names = sorted({name for _, figures in rows for name in figures})
        lines = ["| execution | statement | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
        for eid, figures in sorted(rows):
            statement = summary["statements"].get(eid, "").replace("|", "\\|").replace("\n", " ")[:60]
            cells = " | ".join(f"{figures.get(n, 0):g}" for n in names)
            lines.append(f"| {eid} | {statement} | {cells} |")
        totals = ", ".join(f"{k} {v:g}" for k, v in sorted(run.metrics.items()))
        run.sections.append(Section("Metrics", f"Run totals: {totals}\n\n" + "\n".join(lines)))
