"""A read-only connection to a PostgreSQL state database that survives restarts (psycopg 3).

The explorer must never disturb the VMs writing the database (openprose-0.15
state/postgres.md, Overview: "external tools can observe and query execution state"):

* every session is ``SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`` (and
  ``default_transaction_read_only``), so not even a bug can write;
* ``autocommit``: each read is its own short transaction, so no snapshot or lock is held
  between polls (a VM's ``ALTER TABLE`` is never blocked by an idle explorer);
* ``statement_timeout`` (default 5 s) and ``lock_timeout`` bound every statement;
* a role with nothing but ``SELECT`` on the ``openprose`` tables is enough.

A dropped connection (server restarted, network gone) is noticed on the next statement:
:class:`PgReader` says so in :attr:`PgReader.state`, retries with a growing pause
(0.5 s .. 5 s) and carries on where it was once the server answers again. No message it
produces contains the connection string or its password (see :mod:`.url`).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

from prose_tui.backends.common.dburl import DatabaseUrl, redact

SCHEMA = "openprose"
STATEMENT_TIMEOUT_MS = 5000
CONNECT_TIMEOUT_S = 5
RETRY_MIN_S = 0.5
RETRY_MAX_S = 5.0


class DatabaseUnavailable(OSError):
    """The database cannot be reached (or refused us) right now. The message names the
    database by its safe label only and says what to do."""


class QueryFailed(RuntimeError):
    """One statement failed on a live connection (a missing column, a timeout); the message
    is the server's, scrubbed of secrets."""


def quote_ident(name: str) -> str:
    """``name`` as an SQL identifier in double quotes (inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _reason(exc: BaseException, url: str) -> str:
    """The server's own words from a driver error (after libpq's "connection to server at
    … failed:" and "FATAL:" prefixes), first line only, scrubbed of secrets."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()] or [text]
    line = next((ln for ln in lines if "FATAL:" in ln or "ERROR:" in ln), lines[0])
    for marker in ("FATAL:", "ERROR:"):
        if marker in line:
            line = line.split(marker, 1)[1].strip()
    line = line.removeprefix("connection failed:").strip()
    return redact(line, url)[:240]


