"""Runs on another machine, read over the system ``ssh`` client with nothing installed there (issue 34).

``prose-tui ssh://[user@]host[:port]/path`` (or ``host:path``): a small standard-library
reader (:mod:`.reader`) is sent over the connection and serves the run files below the path
in a framed, compressed protocol (:mod:`.protocol`); the explorer keeps a private local copy
(:class:`.client.Mirror`) that the usual backends, watcher and history read. Textual-free;
below ``live`` in the layers.

For the command line (``prose_tui.cli.targets``):

* :func:`remote_path` registers an ``ssh://``/scp-form argument and gives the ``Path`` that
  stands for it until :func:`localize` opens it;
* :func:`localize` opens (once per process) the mirror for such a path and gives the local
  copy's path; :func:`mirror_of` the mirror a local path belongs to; :func:`shown` puts the
  remote target back in place of the copy in text a user reads;
* :func:`follow_state` says the link's state as it moves (``record``);
* :class:`RemoteState` is the mirror as a workspace source: it holds no runs, and its
  ``state`` is the status line's ``ssh HOST: watching`` / ``reconnecting to HOST…``.
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prose_tui.backends.protocol import RunSource
from prose_tui.remote.client import Mirror, RemoteError, RemoteSpec, parse_remote, ssh_argv

__all__ = ["Mirror", "RemoteError", "RemoteSpec", "RemoteState", "close", "follow_state", "localize", "mirror_of",
           "parse_remote", "remote_path", "shown", "shown_json", "ssh_argv"]

_pending: dict[Path, RemoteSpec] = {}
_mirrors: dict[RemoteSpec, Mirror] = {}
_lock = threading.Lock()


def remote_path(text: str) -> Path | None:
    """The ``Path`` standing for the remote target ``text`` (``None``: not a remote target).
    Raises ``ValueError`` for a malformed ``ssh://`` URL. No connection is made."""
    spec = parse_remote(text)
    if spec is None:
        return None
    path = Path(str(spec))
    with _lock:
        _pending[path] = spec
    return path


def localize(path: Path | None, *, complete: bool = True) -> Path | None:
    """The local copy's path for a path :func:`remote_path` gave (connecting and copying
    the runs first, once per process); any other path as it is. ``complete=False`` (the
    explorer): return once the first screen is copied, a big log's newest events before
    the rest (:meth:`Mirror.start`). Raises :class:`RemoteError` (a safe message) when the
    host cannot be read."""
    if path is None:
        return None
    with _lock:
        spec = _pending.get(path)
        mirror = _mirrors.get(spec) if spec is not None else None
    if spec is None:
        return path
    if mirror is None:
        mirror = Mirror(spec).start(complete=complete)  # as long as ssh takes (a passphrase or password prompt included)
        with _lock:
            _mirrors[spec] = mirror
        atexit.register(mirror.close)
    elif complete and not mirror.wait_complete():
        raise RemoteError(f"{spec.destination}: the copy did not complete")
    return mirror.local


def close(path: Path | None) -> None:
    """Close the mirror that holds ``path`` (ends ssh, removes the copy) and forget it."""
    mirror = mirror_of(path)
    if mirror is None:
        return
    with _lock:
        for spec in [s for s, m in _mirrors.items() if m is mirror]:
            del _mirrors[spec]
    mirror.close()


def mirror_of(path: Path | None) -> Mirror | None:
    """The open mirror whose local copy holds ``path`` (``None``: a local path)."""
    if path is None:
        return None
    text = str(path)
    with _lock:
        for mirror in _mirrors.values():
            if text == str(mirror.folder) or text.startswith(str(mirror.folder) + "/"):
                return mirror
    return None


def shown(text: str) -> str:
    """``text`` with every open mirror's local path replaced by its remote target."""
    with _lock:
        mirrors = list(_mirrors.values())
    for mirror in mirrors:
        text = mirror.shown(text)
    return text


def shown_json(value: Any) -> Any:
    """A JSON-able ``value`` with :func:`shown` applied to every string in it."""
    if not _mirrors:
        return value
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list):
        return [shown_json(v) for v in value]
    if isinstance(value, dict):
        return {k: shown_json(v) for k, v in value.items()}
    return value


def follow_state(mirror: Mirror, say: Callable[[str], None] | None = None) -> threading.Thread:
    """Call ``say(line)`` (default: one whole line on standard output) with the link's state now (``ssh HOST: watching (inotify)``) and at
    each move (``reconnecting to HOST…``, watching again) until ``mirror`` is closed, from a
    daemon thread (returned, started): what ``record`` prints for an ssh target, as it prints
    a database's ``unreachable``/``reachable again``."""

    def line(text: str) -> None:
        sys.stdout.write(text + "\n")  # one write: another thread's lines never cut into it
        sys.stdout.flush()

    say = say or line

    def follow() -> None:
        seen = mirror.state
        say(seen)
        while not mirror.closed:
            mirror.wait_state(3600.0, seen)
            if not mirror.closed and mirror.state != seen:
                seen = mirror.state
                say(seen)

    thread = threading.Thread(target=follow, name=f"ssh-state-{mirror.spec.host}", daemon=True)
    thread.start()
    return thread


class _NoChange:
    added: list = []
    changed: list = []
    removed: list = []


class RemoteState(RunSource):
    """A mirror as a workspace source (:class:`~prose_tui.backends.protocol.RunSource`): it
    holds no runs of its own (they are on disk in the copy), and its :attr:`state` is one
    status-line part, polled every ``poll_interval`` s or at once when it moves (:meth:`wait`)."""

    notifies = True  # wait() returns as soon as the link's state moves

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self.label = str(mirror.spec)
        self._seen = mirror.state

    @property
    def state(self) -> str:
        return self.mirror.state

    poll_interval = 1.0

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the link's state moves (``True``) or ``timeout`` s (default
        ``poll_interval``) pass."""
        moved = self.mirror.wait_state(max(0.0, self.poll_interval if timeout is None else timeout), self._seen)
        self._seen = self.mirror.state
        return moved

    def owns(self, path: Path) -> bool:
        return False

    def list_runs(self) -> list:
        return []

    def first_runs(self, limit: int) -> list:
        return []

    def open(self, path: Path, *, first_screen: Callable | None = None) -> Any:
        raise KeyError(path)

    def poll(self, path: Path | None = None) -> dict:
        return {}

    def poll_runs(self) -> _NoChange:
        return _NoChange()
