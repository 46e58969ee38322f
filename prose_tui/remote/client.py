"""The explorer's end of a remote run: the system ``ssh`` client runs the reader on the host,
and a :class:`Mirror` keeps a private local copy of the served files in step with it.

``ssh`` is the user's own (``~/.ssh/config``, agents, ProxyJump and ControlMaster apply as
set up); ``PROSE_TUI_SSH_COMMAND`` names another command line (split as a shell would, like
git's ``GIT_SSH_COMMAND``, e.g. ``ssh -F ./ssh_config``). No password is ever put on a
command line: authentication is ssh's business (a prompt, when ssh asks, goes to the
terminal). The reader is sent over the connection's standard input: the remote command is
a one-line ``python3 -c`` loader, so nothing is installed or written on the host.

The mirror lives in a private temporary folder (mode 0700) that this process owns and
removes; the existing backends and the watcher read it as a local run. The one write to
the host is Mission Control's: a change made to a mirrored ``agent_state.json`` (by
:func:`prose_tui.mission.set_desired_state`) is sent as a ``desire`` request, and the
host's file then comes back as the truth.

On a dropped link the mirror keeps what it has, :attr:`Mirror.state` says ``reconnecting
to HOST…``, and the connection is made again with the sizes and CRC-32s of the files held,
so only what changed meanwhile is sent.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from prose_tui.remote.protocol import FrameError, FrameReader, FrameWriter

SSH_COMMAND_VARIABLE = "PROSE_TUI_SSH_COMMAND"
# The remote command: read a length line and that many bytes of zlib-compressed Python, run it.
# Unbuffered reads of exactly those bytes: what follows (the first frames) stays in the pipe
# for the reader.
LOADER = """import os,zlib
n=b''
while not n.endswith(b'\\n'):
    n+=os.read(0,1) or os._exit(3)
n=int(n);s=b''
while len(s)<n:
    s+=os.read(0,n-len(s)) or os._exit(3)
exec(zlib.decompress(s))"""
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
# A line log (event log, narration) over this many bytes comes tail first: its header and last
# 64 KB (the newest events: the first screen), then the whole file behind (:meth:`Mirror.start`).
PREVIEW_OVER = 1024 * 1024
COPY_PREFIX = "prose-tui-ssh-"
_HERE = Path(__file__).resolve().parent


class RemoteError(OSError):
    """A remote target that cannot be read (the message is safe to print and says why)."""


@dataclass(frozen=True, slots=True)
class RemoteSpec:
    """Where a remote run is: ``ssh://[user@]host[:port]/path`` or the scp form ``[user@]host:path``.

    ``path`` is as given (absolute, or relative to the remote user's home; ``~`` too).
    ``str`` is the URL form, which the explorer shows in place of the private mirror."""

    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def authority(self) -> str:
        """``ssh://[user@]host[:port]``: the URL without its path."""
        return f"ssh://{self.destination}{f':{self.port}' if self.port else ''}"

    def __str__(self) -> str:
        path = self.path if self.path.startswith(("/", "~")) else "~/" + self.path
        path = path if path.startswith("/") else "/" + path  # /~/x: x in the home folder
        return self.authority + path


def parse_remote(text: str) -> RemoteSpec | None:
    """The :class:`RemoteSpec` ``text`` names, or ``None`` for a local path or a URL of
    another kind. ``ssh://[user@]host[:port]/path`` (``/~/x`` is ``x`` in the home folder);
    ``[user@]host:path`` as scp and git read it (a ``:`` before any ``/``), unless a local
    file of that name exists. Raises ``ValueError`` for an ``ssh://`` URL without a host or
    with a bad port, or a host that starts with ``-`` (it would read as an ssh option)."""
    text = str(text)
    if text.startswith("ssh://"):
        rest = text[len("ssh://"):]
        authority, slash, path = rest.partition("/")
        user, at, hostport = authority.rpartition("@")
        host, port = hostport, None
        if hostport.startswith("["):  # [IPv6]:port
            host, _, tail = hostport[1:].partition("]")
            port = tail[1:] if tail.startswith(":") else None
        elif ":" in hostport:
            host, _, port = hostport.rpartition(":")
        path = unquote(path)
        if path.startswith("~"):
            pass
        elif slash:
            path = "/" + path
        return _spec(host, path or ".", unquote(user) if at else None, port)
    if "://" in text or text.startswith(("/", "./", "../", "~")) or ":" not in text:
        return None
    head, _, path = text.partition(":")
    if "/" in head or os.path.lexists(text) or len(head) <= 1:  # a path; "C:" is a drive, not a host
        return None
    user, at, host = head.rpartition("@")
    return _spec(host, path or ".", user if at else None, None)


def _spec(host: str, path: str, user: str | None, port: str | None) -> RemoteSpec:
    if not host:
        raise ValueError("an ssh:// target needs a host: ssh://[user@]host[:port]/path")
    if host.startswith("-") or (user or "").startswith("-"):
        raise ValueError(f"{host!r}: a host cannot start with '-'")
    number = None
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"ssh port {port!r}: expected a number from 1 to 65535")
        number = int(port)
    return RemoteSpec(host=host, path=path, user=user, port=number)


