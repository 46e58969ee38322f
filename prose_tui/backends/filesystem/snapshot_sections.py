"""A snapshot ``state.md`` parsed section by section, each section's parse kept by its text.

A VM rewrites the whole snapshot on every step (seeds/filesystem.md, the VM Update
Protocol), but from one revision to the next mostly the ``## Execution Trace`` block and
the ``updated:`` header change: the ``## Index`` tables (one row per binding and agent,
the costly part to parse as Markdown) stay as they were. :func:`parse_snapshot_cached`
splits the text at its ``##`` headings (outside code fences; a scan of the few lines that
can be a fence or a heading, not of every line), parses each section alone and keeps
what each section text gave (the Markdown blocks, the Index rows), so a rewrite costs
what changed. The trace section, when it has its usual shape (the heading, blank lines,
one fence), is read without Markdown and annotated against the run's previous revision
(:mod:`~prose_tui.backends.filesystem.snapshot_trace`): unchanged lines are the same
objects as before. The result equals
:func:`~prose_tui.backends.filesystem.snapshot.parse_snapshot` on the whole text
(tests/test_live_tail.py and tests/test_snapshot_rewrites.py check it on the real corpus
and generated runs); text it cannot split safely (setext headings, unclosed fences,
carriage returns) is parsed whole.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from prose_tui.backends.common.markdown import Block, Document, Fence, TableRows, parse_document
from prose_tui.backends.filesystem.snapshot import (
    IndexRow,
    index_row,
    SnapshotState,
    other_sections,
    parse_snapshot,
    read_call_stack,
    read_constructs,
    read_header,
    read_index,
    read_trace,
)
from prose_tui.backends.filesystem.snapshot_trace import annotate

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING2 = re.compile(r"^ {0,3}##(?!#)(\s|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
# Characters a line scan would split differently from Markdown (``str.splitlines`` vs "\n").
_ODD = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00"
# Lines that may open or close a fence, start a ## section or be a setext underline (the
# newline before them; the first line is matched with one put before it).
_CANDIDATE = re.compile(r"\n(?:[ \t]*(?:```|~~~|##)| {0,3}=)")
# The usual trace section: heading, blank lines, an opening fence at the margin.
_TRACE_OPEN = re.compile(r"## (?P<title>[^\n#`*_\[\]<>&\\]*?)[ \t]*\n(?:[ \t]*\n)*(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n")
_TRACE_TITLES = ("execution trace", "trace")
_CLOSING = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*\n?$")
_INDEX_HEADING = re.compile(r" {0,3}##[ \t]+index", re.IGNORECASE)

# Heads kept (the text before the first ## heading: title, header): the last few revisions'.
# A head changes on every rewrite (its updated: line) and is quick to parse; 512 kept held
# 512 past headers of a watched run (issue 35).
_HEADS_KEPT = 16
# Section parses are kept for the last revision parsed under each key (a run folder, the
# journal's replay of one, None), for this many keys: the next revision reuses the sections
# it shares with the one before, and a section no kept revision has is dropped at once. A
# growing Index is a new section text per rewrite and a parse weighs about 14 times its
# text; a cache by text alone filled with old Indexes (issue 35: 28 MB at a 2 MB text bound,
# 90 MB at 512 parses), this holds about one revision's sections per key.
_KEYS_KEPT = 16
_TEXTS_KEPT = 2  # whole texts parsed lately: the journal's replay asks again for the one the worker just did


@dataclass(slots=True)
class _Parsed:
    """What one section text gave: its Markdown block (``None``: not one clean section)
    and, once asked for, its Index rows. An Index section also keeps, for the next
    revision's Index, its table rows by line (``rows``) and the :class:`IndexRow` made of
    each row's cells (``made``: ``id(cells) -> (cells, keys, row)``)."""

    block: Block | None
    index: tuple[list[IndexRow], list[IndexRow]] | None = None
    rows: dict[str, tuple[int, list[str], int]] | None = None
    made: dict[int, tuple[list[str], list[str], IndexRow]] | None = None


_blocks: dict[str, _Parsed] = {}  # section text -> its parse, while a kept revision has it
_users: dict[str, int] = {}  # section text -> how many keys' last revisions have it
_revisions: OrderedDict[object, tuple[str, ...]] = OrderedDict()  # key -> its last revision's section texts
_heads: OrderedDict[str, tuple[str | None, list[str]]] = OrderedDict()
_texts: OrderedDict[str, SnapshotState] = OrderedDict()
_lock = threading.Lock()


def _candidate_lines(text: str) -> list[int]:
    """Offsets of the lines that may open or close a fence (``` or ~~~ after spaces or
    tabs), start a ``##`` section or be a setext underline (= after up to three spaces);
    the other lines are never looked at."""
    starts = [m.start() + 1 for m in _CANDIDATE.finditer(text)]
    end = text.find("\n")
    if _CANDIDATE.match("\n" + (text if end < 0 else text[:end])):
        starts.insert(0, 0)
    return starts


