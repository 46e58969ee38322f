"""The remote reader: a standard-library Python program that prose-tui sends to a host over
``ssh`` and runs there with ``python3`` (3.8 or later); nothing is installed or kept on the
host. It serves the run files below one path to the explorer on the user's machine, which
keeps a private copy (a mirror) of them and parses that with its usual backends.

The protocol is :mod:`prose_tui.remote.protocol` (sent ahead of this text). The client
speaks first; every message is a JSON object with ``op``:

client → reader
    ``hello`` {root, known: {rel: [size, crc32]}, pages: {rel: [crc32 per page]}, poll, watch, preview}:
    the path to serve (``~`` is the remote user's home) and what the client's copy already
    holds (after a dropped link), so that only what changed is sent again; ``watch``
    ``"polling"`` stats the files every ``poll`` s instead of using inotify; ``preview``
    (bytes, 0: never): a line log over that size that the client does not hold goes tail first.
    ``read`` {path, offset, length}: a byte range of a file.
    ``desire`` {path, fields, text}: the one write: set Mission Control's fields
    (``desired_state``, ``timestamp``, ``setBy``, ``note``) in an ``agent_state.json``,
    keeping its other keys (seeds/agent-state.md); ``text`` creates a missing file.

reader → client
    ``hello`` {root, host, python, watch ("inotify" or "polling"), file}: the resolved path;
    or ``error`` {message} and the reader exits.
    ``file`` {path, offset, size, mtime, last} + bytes: a file's whole content, in pieces.
    ``append`` {path, offset, size, mtime} + bytes: what was appended to a file since
    ``offset`` (the bytes before it are the ones the client has: checked by the CRC-32 of the
    whole file after a reconnection, else of its first :data:`HEAD` bytes and the
    :data:`PROBE` bytes before ``offset``, with the same inode: :meth:`Reader.appended`).
    ``db`` {path, size, page, pages, last} + bytes: the pages of an SQLite database's image
    that changed (read through a read-only ``mode=ro`` connection, never written).
    ``preview`` {path, size, mtime, head} + bytes: a big line log's first lines (``head``
    bytes, its header) and last :data:`TAIL` bytes from a line start: the first screen; the
    whole file follows as ``file`` after ``synced``.
    ``removed`` {path}; ``synced`` {files, behind}: the first sync is complete (every file
    served; ``behind``: the logs sent as previews, whose whole content follows);
    ``complete``: every previewed log has been sent whole;
    ``data`` {path, offset} + bytes; ``desired`` {path, ok, message}; ``note`` {message}.

Which files: below a path inside a run folder or a ``.prose``/``.agents``/``runs``/
``.reactor``/``.libretto`` folder, every file; below a project, the files under such folders
and ``agent_state.json``; never ``.env`` files (secrets), VCS or dependency folders, or
SQLite's ``-wal``/``-shm``/``-journal`` (their effect arrives as database pages). Paths:
each is resolved and must stay below the served path: ``..``, absolute paths and symlinks
pointing out of it are refused (:func:`inside`).
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import sqlite3
import stat
import sys
import time
import zlib

if "FrameWriter" not in globals():  # imported locally (tests); over ssh protocol.py's text came first
    from prose_tui.remote.protocol import CHUNK, FrameReader, FrameWriter

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", "__pycache__", ".tox",
                       ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", "dist", "build",
                       ".cache", "target", ".next", ".idea", ".vscode", "deps"})
RUN_FOLDERS = frozenset({".prose", ".agents", "runs", ".reactor", ".libretto"})
RUN_FILES = frozenset({"state.md", "vm.log.md", "state.db", "run.json", "receipts.jsonl", "receipts.json",
                       "manifest.md", "manifest.run.md", "forme.manifest.json", "compiled-intent.json"})
ALWAYS = frozenset({"agent_state.json", "reactor.yml", "reactor.yaml"})
NEVER_SUFFIXES = ("-wal", "-shm", "-journal")
MAX_DEPTH = 12
MAX_DIRS = 20_000  # folders walked per scan (discovery's bound): a home folder served by mistake stays cheap
MAX_FILE = 512 * 1024 * 1024
SQLITE_MAGIC = b"SQLite format 3\x00"
HEAD = 4096  # bytes at a file's start whose CRC-32 tells a rewrite there from an append (and a preview's header)
PROBE = 256  # bytes before the end last sent whose CRC-32 tells an append from a rewrite
TAIL = 64 * 1024  # bytes of a big line log's end sent first (some 2,000 events: the first screen and more)
LOG_HEADS = (b"# run:", b"# vm log", b"# openprose execution log")
DESIRE_FIELDS = ("desired_state", "timestamp", "setBy", "note")


class Refused(ValueError):
    """A path the reader will not serve (outside the served path)."""


def inside(root: str, rel: str) -> str:
    """The real path of ``rel`` below ``root`` (itself a real path). Raises :class:`Refused`
    for an absolute ``rel``, a ``..`` part, or a path whose real path (symlinks resolved) is
    not ``root`` or below it."""
    if not isinstance(rel, str) or rel.startswith("/") or "\0" in rel:
        raise Refused(f"{rel!r}: not a path below the served folder")
    if any(part == ".." for part in rel.split("/")):
        raise Refused(f"{rel!r}: '..' is refused")
    real = os.path.realpath(os.path.join(root, rel)) if rel not in ("", ".") else root
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        raise Refused(f"{rel!r}: points outside the served folder")
    return real


def line_log(rel: str, head: bytes) -> bool:
    """Whether ``rel`` is a log that only grows by lines (an event log, a narration or a
    receipts ledger), whose header and last lines make a readable first screen."""
    name = rel.rsplit("/", 1)[-1]
    if name.endswith((".jsonl", ".ndjson", ".log")) or name == "vm.log.md":
        return True
    return name.endswith(".md") and head.lstrip().lower().startswith(LOG_HEADS)


def page_size(header: bytes) -> int:
    """An SQLite database's page size from its 100-byte header (offset 16: 1 means 65536)."""
    size = int.from_bytes(header[16:18], "big")
    return 65536 if size == 1 else (size or 4096)