def ssh_argv(spec: RemoteSpec, environ: Mapping[str, str] | None = None) -> list[str]:
    """The ``ssh`` command line that runs the reader's loader on ``spec``'s host:
    ``$PROSE_TUI_SSH_COMMAND`` (default ``ssh``), then ``-p``/``-l`` when the target gives
    them, the host and the remote command (``exec python3 -c LOADER``)."""
    command = shlex.split((os.environ if environ is None else environ).get(SSH_COMMAND_VARIABLE, "").strip() or "ssh")
    if spec.port:
        command += ["-p", str(spec.port)]
    if spec.user:
        command += ["-l", spec.user]
    return command + [spec.host, "exec python3 -c " + shlex.quote(LOADER)]


def reader_program() -> bytes:
    """What the loader receives: a length line and the zlib-compressed text of
    ``protocol.py`` then ``reader.py`` (one program; the reader uses the framing's names)."""
    source = "\n".join((_HERE / name).read_text(encoding="utf-8") for name in ("protocol.py", "reader.py"))
    source = source.replace("from __future__ import annotations\n", "")
    packed = zlib.compress(("from __future__ import annotations\n" + source).encode("utf-8"), 9)
    return str(len(packed)).encode() + b"\n" + packed


def _why(code: int | None, stderr: str, spec: RemoteSpec) -> str:
    """A safe message for a connection that ended before the reader said hello."""
    last = [line for line in stderr.strip().splitlines() if line.strip()]
    tail = last[-1].strip() if last else ""
    if code == 127 or "python3: not found" in stderr or "python3: command not found" in stderr \
            or "No such file or directory" in stderr and "python3" in stderr:
        return (f"{spec.destination}: python3 is not installed on the host (prose-tui sends a small Python "
                "reader over ssh and needs python3 there; nothing else is installed)")
    if code == 255:
        return f"{spec.destination}: ssh could not connect: {tail or 'no reason given'}"
    return f"{spec.destination}: the remote reader stopped (exit {code}){': ' + tail if tail else ''}"


