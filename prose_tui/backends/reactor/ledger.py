"""The receipt ledger: ``receipts.json`` (openprose-0.15 reactor.md; concepts/reactor.md,
The receipt), one JSON array rewritten atomically, whole, on every append.

Each element is a receipt ``{node, status, prev, content_hash, hash_algorithm, cost:
{surprise_cause, tokens: {fresh, reused}}, wake: {source, refs}, fingerprints,
semantic_diff, ...}``. The content hash is ``<algorithm>:`` + the hex digest of the
receipt's canonical JSON without ``content_hash`` (keys sorted, no whitespace, UTF-8): this
is what the Reactor SDK writes, checked against every receipt of the OpenProse repository's
fixtures. ``prev`` is the content hash of the same node's previous receipt (``null`` for
its first): the chain.

:func:`read_ledger` parses a valid ledger with one ``json.loads`` and hashes each element's
text as written when that is canonical (the SDK writes compact, key-sorted JSON; each digest
is compared with the stored one, and anything else is re-serialised), so a 5,000-receipt
ledger opens at about twice the cost of parsing it. A malformed ledger is read element by
element up to the fault.

Live, :func:`read_tail` parses only what follows the elements already read: it keeps the
byte offset after the last element and a CRC-32 of the bytes before it; a rewrite that
keeps that prefix (an append, however the writer closes the array) is read from there,
any other rewrite asks for a full parse.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prose_tui.backends.common.contained import run_root
from prose_tui.backends.common.text import open_regular, short
from prose_tui.model import Receipt

RAW_SHOWN = 64 * 1024  # characters of an unparsable rest kept for the raw view
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def canonical(obj: dict[str, Any]) -> bytes:
    """The bytes a receipt's content hash is taken over: its JSON without ``content_hash``,
    keys sorted, no whitespace, non-ASCII as UTF-8."""
    body = {k: v for k, v in obj.items() if k != "content_hash"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _hasher(algorithm: str) -> Callable[[bytes], Any]:
    if algorithm == "sha256":
        return hashlib.sha256
    return lambda data: hashlib.new(algorithm, data)


def content_hash(obj: dict[str, Any], raw: str | None = None) -> str | None:
    """The content hash of receipt ``obj`` (``None`` for an unknown ``hash_algorithm``).

    When ``raw`` (the element as written) is already canonical, it is hashed as it is, which
    saves re-serialising; the result is the same."""
    algorithm = obj.get("hash_algorithm") or "sha256"
    if not isinstance(algorithm, str):
        return None
    algorithm = algorithm.lower()
    if algorithm != "sha256" and algorithm not in hashlib.algorithms_available:
        return None
    digest_of = _hasher(algorithm)
    stored = obj.get("content_hash")
    if raw is not None and isinstance(stored, str):
        if '"' in stored or "\\" in stored or not stored.isascii():
            pair = '"content_hash":' + json.dumps(stored, ensure_ascii=False)
        else:
            pair = f'"content_hash":"{stored}"'
        at = raw.find(pair)
        if at > 0:
            end = at + len(pair)
            body = raw[:at] + raw[end + 1 :] if raw[end : end + 1] == "," else raw[: at - 1] + raw[end:]
            digest = f"{algorithm}:{digest_of(body.encode('utf-8')).hexdigest()}"
            if digest == stored:
                return digest
    return f"{algorithm}:{digest_of(canonical(obj)).hexdigest()}"


@dataclass(slots=True)
class Chain:
    """Chain verification state: each node's last receipt hash and index, and the note of
    each node's first break."""

    last_hash: dict[str, str | None] = field(default_factory=dict)
    last_seq: dict[str, int] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)

    def check(self, obj: dict[str, Any], node: str, seq: int, computed: str | None) -> list[str]:
        """Verify receipt ``seq`` of ``node`` and record it; returns the break notes."""
        notes: list[str] = []
        stored = obj.get("content_hash")
        if computed is not None and isinstance(stored, str) and stored != computed:
            notes.append(f"receipt #{seq} of {node}: its content_hash {short(stored)} is not the hash of its "
                         f"content ({short(computed)})")
        prev = obj.get("prev")
        if node in self.last_hash:
            expected = self.last_hash[node]
            if expected is not None and prev != expected:
                before = self.last_seq[node]
                notes.append(f"receipt #{seq} of {node}: prev is {short(prev)} but the node's previous receipt "
                             f"#{before} hashes to {short(expected)}")
        elif prev is not None:
            notes.append(f"receipt #{seq} of {node}: prev is {short(prev)} but it is the node's first receipt "
                         "in the ledger")
        if notes and node not in self.broken:
            self.broken[node] = notes[0]
        self.last_hash[node] = computed if computed is not None else (stored if isinstance(stored, str) else None)
        self.last_seq[node] = seq
        return notes


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def to_receipt(obj: dict[str, Any], node: str, seq: int, computed: str | None) -> Receipt:
    """A :class:`~prose_tui.model.Receipt` from one parsed ledger element."""
    get = obj.get
    cost = get("cost")
    cost = cost if type(cost) is dict else {}
    tokens = cost.get("tokens")
    tokens = tokens if type(tokens) is dict else {}
    fingerprints = get("fingerprints")
    atomic = fingerprints.get("@atomic") if type(fingerprints) is dict else None
    wake = get("wake")
    diff = get("semantic_diff")
    reason = (_text(diff.get("failure_reason")) or _text(diff.get("error")) or _text(diff.get("reason"))) \
        if type(diff) is dict and diff else None
    status = get("status")
    stored = get("content_hash")
    prev = get("prev")
    cause = cost.get("surprise_cause")
    return Receipt(
        node=node,
        status=status if type(status) is str and status else "unknown",
        seq=seq,
        hash=stored if type(stored) is str else computed,
        prev=prev if type(prev) is str else None,
        version=atomic if type(atomic) is str and atomic else None,
        wake=_text(wake.get("source")) if type(wake) is dict else _text(wake),
        tokens_fresh=_int(tokens.get("fresh")),
        tokens_reused=_int(tokens.get("reused")),
        surprise_cause=cause if type(cause) is str and cause else None,
        failure_reason=reason,
        fields=obj,
    )


