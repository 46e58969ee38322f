"""The PostgreSQL backend (openprose-0.15 state/postgres.md) behind the backend protocol.

A database run has no folder: its ``Run.path`` is a key of the form
``postgres:/<db@host>/<run id>`` (see :func:`.run.run_path`) and ``Run.location`` says
where it lives (``"postgres db@host:port"``). The backend finds the
:class:`~.source.PostgresSource` that owns such a path among the sources registered with
:func:`attach` (the CLI and the workspace attach one per database they were given).
Stateless itself; the per-run reading state lives in the source.

Live without NOTIFY: :meth:`PostgresBackend.poll` is what a watcher calls every
:attr:`PostgresBackend.poll_interval` seconds for a database run.

On the command line it adds ``--postgres URL``, ``--postgres-env VAR``, ``--no-postgres``
(and ``--poll``/``--listen`` for live commands), and makes the sources a target asks for
(:meth:`PostgresBackend.sources_for`: a ``postgresql://`` target, ``--postgres``, or the
database the VM of a folder would use).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.dburl import DatabaseUrl, Target, parse_target
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.postgres.source import DEFAULT_POLL, PostgresSource
from prose_tui.backends.postgres.url import USER_URL_VARIABLE, find_url
from prose_tui.backends.protocol import RunBackend, RunSource, Value
from prose_tui.model import Backend, Binding, Delta, Run

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


class PostgresBackend(RunBackend):
    """Runs kept in a PostgreSQL ``openprose`` schema, read through an attached source."""

    kind: ClassVar[Backend] = Backend.POSTGRES
    name: ClassVar[str] = "postgres"
    priority: ClassVar[int] = 50  # claims database keys (postgres:/…) only
    polls: ClassVar[bool] = True

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

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
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

    def add_options(self, parser: argparse.ArgumentParser, *, live: bool) -> None:
        """``--postgres URL`` / ``--postgres-env VAR`` / ``--no-postgres`` (and, when ``live``,
        ``--poll``/``--listen``). The URL is parsed into a :class:`DatabaseUrl` at once, so
        the parsed options never hold it as text."""
        parser.add_argument("--postgres", metavar="URL", type=database_url,
                            help="also read the runs of this PostgreSQL database beside PATH "
                                 "(default: OPENPROSE_POSTGRES_URL in .env or the environment, then DATABASE_URL)")
        parser.add_argument("--postgres-env", metavar="VAR", help="the target is the PostgreSQL database whose URL is in "
                            "environment variable VAR (that database alone, as a URL target; kept out of the process list)")
        parser.add_argument("--no-postgres", action="store_true", help="do not look for a PostgreSQL database")
        if live:
            parser.add_argument("--poll", type=float, default=0.5, metavar="SECONDS",
                                help="how often a database is asked for changes (default 0.5)")
            parser.add_argument("--listen", metavar="CHANNEL",
                                help="also LISTEN on this channel and poll at once on a NOTIFY")

    def sources_for(self, target: Target, options: argparse.Namespace | None) -> list[RunSource]:
        """The sources (attached to this backend) ``target`` and ``options`` ask for: the
        target's database alone for a URL; for a path, ``--postgres`` if given, else (unless
        ``--no-postgres``) the database the VM of that path would use (openprose-0.15
        state/postgres.md, Environment Variable Precedence). ``[]`` for none. No connection
        is made here."""
        urls: list[DatabaseUrl] = []
        project = target.path if target.path is not None else None
        if target.database is not None:
            urls.append(target.database)
        given = getattr(options, "postgres", None)
        if given is not None and given not in urls:
            urls.append(given)
        if not urls and project is not None and not getattr(options, "no_postgres", False) and str(project) != "-":
            found = find_url(project)
            urls += [found] if found is not None else []
        user_url = find_url(project, variable=USER_URL_VARIABLE) if project is not None else None
        poll = max(float(getattr(options, "poll", 0.5) or 0.5), 0.05)
        return [attach(PostgresSource(url, poll_interval=poll, listen=getattr(options, "listen", None), user_url=user_url))
                for url in urls]


def database_url(text: str) -> DatabaseUrl:
    """``--postgres URL`` as a :class:`DatabaseUrl` (an argparse ``type``): a URL that is not
    ``postgresql://``/``postgres://``, or one naming a run, is a usage error."""
    target = parse_target(text, "--postgres")
    if target.database is None:
        raise argparse.ArgumentTypeError("expected a postgresql:// or postgres:// URL")
    if target.run_id is not None:
        raise argparse.ArgumentTypeError("a database, without #RUN_ID")
    return target.database