class Mirror:
    """A private local copy of the run files below ``spec``, kept in step with the host.

    :meth:`start` connects and returns once the first sync is complete (raises
    :class:`RemoteError`, with a safe message, if it cannot: ssh failed, python3 missing,
    no such path); a thread then applies the host's changes as they come and reconnects
    after a dropped link. ``local`` is the path to give the backends (the copy of the
    served folder or file); :meth:`shown` turns a local path back into the remote one.
    ``bytes_in``/``bytes_out`` count the bytes on ssh's pipes (the reader program included
    in ``bytes_out``). :meth:`close` ends ssh and removes the copy."""

    def __init__(self, spec: RemoteSpec, *, poll: float = 0.5, ssh_command: list[str] | None = None,
                 polling: bool = False, preview: int = PREVIEW_OVER) -> None:
        self.spec = spec
        self.preview = preview  # a line log over this many bytes comes tail first (0: whole files only)
        self.poll = poll
        self.polling = polling  # stat every ``poll`` s on the host instead of inotify
        self.argv = ssh_command or ssh_argv(spec)
        _remove_abandoned_copies()
        self.folder = Path(tempfile.mkdtemp(prefix=COPY_PREFIX)).resolve()  # 0700: ours alone
        (self.folder / "pid").write_text(str(os.getpid()))
        self.copies = self.folder / "copy"  # the host's paths below it
        self.local = self.copies / "root"
        self._base = self.local  # where the reader's relative paths are (a file root: its folder's copy)
        self.remote_root = ""
        self.bytes_in = 0
        self.bytes_out = 0
        self.connects = 0
        self.changes = 0  # changes applied (tests and benchmarks wait on it)
        self.watch = ""
        self._state = "connecting"
        self._closed = threading.Event()
        self._changed = threading.Condition()
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self._writer: FrameWriter | None = None
        self._files: dict[str, tuple[int, int]] = {}  # rel -> (size, crc32) of the host's file as held
        self._images: dict[str, bytearray] = {}  # rel of a database -> its image as the host sent it
        self._pending: dict[str, bytearray] = {}  # whole files arriving in pieces
        self._written: dict[str, tuple | None] = {}  # rel of agent_state.json -> stat of our own last write
        self._synced = threading.Event()  # set when the first sync is done or the connection ended
        self._sync_done = False
        self._complete = threading.Event()  # set when no previewed log is still behind
        self.behind: set[str] = set()  # the logs whose copy holds a preview (head and tail) only
        self._error: str | None = None
        self.last_error = ""  # why the last reconnection failed
        self.desired: list[dict] = []  # the host's answers to desire requests

    # -- public -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """One line for the status bar: ``ssh HOST: watching`` or ``reconnecting to HOST…``."""
        return self._state

    def start(self, timeout: float | None = None, *, complete: bool = True) -> Mirror:
        """Connect and copy; return once the copy is complete, or with ``complete=False``
        once the first screen is there: a big line log's copy may then hold its header and
        newest events only (:attr:`behind`) while the whole of it follows (the explorer,
        which reads the file again when it is replaced). ``timeout``: seconds for each wait."""
        try:
            self._connect_once(first=True, timeout=timeout)
            if complete and not self._complete.wait(timeout):
                raise RemoteError(f"{self.spec.destination}: the copy did not complete within {timeout} s")
        except BaseException:
            self.close()  # nothing of a failed start is left behind
            raise
        self._thread = threading.Thread(target=self._run, name=f"ssh-mirror-{self.spec.host}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        self._stop_proc()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed.is_set()

    def disconnect(self) -> None:
        """End the current ssh process as a dropped link would (tests and benchmarks)."""
        self._stop_proc()

    def shown(self, text: str) -> str:
        """``text`` with the mirror's local path replaced by the remote target's."""
        copies = str(self.copies)
        if copies not in text:
            return text
        return text.replace(copies, self.spec.authority)

    def wait_complete(self, timeout: float | None = None) -> bool:
        """Block until no previewed log is behind (``False`` after ``timeout`` s)."""
        return self._complete.wait(timeout)

    def wait_changed(self, count: int, timeout: float) -> bool:
        """Block until ``changes`` reaches ``count`` (``False`` after ``timeout`` s)."""
        return self.wait_for(lambda: self.changes >= count, timeout)

    def wait_for(self, predicate, timeout: float) -> bool:
        """Block until ``predicate()`` holds, checked after each change applied (``False``
        after ``timeout`` s or when closed)."""
        with self._changed:
            return bool(self._changed.wait_for(lambda: predicate() or self._closed.is_set(), timeout)) and predicate()

    def wait_state(self, timeout: float, previous: str) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._state != previous or self._closed.is_set(), timeout)

    # -- the connection -----------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        with self._changed:
            self._state = state
            self._changed.notify_all()

    def _settle_state(self) -> None:
        """A connected link's state: copying while a previewed log is behind, else watching."""
        with self._changed:
            behind = len(self.behind)
            self._state = (f"ssh {self.spec.destination}: copying the rest of {behind} log{'s' if behind != 1 else ''}…"
                           if behind else f"ssh {self.spec.destination}: watching ({self.watch})")
            self._changed.notify_all()

    def _stop_proc(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()

    def _connect_once(self, *, first: bool, timeout: float | None = None) -> None:
        """Start ssh, send the reader and ``hello``, and apply messages until the first sync
        is complete. Raises :class:`RemoteError` when the connection ends before that."""
        try:
            # A reconnection happens while the explorer owns the terminal: ssh must not prompt
            # there (a key that needs a passphrase or a password then fails, and says so).
            over_ssh = self.argv[-1].startswith("exec python3")  # made by ssh_argv: ... HOST COMMAND
            argv = self.argv if first or not over_ssh else [*self.argv[:-2], "-o", "BatchMode=yes", *self.argv[-2:]]
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=False)
        except OSError as exc:
            raise RemoteError(f"cannot run {self.argv[0]!r}: {exc.strerror or exc}") from None
        self._proc = proc
        self._synced.clear()
        self._sync_done = False
        self._pending.clear()  # pieces of a file the last connection did not finish
        self._error = None
        stderr: list[bytes] = []
        threading.Thread(target=lambda: stderr.append(proc.stderr.read() if proc.stderr else b""),
                         daemon=True, name="ssh-stderr").start()
        self._writer = FrameWriter()
        program = reader_program()
        hello = self._writer.encode({"op": "hello", "root": self.spec.path, "poll": self.poll, "preview": self.preview,
                                     "watch": "polling" if self.polling else "auto",
                                     "known": {rel: list(v) for rel, v in self._files.items()
                                               if rel not in self._images},
                                     "pages": {rel: _page_crcs(img) for rel, img in self._images.items()}})
        try:
            assert proc.stdin is not None
            proc.stdin.write(program + hello)
            proc.stdin.flush()
            self.bytes_out += len(program) + len(hello)
        except OSError:
            pass  # ssh ended already: its exit status says why below
        self._pump = threading.Thread(target=self._read, args=(proc,), daemon=True, name="ssh-read")
        self._pump.start()
        self._synced.wait(timeout)
        if not self._sync_done or self._error is not None:
            try:
                code = proc.wait(timeout=10)  # ssh's own exit status says why (255: ssh, 127: no python3)
            except subprocess.TimeoutExpired:
                self._stop_proc()
                code = proc.wait()
            time.sleep(0.05)
            message = self._error or _why(code, b"".join(stderr).decode("utf-8", "replace"), self.spec)
            raise RemoteError(message)
        self.connects += 1
        self._settle_state()

    def _read(self, proc: subprocess.Popen) -> None:
        frames = FrameReader()
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        try:
            while True:
                data = os.read(fd, 262144)
                if not data:
                    break
                self.bytes_in += len(data)
                for message, body in frames.feed(data):
                    self._apply(message, body)
        except (OSError, FrameError, KeyError, TypeError, ValueError) as exc:  # a message not of this protocol
            self._error = self._error or f"{self.spec.destination}: the link broke: {exc}"
            self._stop_proc()
        finally:
            self._synced.set()  # wakes a waiting connect (which then checks how it ended)

    def _run(self) -> None:
        """Watch the current connection and the local agent_state.json copies; reconnect after a drop."""
        attempt = 0
        while not self._closed.is_set():
            proc = self._proc
            while proc is not None and proc.poll() is None and not self._closed.is_set():
                self._forward_desires()
                self._closed.wait(0.2)
            if self._closed.is_set():
                return
            self._set_state(f"reconnecting to {self.spec.host}…")
            self._pump.join(timeout=5)
            delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
            if self._closed.wait(delay):
                return
            try:
                self._connect_once(first=False, timeout=30)
                attempt = 0
            except RemoteError as exc:
                attempt += 1
                self.last_error = str(exc)
                self._set_state(f"reconnecting to {self.spec.host}…")

    # -- applying the host's messages ---------------------------------------------------------
    def _path(self, rel: str) -> Path:
        if rel.startswith("/") or ".." in rel.split("/"):
            raise FrameError(f"{rel!r}: not a path below the served folder")
        return self._base / rel

    def _apply(self, message: dict, body: bytes) -> None:
        op = message.get("op")
        if op == "hello":
            # The copy keeps the host's path below the private folder: run ids and the folder
            # names discovery reads (``.prose/runs/ID``) are the host's, and :meth:`shown` is one
            # prefix swap.
            self.remote_root = str(message.get("root", ""))
            self.watch = str(message.get("watch", ""))
            self.local = self.copies / self.remote_root.lstrip("/")
            self._base = self.local.parent if message.get("file") else self.local
            self._base.mkdir(parents=True, exist_ok=True)
            return
        if op == "error":
            self._error = f"{self.spec.destination}: {message.get('message')}"
            return
        if op == "synced":
            listed = set(message.get("files") or ())
            for rel in [r for r in self._files if r not in listed]:
                self._remove(rel)
            self.behind = {str(rel) for rel in message.get("behind") or ()}
            if self.behind:
                self._complete.clear()
            self._sync_done = True
            self._synced.set()
            return
        if op == "complete":
            self.behind = set()
            self._complete.set()
            if self.connects:
                self._settle_state()
            self._bump()
            return
        if op == "desired":
            self.desired.append(message)
            self._bump()
            return
        if op == "note" or op == "data":
            return
        rel = str(message.get("path", ""))
        target = self._path(rel)
        if op == "preview":
            # The header and newest lines, as a file the backends read (its first screen); the
            # whole file replaces it (another inode: the explorer reads it again) when it comes.
            # A millisecond older than the host's: a watch that starts after the whole file
            # landed tells it from the preview by its mtime (``live.pipeline``'s resync).
            mtime = message.get("mtime")
            _write_atomic(target, body, mtime - 1_000_000 if isinstance(mtime, int) else None)
            self._files.pop(rel, None)  # not held: a reconnection asks for it whole
            self._bump()
        elif op == "append":
            offset = int(message["offset"])
            with open(target, "r+b") as f:
                f.seek(offset)
                f.write(body)
                f.truncate()
                f.flush()
                _set_mtime(f.fileno(), message.get("mtime"))  # before close: one burst of events for the watcher
            self._files[rel] = (offset + len(body), zlib.crc32(body, _crc_upto(self._files.get(rel), target, offset)))
            self._after_write(rel, target)
        elif op == "file":
            piece = self._pending.setdefault(rel, bytearray())
            piece += body
            if message.get("last", True):
                data = bytes(self._pending.pop(rel))
                _write_atomic(target, data, message.get("mtime"))
                self._files[rel] = (len(data), zlib.crc32(data))
                self._after_write(rel, target)
        elif op == "db":
            image = self._images.setdefault(rel, bytearray())
            size, page = int(message["size"]), int(message["page"])
            if len(image) < size:
                image += bytes(size - len(image))
            del image[size:]
            for i, index in enumerate(message.get("pages") or ()):
                image[index * page:(index + 1) * page] = body[i * page:(i + 1) * page]
            if message.get("last", True):
                _write_db(target, bytes(image))
                _set_mtime(target, message.get("mtime"))
                self._files[rel] = (len(image), 0)
                self._after_write(rel, target)
        elif op == "removed":
            self._remove(rel)
            self._bump()

    def _remove(self, rel: str) -> None:
        self._files.pop(rel, None)
        self._images.pop(rel, None)
        try:
            self._path(rel).unlink()
        except OSError:
            pass

    def _after_write(self, rel: str, target: Path) -> None:
        if rel.rsplit("/", 1)[-1] == "agent_state.json":
            self._written[rel] = _stat_key(target)
        self._bump()

    def _bump(self) -> None:
        with self._changed:
            self.changes += 1
            self._changed.notify_all()

    # -- Mission Control's write --------------------------------------------------------------
    def _forward_desires(self) -> None:
        """A mirrored ``agent_state.json`` that changed here was written by Mission Control:
        send its fields to the host (the one write), whose file then comes back."""
        candidates = set(self._written) | {"agent_state.json", "generated-app/agent_state.json"}
        for rel in candidates:
            path = self._path(rel)
            key = _stat_key(path)
            if key is None or key == self._written.get(rel):
                continue
            self._written[rel] = key
            try:
                text = path.read_text(encoding="utf-8")
                import json

                state = json.loads(text)
            except (OSError, ValueError):
                continue
            if not isinstance(state, dict):
                continue
            fields = {k: state[k] for k in ("desired_state", "timestamp", "setBy", "note") if k in state}
            self.send({"op": "desire", "path": rel, "fields": fields, "text": text})

    def send(self, message: dict) -> None:
        """Send one request to the reader (``read``, ``desire``); dropped when the link is down."""
        proc = self._proc
        if proc is None or proc.stdin is None or self._writer is None:
            return
        with self._write_lock:
            frame = self._writer.encode(message)
            try:
                proc.stdin.write(frame)
                proc.stdin.flush()
                self.bytes_out += len(frame)
            except OSError:
                pass