@dataclass(slots=True)
class Cursor:
    """Where reading ``path`` stopped: ``end`` is the byte offset after the last element read
    (after ``[`` when none; ``-1`` when the file cannot be tailed), ``crc`` the CRC-32 of the
    bytes before it, ``count`` the elements read (the next element's index)."""

    path: Path
    end: int = -1
    crc: int = 0
    count: int = 0
    size: int = -1
    mtime_ns: int = -1
    chain: Chain = field(default_factory=Chain)


@dataclass(slots=True)
class Parsed:
    """What one read gave: new ``receipts``, ``notes`` (chain breaks, in order), ``warnings``
    (malformed content), ``raw`` (the unparsed rest after an error, for the raw view)."""

    receipts: list[Receipt] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    raw: str | None = None
    closed: bool = False


@dataclass(slots=True)
class _Scan:
    items: list[tuple[Any, str | None]] = field(default_factory=list)
    last_end: int | None = None
    closed: bool = False
    error: tuple[int, str] | None = None
    fault_start: int = 0  # where the element (or text) holding the fault starts


def _scan(text: str, pos: int, expect_element: bool) -> _Scan:
    out = _Scan()
    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text):
            return out
        c = text[pos]
        if c == "]":
            out.closed = True
            after = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            if after < len(text):
                out.error = (after, "text after the closing ]")
                out.fault_start = after
            return out
        if not expect_element:
            if c != ",":
                out.error = (pos, "expected , or ] after a receipt")
                out.fault_start = pos
                return out
            pos += 1
            expect_element = True
            continue
        try:
            obj, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            out.error = (exc.pos, exc.msg)
            out.fault_start = pos
            return out
        out.items.append((obj, text[pos:end]))
        out.last_end = end
        pos = end
        expect_element = False


_SEPARATOR = '},{"content_hash":'


def _bulk(text: str, start: int) -> _Scan | None:
    """The whole array at once, for a ledger that is valid JSON (the usual case): one
    ``json.loads`` instead of one decode per element. Each element's raw text, used only as a
    hint for hashing (:func:`content_hash` checks it), comes from splitting the SDK's compact
    form on ``},{"content_hash":``; ``None`` when the text is not one valid array."""
    try:
        items = json.loads(text[start:])
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    close = text.rstrip().rindex("]")
    inner = text[start + 1 : close].strip()
    pieces = inner.split(_SEPARATOR) if inner else []
    if len(pieces) == len(items) and len(items) > 1:
        raws = [pieces[0] + "}"] + ['{"content_hash":' + p + "}" for p in pieces[1:-1]]
        raws.append('{"content_hash":' + pieces[-1])
    elif len(items) == 1:
        raws = [inner]
    else:
        raws = [None] * len(items)  # type: ignore[list-item]
    out = _Scan(items=list(zip(items, raws)), closed=True)
    out.last_end = len(text[:close].rstrip()) if items else start + 1
    return out


def _byte_offset(text: str, char_offset: int) -> int:
    return char_offset if text.isascii() else len(text[:char_offset].encode("utf-8"))


