"""A PostgreSQL state database as a source of runs: list them, read one, keep them current.

:class:`PostgresSource` is what the workspace and the CLI hold for one database. It lists
the ``openprose.run`` rows (one query, newest first), reads a run in full on demand
(:class:`~prose_tui.backends.postgres.run.RunView`) and polls:

* :meth:`PostgresSource.poll_runs` (every ``runs_interval`` seconds at most): one
  signature query over ``run`` (``count``, ``max(started_at)``, ``max(updated_at)`` and a
  hash of ids and statuses); only when it moved, one hash per run row (``hashtext`` of
  the columns the list shows) tells which rows changed, and only those (and the running runs,
  whose activity moves) are read again into ``Run`` models;
* :meth:`PostgresSource.poll` (every ``poll_interval`` seconds, 0.5 by default): the runs
  read in full, through their ``RunView``;
* with ``listen`` set, a second connection ``LISTEN``s on that channel and a notification
  makes the next poll happen at once (:meth:`PostgresSource.wait`).

Thread-safe; a dropped connection is reported through :attr:`state` and by the runs'
``status_reason`` and resolved by reconnecting (see :mod:`.connect`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prose_tui.backends.postgres import tables as T
from prose_tui.backends.postgres.connect import (
    DatabaseUnavailable,
    PgReader,
    QueryFailed,
    quote_ident,
)
from prose_tui.backends.postgres.run import (
    PROGRAM_COLUMNS,
    RunView,
    fill_from_run_row,
    new_run,
    run_path,
)
from prose_tui.backends.postgres.url import DatabaseUrl
from prose_tui.backends.protocol import RunSource
from prose_tui.model import Delta, Run

DEFAULT_POLL = 0.5
RUNS_INTERVAL = 2.0
MAX_RUNS = 20_000
RELIST_OVER = 2_000  # changed rows past which the whole list is read again (one query either way)


@dataclass(slots=True)
class RunsChange:
    """What one :meth:`PostgresSource.poll_runs` found: runs new to the list, runs whose row
    changed (status, times, program) and the paths of runs deleted from the database."""

    added: list[Run] = field(default_factory=list)
    changed: list[Run] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)


class PostgresSource(RunSource):
    """Runs of the database at ``url`` (a :class:`~prose_tui.backends.protocol.RunSource`).
    ``poll_interval`` (seconds) is how often a watcher should call :meth:`poll`; ``listen`` a
    channel to ``LISTEN`` on (optional): :meth:`wait` returns early on a notification."""

    notifies: ClassVar[bool] = True

    def __init__(self, url: DatabaseUrl, *, poll_interval: float = DEFAULT_POLL, listen: str | None = None,
                 user_url: DatabaseUrl | None = None, statement_timeout_ms: int = 5000) -> None:
        self.reader = PgReader(url, statement_timeout_ms=statement_timeout_ms)
        self.user_reader = PgReader(user_url) if user_url is not None else None
        self.label = self.reader.label
        self.location = f"postgres {self.label}"
        self.poll_interval = poll_interval
        self.runs_interval = max(RUNS_INTERVAL, poll_interval)
        self.listen = listen
        self.views: dict[Path, RunView] = {}
        self.summaries: dict[str, Run] = {}  # by run id as the database has it (hashing 10,000 Paths costs more than the query)
        self._prefix = str(run_path(self.label, "x"))[:-1]
        self._runs_signature: object = None
        self._row_keys: dict[str, int] = {}  # run id -> hash of its listed columns
        self._runs_polled = 0.0
        self._lock = threading.RLock()
        self._notified = threading.Event()
        self._listener: threading.Thread | None = None
        self._stop = threading.Event()

    def __repr__(self) -> str:
        return f"PostgresSource({self.label!r})"

    @property
    def state(self) -> str:
        """One line for the status bar: connected, reconnecting (and why), or the last error."""
        return self.reader.state

    def owns(self, path: Path) -> bool:
        return str(path).startswith(self._prefix)

    def run_id_of(self, path: Path) -> str | None:
        """The run id a path of this source names (``None`` for another path)."""
        text = str(path)
        if not text.startswith(self._prefix):
            return None
        name = text[len(self._prefix):]
        return "" if name == "%00" else name.replace("%2F", "/")

    def path_of(self, run_id: str) -> Path:
        return run_path(self.label, run_id)

    # -- the run list -------------------------------------------------------------------
    def list_runs(self) -> list[Run]:
        """Every run in ``openprose.run`` as a run list row, newest first (at most 20,000).
        Raises :class:`DatabaseUnavailable` (safe message) when the database cannot be read;
        ``[]`` when it has no ``openprose.run`` table."""
        with self._lock:
            cols = self.reader.tables(refresh=True).get("run")
            if cols is None or "id" not in cols:
                return []
            self._runs_signature = self._signature(cols)
            self.summaries, self._row_keys = self._read_list(cols)
            self._runs_polled = time.monotonic()
            self._start_listener()
            return [self.views[r.path].run if r.path in self.views else r for r in self.summaries.values()]

    def first_runs(self, limit: int) -> list[Run]:
        """The newest ``limit`` runs of the list (one narrow query: the listed columns, ``LIMIT``),
        as run list rows: what the explorer shows while :meth:`list_runs` reads the rest. Does
        not change what :meth:`poll_runs` compares with. Raises :class:`DatabaseUnavailable`;
        ``[]`` when there is no ``openprose.run`` table."""
        with self._lock:
            cols = self.reader.tables(refresh=True).get("run")
            if cols is None or "id" not in cols:
                return []
            runs, _ = self._read_list(cols, limit=limit)
            return [self.views[r.path].run if r.path in self.views else r for r in runs.values()]

    def _listed_columns(self, cols: list[str]) -> list[str]:
        return [c for c in ("id", *PROGRAM_COLUMNS, "status", "started_at", "updated_at", "state_mode") if c in cols]

    def _row_key(self, cols: list[str]) -> str:
        """SQL for one hash per run row over the columns the list shows (NULLs told apart)."""
        return f"hashtext(ROW({', '.join('r.' + quote_ident(c) for c in self._listed_columns(cols))})::text)"

    def _order(self, cols: list[str], limit: int = MAX_RUNS) -> str:
        order = "ORDER BY r.started_at DESC NULLS LAST, r.id DESC" if "started_at" in cols else "ORDER BY r.id DESC"
        return f"{order} LIMIT {min(int(limit), MAX_RUNS)}"

    def _read_list(self, cols: list[str], ids: list[str] | None = None,
                   limit: int = MAX_RUNS) -> tuple[dict[str, Run], dict[str, int]]:
        """The run list's rows (only those of ``ids`` when given; the first ``limit``) as ``Run``
        models by run id (as the database has it; ``Run.id`` is made safe to show), in list
        order, and each row's hash (:meth:`_row_key`) by run id."""
        wanted = self._listed_columns(cols)
        exec_cols = self.reader.tables().get("execution", [])
        activity = "NULL"
        if {"run_id", "started_at"} <= set(exec_cols) and "status" in cols:
            stamp = "coalesce(e.completed_at, e.started_at)" if "completed_at" in exec_cols else "e.started_at"
            # Only for runs said to be running (few): when they last did something.
            activity = (f"CASE WHEN r.status = 'running' THEN (SELECT max({stamp}) FROM {self.reader.table('execution')} e "
                        f"WHERE e.run_id = r.id) END")
        where = "WHERE r.id::text = ANY(%s) " if ids is not None else ""
        sql = (f"SELECT {', '.join('r.' + quote_ident(c) for c in wanted)}, {activity}, {self._row_key(cols)} "
               f"FROM {self.reader.table('run')} r {where}{self._order(cols, limit)}")
        runs: dict[str, Run] = {}
        keys: dict[str, int] = {}
        for raw in self.reader.rows(sql, (ids,) if ids is not None else None):
            data: dict[str, Any] = dict(zip(wanted, raw))
            data["_activity"] = raw[-2]
            run_id = str(data["id"])
            run = runs[run_id] = new_run(run_id, self.label, self.location)
            fill_from_run_row(run, data, header=False)
            keys[run_id] = raw[-1]
        return runs, keys

    def _changed_rows(self, cols: list[str]) -> tuple[dict[str, int], list[str] | None]:
        """Each listed row's hash by run id, and the ids to read again: rows whose hash moved,
        new ones, and the running runs (their activity moves without their row); ``None``
        when so many moved that the whole list is read again."""
        running = "r.status = 'running'" if "status" in cols else "false"
        rows = self.reader.rows(f"SELECT r.id::text, {self._row_key(cols)}, {running} FROM {self.reader.table('run')} r "
                                f"{self._order(cols)}")
        keys = {run_id: key for run_id, key, _ in rows}
        stale = [run_id for run_id, key, is_running in rows if is_running or self._row_keys.get(run_id) != key]
        return keys, (None if len(stale) > RELIST_OVER else stale)

    def _signature(self, cols: list[str]) -> object:
        parts = ["count(*)"]
        parts += [f"max({c})::text" for c in ("started_at", "updated_at") if c in cols]
        if "status" in cols:
            parts.append("sum(hashtext(id || ':' || coalesce(status, '')))")
        rows = self.reader.rows(f"SELECT {', '.join(parts)} FROM {self.reader.table('run')}")
        return rows[0] if rows else None

    def poll_runs(self, *, force: bool = False) -> RunsChange:
        """New, changed and removed runs since the last listing, at most every
        ``runs_interval`` seconds unless ``force``; reads into ``Run`` models only the rows
        that changed. Raises :class:`DatabaseUnavailable`."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._runs_polled < self.runs_interval:
                return RunsChange()
            self._runs_polled = now
            cols = self.reader.tables().get("run")
            if cols is None or "id" not in cols:
                cols = self.reader.tables(refresh=True).get("run")
                if cols is None or "id" not in cols:
                    return RunsChange()
            signature = self._signature(cols)
            if signature == self._runs_signature:
                return RunsChange()
            self._runs_signature = signature
            keys, stale = self._changed_rows(cols)
            read, _ = self._read_list(cols, stale)
            out = RunsChange()
            for run_id, run in read.items():
                old = self.summaries.get(run_id)
                if old is None:
                    out.added.append(run)
                elif (old.status, old.updated, old.program, old.started) != (run.status, run.updated, run.program, run.started):
                    view = self.views.get(run.path)
                    out.changed.append(view.run if view is not None else run)
            gone = [run_id for run_id in self.summaries if run_id not in keys]
            out.removed = [self.summaries[run_id].path for run_id in gone]
            for run_id in gone:
                self.views.pop(self.summaries.pop(run_id).path, None)
            self.summaries.update(read)
            self._row_keys = keys
            return out

    # -- one run ------------------------------------------------------------------------
    def open(self, path: Path, *, first_screen: Callable[[Run], None] | None = None) -> Run:
        """The run at ``path`` read in full; from now on :meth:`poll` keeps it current.
        ``first_screen(run)`` (optional) receives the run's first screen before the rest is
        read (``RunView.load``; not called for a run read in full before). Raises
        ``KeyError`` for a path this source does not know, ``DatabaseUnavailable``."""
        with self._lock:
            run_id = self.run_id_of(path)
            if run_id is None:
                raise KeyError(path)
            view = self.views.get(path)
            if view is not None:
                return view.run
        # Read without the source's lock (the reader takes its own per statement): the polls
        # of the runs shown go on meanwhile, and so does the read while ``first_screen``
        # waits for the screen.
        view = RunView(self.reader, new_run(run_id, self.label, self.location))
        view.load(first_screen)
        if self.user_reader is not None:
            self._user_agents(view.run)
        with self._lock:
            known = self.views.get(path)
            if known is not None:  # read meanwhile by another thread: one view per run
                return known.run
            self.views[path] = view
            return view.run

    def open_id(self, run_id: str) -> Run:
        """The run ``run_id`` read in full. Raises ``KeyError`` when the database has no such run."""
        with self._lock:
            cols = self.reader.tables(refresh=True).get("run", [])
            if "id" in cols and not self.reader.rows(f"SELECT 1 FROM {self.reader.table('run')} WHERE id = %s", (run_id,)):
                raise KeyError(run_id)
            return self.open(self.path_of(run_id))

    def _user_agents(self, run: Run) -> None:
        assert self.user_reader is not None
        try:
            run.agents.extend(T.load_agents(self.user_reader, run, user=True))
        except (DatabaseUnavailable, QueryFailed) as exc:
            run.warnings.append(f"user-scoped agents ({self.user_reader.label}): {exc}")

    def forget(self, path: Path) -> None:
        """Stop keeping ``path`` current (it is no longer shown)."""
        with self._lock:
            self.views.pop(path, None)

    def poll(self, path: Path | None = None) -> dict[Path, Delta]:
        """Poll the runs read in full (or only ``path``); a delta per run that changed."""
        with self._lock:
            self._notified.clear()
            views = [self.views[path]] if path is not None and path in self.views else (
                [] if path is not None else list(self.views.values()))
            out: dict[Path, Delta] = {}
            for view in views:
                delta = view.poll()
                if delta is not None:
                    out[view.run.path] = delta
            return out

    def page(self, path: Path, offset: int, limit: int) -> list:
        with self._lock:
            view = self.views.get(path)
            return view.page(offset, limit) if view is not None else []

    def read_value(self, run: Run, name: str, execution_id: int | None) -> tuple[str, str | None]:
        return T.read_binding_value(self.reader, run.id, name, execution_id)

    def read_table(self, run: Run, table: str, offset: int = 0, limit: int = T.TABLE_ROWS) -> tuple[list[str], list[tuple]]:
        return T.read_table_page(self.reader, table, run.id, offset, limit)

    # -- LISTEN (optional) ----------------------------------------------------------------
    def _start_listener(self) -> None:
        if not self.listen or self._listener is not None:
            return
        self._listener = threading.Thread(target=self._listen_loop, name=f"listen {self.label}", daemon=True)
        self._listener.start()

    def _listen_loop(self) -> None:
        import psycopg
        from psycopg import sql

        while not self._stop.is_set():
            try:
                with self.reader.listen_connection() as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.listen or "")))
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            self._notified.set()
            except (psycopg.Error, OSError):
                self._stop.wait(2.0)

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until the next poll is due (``poll_interval``) or a ``LISTEN`` notification
        arrives; ``True`` when notified."""
        return self._notified.wait(self.poll_interval if timeout is None else timeout)

    def close(self) -> None:
        self._stop.set()
        self.reader.close()
        if self.user_reader is not None:
            self.user_reader.close()

