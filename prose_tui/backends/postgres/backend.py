"""The PostgreSQL backend (openprose-0.15 state/postgres.md) behind the backend protocol.

A database run has no folder: its ``Run.path`` is a key of the form
``postgres:/<db@host>/<run id>`` (see :func:`.run.run_path`) and ``Run.location`` says
where it lives (``"postgres db@host:port"``). The backend finds the
:class:`~.source.PostgresSource` that owns such a path among the sources registered with
:func:`attach` (the CLI and the workspace attach one per database they were given).
Stateless itself; the per-run reading state lives in the source.

Live without NOTIFY: :meth:`PostgresBackend.poll` is what a watcher calls every
:attr:`PostgresBackend.poll_interval` seconds for a database run.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.postgres.source import DEFAULT_POLL, PostgresSource
from prose_tui.backends.protocol import Value
from prose_tui.model import Backend, Binding, Delta, Event, Run

_SOURCES: list[PostgresSource] = []
_LOCK = threading.Lock()


def attach(source: PostgresSource) -> PostgresSource:
    """Make ``source``'s runs reachable through the backend (and the registry)."""
    with _LOCK:
        if source not in _SOURCES:
            _SOURCES.append(source)
    return source


def detach(source: PostgresSource) -> None:
    with _LOCK:
        if source in _SOURCES:
            _SOURCES.remove(source)
    source.close()


def source_of(path: Path) -> PostgresSource | None:
    """The attached source that owns ``path`` (a database run's key), else ``None``."""
    with _LOCK:
        sources = list(_SOURCES)
    return next((s for s in sources if s.owns(path)), None)


class PostgresBackend:
    """Runs kept in a PostgreSQL ``openprose`` schema, read through an attached source."""

    kind: ClassVar[Backend] = Backend.POSTGRES

    @property
    def poll_interval(self) -> float:
        """Seconds between polls: the shortest any attached source asks for (``--poll``)."""
        with _LOCK:
            return min((s.poll_interval for s in _SOURCES), default=DEFAULT_POLL)

    def claims(self, path: Path) -> bool:
        return bool(path.parts) and path.parts[0] == "postgres:" and source_of(path) is not None

    def _source(self, path: Path) -> PostgresSource:
        source = source_of(path)
        if source is None:
            raise FileNotFoundError(f"{path}: no PostgreSQL database is attached for this run")
        return source

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        source = self._source(path)
        run_id = source.run_id_of(path)
        if summary and run_id in source.summaries and path not in source.views:
            return source.summaries[run_id]
        try:
            run = source.open(path)
        except KeyError:
            raise FileNotFoundError(f"{path.name}: no such run in PostgreSQL {source.label}") from None
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        return run

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
              observed: datetime | None = None) -> Delta:
        delta = self.poll(run)
        return delta if delta is not None else Delta(run, set(paths))

    def poll(self, run: Run) -> Delta | None:
        """What changed in ``run`` since it was last read or polled, or ``None``. Cheap:
        a few index lookups (see :mod:`.run`). Never raises: an unreachable server is a
        status change (``run.status_reason`` says so) and then ``None`` until it is back."""
        source = source_of(run.path)
        if source is None:
            return None
        return source.poll(run.path).get(run.path)

    def read_value(self, run: Run, binding: Binding) -> Value:
        source = self._source(run.path)
        try:
            text, note = source.read_value(run, binding.name, binding.execution_id)
        except OSError as exc:
            return Value(text="", warning=str(exc))
        except RuntimeError as exc:  # QueryFailed
            return Value(text="", warning=f"could not read {binding.name}: {exc}")
        return Value(text=text, note=note or f"openprose.bindings in {source.label}", warning=binding.warning)

    def read_table(self, run: Run, table: str, offset: int = 0, limit: int = 200) -> tuple[list[str], list[tuple]]:
        """One page of an ``x_*`` table (this run's rows where it has ``run_id``)."""
        return self._source(run.path).read_table(run, table, offset, limit)

    def chain(self, run: Run) -> None:
        """None: this format keeps no hash-chained ledger."""
        return None

    def events(self, run: Run) -> list[Event]:
        return run.events

    def history_source(self) -> None:
        """None: the run's ``events`` are its whole history (``RunBackend.history_source``)."""
        return None