def _add(cursor: Cursor, parsed: Parsed, items: list[tuple[Any, str | None]]) -> None:
    for obj, raw in items:
        seq = cursor.count
        cursor.count += 1
        node = obj.get("node") if isinstance(obj, dict) else None
        if not isinstance(node, str) or not node:
            parsed.warnings.append(f"receipt #{seq} is not an object naming its node; skipped "
                                   f"({(raw or json.dumps(obj))[:80]})")
            continue
        computed = content_hash(obj, raw)
        parsed.notes.extend(cursor.chain.check(obj, node, seq, computed))
        parsed.receipts.append(to_receipt(obj, node, seq, computed))


def _read(path: Path) -> tuple[bytes, os.stat_result]:
    # receipts.json lies in the state dir: one that links elsewhere is never read
    with open_regular(path, root=run_root(path.parent)) as fh:
        st = os.fstat(fh.fileno())
        return fh.read(), st


def read_ledger(path: Path) -> tuple[Cursor, Parsed]:
    """Parse ``receipts.json`` whole. Raises ``OSError`` (``FileNotFoundError`` when absent);
    malformed content becomes warnings: the receipts before a fault are kept, the rest is
    returned raw."""
    cursor = Cursor(path)
    parsed = Parsed()
    data, st = _read(path)
    cursor.size, cursor.mtime_ns = st.st_size, st.st_mtime_ns
    lossy = False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        parsed.warnings.append(f"receipts.json is not UTF-8 (byte {exc.start}); undecodable bytes are replaced")
        text = data.decode("utf-8", errors="replace")
        lossy = True
    start = _WS.match(text, 1 if text.startswith("\ufeff") else 0).end()  # type: ignore[union-attr]
    if start >= len(text):
        parsed.warnings.append("receipts.json is empty: no receipts yet")
        return cursor, parsed
    if text[start] != "[":
        _not_an_array(text, cursor, parsed)
        return cursor, parsed
    scan = _bulk(text, start) or _scan(text, start + 1, True)
    _add(cursor, parsed, [(o, r) for o, r in scan.items])
    parsed.closed = scan.closed
    end_char = scan.last_end if scan.last_end is not None else start + 1
    cursor.end = _byte_offset(text, end_char)
    cursor.crc = zlib.crc32(memoryview(data)[: cursor.end])
    if lossy:
        cursor.end = -1  # offsets in replaced text are not byte offsets: never tailed
    if scan.error is not None:
        at, msg = scan.error
        line = text.count("\n", 0, at) + 1
        parsed.warnings.append(f"receipts.json is not valid JSON at byte {_byte_offset(text, at)} (line {line}): "
                               f"{msg}; the {len(scan.items)} receipts before it are shown, the rest is shown raw")
        parsed.raw = text[scan.fault_start : scan.fault_start + RAW_SHOWN]
        cursor.end = -1
    elif not scan.closed:
        parsed.warnings.append(f"receipts.json ends before its array closes (truncated?); "
                               f"{len(scan.items)} whole receipts read")
    return cursor, parsed


def _not_an_array(text: str, cursor: Cursor, parsed: Parsed) -> None:
    """A ledger written as ``{"receipts": [...]}`` is read (not tailed); anything else is raw."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        parsed.warnings.append(f"receipts.json is not a JSON array ({exc}); shown raw")
        parsed.raw = text[:RAW_SHOWN]
        return
    items = data.get("receipts") if isinstance(data, dict) else None
    if not isinstance(items, list):
        parsed.warnings.append("receipts.json holds no array of receipts; shown raw")
        parsed.raw = text[:RAW_SHOWN]
        return
    _add(cursor, parsed, [(o, None) for o in items])
    parsed.closed = True


def read_tail(cursor: Cursor) -> Parsed | None:
    """The receipts appended since ``cursor`` (updated in place), or ``None`` when the file
    was rewritten otherwise (shorter, a changed prefix, malformed): read it whole then.
    Raises ``OSError``."""
    if cursor.end < 0:
        return None
    try:
        st = os.stat(cursor.path)
    except FileNotFoundError:
        return None
    if (st.st_size, st.st_mtime_ns) == (cursor.size, cursor.mtime_ns):
        return Parsed()
    data, st = _read(cursor.path)
    if len(data) < cursor.end or zlib.crc32(memoryview(data)[: cursor.end]) != cursor.crc:
        return None
    try:
        text = data[cursor.end :].decode("utf-8")
    except UnicodeDecodeError:
        return None
    scan = _scan(text, 0, cursor.count == 0)
    if scan.error is not None:
        return None
    parsed = Parsed(closed=scan.closed)
    _add(cursor, parsed, [(o, r) for o, r in scan.items])
    if scan.last_end is not None:
        new_end = cursor.end + _byte_offset(text, scan.last_end)
        cursor.crc = zlib.crc32(memoryview(data)[cursor.end : new_end], cursor.crc)
        cursor.end = new_end
    cursor.size, cursor.mtime_ns = st.st_size, st.st_mtime_ns
    return parsed
