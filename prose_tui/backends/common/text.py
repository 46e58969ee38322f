"""Decoding run files for display: UTF-8 with replacement, control characters made visible.

Run files are written by LLMs and may hold anything: invalid UTF-8, NUL bytes, ANSI escape
sequences. ``decode`` keeps every character but turns C0/C1 controls (other than tab and
newline) into their visible Unicode pictures (``\\x1b`` -> ``␛``), so no escape sequence
from a file can reach the terminal.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

from prose_tui.backends.common.contained import check, check_open

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_NAME_CONTROLS = re.compile(r"[\x00-\x1f\x7f\x80-\x9f]")


def _picture(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "␡"
    return "�"


def visible(text: str) -> str:
    """``text`` with control characters replaced by visible pictures; CRLF becomes LF."""
    return _CONTROLS.sub(_picture, text.replace("\r\n", "\n"))


def visible_name(name: str) -> str:
    """A file or folder name for one line of display: every control character, newline and
    tab included, becomes its visible picture (a name may hold any byte but ``/``)."""
    return _NAME_CONTROLS.sub(_picture, name)


# Bytes that decode to themselves and are shown as they are: printable ASCII, tab, newline.
_PLAIN_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n"
_HIGH_BYTES = bytes(range(0x80, 0x100))
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")  # U+0080-U+009F in UTF-8


def decode(data: bytes) -> str:
    """Bytes to displayable text: UTF-8 with replacement, controls made visible.

    Text with no control character (nearly every run file) is returned as decoded, found
    so by two C passes over the bytes: the regular expression that makes controls visible
    cost 1.3 ms per 170 KB state file, on each live rewrite of a 2,000-statement snapshot."""
    text = data.decode("utf-8", errors="replace")
    odd = data.translate(None, _PLAIN_BYTES)  # controls, CR and the bytes of non-ASCII characters
    if not odd or (not odd.translate(None, _HIGH_BYTES) and _C1_UTF8.search(odd) is None):
        return text
    return visible(text)


def open_regular(path: Path, *, root: Path | None = None) -> BinaryIO:
    """Open ``path`` for binary reading only if it is a regular file (after symlinks).

    A named pipe, socket or device in a run folder would block ``open`` (a FIFO with no
    writer) or never end (``/dev/zero``); it is refused with ``OSError`` ("not a regular
    file") without blocking: the file is opened non-blocking and checked with ``fstat``.

    With ``root`` (a run's :func:`~prose_tui.backends.common.contained.run_root`), a path
    that leaves the run (``..``, an absolute path, a symlink or symlinked folder resolving
    outside) is refused with :class:`~prose_tui.backends.common.contained.OutsideRun`
    ("outside the run: not read"), before opening and again for the file opened.
    """
    check(path, root)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        check_open(fd, path, root)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_window(path: Path, *, offset: int = 0, max_bytes: int = 256 * 1024, tail: bool = False,
                root: Path | None = None) -> tuple[str, int, bool]:
    """Read at most ``max_bytes`` of ``path`` from ``offset`` (or its last ``max_bytes`` with ``tail``).

    Returns ``(text, size_in_bytes, truncated)``. Never reads the whole of a large file.
    Raises ``OSError`` when the file cannot be opened, ``OutsideRun`` (an ``OSError``)
    when ``root`` is given and the file lies outside it (see ``open_regular``).
    """
    with open_regular(path, root=root) as fh:
        size = os.fstat(fh.fileno()).st_size
        start = offset if 0 <= offset <= size else 0
        length = size - start
        truncated = length > max_bytes
        fh.seek(size - max_bytes if truncated and tail else start)
        data = fh.read(min(length, max_bytes))
    text = decode(data)
    if truncated and tail:
        text = text.split("\n", 1)[-1]  # start at a whole line
    return text, size, truncated


def short(value: object) -> str:
    """A content hash for a sentence: ``sha256:0123456789ab…`` (the algorithm and the first 12
    hex digits); a value without ``algo:`` or as short is returned as it is, ``None`` as
    ``null``, anything else as its ``repr``."""
    if not isinstance(value, str):
        return "null" if value is None else repr(value)
    head, sep, tail = value.partition(":")
    return f"{head}:{tail[:12]}…" if sep and len(tail) > 12 else value