def split_sections(text: str) -> tuple[str, list[str]] | None:
    """``(text before the first ## heading, [each ## section's text])``, or ``None`` when
    the text has constructs a line scan cannot split like Markdown does."""
    if any(ch in text for ch in _ODD):
        return None
    starts: list[int] = []
    fence: str | None = None
    for begin in _candidate_lines(text):
        end = text.find("\n", begin)
        line = text[begin:] if end < 0 else text[begin:end + 1]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        f = _FENCE.match(line)
        if f:
            fence = f.group(1)
        elif _HEADING2.match(line):
            starts.append(begin)
        elif _SETEXT.match(line) and line.strip().startswith("="):
            return None  # a setext heading: leave it to the Markdown parser
    if fence is not None:
        return None
    if not starts:
        return text, []
    bounds = [*starts, len(text)]
    return text[:starts[0]], [text[a:b] for a, b in zip(bounds, bounds[1:])]


def _remember(cache: OrderedDict, key, value, keep: int):
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > keep:
        cache.popitem(last=False)
    return value


def _section(section: str, seen: dict[str, _Parsed], key: object = None) -> _Parsed:
    """The parse of one ``##`` section, from the kept revisions' sections or parsed now;
    ``seen`` collects this revision's (kept by :func:`_keep_sections` once it is parsed).
    A new ``## Index`` is read against the Index of the last revision parsed under ``key``:
    its unchanged rows are that revision's rows (cells and :class:`IndexRow`), not parsed
    again (a growing run's Index gains a row per rewrite; issue 35)."""
    with _lock:
        hit = seen.get(section) or _blocks.get(section)
    if hit is not None:
        seen[section] = hit
        return hit
    index = _INDEX_HEADING.match(section) is not None
    before = _previous_index(key) if index else None
    rows = TableRows((before.rows if before is not None else None) or {}) if index else None
    doc = parse_document(section, rows)
    block = doc.sections[0] if len(doc.sections) == 1 and not any(ln.strip() for ln in doc.preamble) else None
    hit = _Parsed(block)
    if index and block is not None:
        hit.rows = rows.now if rows is not None and rows.now else None
        hit.made = {}
        hit.index = read_index(block, _row_maker(hit.made, before.made if before is not None else None))
    seen[section] = hit
    return hit


def _previous_index(key: object) -> _Parsed | None:
    """The ``## Index`` parse of the last revision kept under ``key``, if it had one."""
    with _lock:
        for section in _revisions.get(key, ()):
            if _INDEX_HEADING.match(section):
                return _blocks.get(section)
    return None


def _row_maker(made: dict[int, tuple[list[str], list[str], IndexRow]],
               before: dict[int, tuple[list[str], list[str], IndexRow]] | None):
    """``read_index``'s ``row_of``: the previous Index's row when a table row is the same
    cells list (an unchanged line, see ``markdown.TableRows``) under the same header;
    records every row made in ``made``."""
    def row_of(keys: list[str], cells: list[str]) -> IndexRow:
        known = before.get(id(cells)) if before else None
        row = known[2] if known is not None and known[0] is cells and known[1] == keys else index_row(keys, cells)
        made[id(cells)] = (cells, keys, row)
        return row
    return row_of


def _keep_sections(key: object, seen: dict[str, _Parsed]) -> None:
    """Keep ``seen`` (one revision's section parses) as ``key``'s last revision, dropping
    the sections that only ``key``'s revision before had, and the oldest key's past
    ``_KEYS_KEPT``."""
    with _lock:
        for section, parsed in seen.items():
            _users[section] = _users.get(section, 0) + 1
            _blocks.setdefault(section, parsed)
        _release(_revisions.pop(key, ()))
        _revisions[key] = tuple(seen)
        while len(_revisions) > _KEYS_KEPT:
            _release(_revisions.popitem(last=False)[1])


def _release(sections: tuple[str, ...]) -> None:
    for section in sections:
        users = _users[section] - 1
        if users:
            _users[section] = users
        else:
            del _users[section], _blocks[section]


def _index_of(parsed: _Parsed) -> tuple[list[IndexRow], list[IndexRow]]:
    if parsed.index is None:
        parsed.index = read_index(parsed.block)
    bindings, agents = parsed.index
    return list(bindings), list(agents)


def _trace_block(section: str) -> tuple[Block, str] | None:
    """The trace section read without Markdown when it has its usual shape: ``(block,
    fence content)``; ``None`` for any other shape (then it is parsed as Markdown)."""
    m = _TRACE_OPEN.match(section)
    if m is None or not m.group("title").lower().startswith(_TRACE_TITLES):
        return None
    fence, info = m.group("fence"), m.group("info")
    if fence[0] == "`" and "`" in info:
        return None
    content_at = m.end()
    closing = _closing_fence(section, content_at, fence)
    if closing is None:
        return None
    begin, end = closing
    if section[end:].strip():
        return None
    content = section[content_at:begin]
    # The block's body lines are not kept: only its fence is read (snapshot.read_trace).
    block = Block(m.group("title").strip(), 2, 1, 1, [], [Fence(info.strip(), content, section.count("\n", 0, content_at))])
    return block, content