class Reader:
    """Serves one path over ``out`` (a binary file) to the client whose frames arrive on ``fd_in``."""

    def __init__(self, fd_in: int, out) -> None:
        self.fd_in = fd_in
        self.out = out
        self.writer = FrameWriter()
        self.frames = FrameReader()
        self.root = ""  # the served path, resolved
        self.base = ""  # the folder whose files are served (the root, or a file root's folder)
        self.only = ""  # a file root's name: that file alone
        self.everything = False
        self.files: dict[str, tuple] = {}  # rel -> (size, mtime_ns, crc32) as last sent
        self.pages: dict[str, list] = {}  # rel of a database -> crc32 per page of the image last sent
        self.signatures: dict[str, tuple] = {}  # rel of a database -> stats of it and its -wal last seen
        self.dirs: dict[int, str] = {}  # inotify watch -> rel folder
        self.watched: set[str] = set()
        self.inotify = -1
        self.poll = 0.5
        self.refused = 0
        self.walked = 0  # folders walked in the current scan
        self.preview = 0  # a line log over this many bytes goes tail first at the first sync (0: never)
        self.deferred: list[str] | None = None  # while the first sync runs: the logs sent as previews
        self.bytes_read = 0  # bytes of served files read (benchmarks)

    # -- output ---------------------------------------------------------------------------
    def send(self, message: dict, body: bytes = b"") -> None:
        self.out.write(self.writer.encode(message, body))

    def flush(self) -> None:
        self.out.flush()

    # -- the selection rule ---------------------------------------------------------------
    def wanted(self, rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        if name == ".env" or name.startswith(".env.") or name.endswith(NEVER_SUFFIXES):
            return False
        if self.only:
            return rel == self.only
        if self.everything or name in ALWAYS and rel.count("/") <= 2:
            return True
        return any(part in RUN_FOLDERS for part in rel.split("/")[:-1])

    def walk(self, rel_dir: str, depth: int = 0):
        """``(rel, real path, stat)`` of the wanted files below ``rel_dir``; folders seen are watched."""
        if depth > MAX_DEPTH or self.walked >= MAX_DIRS:
            return
        self.walked += 1
        folder = os.path.join(self.base, rel_dir) if rel_dir else self.base
        self.watch(rel_dir)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_symlink():
                    try:
                        real = inside(self.base, rel)
                    except Refused:
                        self.refused += 1
                        continue
                    st = os.stat(real)
                    if stat.S_ISREG(st.st_mode) and self.wanted(rel):
                        yield rel, real, st
                    continue  # a folder linked inside: reached by its own path
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS and not self.only:
                        yield from self.walk(rel, depth + 1)
                elif entry.is_file(follow_symlinks=False) and self.wanted(rel):
                    yield rel, entry.path, entry.stat(follow_symlinks=False)
            except OSError:
                continue

    # -- watching -------------------------------------------------------------------------
    def start_inotify(self) -> None:
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            if fd < 0:
                return
            self._libc = libc
            self.inotify = fd
        except (OSError, AttributeError):
            self.inotify = -1

    def watch(self, rel_dir: str) -> None:
        if self.inotify < 0 or rel_dir in self.watched:
            return
        folder = os.path.join(self.base, rel_dir) if rel_dir else self.base
        # IN_MODIFY|IN_ATTRIB|IN_CLOSE_WRITE|IN_MOVED_FROM|IN_MOVED_TO|IN_CREATE|IN_DELETE|IN_DELETE_SELF
        wd = self._libc.inotify_add_watch(self.inotify, os.fsencode(folder), 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100
                                          | 0x200 | 0x400)
        if wd >= 0:
            self.dirs[wd] = rel_dir
            self.watched.add(rel_dir)

    def dirty_dirs(self) -> set[str]:
        """The folders inotify reported events in (drains the queue)."""
        out: set[str] = set()
        while True:
            try:
                data = os.read(self.inotify, 65536)
            except BlockingIOError:
                return out
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return out
            offset = 0
            while offset + 16 <= len(data):
                wd, mask, _cookie, size = (int.from_bytes(data[offset + i:offset + i + 4], sys.byteorder)
                                           for i in (0, 4, 8, 12))
                offset += 16 + size
                rel = self.dirs.get(wd)
                if rel is not None:
                    out.add(rel)
                if mask & 0x400:  # IN_DELETE_SELF: the folder is gone
                    self.dirs.pop(wd, None)
                    self.watched.discard(rel)

    # -- sending files --------------------------------------------------------------------
    def send_file(self, rel: str, real: str, st) -> None:
        """What changed in ``rel`` since it was last sent (or since the client's copy).

        A file that grew, with the same inode and the same :data:`HEAD` first bytes and
        :data:`PROBE` bytes before the end last sent, was appended to: only the new bytes are
        read (a growing 100 MB log costs its appended bytes per change, not 100 MB). Else it
        is read whole and compared by CRC-32. A big line log the client does not hold yet
        while :attr:`deferred` is a list goes as a preview (:meth:`send_preview`) and is
        sent whole later."""
        known = self.files.get(rel)
        try:
            with open(real, "rb") as f:
                head = f.read(HEAD)
                if head.startswith(SQLITE_MAGIC):
                    self.send_db(rel, real, st)
                    return
                if known is not None and self.appended(rel, real, f, head, known):
                    return
                if known is None and self.deferred is not None and self.preview and st.st_size > self.preview \
                        and line_log(rel, head):
                    self.send_preview(rel, f, head, st)
                    self.deferred.append(rel)
                    return
                f.seek(0)
                data = f.read(MAX_FILE)
                self.bytes_read += len(head) + len(data)
        except OSError:
            return
        crc = zlib.crc32(data)
        size = len(data)
        self.files[rel] = (size, st.st_mtime_ns, crc, st.st_ino, zlib.crc32(data[:HEAD]), zlib.crc32(data[-PROBE:]))
        if known is not None and known[0] == size and known[2] == crc:
            return
        if known is not None and 0 < known[0] < size and zlib.crc32(data[:known[0]]) == known[2]:
            for offset in range(known[0], size, CHUNK):
                self.send({"op": "append", "path": rel, "offset": offset, "size": size, "mtime": st.st_mtime_ns},
                          data[offset:offset + CHUNK])
            return
        for offset in range(0, max(size, 1), CHUNK):
            self.send({"op": "file", "path": rel, "offset": offset, "size": size, "mtime": st.st_mtime_ns,
                       "last": offset + CHUNK >= size}, data[offset:offset + CHUNK])

    def appended(self, rel: str, real: str, f, head: bytes, known: tuple) -> bool:
        """Send what was appended to ``rel`` since ``known`` (its entry in :attr:`files`) and
        return ``True``, reading only the new bytes, the head and the probe; ``False`` when
        it cannot tell an append this way (another inode, not grown, other bytes where the
        client's copy has them): the caller then reads the file whole."""
        size, _mtime, crc, inode, head_crc, probe_crc = known
        st = os.fstat(f.fileno())
        if inode != st.st_ino or head_crc is None or not 0 < size < st.st_size:
            return False
        if zlib.crc32(head[:min(HEAD, size)]) != head_crc:
            return False
        start = max(0, size - PROBE)
        f.seek(start)
        probe = f.read(size - start)
        if zlib.crc32(probe) != probe_crc:
            return False
        new = f.read(MAX_FILE - size)
        self.bytes_read += len(head) + len(probe) + len(new)
        end = size + len(new)
        self.files[rel] = (end, st.st_mtime_ns, zlib.crc32(new, crc), st.st_ino, zlib.crc32(head[:min(HEAD, end)]),
                           zlib.crc32((probe + new)[-PROBE:]))
        for offset in range(0, len(new), CHUNK):
            self.send({"op": "append", "path": rel, "offset": size + offset, "size": end, "mtime": st.st_mtime_ns},
                      new[offset:offset + CHUNK])
        return True

    def send_preview(self, rel: str, f, head: bytes, st) -> None:
        """The first screen of a big line log before the whole of it: its first lines (up to
        :data:`HEAD` bytes: the header) and its last :data:`TAIL` bytes from a line start,
        as one ``preview`` message; the client shows that until the whole file follows."""
        top = head[:head.rfind(b"\n") + 1]
        f.seek(max(len(top), st.st_size - TAIL))
        tail = f.read(TAIL)
        tail = tail[tail.find(b"\n") + 1:]
        self.bytes_read += len(head) + TAIL
        self.send({"op": "preview", "path": rel, "size": st.st_size, "mtime": st.st_mtime_ns, "head": len(top)},
                  top + tail)

    def db_image(self, real: str) -> bytes:
        """The database's committed content as one image, read without writing anything:
        a WAL database with ``-shm`` through ``mode=ro&readonly_shm=1`` (SQLite reads ``-wal``
        itself); without ``-shm`` (or a rollback-journal database) the file is the content."""
        with open(real, "rb") as f:
            header = f.read(100)
        wal = header[18:19] == b"\x02"
        if wal and os.path.exists(real + "-shm") and hasattr(sqlite3.Connection, "serialize"):
            from urllib.parse import quote

            conn = sqlite3.connect(f"file:{quote(real)}?mode=ro&readonly_shm=1", uri=True, timeout=2)
            try:
                return bytes(conn.serialize())
            finally:
                conn.close()
        if not wal and hasattr(sqlite3.Connection, "serialize"):
            from urllib.parse import quote

            conn = sqlite3.connect(f"file:{quote(real)}?mode=ro", uri=True, timeout=2)
            try:
                return bytes(conn.serialize())
            finally:
                conn.close()
        with open(real, "rb") as f:
            return f.read(MAX_FILE)

    def send_db(self, rel: str, real: str, st) -> None:
        for attempt in range(5):
            try:
                image = self.db_image(real)
                break
            except (sqlite3.Error, OSError) as exc:
                if attempt == 4:
                    self.send({"op": "note", "message": f"{rel}: could not read the database: {exc}"})
                    return
                time.sleep(0.05 * (attempt + 1))
        size = page_size(image[:100]) if len(image) >= 100 else 4096
        crcs = [zlib.crc32(image[i:i + size]) for i in range(0, len(image), size)]
        known = self.pages.get(rel) or []
        changed = [i for i, c in enumerate(crcs) if i >= len(known) or known[i] != c]
        self.pages[rel] = crcs
        self.files[rel] = (len(image), st.st_mtime_ns, 0, None, None, None)
        if not changed and len(known) == len(crcs):
            return
        per = max(1, CHUNK // size)
        for start in range(0, max(len(changed), 1), per):
            group = changed[start:start + per]
            self.send({"op": "db", "path": rel, "size": len(image), "page": size, "pages": group,
                       "mtime": st.st_mtime_ns,
                       "last": start + per >= len(changed)}, b"".join(image[i * size:(i + 1) * size] for i in group))

    def db_signature(self, real: str) -> tuple:
        out: list[tuple | None] = []
        for name in (real, real + "-wal"):
            try:
                st = os.stat(name)
                out.append((st.st_size, st.st_mtime_ns, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    # -- scanning -------------------------------------------------------------------------
    def scan(self, rel_dir: str | None) -> None:
        """Send what changed below ``rel_dir`` (``None``: everywhere)."""
        prefix = "" if not rel_dir else rel_dir + "/"
        seen = set()
        self.walked = 0
        for rel, real, st in self.walk(rel_dir or ""):
            seen.add(rel)
            known = self.files.get(rel)
            if rel in self.pages:
                signature = self.db_signature(real)
                if self.signatures.get(rel) != signature:
                    self.signatures[rel] = signature
                    self.send_file(rel, real, st)
                continue
            if known is None or known[0] != st.st_size or known[1] != st.st_mtime_ns:
                self.send_file(rel, real, st)
                if rel in self.pages:
                    self.signatures[rel] = self.db_signature(real)
        for rel in [r for r in self.files if r.startswith(prefix) and r not in seen]:
            del self.files[rel]
            self.pages.pop(rel, None)
            self.signatures.pop(rel, None)
            self.send({"op": "removed", "path": rel})

    # -- requests -------------------------------------------------------------------------
    def hello(self, message: dict) -> bool:
        given = os.path.expanduser(str(message.get("root") or "."))
        root = os.path.realpath(given)
        if not os.path.exists(root):
            self.send({"op": "error", "message": f"{given}: no such file or folder"})
            return False
        self.root = root
        self.poll = max(0.05, float(message.get("poll") or 0.5))
        if os.path.isdir(root):
            self.base = root
            parts = root.split("/")
            self.everything = any(p in RUN_FOLDERS for p in parts) or any(
                os.path.exists(os.path.join(root, name)) for name in RUN_FILES)
        else:
            self.base, self.only = os.path.dirname(root), os.path.basename(root)
        for rel, (size, crc) in (message.get("known") or {}).items():
            self.files[rel] = (size, None, crc, None, None, None)
        for rel, crcs in (message.get("pages") or {}).items():
            self.pages[rel] = list(crcs)
        if message.get("watch") != "polling":  # polling asked for: e.g. NFS, where inotify misses other hosts' writes
            self.start_inotify()
        self.send({"op": "hello", "root": root, "host": socket.gethostname(), "python": sys.version.split()[0],
                   "watch": "inotify" if self.inotify >= 0 else "polling", "file": bool(self.only)})
        self.preview = max(0, int(message.get("preview") or 0))
        self.deferred = []
        self.scan(None)
        deferred, self.deferred = self.deferred, None
        self.send({"op": "synced", "files": sorted(set(self.files) | set(deferred)), "refused": self.refused,
                   "behind": deferred})
        self.flush()
        for rel in deferred:  # the whole of each previewed log, behind the first screen
            try:
                real = inside(self.base, rel)
                self.send_file(rel, real, os.stat(real))
            except (Refused, OSError):
                continue
            self.flush()
        self.send({"op": "complete"})
        self.flush()
        return True

    def read(self, message: dict) -> None:
        rel = str(message.get("path", ""))
        try:
            real = inside(self.base, rel)
            with open(real, "rb") as f:
                f.seek(max(0, int(message.get("offset", 0))))
                data = f.read(min(CHUNK, max(0, int(message.get("length", CHUNK)))))
        except (Refused, OSError) as exc:
            self.send({"op": "data", "path": rel, "error": str(exc)})
            return
        self.send({"op": "data", "path": rel, "offset": int(message.get("offset", 0))}, data)

    def desire(self, message: dict) -> None:
        """The one write: Mission Control's fields into ``agent_state.json`` (atomic rename)."""
        rel = str(message.get("path", ""))
        try:
            if rel.rsplit("/", 1)[-1] != "agent_state.json":
                raise Refused(f"{rel!r}: only agent_state.json is written")
            real = inside(self.base, rel)
            try:
                with open(real, encoding="utf-8") as f:
                    state = json.load(f)
                if not isinstance(state, dict):
                    raise ValueError("not a JSON object")
            except FileNotFoundError:
                state = json.loads(message.get("text") or "{}")
            fields = message.get("fields") or {}
            for key in DESIRE_FIELDS:
                if key in fields:
                    state[key] = fields[key]
            folder = os.path.dirname(real)
            temp = os.path.join(folder, f".agent_state.json.prose-tui-{os.getpid()}")
            with open(temp, "w", encoding="utf-8") as f:
                f.write(json.dumps(state, indent=2, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, real)
        except (Refused, OSError, ValueError) as exc:
            self.send({"op": "desired", "path": rel, "ok": False, "message": str(exc)})
            return
        self.send({"op": "desired", "path": rel, "ok": True})

    # -- the loop -------------------------------------------------------------------------
    def serve(self) -> int:
        started = False
        next_poll = time.monotonic() + self.poll
        while True:
            waits = [self.fd_in] + ([self.inotify] if self.inotify >= 0 else [])
            timeout = None if self.inotify >= 0 or not started else max(0.0, next_poll - time.monotonic())
            ready, _, _ = select.select(waits, [], [], timeout)
            if self.fd_in in ready:
                data = os.read(self.fd_in, 65536)
                if not data:
                    return 0  # the client (or the link) went away
                for message, _body in self.frames.feed(data):
                    op = message.get("op")
                    if op == "hello" and not started:
                        if not self.hello(message):
                            self.flush()
                            return 1
                        started = True
                    elif op == "read":
                        self.read(message)
                    elif op == "desire":
                        self.desire(message)
                        self.scan(os.path.dirname(str(message.get("path", ""))) or None)
                self.flush()
            if not started:
                continue
            if self.inotify >= 0 and self.inotify in ready:
                time.sleep(0.005)  # a writer's burst (write, rename) is one batch
                for rel_dir in sorted(self.dirty_dirs()):
                    self.scan(rel_dir)
                self.flush()
            elif self.inotify < 0 and time.monotonic() >= next_poll:
                self.scan(None)
                self.flush()
                next_poll = time.monotonic() + self.poll


def main() -> int:
    try:
        return Reader(sys.stdin.fileno(), sys.stdout.buffer).serve()
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    sys.exit(main())
