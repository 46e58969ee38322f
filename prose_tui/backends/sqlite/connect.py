"""Open a run's ``state.db`` without ever writing to the run folder (seeds/sqlite.md, Database Location).

The VM and its subagents write ``state.db`` with the ``sqlite3`` CLI while prose-tui reads
it, so reading must not disturb them and must not leave files behind. SQLite's rules
decide how:

* **Rollback-journal database** (header byte 18 is 1): ``file:…?mode=ro`` with
  ``PRAGMA query_only=ON`` and a busy timeout. A reader only takes a shared lock; it
  creates no file. A writer holding a RESERVED lock (an open write transaction) does not
  block it; a writer in the middle of a commit (PENDING/EXCLUSIVE) makes the read wait up
  to the busy timeout and then fail with a "database is locked" warning.
* **WAL database, no ``-wal`` and no ``-shm``** (nobody has it open): ``mode=ro`` would
  *create* both files (SQLite needs the shared-memory index), so the database is opened
  with ``immutable=1`` instead, which reads the main file only and creates nothing.
* **WAL database with ``-wal`` and ``-shm``** (a writer has it open): ``mode=ro``. The
  reader uses the existing shared-memory index; like every SQLite reader it may record a
  read mark in ``-shm`` (a shared-memory file that, per SQLite's documentation, holds no
  persistent content). No file is created and ``state.db`` and ``-wal`` are untouched.
* **WAL database with ``-wal`` but no ``-shm``** (left by a crashed writer): the database
  and its ``-wal`` are copied to a private temporary folder and read there, so the
  committed frames in ``-wal`` are seen without creating ``-shm`` in the run folder.
* A hot rollback journal (a crashed writer) cannot be rolled back read-only: the file is
  read with ``immutable=1`` and a warning says it may include a half-written change.

Nothing here raises for bad input: :func:`open_readonly` returns ``None`` plus a warning
sentence for a missing file, a file that is not SQLite, or a locked database.
"""

from __future__ import annotations

import functools
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from prose_tui.backends.common.text import open_regular

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 500
"""How long a read waits for a committing writer before giving up, in milliseconds."""


def db_path_for(run_dir: Path) -> Path:
    """The database file of a run: ``run_dir/state.db``, or ``run_dir`` itself if it is a file."""
    run_dir = Path(run_dir)
    return run_dir if run_dir.is_file() else run_dir / "state.db"


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the 16-byte SQLite header. Never raises."""
    try:
        with open_regular(path) as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _journal_kind(path: Path) -> str:
    """``"wal"`` or ``"rollback"`` from header byte 18 (file format write version)."""
    try:
        with open_regular(path) as fh:
            header = fh.read(20)
    except OSError:
        return "rollback"
    return "wal" if len(header) >= 19 and header[18] == 2 else "rollback"


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path.resolve()))}?{query}"


@dataclass(slots=True)
class ReadOnlyDb:
    """An open read-only connection and how it was opened.

    ``mode`` is ``"ro"``, ``"immutable"`` or ``"copy"`` (see the module docstring).
    ``warnings`` holds sentences for the user. Call :meth:`close` when done.
    """

    conn: sqlite3.Connection
    path: Path
    mode: str
    warnings: list[str] = field(default_factory=list)
    tmpdir: str | None = None

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            if self.tmpdir:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
                self.tmpdir = None

    def __enter__(self) -> ReadOnlyDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    # TEXT that is not UTF-8 (a corrupt page, a VM that wrote bytes) is shown with U+FFFD
    # instead of raising UnicodeDecodeError out of every query that meets it.
    conn.text_factory = lambda data: data.decode("utf-8", "replace")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only=ON")
    return conn


def choose_mode(path: Path) -> str:
    """Which way :func:`open_readonly` will open ``path`` now (``ro``, ``immutable``, ``copy``)."""
    wal = Path(f"{path}-wal")
    shm = Path(f"{path}-shm")
    if _journal_kind(path) == "wal":
        if shm.exists():
            return "ro" if wal.exists() else "immutable"
        return "copy" if wal.exists() and wal.stat().st_size > 0 else "immutable"
    return "ro"  # a live writer's -journal is normal; a hot one shows up as a read error


def open_readonly(path: Path) -> tuple[ReadOnlyDb | None, list[str]]:
    """Open the SQLite file ``path`` for reading without writing anything beside it.

    Returns ``(db, warnings)``; ``db`` is ``None`` when the file is missing, not SQLite,
    or cannot be read (each case one warning sentence). Never raises.
    """
    path = Path(path)
    if not path.is_file():
        return None, [f"{path.name}: no such database file."]
    if not is_sqlite_file(path):
        return None, [f"{path.name} is not an SQLite database (its header is not 'SQLite format 3')."]
    warnings: list[str] = []
    tmpdir: str | None = None
    mode = choose_mode(path)
    try:
        if mode == "ro":
            conn = _connect(_uri(path, mode="ro"))
        elif mode == "immutable":
            conn = _connect(_uri(path, mode="ro", immutable="1"))
        else:  # copy
            tmpdir = tempfile.mkdtemp(prefix="prose-tui-db-")
            copy = Path(tmpdir) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(f"{path}-wal", f"{copy}-wal")
            warnings.append(
                f"{path.name} has a -wal file but no -shm (a writer stopped without cleaning up); "
                "reading a private copy so the run folder is left untouched."
            )
            conn = _connect(_uri(copy, mode="ro"))
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            hot = Path(f"{path}-journal")
            if mode != "ro" or "readonly" not in str(exc).replace(" ", "") or not hot.exists():
                raise
            # A hot journal (crashed writer) needs a rollback that a read-only reader may not do.
            conn.close()
            warnings.append(
                f"{path.name} has a leftover rollback journal from an interrupted write; "
                "showing the file as it is, which may include a half-written change."
            )
            mode = "immutable"
            conn = _connect(_uri(path, mode="ro", immutable="1"))
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        if "locked" in str(exc) or "busy" in str(exc):
            return None, [f"{path.name} is locked by a writer (waited {BUSY_TIMEOUT_MS} ms); try again shortly."]
        return None, [f"{path.name} could not be read as SQLite: {exc}."]
    except UnicodeDecodeError:  # SQLite's own error text quotes a corrupt, non-UTF-8 schema
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        return None, [f"{path.name} could not be read as SQLite: its schema is corrupt (not UTF-8)."]
    except OSError as exc:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        return None, [f"{path.name} could not be opened: {exc}."]
    return ReadOnlyDb(conn, path, mode, warnings, tmpdir), warnings


def quote_ident(name: str) -> str:
    """``name`` as an SQL identifier in double quotes (inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def read_schema(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """``{table: [column, ...]}`` for every table in the database, as ``PRAGMA table_info`` says."""
    tables: dict[str, list[str]] = {}
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall()
    for (name,) in rows:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()]
        tables[name] = cols
    return tables


def quiet(default: Callable[[], object]):
    """Decorator: a reader that returns ``default()`` instead of raising ``sqlite3.Error``.

    For the small page/summary readers whose callers have nowhere to show a warning;
    :func:`load_sqlite_run` reports the same problems as warnings.
    """

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except sqlite3.Error:
                return default()

        return inner

    return wrap
