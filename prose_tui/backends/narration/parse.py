"""In-context narration as a run (seeds/in-context.md): files, standard input, Claude Code transcripts.

Inputs, recognised by content (:func:`sniff_narration`), not by extension alone:

* a text or Markdown file holding the VM's narration (one marker per line);
* standard input: pass the text to :func:`parse_narration_text`;
* a Claude Code session transcript (``.jsonl``: one JSON object per line). Only the text
  blocks of assistant messages are narration
  (``{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":…}]}}``);
  other line types are skipped, broken lines give one warning each (the first few).
  Event times come from each entry's ``timestamp``; ``Event.line`` is the JSONL line.

The markers and what they become are described in :mod:`.markers`; binding values
live in memory as ``Binding.fields["value"]`` (read them with :func:`binding_value`).

Scale: :class:`NarrationIndex` finds every line start of a file in one pass over the bytes
(C-level ``split``; ``progress(bytes_done, bytes_total)`` after each 8 MiB) and parses
lazily: :meth:`NarrationIndex.load` parses a range of lines, :meth:`NarrationIndex.load_progressively`
yields growing snapshots. Transcript lines are only JSON-decoded when their bytes
mention ``assistant``.

Live: :class:`NarrationTail` remembers its byte offset, reads only what was appended, and
starts over when the file is truncated or replaced (inode change, size shrink, or a
changed first block).
"""

from __future__ import annotations

import json
import os
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import accumulate
from pathlib import Path

from prose_tui.backends.narration.grammar import BRACKET, EMOJI, STEP
from prose_tui.backends.narration.markers import NarrationParser, binding_value
from prose_tui.model import Event, Run

__all__ = [
    "NarrationIndex",
    "NarrationParser",
    "NarrationTail",
    "binding_value",
    "load_narration",
    "parse_narration_text",
    "sniff_narration",
]

Progress = Callable[[int, int], None]
CHUNK = 8 << 20
SNIFF_BYTES = 256 << 10
_MAX_LINE_WARNINGS = 5
_INC = (1).__add__


