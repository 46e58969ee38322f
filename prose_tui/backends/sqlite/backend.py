"""The SQLite backend: ``state.db`` runs (seeds/sqlite.md), always opened read-only."""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.filesystem.folder import state_file_of
from prose_tui.backends.protocol import Value
from prose_tui.backends.sqlite.connect import (
    _connect,
    _uri,
    choose_mode,
    db_path_for,
    is_sqlite_file,
)
from prose_tui.backends.sqlite.live import SqliteTail
from prose_tui.backends.sqlite.run import is_sqlite_run, load_sqlite_run
from prose_tui.backends.sqlite.tables import list_extension_tables, metrics_summary
from prose_tui.backends.sqlite.values import read_sqlite_binding_value
from prose_tui.model import Backend, Binding, Delta, Event, Run, Section


class SqliteBackend:
    """A ``state.db`` file, or a run folder holding one and no ``state.md``/``vm.log.md``."""

    kind: ClassVar[Backend] = Backend.SQLITE

    def __init__(self) -> None:
        # Per database: a read-only connection kept open and the ``PRAGMA data_version`` seen
        # when the run was last read. The value changes only when another connection (the
        # VM) commits, so a watcher event for the -wal/-shm files of a read, or a commit
        # that has not happened yet, costs one pragma instead of reading the run again.
        self._versions: dict[Path, tuple[sqlite3.Connection, int]] = {}
        # Per database: what the last read saw, to apply a commit from the rows it changed
        # (live.py) instead of reading the run again.
        self._tails: dict[Path, SqliteTail] = {}
        self._lock = threading.Lock()

    def _data_version(self, dbp: Path) -> int | None:
        """The database's data version on this backend's connection, or ``None`` when the
        file cannot be watched that way (opened immutable or as a copy)."""
        try:
            if choose_mode(dbp) != "ro":
                return None
            with self._lock:
                held = self._versions.get(dbp)
            conn = held[0] if held is not None else _connect(_uri(dbp, mode="ro"))
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        except (sqlite3.Error, OSError):
            return None
        if held is None:
            with self._lock:
                self._versions.setdefault(dbp, (conn, -1))
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

    def claims(self, path: Path) -> bool:
        if path.is_file():
            return is_sqlite_file(path)
        return state_file_of(path) is None and is_sqlite_run(path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run_dir = path.parent if path.is_file() else path
        dbp = db_path_for(path)
        version = self._data_version(dbp)  # before reading: a commit during the read shows as a change
        keep: dict = {}
        run = load_sqlite_run(run_dir, now=now, keep=keep)
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        _add_tables_and_metrics(run, run_dir)
        self._start_tail(dbp, run, keep, version)
        self._remember(dbp, version)
        return run

    def _start_tail(self, dbp: Path, run: Run, keep: dict, version: int | None) -> None:
        """Keep what this read saw, for ``apply`` (only on a connection that sees commits)."""
        with self._lock:
            held = self._versions.get(dbp)
            self._tails.pop(dbp, None)
        if version is None or held is None:
            return
        try:
            tail = SqliteTail.start(held[0], run, dbp, keep)
        except sqlite3.Error:
            return
        if tail is not None:
            with self._lock:
                self._tails[dbp] = tail

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        dbp = run.state_file or db_path_for(run.path)
        version = self._data_version(dbp)
        with self._lock:
            held = self._versions.get(dbp)
        if version is not None and held is not None and held[1] == version:
            before = (run.status, run.status_reason)
            apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
            return Delta(run, set(paths), status=(run.status, run.status_reason) != before)  # nothing committed
        delta = self._apply_commit(dbp, run, paths, version, now=now, stale_after=stale_after, observed=observed)
        if delta is not None:
            return delta
        fresh = self.open(run.path, now=now, stale_after=stale_after, observed=observed)
        delta = Delta.whole(fresh, paths)
        delta.reread = True
        return delta

    def _apply_commit(self, dbp: Path, run: Run, paths: set[Path], version: int | None, *, now: datetime | None,
                      stale_after: float, observed: datetime | None) -> Delta | None:
        """A commit applied from the rows it changed (live.py); ``None``: read the run again."""
        with self._lock:
            held = self._versions.get(dbp)
            tail = self._tails.get(dbp)
        if tail is None or held is None or version is None:
            return None
        try:
            delta = tail.apply(held[0], run, paths)
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
            return tail.older(held[0], run, limit)
        except sqlite3.Error:
            return 0

    def read_value(self, run: Run, binding: Binding) -> Value:
        return Value(text=read_sqlite_binding_value(run.path, binding.name, binding.execution_id),
                     warning=binding.warning)

    def events(self, run: Run) -> list[Event]:
        return run.events


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
