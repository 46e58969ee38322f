"""Open a run's ``state.db`` read-only, as SQLite intends, and never write to the run folder
(seeds/sqlite.md, Database Location; SQLite, https://www.sqlite.org/wal.html "Read-Only
Databases" and https://www.sqlite.org/howtocorrupt.html section 2.2).

The VM writes ``state.db`` with the ``sqlite3`` CLI, one connection per statement
(seeds/sqlite.md, "From the VM"), usually in WAL mode, while prose-tui reads it. When the
last connection to a WAL database closes, it checkpoints the database (rewrites pages of
``state.db``) and deletes ``-wal`` and ``-shm``. Two SQLite rules then decide how to read:

* A read-only connection to a WAL database needs the ``-shm`` index. When ``-wal`` and
  ``-shm`` are missing, SQLite creates them, even for ``mode=ro``, and leaves them behind;
  the only other way it offers is ``immutable=1``, a promise that nobody writes the file,
  which the VM breaks at its next statement (its checkpoint rewrites pages under the
  reader: "database disk image is malformed"). The explorer never writes into a run and
  never makes that promise: it reads a private copy it has checked (below).
* SQLite's locks are POSIX advisory locks, which the kernel drops for the whole process as
  soon as *any* descriptor of the file is closed. A header read with ``open``/``close``
  while a connection is open silently drops that connection's lock; a writer then
  checkpoints and deletes ``-wal``/``-shm`` under it, and it goes on reading a stale
  snapshot. So each database file is opened once per process (:class:`_Files`: one
  descriptor per inode, closed only when no connection of ours is open on it), and headers
  are read and locks taken through that descriptor.

How a database is opened (``ReadOnlyDb.mode``):

* ``"ro"``, rollback-journal database (header byte 18 is 1): ``mode=ro`` with ``query_only``
  and a busy timeout. A reader takes a shared lock per read and creates no file. A writer
  holding RESERVED (an open write transaction) does not block it; one committing
  (PENDING/EXCLUSIVE) makes it wait up to the busy timeout, then it is tried again.
* ``"ro"``, WAL database with ``-wal`` and ``-shm`` (a writer has it open, or left them):
  first a shared lock on the database file (the byte range SQLite's readers lock) is taken
  through the descriptor above, so no writer can checkpoint and delete ``-wal``/``-shm``
  between the check and the connection; then ``mode=ro&readonly_shm=1``: the unix VFS opens
  ``-shm`` read-only and never creates it, so the reader writes nothing at all, not even a
  read mark or a recovery of the index (which would also hold a writer off: the seed's
  ``sqlite3`` CLI has no busy timeout and fails its statement with "database is locked").
  With a read-only index SQLite reads ``-wal`` itself where it must (wal.html, "Read-Only
  Databases", 3.22.0 and later); an index it would have to write first (a writer has made
  ``-shm`` and not written it yet: ``SQLITE_READONLY_CANTINIT``/``_RECOVERY``) is transient.
  The lock is never released by hand (that would release the connection's own as well): it
  goes with the last connection of ours. While one stays open (the backend keeps one to watch
  a run) a writer that closes is not the last connection, so it leaves ``-wal``/``-shm`` in
  place instead of deleting them (SQLite's rule, no write by us); they hold only committed
  data and the VM's next statement reuses them.
* ``"copy"``, WAL database without ``-shm`` (no connection open, or a crashed writer's
  ``-wal``): under the same shared lock ``state.db`` (and ``-wal``) are copied to a private
  temporary folder and the copy is read. The lock keeps any writer from checkpointing on
  close, and any other checkpoint needs a ``-wal``; the copy is kept only if ``-wal`` and
  ``-shm`` exist as before and the files' size, mtime and inode did not move, else the read
  is tried again (by then a writer's files exist and the read is ``"ro"``).
* ``"locked"``, the same case for a database larger than ``COPY_LIMIT`` (a copy per read
  would cost more than the read): the file is read in place under the shared lock with
  ``immutable=1``, which that lock makes true rather than promised: with no ``-wal`` no
  checkpoint can write the file, and none can start a ``-wal`` that would then disappear
  while the lock is held. :meth:`ReadOnlyDb.check`, after the last query and before the
  connection closes (closing its descriptor drops the lock), accepts the read only if no
  ``-wal`` appeared and the file did not move; else it is tried again.
* ``"copy"``, rollback database with a hot journal (a crashed writer): the database and its
  journal are copied and the copy is opened read-write, so SQLite rolls the half-written
  change back in the copy; the run folder is untouched.

Transient failures (a writer's EXCLUSIVE lock, a checkpoint or recovery in progress, a file
that moved while copied) raise :class:`DbUnavailable` with ``transient=True`` from
:func:`open_db`; :func:`open_readonly` tries ``OPEN_ATTEMPTS`` times and then returns
``None`` and a warning sentence. Neither raises for bad input (missing file, not SQLite).
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 500
"""How long a read waits for a committing writer before giving up, in milliseconds."""
OPEN_ATTEMPTS = 3
"""How many times a read that failed for a transient reason is tried, in all."""
RETRY_WAITS_S = (0.05, 0.2)
"""Seconds waited before the second and later attempts (the busy timeout comes on top)."""
# SQLite's lock bytes (os_unix.c, "locking bytes"): PENDING_BYTE is 0x40000000, then the
# RESERVED byte, then SHARED_SIZE bytes that every reader read-locks.
_SHARED_FIRST = 0x40000000 + 2
_SHARED_SIZE = 510
COPY_LIMIT = 16 * 1024 * 1024
"""Largest WAL database (bytes) read from a private copy when it has no ``-shm``; a larger
one is read in place under the shared lock and checked (mode ``"locked"``)."""
_COMPANIONS = ("-wal", "-shm", "-journal")
_TRANSIENT = ("locked", "busy", "malformed", "disk i/o error", "unable to open", "moved while")


class DbUnavailable(Exception):
    """A database that could not be read now: ``message`` is the sentence for the user;
    ``transient`` is true when reading again shortly may succeed (a writer's lock, a
    checkpoint, a file that moved while copied), false for a missing or non-SQLite file."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient


