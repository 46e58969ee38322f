"""Reading an append-only JSON Lines file so that a live read costs what was appended.

:class:`JsonlTail` keeps the byte offset after the last whole line it read and the bytes just
before it; :meth:`JsonlTail.read` parses from there. A file that got shorter, changed
without growing, was replaced (another inode) or whose bytes just before the offset changed was
rewritten, not appended to: ``read`` returns ``None`` and the caller reads it whole again (a
new tail). An edit further back that comes with an append is not seen until the file is read
whole again (reading the whole prefix on every append would cost the file, not the append). A last line without its newline is a write in
progress or a crash mid-append: it is given back as ``torn`` when it is not whole JSON and read
again from its start next time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prose_tui.backends.common.text import open_regular

__all__ = ["JsonlLine", "JsonlRead", "JsonlTail"]

_CHECK = 64  # bytes before the offset compared to tell an append from a rewrite


@dataclass(frozen=True, slots=True)
class JsonlLine:
    """One line: its 1-based ``number``, its text, and the parsed ``value`` or the ``error``."""

    number: int
    text: str
    value: Any = None
    error: str | None = None
    floats: bool = False  # the line holds a number with a fraction or exponent


@dataclass(slots=True)
class JsonlRead:
    """What one read gave: the whole new ``lines`` (blank ones left out), and ``torn``, the
    last line when it is neither ended by a newline nor whole JSON (``None`` otherwise)."""

    lines: list[JsonlLine] = field(default_factory=list)
    torn: JsonlLine | None = None


@dataclass(slots=True)
class JsonlTail:
    """Where reading ``path`` stopped: ``end`` (bytes read as whole lines), ``lines`` (lines
    counted so far, blank ones included), and the bytes before ``end`` kept to recognise an
    append. ``root``: the run folder the file must stay inside (``open_regular``)."""

    path: Path
    root: Path | None = None
    end: int = 0
    lines: int = 0
    size: int = -1
    mtime_ns: int = -1
    inode: int = -1
    _before: bytes = b""
    _unended: bool = False  # the last line read was whole JSON without its newline yet

    def read(self) -> JsonlRead | None:
        """The lines appended since the last read (from the start the first time), or
        ``None`` when the file was rewritten (read it whole with a new tail). Raises
        ``OSError`` (``FileNotFoundError`` when absent)."""
        with open_regular(self.path, root=self.root) as fh:
            st = os.fstat(fh.fileno())
            if (st.st_size, st.st_mtime_ns, st.st_ino) == (self.size, self.mtime_ns, self.inode):
                return JsonlRead()
            if st.st_size < self.end or (self.size >= 0 and (st.st_size == self.size or st.st_ino != self.inode)):
                return None  # shorter, rewritten in place without growing, or replaced by another file
            start = self.end - len(self._before)
            fh.seek(start)
            data = fh.read()
        if data[: len(self._before)] != self._before:
            return None
        self.size, self.mtime_ns, self.inode = st.st_size, st.st_mtime_ns, st.st_ino
        return self._parse(data[len(self._before):])

    def _parse(self, data: bytes) -> JsonlRead:
        out = JsonlRead()
        pos = 0
        if self._unended and data[:1] in (b"\n", b"\r"):
            pos = data.find(b"\n") + 1  # the newline that ends the line read last time
        self._unended = False
        while pos < len(data):
            nl = data.find(b"\n", pos)
            whole = nl >= 0
            raw = data[pos: nl if whole else len(data)]
            line = self._line(self.lines + 1, raw)
            if not whole and line.error is not None:
                out.torn = line  # read again from its start when more arrives
                break
            self.lines += 1
            pos = nl + 1 if whole else len(data)
            self._unended = not whole
            if raw.strip():
                out.lines.append(line)
        consumed = data[:pos]
        self.end += len(consumed)
        self._before = (self._before + consumed)[-_CHECK:]
        return out

    @staticmethod
    def _line(number: int, raw: bytes) -> JsonlLine:
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte order mark some editors write
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        floats: list[str] = []

        def as_float(word: str) -> float:
            floats.append(word)
            return float(word)

        try:
            value = json.loads(raw, parse_float=as_float)
        except UnicodeDecodeError as exc:
            return JsonlLine(number, text, error=f"not UTF-8 (byte {exc.start})")
        except ValueError as exc:
            return JsonlLine(number, text, error=str(exc) if raw.strip() else "empty")
        return JsonlLine(number, text, value, floats=bool(floats))