class PgReader:
    """One read-only connection to ``url``'s database, (re)opened on demand.

    :meth:`rows` runs one statement and returns its rows; :meth:`tables` reads what the
    ``openprose`` schema holds (``{table: [column, ...]}``, from ``information_schema``).
    Thread-safe: statements from several threads take turns. ``state`` is one line for
    the status bar (``"connected to db@host"``, ``"reconnecting to db@host (attempt 3): …"``).
    """

    def __init__(self, url: DatabaseUrl, *, schema: str = SCHEMA,
                 statement_timeout_ms: int = STATEMENT_TIMEOUT_MS, connect_timeout: int = CONNECT_TIMEOUT_S) -> None:
        self._url = url.secret
        self.origin = url.origin
        self.label = url.label
        self.schema = schema
        self.statement_timeout_ms = statement_timeout_ms
        self.connect_timeout = connect_timeout
        self.state = f"not connected to {self.label}"
        self.lost = False  # true from a dropped connection until the next successful statement
        self.reconnects = 0
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.RLock()
        self._failures = 0
        self._retry_at = 0.0
        self._tables: dict[str, list[str]] | None = None

    def __repr__(self) -> str:
        return f"PgReader({self.label!r})"

    # -- connection -------------------------------------------------------------------
    def _open(self) -> psycopg.Connection[Any]:
        import psycopg  # here, not at import: psycopg and libpq cost 0.2 s, paid only by a database

        try:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=self.connect_timeout,
                                   application_name="prose-tui (read-only)")
        except psycopg.Error as exc:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL {self.label}: {_reason(exc, self._url)}") from None
        except Exception as exc:  # noqa: BLE001 - a malformed URL: never echo it
            raise DatabaseUnavailable(
                f"cannot connect to PostgreSQL {self.label}: the connection URL is malformed "
                f"({type(exc).__name__}; check {self.origin})") from None
        try:
            conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            conn.execute("SET default_transaction_read_only = on")
            conn.execute(f"SET statement_timeout = {int(self.statement_timeout_ms)}")
            conn.execute(f"SET lock_timeout = {int(self.statement_timeout_ms)}")
            conn.execute("SET idle_in_transaction_session_timeout = 60000")
        except psycopg.Error as exc:
            conn.close()
            raise DatabaseUnavailable(f"cannot prepare a read-only session on {self.label}: {_reason(exc, self._url)}") from None
        return conn

    def listen_connection(self, application_name: str = "prose-tui (listen)") -> psycopg.Connection[Any]:
        """A second autocommit connection to the same database for ``LISTEN`` (notifications
        need a session of their own), the caller's to close. The URL and its password stay
        in this object. Raises ``psycopg.Error`` or ``OSError`` as ``psycopg.connect`` does."""
        import psycopg

        return psycopg.connect(self._url, autocommit=True, connect_timeout=5, application_name=application_name)

    def connect(self) -> None:
        """Open the connection now. Raises :class:`DatabaseUnavailable` (safe message)."""
        with self._lock:
            if self._conn is not None and not self._conn.closed:
                return
            now = time.monotonic()
            if self._failures and now < self._retry_at:
                raise DatabaseUnavailable(self.state)
            try:
                self._conn = self._open()
            except DatabaseUnavailable as exc:
                self._failures += 1
                self._retry_at = now + min(RETRY_MIN_S * 2 ** (self._failures - 1), RETRY_MAX_S)
                prefix = f"reconnecting to {self.label} (attempt {self._failures}): " if self.lost else ""
                self.state = prefix + str(exc) if prefix else str(exc)
                raise
            if self.lost:
                self.reconnects += 1
            self._failures = 0
            self._tables = None  # the schema may have changed while we were away
            self.state = f"connected to {self.label}" + (" (reconnected)" if self.lost else "")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                finally:
                    self._conn = None

    # -- reading ----------------------------------------------------------------------
    def rows(self, sql: str, params: tuple | list | dict | None = None) -> list[tuple]:
        """Run one read statement; its rows as tuples (psycopg's types: ``datetime`` for
        ``timestamptz``, ``dict``/``list`` for ``jsonb``, ``bytes`` for ``bytea``).

        Raises :class:`DatabaseUnavailable` when the server cannot be reached (after one
        immediate reconnect attempt) and :class:`QueryFailed` when the statement fails.
        """
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                self.connect()
                conn = self._conn
                assert conn is not None
                try:
                    cur = conn.execute(sql, params)
                    out = cur.fetchall() if cur.description is not None else []
                    self.lost = False
                    return out
                except psycopg.Error as exc:
                    if not conn.broken and not conn.closed:
                        raise QueryFailed(_reason(exc, self._url)) from None
                    self.close()
                    self.lost = True
                    self.state = f"connection to {self.label} lost ({_reason(exc, self._url)}); reconnecting"
                    if attempt == 2:
                        raise DatabaseUnavailable(self.state) from None
            raise DatabaseUnavailable(self.state)  # pragma: no cover - the loop returns or raises

    def tables(self, refresh: bool = False) -> dict[str, list[str]]:
        """``{table: [column, ...]}`` of the state schema as the server reports it (only tables
        this role may read). ``{}`` when the schema does not exist. Cached until ``refresh``
        or a reconnect."""
        with self._lock:
            if self._tables is None or refresh:
                rows = self.rows(
                    "SELECT table_name, column_name FROM information_schema.columns "
                    "WHERE table_schema = %s ORDER BY table_name, ordinal_position", (self.schema,))
                tables: dict[str, list[str]] = {}
                for table, column in rows:
                    tables.setdefault(str(table), []).append(str(column))
                self._tables = tables
            return self._tables

    def table(self, name: str) -> str:
        """The schema-qualified, quoted name of table ``name``."""
        return f"{quote_ident(self.schema)}.{quote_ident(name)}"