def _index_not_ready(exc: sqlite3.OperationalError) -> bool:
    """Whether a reader with a read-only WAL index (``readonly_shm``) failed because SQLite
    wanted to write that index: ``SQLITE_READONLY_CANTINIT`` or ``_RECOVERY``, "attempt to
    write a readonly database". Such a reader writes nothing, so this says a writer is
    setting the index up (the VM's ``sqlite3`` opens the database for its next statement
    and has made ``-shm`` but not written it yet): read again shortly (rescode.html)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith("SQLITE_READONLY") or "readonly" in str(exc).replace(" ", "").lower()


def is_transient(exc: BaseException) -> bool:
    """True for an ``sqlite3`` error that a writer in the middle of a statement explains
    (busy, locked, a page read while a checkpoint rewrote it)."""
    text = str(exc).lower()
    return any(word in text for word in _TRANSIENT)


@dataclass(slots=True)
class _Descriptor:
    fd: int
    users: int = 1
    extra: list[int] = field(default_factory=list)  # opened in a race; closed with ``fd``


class _Files:
    """One read-only descriptor per database inode, shared by every reader in the process.

    Closing any descriptor of a file drops every POSIX lock the process holds on it,
    SQLite's included; so a descriptor is closed only when its last user releases it, and
    every connection to the file holds a use for its whole life (see the module docstring).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[int, int], _Descriptor] = {}

    def acquire(self, path: Path) -> tuple[tuple[int, int], int]:
        """``(key, fd)`` for ``path``; release ``key`` when done. Raises ``OSError`` for a
        missing file or one that is not a regular file (never blocks on a FIFO)."""
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        key = (st.st_dev, st.st_ino)
        with self._lock:
            held = self._open.get(key)
            if held is not None:
                held.users += 1
                return key, held.fd
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            fst = os.fstat(fd)
            opened = (fst.st_dev, fst.st_ino)
            if opened != key:  # replaced between stat and open: the file opened is the one read
                held = self._open.get(opened)
                if held is not None:  # closing ``fd`` now would drop that file's locks
                    held.users += 1
                    held.extra.append(fd)
                    return opened, held.fd
            self._open[opened] = _Descriptor(fd)
            return opened, fd

    def release(self, key: tuple[int, int]) -> None:
        with self._lock:
            held = self._open.get(key)
            if held is None:
                return
            held.users -= 1
            if held.users > 0:
                return
            del self._open[key]
        for fd in (held.fd, *held.extra):
            os.close(fd)

    def fd(self, key: tuple[int, int]) -> int | None:
        """The descriptor held for ``key``, or ``None``."""
        with self._lock:
            held = self._open.get(key)
            return held.fd if held is not None else None

    def count(self) -> int:
        """Descriptors open now (for tests: none once every reader closed)."""
        with self._lock:
            return len(self._open)


