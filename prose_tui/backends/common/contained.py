"""Containment: a file a run names is read only when it lies inside the run (issue 29).

A run is other people's text. The files it names (binding files, agent memory and
segments, imports, its program, a 0.15 world model and receipts, a Reactor state folder,
an SQLite attachment) are named by the run itself: by where a VM put them, by an Index
row, by a symlink. A run shared as a folder or an archive may hold
``bindings/linked.md -> ~/secret.txt``, an Index row ``../../.ssh/id_rsa`` or an absolute
path. None of those is read: the explorer shows such a file as :data:`OUTSIDE_RUN`
("outside the run: not read") in every view and export, never its content, and never
the target a symlink resolves to (only the path the run itself wrote).

The rule: a path is *inside* a run when its real path (``os.path.realpath``: every
symlink in the chain followed, symlinked folders in between included, ``..`` applied
after them) is the run's root or below it. The root is the run folder resolved once
(:func:`run_root`), so a run reached through a symlinked folder (``/tmp`` ->
``/private/tmp``, a symlinked project) is inside itself. Symlinks that stay inside the
run are fine.

:func:`check` decides before a file is opened; :func:`check_open` checks the file that was
opened (``/proc/self/fd`` on Linux, else ``fstat`` against the resolved path), so a symlink
swapped between the check and ``open`` is caught. ``text.open_regular(path, root=...)``
does both; every read of a file a run names goes through it with the run's root.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["OUTSIDE_RUN", "OutsideRun", "check", "check_open", "inside", "lexically_inside", "run_root"]

OUTSIDE_RUN = "outside the run: not read"


class OutsideRun(OSError):
    """A file a run names lies outside the run: it was not read (refused before ``open``, or
    right after it when the file opened is not the one checked). ``strerror`` is
    :data:`OUTSIDE_RUN`; ``filename`` is the path as the run named it (never the target)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.EACCES, OUTSIDE_RUN, str(path))


def run_root(folder: Path | str) -> Path:
    """``folder`` resolved once (``os.path.realpath``): the root every file of the run is
    checked against. Never raises (a missing folder resolves as far as it exists)."""
    return Path(os.path.realpath(folder))


def _below(real: str, root: Path) -> bool:
    top = str(root)
    return real == top or real.startswith(top if top.endswith(os.sep) else top + os.sep)


def inside(path: Path | str, root: Path) -> bool:
    """True when ``path``'s real path is ``root`` (a :func:`run_root`) or below it.

    Symlink chains, symlinked folders along the path, ``..`` and absolute paths are all
    resolved first; a path that does not exist is judged by what of it does (a missing
    file below a symlinked folder that leaves the run is outside). A symlink loop is
    outside. A path written below ``root`` itself (the usual case: backends build paths
    from the resolved run folder) costs one ``lstat`` per component below the root; any
    other path, or one with a symlink along it, one ``realpath`` (a ``readlink`` per
    component: about 70 µs, which 10,000 bindings would feel)."""
    text = os.fspath(path)
    top = str(root)
    prefix = top if top.endswith(os.sep) else top + os.sep
    if text.startswith(prefix):
        parts = text[len(prefix):].split(os.sep)
        if not any(p in ("..", ".", "") for p in parts):
            here = top
            for part in parts:
                here = os.path.join(here, part)
                try:
                    mode = os.lstat(here).st_mode
                except (FileNotFoundError, NotADirectoryError):
                    return True  # nothing there (yet): no link to follow; open() fails or check_open judges
                except (OSError, ValueError):
                    break
                if stat.S_ISLNK(mode):
                    break
            else:
                return True
    try:
        real = os.path.realpath(text, strict=True)
    except (FileNotFoundError, NotADirectoryError):  # not there (yet): judged by what of it exists
        real = os.path.realpath(text)
    except (OSError, ValueError):  # a symlink loop, a NUL byte: never read
        return False
    return _below(real, root)


def lexically_inside(path: Path | str, run_dir: Path | str) -> bool:
    """True when ``path`` (absolute, or relative to the current folder) stays below
    ``run_dir`` by its text alone (``os.path.normpath``: ``..`` applied, no file system
    access). For paths a run writes as text (an Index row's path) before any file exists:
    ``bindings/x.md`` is inside, ``../x.md`` and ``/home/u/x.md`` are not."""
    return _below(os.path.normpath(path), Path(os.path.normpath(run_dir)))


def check(path: Path | str, root: Path | None) -> None:
    """Raise :class:`OutsideRun` when ``path`` is not :func:`inside` ``root``; with no root
    (a file the user named themselves) there is nothing to check."""
    if root is not None and not inside(path, root):
        raise OutsideRun(path)


def check_open(fd: int, path: Path | str, root: Path | None) -> None:
    """After ``open``: raise :class:`OutsideRun` when the file behind ``fd`` is not inside
    ``root``. ``/proc/self/fd/N`` names the file actually opened (Linux); elsewhere the
    opened file's device and inode must be those of ``path`` resolved, which the earlier
    :func:`check` placed inside. Closes nothing: the caller owns ``fd``."""
    if root is None:
        return
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        opened = None
    if opened is not None and opened.startswith(os.sep):
        if not _below(opened, root):
            raise OutsideRun(path)
        return
    real = os.path.realpath(path)
    try:
        st, there = os.fstat(fd), os.stat(real)
    except OSError as exc:
        raise OutsideRun(path) from exc
    if (st.st_dev, st.st_ino) != (there.st_dev, there.st_ino) or not _below(real, root):
        raise OutsideRun(path)
