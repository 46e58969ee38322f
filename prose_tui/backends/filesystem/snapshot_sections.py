"""A snapshot ``state.md`` parsed section by section, each section's parse kept by its text.

A VM rewrites the whole snapshot on every step (seeds/filesystem.md, the VM Update
Protocol), but from one revision to the next mostly the ``## Execution Trace`` block and
the ``updated:`` header change: the ``## Index`` tables (one row per binding and agent,
the costly part to parse as Markdown) stay as they were. :func:`parse_snapshot_cached`
splits the text at its ``##`` headings (outside code fences), parses each section alone
and keeps the parsed blocks of the last few hundred section texts, so a rewrite costs
what changed. The result equals :func:`~prose_tui.backends.filesystem.snapshot.parse_snapshot`
on the whole text (tests/test_live_tail.py checks it on the real corpus and generated
runs); text it cannot split safely (setext headings, unclosed fences) is parsed whole.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

from prose_tui.backends.common.annotations import split_annotation
from prose_tui.backends.common.markdown import Block, Document, parse_document
from prose_tui.backends.filesystem.snapshot import (
    _KNOWN,
    SnapshotState,
    _call_stack,
    _constructs,
    _header,
    _index,
    _trace,
    parse_snapshot,
)
from prose_tui.model import Section, TraceLine

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING2 = re.compile(r"^ {0,3}##(?!#)(\s|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_KEEP = 512  # section parses kept (a run's sections, for a few runs)

_LINES_KEPT = 50_000  # annotated trace lines kept

_blocks: OrderedDict[str, Block | None] = OrderedDict()
_lines: OrderedDict[tuple[str, bool], tuple] = OrderedDict()
_heads: OrderedDict[str, tuple[str | None, list[str]]] = OrderedDict()
_lock = threading.Lock()


def split_sections(text: str) -> tuple[str, list[str]] | None:
    """``(text before the first ## heading, [each ## section's text])``, or ``None`` when
    the text has constructs a line scan cannot split like Markdown does."""
    lines = text.splitlines(keepends=True)
    head: list[str] = []
    sections: list[list[str]] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
        else:
            m = _FENCE.match(line)
            if m:
                fence = m.group(1)
            elif _HEADING2.match(line):
                sections.append([])
            elif _SETEXT.match(line) and line.strip().startswith("="):
                return None  # a setext heading: leave it to the Markdown parser
        (sections[-1] if sections else head).append(line)
    if fence is not None:
        return None
    return "".join(head), ["".join(s) for s in sections]


def _remember(cache: OrderedDict, key: str, value):
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _KEEP:
        cache.popitem(last=False)
    return value


def _section_block(section: str) -> Block | None:
    with _lock:
        if section in _blocks:
            _blocks.move_to_end(section)
            return _blocks[section]
    doc = parse_document(section)
    block = doc.sections[0] if len(doc.sections) == 1 and not any(ln.strip() for ln in doc.preamble) else None
    with _lock:
        return _remember(_blocks, section, block)


def parse_snapshot_cached(text: str) -> SnapshotState:
    """``parse_snapshot(text)``, reusing the parse of sections seen before. Never raises."""
    split = split_sections(text)
    if split is None:
        return parse_snapshot(text)
    head, sections = split
    blocks: list[Block] = []
    for section in sections:
        block = _section_block(section)
        if block is None:
            return parse_snapshot(text)
        blocks.append(block)
    with _lock:
        cached = _heads.get(head)
    if cached is None:
        doc = parse_document(head)
        if doc.sections:
            return parse_snapshot(text)
        cached = (doc.title, doc.preamble)
        with _lock:
            _remember(_heads, head, cached)
    title, preamble = cached
    doc = Document(title, list(preamble), blocks)
    state = SnapshotState(title=doc.title, header=_header(doc))
    state.trace = _trace(doc.section("execution trace", "trace"), doc, state.warnings, _trace_lines)
    state.constructs = _constructs(doc.section("active constructs"))
    state.binding_rows, state.agent_rows = _index(doc.section("index"))
    state.call_stack = _call_stack(doc.section("call stack"))
    for block in doc.sections:
        if not block.title.lower().startswith(_KNOWN) and block.text:
            state.sections.append(Section(block.title, block.text))
    return state


def _trace_lines(text: str) -> list[TraceLine]:
    """``snapshot.parse_trace_lines`` with each line's annotation kept by (line, in-string)."""
    out: list[TraceLine] = []
    in_string = False
    with _lock:
        for number, raw in enumerate(text.splitlines(), start=1):
            key = (raw, in_string)
            hit = _lines.get(key)
            if hit is None:
                ann, after = split_annotation(raw, in_string)
                hit = (ann.text, ann.state, ann.note, ann.binding, ann.attempt, ann.max_attempts, after)
                _lines[key] = hit
                if len(_lines) > _LINES_KEPT:
                    _lines.popitem(last=False)
            text_, state, note, binding, attempt, max_attempts, in_string = hit
            out.append(TraceLine(line=number, text=text_, state=state, note=note, binding=binding,
                                 attempt=attempt, max_attempts=max_attempts))
    while out and not out[-1].text.strip() and out[-1].note is None:
        out.pop()
    return out
