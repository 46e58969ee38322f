"""Tailing append-only files: read only the bytes appended since the last read.

:class:`FileTail` keeps a byte offset and the identity of what it read (inode, size, a
hash of the head, the bytes just before the offset) and says whether a file grew, shrank,
was replaced or rewritten in place. The head matters as much as the tail: a VM that
rewrites a log in place with a new header (another run id or program) but the same last
bytes would otherwise keep the old header on screen for ever (issue 35). Used for event
logs (:mod:`.eventlog_tail`) and receipt ledgers (:mod:`.receipts`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

PROBE = 256  # bytes before the offset that tell an append from a rewrite
HEAD = 4096  # bytes at the start (the header and first events) whose hash tells a rewrite there


def _head_hasher():
    return hashlib.blake2b(digest_size=16)


class Change(Enum):
    """What happened to a tailed file since the last read."""

    SAME = "same"
    GREW = "grew"
    RESET = "reset"  # truncated, replaced (new inode) or rewritten in place: read it again whole


@dataclass(slots=True)
class FileTail:
    """Where the last read of ``path`` stopped: ``offset`` (bytes), the file's inode and
    device, ``probe``, the (at most ``PROBE``) bytes just before ``offset`` as they were
    read, and ``head_digest``, a 16-byte BLAKE2b of the first ``head_len`` bytes (at most
    ``HEAD``, never beyond ``offset``). The same bytes at both places later mean the file
    was appended to, not rewritten; a hash, not the bytes, so a tail costs the same few
    dozen bytes for every run watched."""

    path: Path
    offset: int = 0
    inode: tuple[int, int] | None = None
    probe: bytes = b""
    head_len: int = 0
    head_digest: bytes = b""
    _hasher: Any = None  # the head's running hash while it is shorter than HEAD (hashlib object)

    def look(self, limit: int | None = None) -> tuple[Change, os.stat_result, bytes]:
        """Compare the file on disk with what was read, and read what is new, with one
        open: ``(change, stat, bytes from offset to the end)`` (at most ``limit`` bytes;
        ``b""`` on a reset). A different inode, a shorter file, other bytes in the head or
        just before the offset are a reset. ``OSError`` when it cannot be read."""
        with open(self.path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if self.inode is not None and (st.st_ino, st.st_dev) != self.inode:
                return Change.RESET, st, b""
            if st.st_size < self.offset:
                return Change.RESET, st, b""
            if self.head_len and self.offset > len(self.probe):
                # The head, where the probe (which then starts after byte 0) does not cover it.
                hasher = _head_hasher()
                hasher.update(os.pread(fh.fileno(), self.head_len, 0))  # one unbuffered read
                if hasher.digest() != self.head_digest:
                    return Change.RESET, st, b""
            start = self.offset - len(self.probe)
            fh.seek(start)
            if self.probe and fh.read(len(self.probe)) != self.probe:
                return Change.RESET, st, b""
            if st.st_size == self.offset:
                return Change.SAME, st, b""
            return Change.GREW, st, fh.read() if limit is None else fh.read(limit)

    @classmethod
    def read_up_to(cls, path: Path, offset: int, st: os.stat_result, head: bytes, before: bytes) -> FileTail:
        """A tail of ``path`` (stat ``st``) whose reading stopped at ``offset``, for a file
        read in pieces (a long log's head and its last bytes): ``head``, the bytes read at its
        start (their first ``HEAD`` are hashed), and ``before``, bytes read just before
        ``offset`` (its last ``PROBE`` are the probe), both as they were read then."""
        head = head[:min(HEAD, offset)]
        hasher = _head_hasher()
        hasher.update(head)
        return cls(path, offset=offset, inode=(st.st_ino, st.st_dev), probe=before[-PROBE:],
                   head_len=len(head), head_digest=hasher.digest(),
                   _hasher=hasher if len(head) < HEAD else None)

    def check(self) -> tuple[Change, os.stat_result | None]:
        """``look`` without keeping the new bytes."""
        change, st, _data = self.look(0)
        return change, st

    def read_new(self, limit: int | None = None) -> bytes:
        """The bytes from ``offset`` to the end (at most ``limit``); does not move ``offset``."""
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            return fh.read() if limit is None else fh.read(limit)

    def advance(self, consumed: int, st: os.stat_result | None = None, data: bytes | None = None) -> None:
        """Mark ``consumed`` more bytes as read and remember the file's identity. ``data``,
        when given, holds the bytes read from the old offset (at least ``consumed`` of them):
        the new probe and head hash are taken from it, without reading the file again."""
        if st is not None:
            self.inode = (st.st_ino, st.st_dev)
        if data is not None and len(data) >= consumed:
            self.probe = (self.probe + data[:consumed])[-PROBE:] if consumed else self.probe
            self._grow_head(data[:consumed])
            self.offset += consumed
            return
        self.offset += consumed
        self.probe = self._read_probe() if self.offset else b""
        self._read_head()

    def reset(self) -> None:
        self.offset, self.inode, self.probe = 0, None, b""
        self.head_len, self.head_digest, self._hasher = 0, b"", None

    def _grow_head(self, new: bytes) -> None:
        """Hash the part of ``new`` (the bytes at ``offset``) that falls in the head."""
        if self.head_len >= HEAD or not new:
            return
        if self.head_len != self.offset:  # (never: the head is everything read until it is full)
            self._read_head(self.offset + len(new))
            return
        if self._hasher is None:
            self._hasher = _head_hasher()
        hasher = self._hasher
        take = new[:HEAD - self.head_len]
        hasher.update(take)
        self.head_len += len(take)
        self.head_digest = hasher.digest()
        if self.head_len >= HEAD:
            self._hasher = None

    def _read_head(self, end: int | None = None) -> None:
        """Hash the file's first ``min(end or offset, HEAD)`` bytes again."""
        length = min(self.offset if end is None else end, HEAD)
        hasher = _head_hasher()
        if length:
            with open(self.path, "rb") as fh:
                head = fh.read(length)
            hasher.update(head)
            length = len(head)
        self.head_len, self.head_digest = length, hasher.digest()
        self._hasher = hasher if length < HEAD else None

    def _read_probe(self) -> bytes:
        start = max(0, self.offset - PROBE)
        with open(self.path, "rb") as fh:
            fh.seek(start)
            return fh.read(self.offset - start)
