"""A doorbell for the watcher: sleep until the kernel says something changed below the watch.

watchfiles' engine (``RustNotify``) hears every change on a thread of its own but hands the
changes over only when asked, and it is asked by looking every *step* (5-30 ms): an explorer
left open on a quiet run woke 33 times a second to find nothing, and a change after a quiet
spell waited up to two 30 ms steps before anyone looked (docs/performance.md, fifth and
sixth pass). On Linux the kernel's inotify file descriptor can be slept on instead: the
watcher waits on a doorbell (an inotify instance of its own over the same folders) and asks
the engine only once it rang. watchfiles stays the one source of *what* changed (paths,
renames, new folders); the doorbell only says *that* something did.

- The mask is the events watchfiles turns into changes (notify's modify, metadata, create,
  delete and rename kinds); opens, reads and closes do not ring, so the explorer's own reads
  of a run never wake it.
- Folders are watched recursively like the engine's: a folder created or moved in below a
  watched one is watched as soon as the doorbell hears of it (``drain``). A symbolic link to
  a folder is not followed (a link back up would never end); a change behind one is found by
  the watcher's look every ``poll_s``, as is one the doorbell missed in a folder made and
  written to at once.
- ``interrupt`` wakes a ``wait`` from another thread (a subscription changed).

Linux only (``inotify_simple``, a thin wrapper of the system calls); ``open_doorbell``
returns ``None`` where there is no inotify or a watch cannot be added (``ENOSPC``: the
user's ``fs.inotify.max_user_watches``), and the watcher then looks every step as before.
Textual-free.
"""

from __future__ import annotations

import errno
import os
import select
import sys
import threading
from pathlib import Path
from typing import Any

class Doorbell:
    """An inotify instance over ``folders`` (and, with ``recursive``, every folder below
    them), plus a pipe that ``interrupt`` writes to.

    Raises ``OSError`` when inotify cannot be opened or a folder cannot be watched, and
    ``ImportError`` without ``inotify_simple``: use ``open_doorbell`` to get ``None`` then.
    """

    def __init__(self, folders: list[Path], *, recursive: bool) -> None:
        from inotify_simple import INotify, flags  # Linux only: imported where it is used

        # The events watchfiles turns into changes (opens, reads and closes are not among them).
        self._mask = (flags.MODIFY | flags.ATTRIB | flags.MOVED_FROM | flags.MOVED_TO | flags.CREATE | flags.DELETE
                      | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR)
        self._new_folder = (flags.ISDIR, flags.CREATE | flags.MOVED_TO)  # a folder made or moved in below
        self.recursive = recursive
        self._lock = threading.Lock()
        self._inotify: Any = INotify(nonblocking=True)
        try:
            self._wake_r, self._wake_w = os.pipe()
        except OSError:
            self._inotify.close()
            raise
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._poll = select.poll()
        self._poll.register(self._inotify.fileno(), select.POLLIN)
        self._poll.register(self._wake_r, select.POLLIN)
        self._folders: dict[int, Path] = {}  # watch descriptor -> folder
        self.rings = 0  # times ``wait`` returned because the kernel reported a change (tests read it)
        try:
            for folder in folders:
                self._watch(folder, strict=True)
        except BaseException:
            self.close()
            raise

    def _watch(self, folder: Path, *, strict: bool = False) -> None:
        """Watch ``folder`` and, when recursive, every folder below it. A folder below that
        cannot be watched (vanished, unreadable) is skipped; with ``strict`` (the watch's own
        roots) an error on ``folder`` itself, or running out of watches, is raised."""
        try:
            wd = self._inotify.add_watch(folder, self._mask)
        except OSError:
            if strict:
                raise
            return
        self._folders[wd] = folder
        if not self.recursive:
            return
        below = [folder]  # depth first with a list, not os.walk: a run may nest past the recursion limit
        while below:
            try:
                with os.scandir(below.pop()) as entries:
                    subs = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
            except OSError:  # vanished or unreadable meanwhile: the engine reports what it can
                continue
            for sub in subs:
                try:
                    self._folders[self._inotify.add_watch(sub, self._mask)] = sub
                except OSError as exc:  # out of watches: the doorbell would miss that part of the run
                    if strict and exc.errno == errno.ENOSPC:
                        raise
                    continue  # vanished, too long a path, unreadable: the engine reports what it can
                below.append(sub)

    @property
    def watched(self) -> int:
        """How many folders carry a watch (each costs one of ``max_user_watches``)."""
        return len(self._folders)

    def wait(self, timeout_s: float | None) -> bool:
        """Sleep until the kernel reports a change, ``interrupt`` is called, or ``timeout_s``
        seconds pass (``None``: no limit). True when woken by either, False on timeout.
        What woke it is read and dropped (``drain``)."""
        timeout_ms = None if timeout_s is None else max(0, int(timeout_s * 1000))
        if not self._poll.poll(timeout_ms):
            return False
        self.drain()
        return True

    def drain(self) -> bool:
        """Read what the kernel reported so far without waiting, watching any folder made
        below a watched one; True when there was a change."""
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        events = list(self._inotify.read(timeout=0))
        if not events:
            return False
        self.rings += 1
        if self.recursive:  # (an overflow, wd -1, rings too: the engine heard what was lost)
            is_dir, made = self._new_folder
            for event in events:
                if event.mask & is_dir and event.mask & made:
                    parent = self._folders.get(event.wd)
                    if parent is not None:
                        self._watch(parent / event.name)
        return True

    def interrupt(self) -> None:
        """Wake a ``wait`` now (any thread; nothing once closed)."""
        with self._lock:  # never write to a closed pipe's number, which a new file may reuse
            if self._wake_w < 0:
                return
            try:
                os.write(self._wake_w, b"!")
            except OSError:  # a full pipe: the waiter is woken already
                pass

    def close(self) -> None:
        """Drop the watches and the pipe (idempotent)."""
        with self._lock:
            self._inotify.close()
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1

    def __enter__(self) -> Doorbell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_doorbell(folders: list[Path], *, recursive: bool) -> tuple[Doorbell | None, str | None]:
    """A ``Doorbell`` over ``folders``, or ``None`` and why not (not Linux, no
    ``inotify_simple``, a folder that cannot be watched, too few inotify watches left)."""
    if not sys.platform.startswith("linux"):
        return None, "no inotify on this system"
    try:
        return Doorbell(folders, recursive=recursive), None
    except ImportError:
        return None, "inotify_simple is not installed"
    except OSError as exc:
        return None, f"inotify: {exc.strerror or exc}"
