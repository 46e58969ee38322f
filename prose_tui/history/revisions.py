"""``state.md`` revisions kept as line differences in one append-only pack file (issue 35).

A VM rewrites a snapshot ``state.md`` whole after every statement (seeds/filesystem.md,
the VM Update Protocol), but from one revision to the next only a few lines change (the
``updated:`` header, a trace annotation, an Index row). Keeping each revision whole costs
the run's size per rewrite; here a revision is stored as the lines that differ from the
revision stored before it, with a whole revision (a *checkpoint*) now and then, so that
reading any revision back applies a bounded number of differences.

File ``revisions.pack`` in a run's journal folder; one record per revision, appended::

    {"sha": sha256 hex of the bytes, "base": offset of the record it differs from or -1,
     "ops": [[i, j] | [k], ...], "n": bytes of payload}\n
    payload: zlib-compressed literal lines joined by b"\n"

Lines are the bytes between ``\n`` (so ``b"\n".join(lines)`` is the revision, byte for
byte). ``[i, j]`` copies lines ``i..j-1`` of the base revision, ``[k]`` takes the next
``k`` literal lines. A checkpoint has ``base`` -1 and one ``[k]``. A record is located by
its byte offset, which the journal's index line stores (``"at"``); the index line is
written after the record, so a record cut short by a crash is never referenced. A record
whose bytes do not rebuild the sha256 it names reads as missing.

No Textual, no run files: only the journal folder is read and written.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
import zlib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PACK_NAME", "PackWriter", "delta_ops", "read_revision", "revision_lines"]

PACK_NAME = "revisions.pack"
# A checkpoint once the differences since the last one add up to its size (so reading a
# revision reads at most about twice a whole one), or after this many differences.
MAX_CHAIN = 200
MAX_HEADER = 1 << 20  # a record's JSON line; longer is not one of ours


def delta_ops(base: list[bytes], lines: list[bytes]) -> tuple[list[list[int]], list[bytes]]:
    """``(ops, literal lines)`` turning ``base`` into ``lines`` (see module doc).

    One pass over ``lines`` with an index of ``base``'s lines: a line is copied from where
    the last copy ended when it is the same there, else from its (last) place in ``base``,
    and the copy runs as far as both agree; lines found nowhere are literal. Linear in the lines (a rewrite moving an annotation, adding Index rows or a
    trace line costs a few ops); any result rebuilds ``lines`` exactly, a poor match only
    costs bytes."""
    where: dict[bytes, int] | None = None  # line -> its last place in base, built at the first miss
    ops: list[list[int]] = []
    literal: list[bytes] = []
    expect, j, n, size = 0, 0, len(lines), len(base)
    while j < n:
        line = lines[j]
        if expect < size and base[expect] == line:
            k = expect
        else:
            if where is None:
                where = dict(zip(base, range(size)))
            k = where.get(line, -1)
            # a short line (blank, a fence) found elsewhere is cheaper as a literal unless
            # the line after it agrees too
            if 0 <= k and len(line) < 16 and not (j + 1 < n and k + 1 < size and base[k + 1] == lines[j + 1]):
                k = -1
            if k < 0:
                if ops and len(ops[-1]) == 1:
                    ops[-1][0] += 1
                else:
                    ops.append([1])
                literal.append(line)
                j += 1
                continue
        first = k
        step = 64
        while step:  # gallop: whole slices while they agree, then smaller ones
            if k + step <= size and j + step <= n and base[k:k + step] == lines[j:j + step]:
                k += step
                j += step
            else:
                step //= 2
        ops.append([first, k])
        expect = k
    return ops, literal


def _apply(base: list[bytes], ops: list, literal: list[bytes]) -> list[bytes] | None:
    out: list[bytes] = []
    taken = 0
    for op in ops:
        if not isinstance(op, list) or not all(isinstance(x, int) and x >= 0 for x in op):
            return None
        if len(op) == 2:
            if op[1] > len(base) or op[0] > op[1]:
                return None
            out.extend(base[op[0]:op[1]])
        elif len(op) == 1:
            if taken + op[0] > len(literal):
                return None
            out.extend(literal[taken:taken + op[0]])
            taken += op[0]
        else:
            return None
    return out if taken == len(literal) else None


@dataclass(slots=True)
class _Record:
    sha: str
    base: int
    ops: list
    literal: list[bytes]


def _read_record(fh, at: int) -> _Record | None:
    try:
        fh.seek(at)
        head = fh.readline(MAX_HEADER)
        meta = json.loads(head)
        n, base, sha, ops = meta["n"], meta["base"], meta["sha"], meta["ops"]
        if not (isinstance(n, int) and isinstance(base, int) and isinstance(sha, str) and isinstance(ops, list)):
            return None
        if base >= at or n < 0:
            return None  # a base always comes before: no cycles
        payload = fh.read(n)
        if len(payload) != n:
            return None
        data = zlib.decompress(payload) if n else b""
    except (OSError, ValueError, KeyError, TypeError, zlib.error):
        return None
    count = sum(op[0] for op in ops if isinstance(op, list) and len(op) == 1 and isinstance(op[0], int))
    literal = data.split(b"\n") if count else []
    if len(literal) != count:
        return None
    return _Record(sha, base, ops, literal)


def read_revision(folder: Path, at: int, *, known: dict[int, list[bytes]] | None = None) -> list[bytes] | None:
    """The lines of the revision whose record starts at byte ``at`` of ``folder``'s pack,
    or ``None`` when the pack is missing, cut short or does not rebuild the recorded sha256.

    ``known`` (offset -> lines of revisions already read) ends the walk back early when
    the chain passes through one of them. Reads at most one chain: the record, its bases back
    to a checkpoint (``MAX_CHAIN`` at most)."""
    chain: list[_Record] = []
    start: list[bytes] | None = None
    try:
        with open(folder / PACK_NAME, "rb") as fh:
            where = at
            while True:
                if known and where in known:
                    start = known[where]
                    break
                record = _read_record(fh, where)
                if record is None or len(chain) > MAX_CHAIN + 1:
                    return None
                chain.append(record)
                if record.base < 0:
                    start = []
                    break
                where = record.base
    except OSError:
        return None
    if not chain:
        return start
    lines: list[bytes] | None = start or []
    for record in reversed(chain):
        lines = _apply(lines, record.ops, record.literal) if lines is not None else None
    if lines is None or hashlib.sha256(b"\n".join(lines)).hexdigest() != chain[0].sha:
        return None
    return lines


@dataclass
class PackWriter:
    """Appends revisions of one run to its pack; remembers the last one it wrote (its
    offset and bytes: one revision per run in memory) to store the next as a difference.
    The bytes are kept whole and split in lines only while the next one is diffed (issue 35:
    a revision's ~1,500 line objects held between rewrites pinned the allocator's arenas)."""

    folder: Path
    last_at: int = -1
    last_data: bytes | None = field(default=None, repr=False)
    chain: int = 0  # differences since the last checkpoint
    chain_bytes: int = 0  # their bytes
    checkpoint_bytes: int = 0  # the last checkpoint's bytes

    def append(self, sha: str, data: bytes) -> tuple[int, int]:
        """Store ``data`` (whose sha256 is ``sha``); returns ``(offset, bytes written)``.
        Raises ``OSError`` when the pack cannot be written."""
        lines = data.split(b"\n")
        base = self.last_at
        if self.last_data is None or self.chain >= MAX_CHAIN or self.chain_bytes >= max(self.checkpoint_bytes, 4096):
            ops, literal, base = [[len(lines)]], lines, -1
        else:
            ops, literal = delta_ops(self.last_data.split(b"\n"), lines)
        payload = zlib.compress(b"\n".join(literal), 6) if literal else b""
        head = json.dumps({"sha": sha, "base": base, "ops": ops, "n": len(payload)}, separators=(",", ":"))
        record = head.encode("ascii") + b"\n" + payload
        self.folder.mkdir(parents=True, exist_ok=True)
        # One write with O_APPEND: the record lands whole at the end even when another
        # process appends to the same pack; its offset is where the file position ends less its size.
        fd = os.open(self.folder / PACK_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            written = 0
            while written < len(record):
                written += os.write(fd, record[written:])
            end = os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        at = end - len(record)
        if base < 0:
            self.chain, self.chain_bytes, self.checkpoint_bytes = 0, 0, len(record)
        else:
            self.chain += 1
            self.chain_bytes += len(record)
        # Not remembered as read: the replay takes the newest revision's text from
        # ``current.newest_text``; a replay started anew reads in order (each base the one before).
        self.last_at, self.last_data = at, data
        return at, len(record)


# The revision read last, per journal folder: a replay reads revisions in order
# and each one's base is the one before, so a walk back stops at once; a revision read
# before it is read back from the pack (issue 35: one whole revision per run, not a few).
_READ: OrderedDict[Path, tuple[int, list[bytes]]] = OrderedDict()
_READ_KEPT = 8  # journal folders (runs)
_read_lock = threading.Lock()


def revision_lines(folder: Path, at: int) -> list[bytes] | None:
    """``read_revision`` through the revision read last in ``folder`` (a chain walk stops
    there when it meets it). The list returned must not be changed."""
    with _read_lock:
        last = _READ.get(folder)
        if last is not None:
            _READ.move_to_end(folder)
            if last[0] == at:
                return last[1]
    lines = read_revision(folder, at, known=dict([last]) if last is not None else None)
    if lines is not None:
        _remember_read(folder, at, lines)
    return lines


def _remember_read(folder: Path, at: int, lines: list[bytes]) -> None:
    with _read_lock:
        _READ[folder] = (at, lines)  # replaces the folder's revision read before
        _READ.move_to_end(folder)
        while len(_READ) > _READ_KEPT:
            _READ.popitem(last=False)