def _closing_fence(text: str, pos: int, fence: str) -> tuple[int, int] | None:
    """``(start, end)`` of the first line at or after ``pos`` that closes ``fence`` as
    CommonMark does (up to three spaces, at least as many of the fence's character, then
    only spaces or tabs); ``None`` when none does."""
    needle = fence[0] * 3
    at = text.find(needle, pos)
    while at >= 0:
        begin = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end + 1
        if begin >= pos and _CLOSING.match(text, begin, end) and text[begin:end].strip(" \t\n") and \
                set(text[begin:end].strip(" \t\n")) == {fence[0]} and len(text[begin:end].strip(" \t\n")) >= len(fence):
            return begin, end
        if end >= len(text):
            return None
        at = text.find(needle, end)
    return None


def parse_snapshot_cached(text: str, key: object = None) -> SnapshotState:
    """``parse_snapshot(text)``, reusing the parse of sections seen before and, for the
    trace, the annotation of the lines unchanged since the last revision parsed under
    ``key`` (a run folder; see ``snapshot_trace.annotate``). Never raises. The result is
    the caller's to change (its lists are its own); its ``TraceLine`` objects are shared
    with other revisions and must not be changed in place."""
    with _lock:
        seen = _texts.get(text)
        if seen is not None:
            _texts.move_to_end(text)
    if seen is None:
        seen = _parse(text, key)
        with _lock:
            _remember(_texts, text, seen, _TEXTS_KEPT)
    return _copy(seen)


def parse_snapshot_first_screen(text: str, key: object = None) -> SnapshotState | None:
    """:func:`parse_snapshot_cached` but for the ``## Index`` section, which is not parsed
    (``binding_rows`` and ``agent_rows`` empty, unless this very text was parsed whole
    before): a first screen (issue 33). Only the trace's annotation is kept for the next
    parse under ``key``, which then reads the Index. ``None`` when the text cannot be cut
    at its sections (it would be parsed whole: no quicker than :func:`parse_snapshot_cached`)."""
    with _lock:
        seen = _texts.get(text)
    if seen is None:
        split = split_sections(text)
        if split is None:
            return None
        seen = _parse_sections(text, *split, key, {}, with_index=False)
    return _copy(seen)


def _copy(seen: SnapshotState) -> SnapshotState:
    return SnapshotState(title=seen.title, header=dict(seen.header), trace=list(seen.trace),
                         constructs=list(seen.constructs), binding_rows=list(seen.binding_rows),
                         agent_rows=list(seen.agent_rows), call_stack=list(seen.call_stack),
                         sections=list(seen.sections), warnings=list(seen.warnings))


def _parse(text: str, key: object) -> SnapshotState:
    split = split_sections(text)
    if split is None:
        return parse_snapshot(text)
    seen: dict[str, _Parsed] = {}
    try:
        return _parse_sections(text, *split, key, seen)
    finally:
        _keep_sections(key, seen)


def _parse_sections(text: str, head: str, sections: list[str], key: object,
                    seen: dict[str, _Parsed], *, with_index: bool = True) -> SnapshotState:
    blocks: list[Block] = []
    parsed: dict[int, _Parsed] = {}
    trace_content: str | None = None
    trace_at: int | None = None
    for section in sections:
        if trace_at is None:
            quick = _trace_block(section)
            if quick is not None:
                trace_at, trace_content = len(blocks), quick[1]
                blocks.append(quick[0])
                continue
        if not with_index and _INDEX_HEADING.match(section):
            continue  # left for the full read (every section titled Index..., as doc.section matches)
        p = _section(section, seen, key)
        if p.block is None:
            return parse_snapshot(text)
        parsed[id(p.block)] = p
        blocks.append(p.block)
    with _lock:
        cached = _heads.get(head)
    if cached is None:
        doc = parse_document(head)
        if doc.sections:
            return parse_snapshot(text)
        cached = (doc.title, doc.preamble)
        with _lock:
            _remember(_heads, head, cached, _HEADS_KEPT)
    title, preamble = cached
    doc = Document(title, list(preamble), blocks)
    state = SnapshotState(title=doc.title, header=read_header(doc))
    trace_block = doc.section(*_TRACE_TITLES)
    if trace_content is not None and trace_at is not None and trace_block is blocks[trace_at]:
        state.trace = annotate(trace_content, key).trace()
    else:
        state.trace = read_trace(trace_block, doc, state.warnings, lambda content: annotate(content, key).trace())
    state.constructs = read_constructs(doc.section("active constructs"))
    index = doc.section("index")
    if index is not None and id(index) in parsed:
        state.binding_rows, state.agent_rows = _index_of(parsed[id(index)])
    else:
        state.binding_rows, state.agent_rows = read_index(index)
    state.call_stack = read_call_stack(doc.section("call stack"))
    state.sections = other_sections(doc)
    return state