def _json_entry(raw: bytes | str) -> tuple[str | None, datetime | None, bool]:
    """``(assistant_text, time, ok)`` for one transcript line; ``ok`` is False for broken JSON."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than json can decode
        return None, None, False
    if not isinstance(obj, dict):
        return None, None, True
    msg: dict = obj["message"] if isinstance(obj.get("message"), dict) else obj
    if obj.get("type") != "assistant" and msg.get("role") != "assistant":
        return None, None, True
    content = msg.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    else:
        return None, None, True
    when = None
    stamp = obj.get("timestamp")
    if isinstance(stamp, str):
        try:
            when = datetime.fromisoformat(stamp)
        except ValueError:
            when = None
    return text, when, True


def _looks_jsonl(head: bytes) -> bool:
    """True when the first non-blank lines of ``head`` are JSON objects.

    A line cut by the end of ``head`` (no newline after it) counts when it starts like an
    object (``{"``): transcript lines holding large tool results are often longer than
    the sniff window.
    """
    lines = head.split(b"\n", 5)  # the first five lines decide (the sixth part: the rest)
    for i, raw in enumerate(lines[:5]):
        raw = raw.strip()
        if not raw:
            continue
        if not raw.startswith(b"{"):
            return False
        try:
            return isinstance(json.loads(raw), dict)
        except (ValueError, RecursionError):
            if i == len(lines) - 1:
                return raw.startswith(b'{"')
            continue  # one broken line
    return False


def _count_markers(text: str) -> tuple[int, int, int]:
    bracket = emoji = compact = 0
    for line in text.splitlines():
        if BRACKET.match(line):
            bracket += 1
        elif EMOJI.match(line):
            if line.lstrip(" >*-`").startswith(("📋", "📍", "📦", "🔀")):
                emoji += 1
        elif STEP.match(line):
            compact += 1
    return bracket, emoji, compact


def _is_narration(text: str) -> bool:
    bracket, emoji, compact = _count_markers(text)
    return bracket >= 1 or emoji >= 2 or compact >= 2


def sniff_narration(path: Path) -> bool:
    """True when ``path`` holds narration markers (directly, or in a transcript's assistant text).

    Looks at the first and last 256 KiB only. Never raises (False for unreadable files).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
            size = os.fstat(fh.fileno()).st_size
            tail = b""
            if size > SNIFF_BYTES:
                fh.seek(size - SNIFF_BYTES)
                tail = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    if b"\x00" in head[:4096]:
        return False
    if _looks_jsonl(head):
        texts = []
        for raw in (head + b"\n" + tail).split(b"\n"):
            if b"assistant" in raw:
                text, _, _ = _json_entry(raw)
                if text:
                    texts.append(text)
        return _is_narration("\n".join(texts))
    return _is_narration((head + b"\n" + tail).decode("utf-8", "replace"))


class NarrationIndex:
    """Line offsets of a narration file, found in one pass, and lazy parsing over them.

    ``kind`` is ``"jsonl"`` or ``"text"``; ``size`` is the file size in bytes when indexed;
    ``len(index)`` the number of lines. ``progress(bytes_done, bytes_total)`` is called
    during the scan. Raises ``OSError`` if the file cannot be read (:func:`load_narration`
    turns that into a warning).
    """

    def __init__(self, path: Path, progress: Progress | None = None) -> None:
        self.path = Path(path)
        self.offsets = array("q", [0])
        with open(self.path, "rb") as fh:
            self.size = os.fstat(fh.fileno()).st_size
            head = fh.read(SNIFF_BYTES)
            self.kind = "jsonl" if _looks_jsonl(head) else "text"
            fh.seek(0)
            base = 0
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                parts = chunk.split(b"\n")
                starts = accumulate(map(_INC, map(len, parts[:-1])), initial=base)
                next(starts)
                self.offsets.extend(starts)
                base += len(chunk)
                if progress is not None:
                    progress(base, self.size)
            self.size = base
        if len(self.offsets) > 1 and self.offsets[-1] >= self.size:
            self.offsets.pop()
        if self.size == 0:
            self.offsets = array("q")
        if progress is not None and self.size == 0:
            progress(0, 0)

    def __len__(self) -> int:
        return len(self.offsets)

    def entries(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str | None, datetime | None, bool]]:
        """``(line_no, text, time, ok)`` for lines ``start..stop-1`` (0-based; ``line_no`` is 1-based).

        For a transcript ``text`` is the assistant text of the entry (``None`` for other
        entries) and ``ok`` is False for a line that is not JSON. Reads the byte range once.
        """
        n = len(self.offsets)
        stop = n if stop is None else min(stop, n)
        with open(self.path, "rb") as fh:
            while start < stop:
                # at most ~CHUNK bytes per read (at least one line), so memory stays bounded
                end = max(start + 1, min(stop, bisect_right(self.offsets, self.offsets[start] + CHUNK, start) - 1))
                lo = self.offsets[start]
                hi = self.offsets[end] if end < n else self.size
                fh.seek(lo)
                data = fh.read(hi - lo)
                yield from self._decode(data.split(b"\n")[: end - start], start)
                start = end

    def _decode(self, raws: list[bytes], start: int) -> Iterator[tuple[int, str | None, datetime | None, bool]]:
        for i, raw in enumerate(raws):
            line_no = start + i + 1
            if self.kind == "jsonl":
                if not raw.strip():
                    continue
                if b"assistant" not in raw:
                    ok = raw.lstrip().startswith(b"{") and raw.rstrip().endswith(b"}")
                    yield line_no, None, None, ok
                    continue
                text, when, ok = _json_entry(raw)
                yield line_no, text, when, ok
            else:
                yield line_no, raw.decode("utf-8", "replace"), None, True

    def feed(self, parser: NarrationParser, start: int = 0, stop: int | None = None) -> int:
        """Feed lines ``start..stop-1`` to ``parser``; return how many broken lines were met."""
        broken = 0
        for line_no, text, when, ok in self.entries(start, stop):
            if not ok:
                broken += 1
                if broken <= _MAX_LINE_WARNINGS:
                    parser.warnings.append(f"line {line_no} of {self.path.name} is not valid JSON; skipped.")
                continue
            if text:
                for part in text.split("\n"):
                    parser.feed(line_no, part, when)
        return broken

    def load(self, stop: int | None = None) -> Run:
        """Parse lines ``0..stop-1`` (all by default) into a Run (backend ``NARRATION``)."""
        parser = NarrationParser(source=self.path)
        broken = self.feed(parser, 0, stop)
        return _finish(parser, self, broken, stop)

    def load_progressively(self, chunk_lines: int = 20_000) -> Iterator[Run]:
        """Yield the Run after every ``chunk_lines`` lines, the last one complete."""
        parser = NarrationParser(source=self.path)
        broken = 0
        start = 0
        n = len(self)
        while True:
            stop = min(start + chunk_lines, n)
            broken += self.feed(parser, start, stop)
            yield _finish(parser, self, broken, stop if stop < n else None)
            if stop >= n:
                return
            start = stop


def _finish(parser: NarrationParser, index: NarrationIndex, broken: int, stop: int | None) -> Run:
    run = parser.run()
    run.header["source_kind"] = "transcript" if index.kind == "jsonl" else "text"
    run.header["lines"] = str(len(index))
    if stop is not None and stop < len(index):
        run.header["parsed_lines"] = f"{stop}/{len(index)}"
    if broken > _MAX_LINE_WARNINGS:
        run.warnings.append(f"{broken - _MAX_LINE_WARNINGS} more lines of {index.path.name} are not valid JSON; skipped.")
    try:
        run.state_mtime = index.path.stat().st_mtime
    except OSError:
        pass
    if not parser.events:
        run.warnings.append(f"{index.path.name} holds no narration markers (seeds/in-context.md, The Narration Protocol).")
    return run


def load_narration(path: Path, *, progress: Progress | None = None) -> Run:
    """Index and parse a narration file or transcript into a Run (backend and format ``NARRATION``).

    ``progress(bytes_done, bytes_total)`` reports the indexing pass. Never raises: an
    unreadable file gives an empty run with a warning.
    """
    path = Path(path)
    try:
        index = NarrationIndex(path, progress)
    except OSError as exc:
        parser = NarrationParser(source=path)
        run = parser.run()
        run.warnings.append(f"{path.name} could not be read: {exc}.")
        return run
    return index.load()


def parse_narration_text(text: str, *, source: Path | None = None, run_id: str | None = None) -> Run:
    """Parse narration given as text (standard input, a paste). Transcript JSONL text works too.

    ``source`` becomes ``Run.path``/``Binding.path`` (``<stdin>`` when ``None``). Never raises.
    """
    parser = NarrationParser(source=source)
    broken = 0
    lines = text.split("\n")
    if _looks_jsonl(text[:SNIFF_BYTES].encode("utf-8", "replace")):
        for i, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            body, when, ok = _json_entry(raw)
            if not ok:
                broken += 1
                if broken <= _MAX_LINE_WARNINGS:
                    parser.warnings.append(f"line {i} is not valid JSON; skipped.")
                continue
            for part in (body or "").split("\n"):
                parser.feed(i, part, when)
    else:
        for i, line in enumerate(lines, 1):
            parser.feed(i, line)
    run = parser.run(run_id)
    if broken > _MAX_LINE_WARNINGS:
        run.warnings.append(f"{broken - _MAX_LINE_WARNINGS} more lines are not valid JSON; skipped.")
    return run


class NarrationTail:
    """Follow a growing narration file or transcript.

    :meth:`poll` reads only the bytes appended since the last call (complete lines only; a
    half-written last line waits for its newline) and returns the new events. When the file
    was truncated, replaced (new inode) or rewritten (its first bytes changed), or its first
    lines, once complete, show it is the other kind (a transcript, or text), the tail starts
    over: :attr:`resets` goes up by one and :meth:`poll` returns every event of the re-read
    file. Appended in any pieces, it ends as a fresh read of the whole file does.
    :attr:`run` is the run as parsed so far. Never raises; a missing file polls as no
    events.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.resets = 0
        self._reset()

    def _reset(self) -> None:
        self.offset = 0
        self._inode: int | None = None
        self._head = b""
        self._partial = b""
        self._line_no = 0
        self._kind: str | None = None
        self._sniff = b""  # the file's first bytes, up to SNIFF_BYTES: what a fresh read sniffs
        self._sniffed = False  # the kind can no longer change (see ``_sniff_kind``)
        self._restart = False
        self._broken = 0
        self.parser = NarrationParser(source=self.path)

    @property
    def run(self) -> Run:
        return self.parser.run()

    def poll(self, progress: Progress | None = None) -> list[Event]:
        """Read what was appended; ``progress(bytes_done, bytes_total)`` is called per chunk,
        so a first read of a large transcript can show how far it got."""
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                head = fh.read(256)
                replaced = self._inode is not None and (
                    st.st_ino != self._inode or st.st_size < self.offset or not head.startswith(self._head[: len(head)]) or len(head) < len(self._head)
                )
                if replaced:
                    self._reset()
                    self.resets += 1
                self._inode = st.st_ino
                self._head = head
                if st.st_size == self.offset:
                    return []
                start = len(self.parser.events)
                fh.seek(self.offset)
                while self.offset < st.st_size:
                    data = fh.read(min(CHUNK, st.st_size - self.offset))
                    if not data:
                        break
                    self.offset += len(data)
                    self._consume(data)
                    if self._restart:
                        # The first lines, now complete, say the other kind (a transcript's
                        # first object was a text line after all, or the reverse): the few
                        # bytes read so far are parsed again as that kind.
                        self._reset()
                        self.resets += 1
                        self._inode, self._head, start = st.st_ino, head, 0
                        fh.seek(0)
                        continue
                    if progress is not None:
                        progress(self.offset, st.st_size)
        except OSError:
            return []
        return self.parser.events[start:]

    def _sniff_kind(self, data: bytes) -> str:
        """The file's kind as a fresh read would sniff it from the bytes seen so far
        (``data``: the bytes just read). Until the sniff window is full, or holds five whole
        lines, a later byte can change it: a first line cut short that starts like a JSON
        object counts as one only while it is the last line seen."""
        if not self._sniffed:
            self._sniff += data[: SNIFF_BYTES - len(self._sniff)]
            self._sniffed = len(self._sniff) >= SNIFF_BYTES or self._sniff.count(b"\n") >= 5
            kind = "jsonl" if _looks_jsonl(self._sniff) else "text"
            if self._kind is not None and kind != self._kind and self._line_no:
                self._restart = True  # lines were parsed as the other kind
            self._kind = kind
        assert self._kind is not None
        return self._kind

    def _consume(self, data: bytes) -> None:
        kind = self._sniff_kind(data)
        if self._restart:
            return
        data = self._partial + data
        cut = data.rfind(b"\n")
        if cut < 0:
            self._partial = data
            return
        self._partial = data[cut + 1 :]
        for raw in data[:cut].split(b"\n"):
            self._line_no += 1
            if kind == "jsonl":
                if not raw.strip() or b"assistant" not in raw:
                    continue
                text, when, ok = _json_entry(raw)
                if not ok:
                    self._broken += 1
                    if self._broken <= _MAX_LINE_WARNINGS:
                        self.parser.warnings.append(f"line {self._line_no} of {self.path.name} is not valid JSON; skipped.")
                    continue
                for part in (text or "").split("\n"):
                    self.parser.feed(self._line_no, part, when)
            else:
                self.parser.feed(self._line_no, raw.decode("utf-8", "replace"))