_FILES = _Files()


def db_path_for(run_dir: Path) -> Path:
    """The database file of a run: ``run_dir/state.db``, or ``run_dir`` itself if it is a file."""
    run_dir = Path(run_dir)
    return run_dir if run_dir.is_file() else run_dir / "state.db"


def _header(path: Path) -> bytes:
    """The first 100 bytes of ``path`` (SQLite's database header), read through the shared
    descriptor. Raises ``OSError``."""
    key, fd = _FILES.acquire(path)
    try:
        return os.pread(fd, 100, 0)
    finally:
        _FILES.release(key)


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the 16-byte SQLite header. Never raises."""
    try:
        return _header(path)[:16] == SQLITE_MAGIC
    except OSError:
        return False


def _is_wal(header: bytes) -> bool:
    """Header byte 18 (file format read version) is 2 for a WAL database."""
    return len(header) > 18 and header[18] == 2


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path.resolve()))}?{query}"


@dataclass(slots=True)
class ReadOnlyDb:
    """An open read-only connection and how it was opened.

    ``mode`` is ``"ro"`` (the run's own file), ``"copy"`` (a private copy) or ``"locked"``
    (a large file read in place under a shared lock: call :meth:`check` after reading); see
    the module docstring. ``warnings`` holds sentences for the user. Call :meth:`close` when done.
    """

    conn: sqlite3.Connection
    path: Path
    mode: str
    warnings: list[str] = field(default_factory=list)
    tmpdir: str | None = None
    file_key: tuple[int, int] | None = None  # the shared descriptor this connection holds
    expect: tuple | None = None  # mode "locked": what must not have moved (``_signature``)

    def check(self) -> None:
        """Raise :class:`DbUnavailable` (transient) when a database read in place
        (``mode == "locked"``) may have changed during the read: call it after the last
        query and before :meth:`close`. Nothing to check for the other modes."""
        if self.expect is None or self.file_key is None:
            return
        fd = _FILES.fd(self.file_key)
        if fd is None or _signature(fd, self.path, _COMPANIONS) != self.expect:
            raise DbUnavailable(f"{self.path.name} moved while it was read (a writer is at work).", transient=True)

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            if self.file_key is not None:  # after the connection: its locks go with it
                _FILES.release(self.file_key)
                self.file_key = None
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


def _probe(conn: sqlite3.Connection) -> None:
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()


def choose_mode(path: Path) -> str:
    """How :func:`open_db` would open ``path`` now: ``"ro"`` or ``"copy"``. Raises ``OSError``."""
    if _is_wal(_header(path)):
        return "ro" if os.path.exists(f"{path}-wal") and os.path.exists(f"{path}-shm") else "copy"
    return "ro"


def _shared_lock(fd: int) -> bool:
    """Read-lock SQLite's SHARED byte range of the database on ``fd``, waiting up to the busy
    timeout for a writer's EXCLUSIVE lock to go; False when it did not."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, _SHARED_SIZE, _SHARED_FIRST, os.SEEK_SET)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def _signature(fd: int, path: Path, companions: tuple[str, ...]) -> tuple:
    """What must not move while a database is copied: its size, mtime and inode, and which
    of its ``companions`` (``-wal``, ``-shm``, ``-journal``) exist, with their size and mtime."""
    st = os.fstat(fd)
    out: list[object] = [(st.st_size, st.st_mtime_ns, st.st_ino)]
    for suffix in companions:
        try:
            cst = os.stat(f"{path}{suffix}")
            out.append((cst.st_size, cst.st_mtime_ns, cst.st_ino))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def _copy_fd(fd: int, target: Path) -> None:
    """Copy the whole file behind ``fd`` to ``target`` with ``pread`` (``fd`` is not closed)."""
    offset = 0
    with open(target, "wb") as out:
        while chunk := os.pread(fd, 1 << 20, offset):
            out.write(chunk)
            offset += len(chunk)


def _private_copy(path: Path, fd: int, journal: str | None, warning: str | None) -> ReadOnlyDb:
    """Read ``path`` (and its ``journal``: ``"-wal"`` or ``"-journal"``) from a private copy
    made while it does not move; see the module docstring. Raises :class:`DbUnavailable`
    (transient) when it moved, ``sqlite3.Error`` or ``OSError`` otherwise."""
    before = _signature(fd, path, _COMPANIONS)
    tmpdir = tempfile.mkdtemp(prefix="prose-tui-db-")
    try:
        copy = Path(tmpdir) / path.name
        _copy_fd(fd, copy)
        if journal is not None:
            # No POSIX lock of SQLite's lives on -wal or -journal: a plain copy drops none.
            shutil.copyfile(f"{path}{journal}", f"{copy}{journal}")
        if _signature(fd, path, _COMPANIONS) != before:
            raise DbUnavailable(f"{path.name} moved while it was copied for reading (a writer is at work).",
                                transient=True)
        if journal == "-journal":  # read-write on the copy: SQLite rolls the hot journal back there
            conn = _connect(_uri(copy, mode="rw"))
        elif journal == "-wal":  # the copy's own -shm is made in the private folder
            conn = _connect(_uri(copy, mode="ro"))
        else:
            conn = _connect(_uri(copy, mode="ro", immutable="1"))  # a private copy nobody writes
        try:
            _probe(conn)
        except BaseException:
            conn.close()
            raise
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    return ReadOnlyDb(conn, path, "copy", [warning] if warning else [], tmpdir)


def _open_once(path: Path) -> ReadOnlyDb:
    try:
        key, fd = _FILES.acquire(path)
    except FileNotFoundError:
        raise DbUnavailable(f"{path.name}: no such database file.", transient=False) from None
    except OSError as exc:
        raise DbUnavailable(f"{path.name} could not be opened: {exc}.", transient=False) from None
    db: ReadOnlyDb | None = None
    try:
        header = os.pread(fd, 100, 0)
        if not header:
            raise DbUnavailable(f"{path.name} is empty: the VM has not written it yet.", transient=True)
        if header[:16] != SQLITE_MAGIC:
            raise DbUnavailable(f"{path.name} is not an SQLite database (its header is not 'SQLite format 3').",
                                transient=False)
        if _is_wal(header):
            if not _shared_lock(fd):
                raise DbUnavailable(f"{path.name} is locked by a writer (waited {BUSY_TIMEOUT_MS} ms).",
                                    transient=True)
            wal, shm = os.path.exists(f"{path}-wal"), os.path.exists(f"{path}-shm")
            if wal and shm:
                db = ReadOnlyDb(_connect(_uri(path, mode="ro", readonly_shm="1")), path, "ro")
                try:
                    _probe(db.conn)
                except sqlite3.OperationalError as exc:
                    if not _index_not_ready(exc):
                        raise
                    db.close()
                    db = None
                    raise DbUnavailable(f"{path.name}'s WAL index is being set up by a writer (its -shm).",
                                        transient=True) from None
                db.file_key = key
                return db
            if not wal and os.fstat(fd).st_size > COPY_LIMIT:
                # Too big to copy per read: read in place. The shared lock keeps a writer from
                # checkpointing on close, any other checkpoint needs a -wal that cannot go away
                # while the lock is held, so with no -wal at the end (``check``) nothing moved.
                before = _signature(fd, path, _COMPANIONS)
                db = ReadOnlyDb(_connect(_uri(path, mode="ro", immutable="1")), path, "locked", expect=before)
                _probe(db.conn)
                db.file_key = key
                return db
            warning = None if not wal else (
                f"{path.name} has a -wal file but no -shm (a writer stopped without cleaning up); "
                "reading a private copy so the run folder is left untouched.")
            return _private_copy(path, fd, "-wal" if wal else None, warning)
        db = ReadOnlyDb(_connect(_uri(path, mode="ro")), path, "ro")
        try:
            _probe(db.conn)
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc).replace(" ", "").lower() or not os.path.exists(f"{path}-journal"):
                raise
            # A hot journal (crashed writer) needs a rollback a read-only reader may not do.
            db.close()
            db = None
            return _private_copy(path, fd, "-journal", (
                f"{path.name} has a leftover rollback journal from an interrupted write; "
                "read from a private copy with that write rolled back."))
        db.file_key = key
        return db
    except sqlite3.DatabaseError as exc:
        if db is not None:
            db.close()
            db = None
        if "locked" in str(exc) or "busy" in str(exc):
            raise DbUnavailable(f"{path.name} is locked by a writer (waited {BUSY_TIMEOUT_MS} ms).",
                                transient=True) from None
        raise DbUnavailable(f"{path.name} could not be read as SQLite: {exc}.", transient=is_transient(exc)) from None
    except UnicodeDecodeError:  # SQLite's own error text quotes a corrupt, non-UTF-8 schema
        raise DbUnavailable(f"{path.name} could not be read as SQLite: its schema is corrupt (not UTF-8).",
                            transient=False) from None
    except OSError as exc:
        raise DbUnavailable(f"{path.name} could not be opened: {exc}.", transient=False) from None
    finally:
        if db is None or db.file_key is None:  # a connection returned keeps the descriptor
            _FILES.release(key)