def _remove_abandoned_copies() -> None:
    """Remove the copies of explorers that ended without cleaning up (killed, or the terminal
    closed under them): this user's ``prose-tui-ssh-*`` folders whose process is gone."""
    for folder in Path(tempfile.gettempdir()).glob(COPY_PREFIX + "*"):
        try:
            if folder.stat().st_uid != os.getuid():
                continue
            pid = int((folder / "pid").read_text())
            os.kill(pid, 0)  # raises when no such process
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):
            continue  # being made right now, or not ours


def _stat_key(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _crc_upto(known: tuple[int, int] | None, path: Path, offset: int) -> int:
    if known is not None and known[0] == offset:
        return known[1]
    with open(path, "rb") as f:
        return zlib.crc32(f.read(offset))


def _page_crcs(image: bytearray) -> list[int]:
    size = int.from_bytes(image[16:18], "big") if len(image) >= 100 else 4096
    size = 65536 if size == 1 else (size or 4096)
    return [zlib.crc32(image[i:i + size]) for i in range(0, len(image), size)]


def _set_mtime(file: Path | int, mtime: object) -> None:
    """Give the copy the host's mtime (backends order and date by it)."""
    if isinstance(mtime, int):
        try:
            os.utime(file, ns=(mtime, mtime))
        except OSError:
            pass


def _write_atomic(target: Path, data: bytes, mtime: object = None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.prose-tui-part")
    temp.write_bytes(data)
    _set_mtime(temp, mtime)
    os.replace(temp, target)


def _write_db(target: Path, image: bytes) -> None:
    """Put the host's database image into the local copy through SQLite (its own locks, so
    a backend reading the copy sees whole commits), as a rollback-journal database: the copy
    has no ``-wal``, and a WAL header without one would need SQLite to make files."""
    import sqlite3  # here: a run's first screen (a file on disk) never needs it (issue 33)

    target.parent.mkdir(parents=True, exist_ok=True)
    patched = bytearray(image)
    if len(patched) >= 100:
        patched[18:20] = b"\x01\x01"  # file format versions: legacy (rollback journal)
    source = sqlite3.connect(":memory:")
    try:
        source.deserialize(bytes(patched))
        copy = sqlite3.connect(target, timeout=5)
        try:
            copy.execute("PRAGMA journal_mode=DELETE")
            source.backup(copy)
        finally:
            copy.close()
    except sqlite3.Error:
        _write_atomic(target, bytes(patched))
    finally:
        source.close()