def pin(path: Path) -> tuple[int, int] | None:
    """Hold a WAL database's shared lock until :func:`unpin` (between two attempts at a read):
    a writer that arrived during the failed attempt then keeps its ``-wal``/``-shm`` in place
    and the next attempt reads through them (``"ro"``) instead of racing it again. Nothing
    is held for a rollback-journal database (its writers need the lock to commit) or when
    the lock cannot be had; returns the key to pass to :func:`unpin`, or ``None``."""
    try:
        key, fd = _FILES.acquire(Path(path))
    except OSError:
        return None
    try:
        if _is_wal(os.pread(fd, 100, 0)) and _shared_lock(fd):
            return key
    except OSError:
        pass
    _FILES.release(key)
    return None


def unpin(key: tuple[int, int] | None) -> None:
    """Let go of what :func:`pin` held (the lock goes with the last descriptor of ours)."""
    if key is not None:
        _FILES.release(key)


def open_db(path: Path) -> ReadOnlyDb:
    """Open the SQLite file ``path`` for reading without writing anything beside it (one
    attempt). Raises :class:`DbUnavailable`, never anything else."""
    return _open_once(Path(path))


def retry_wait(attempt: int) -> None:
    """Wait before attempt ``attempt + 1`` (0-based ``attempt`` that just failed)."""
    time.sleep(RETRY_WAITS_S[min(attempt, len(RETRY_WAITS_S) - 1)])


def open_readonly(path: Path) -> tuple[ReadOnlyDb | None, list[str]]:
    """Open the SQLite file ``path`` for reading without writing anything beside it.

    Returns ``(db, warnings)``; ``db`` is ``None`` when the file is missing, not SQLite, or
    could not be read in ``OPEN_ATTEMPTS`` tries (each case one warning sentence). Never raises.
    """
    pins: list[tuple[int, int] | None] = []
    try:
        for attempt in range(OPEN_ATTEMPTS):
            try:
                db = open_db(path)
            except DbUnavailable as exc:
                if not exc.transient or attempt == OPEN_ATTEMPTS - 1:
                    return None, [exc.message]
                pins.append(pin(path))
                retry_wait(attempt)
                continue
            return db, list(db.warnings)
    finally:
        for key in pins:
            unpin(key)
    raise AssertionError("unreachable")  # pragma: no cover


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
