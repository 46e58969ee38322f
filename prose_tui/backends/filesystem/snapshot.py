"""The annotated-snapshot ``state.md`` (seeds/filesystem.md, ``state.md``; FORMATS.md generation 1).

Parses the header (``run:``, ``program:``, ``started:``, ``updated:`` and the real-world
``status:``, ``completed:``, ``run_id:``), the ``## Execution Trace`` fenced block, ``## Active
Constructs``, ``## Index`` (Bindings and Agents tables of any columns), ``## Call Stack``,
and keeps every other section verbatim. Sections written as prose (``None``, ``(none -
execution complete)``, ``Empty (root scope)``) are understood as empty.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from prose_tui.backends.common.annotations import split_annotation
from prose_tui.backends.common.markdown import Block, Document, parse_document
from prose_tui.model import ActiveConstruct, Frame, Section, TraceLine

_KEY_VALUE = re.compile(r"^\s*[-*]?\s*\**([A-Za-z][\w -]{0,30}?)\**\s*:\s*(.*?)\s*$")
_HEADER_ALIASES = {"run_id": "run", "run id": "run", "completed": "updated", "last_updated": "updated", "last updated": "updated", "start": "started"}
_EMPTY_WORDS = re.compile(r"^\(?\s*(none|empty|n/a|-|—)\b", re.IGNORECASE)
_INT = re.compile(r"-?\d+")


@dataclass(slots=True)
class IndexRow:
    """One row of an Index table, keyed by lower-cased column name."""

    cells: dict[str, str]

    def get(self, *names: str) -> str | None:
        for name in names:
            value = self.cells.get(name)
            if value and not _EMPTY_WORDS.match(value):
                return value
        return None


@dataclass(slots=True)
class SnapshotState:
    """What a snapshot ``state.md`` says. ``header`` keys are lower-cased and aliased."""

    title: str | None = None
    header: dict[str, str] = field(default_factory=dict)
    trace: list[TraceLine] = field(default_factory=list)
    constructs: list[ActiveConstruct] = field(default_factory=list)
    binding_rows: list[IndexRow] = field(default_factory=list)
    agent_rows: list[IndexRow] = field(default_factory=list)
    call_stack: list[Frame] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def looks_like_snapshot(text: str) -> bool:
    """True when the text has a trace section or a ``run:``-style header with ``##`` sections."""
    head = text[:4000]
    return "## Execution Trace" in head or bool(re.search(r"^#\s*Execution State", head, re.M))


def parse_time(value: str | None) -> datetime | None:
    """ISO 8601 (``Z`` or offset, date or date-time); ``None`` for anything else."""
    if not value:
        return None
    value = value.strip().strip("`*\"'")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    m = re.match(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?", value)
    if m:
        try:
            return datetime.fromisoformat(m.group(0))
        except ValueError:
            return None
    return None


def read_header(doc: Document) -> dict[str, str]:
    """The ``key: value`` lines before the first ``##`` section (``- key: value``,
    ``**key**: value`` and ``# Program: x`` variants too): keys lower-cased and aliased
    (``run_id`` → ``run``, ``completed``/``last_updated`` → ``updated``, ``start`` →
    ``started``), values without backticks; the first of a repeated key wins
    (seeds/filesystem.md, ``state.md``)."""
    header: dict[str, str] = {}
    lines = list(doc.preamble)
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            stripped = stripped.lstrip("#").strip()  # "# Program: x" / "# Run: y" header variant
        m = _KEY_VALUE.match(stripped)
        if not m:
            continue
        key = m.group(1).strip().lower()
        key = _HEADER_ALIASES.get(key, key)
        header.setdefault(key, m.group(2).strip().strip("`"))
    return header


def parse_trace_lines(text: str) -> list[TraceLine]:
    """Annotate every line of a trace block (see ``annotations``); blank lines are kept."""
    out: list[TraceLine] = []
    in_string = False
    for number, raw in enumerate(text.splitlines(), start=1):
        ann, in_string = split_annotation(raw, in_string)
        out.append(
            TraceLine(
                line=number,
                text=ann.text,
                state=ann.state,
                note=ann.note,
                binding=ann.binding,
                attempt=ann.attempt,
                max_attempts=ann.max_attempts,
            )
        )
    while out and not out[-1].text.strip() and out[-1].note is None:
        out.pop()
    return out


def read_trace(block: Block | None, doc: Document, warnings: list[str],
               parse_lines: Callable[[str], list[TraceLine]] | None = None) -> list[TraceLine]:
    """The lines of the ``## Execution Trace`` section ``block`` (seeds/filesystem.md): its
    first fence, else its text, else (no such section) the document's first ``prose``
    fence. ``parse_lines`` (default :func:`parse_trace_lines`) reads them; the cached
    parser of :mod:`.snapshot_sections` passes its own. What was missing or guessed is
    appended to ``warnings``."""
    parse_lines = parse_lines or parse_trace_lines
    if block is None:
        fence = next((f for s in doc.sections for f in s.fences if f.info.startswith("prose")), None)
        if fence is None:
            warnings.append("state.md has no Execution Trace section")
            return []
        warnings.append("state.md has no Execution Trace heading; using its first prose block")
        return parse_lines(fence.content)
    if block.fences:
        return parse_lines(block.fences[0].content)
    body = block.text
    if not body or _EMPTY_WORDS.match(body):
        return []
    warnings.append("Execution Trace is not in a fenced block; read as plain lines")
    return parse_lines(body)


def read_constructs(block: Block | None) -> list[ActiveConstruct]:
    """The ``## Active Constructs`` section (seeds/filesystem.md): one construct per ``###``
    subsection with its bullet items; prose that is not an empty word becomes ``Notes``."""
    if block is None:
        return []
    out = [
        ActiveConstruct(child.title, [ln.strip()[1:].strip() for ln in child.lines if ln.strip().startswith(("-", "*"))])
        for child in block.children
    ]
    if not out and block.text and not _EMPTY_WORDS.match(block.text):
        out.append(ActiveConstruct("Notes", [ln.strip() for ln in block.lines if ln.strip()]))
    return out


def read_index(block: Block | None,
               row_of: Callable[[list[str], list[str]], IndexRow] | None = None) -> tuple[list[IndexRow], list[IndexRow]]:
    """The ``## Index`` section (seeds/filesystem.md): ``(binding rows, agent rows)`` from
    the tables of its ``### Bindings`` and ``### Agents`` subsections (any columns; rows
    without a name are skipped). ``row_of(keys, cells)`` makes a row from a table's
    lower-cased header and one body row's cells (default: a new :class:`IndexRow`, as
    ``Table.records`` gives; the cached parser of :mod:`.snapshot_sections` passes one that
    reuses the previous revision's unchanged rows)."""
    bindings: list[IndexRow] = []
    agents: list[IndexRow] = []
    if block is None:
        return bindings, agents
    for child in block.children:
        target = agents if child.title.lower().startswith("agent") else bindings
        for table in child.tables:
            if row_of is None:
                rows = [IndexRow(rec) for rec in table.records()]
            else:
                keys = [h.strip().lower() for h in table.header]
                rows = [row_of(keys, cells) for cells in table.rows]
            target.extend(row for row in rows if row.get("name"))
    return bindings, agents


def index_row(keys: list[str], cells: list[str]) -> IndexRow:
    """One Index table row: ``cells`` keyed by the table's lower-cased header ``keys``
    (missing cells empty), as ``Table.records`` keys them."""
    return IndexRow({k: (cells[i] if i < len(cells) else "") for i, k in enumerate(keys)})


def _int(value: str | None) -> int | None:
    if not value:
        return None
    m = _INT.search(value)
    return int(m.group(0)) if m else None


def read_call_stack(block: Block | None) -> list[Frame]:
    """The ``## Call Stack`` table (seeds/filesystem.md): frames innermost first, each
    linked to its parent where the depths chain."""
    if block is None:
        return []
    frames: list[Frame] = []
    for table in block.tables:
        for rec in table.records():
            block_name = rec.get("block") or rec.get("name") or ""
            eid = _int(rec.get("execution_id") or rec.get("execution id") or rec.get("id"))
            if not block_name and eid is None:
                continue
            frames.append(Frame(eid, block_name, _int(rec.get("depth")), rec.get("status") or None))
    # Innermost first, parents where the depths chain (seeds/filesystem.md, Call Stack).
    frames.sort(key=lambda f: -(f.depth or 0))
    for inner, outer in zip(frames, frames[1:]):
        if inner.depth is not None and outer.depth is not None and outer.depth == inner.depth - 1:
            inner.parent_id = outer.execution_id
    return frames


_KNOWN = ("execution trace", "active constructs", "index", "call stack")


def other_sections(doc: Document) -> list[Section]:
    """The non-empty sections this module does not read (any but Execution Trace, Active
    Constructs, Index and Call Stack), kept verbatim in document order."""
    return [Section(block.title, block.text) for block in doc.sections
            if not block.title.lower().startswith(_KNOWN) and block.text]


def parse_snapshot(text: str) -> SnapshotState:
    """Parse a snapshot ``state.md``. Never raises; what it cannot read becomes a warning."""
    doc = parse_document(text)
    state = SnapshotState(title=doc.title, header=read_header(doc))
    state.trace = read_trace(doc.section("execution trace", "trace"), doc, state.warnings)
    state.constructs = read_constructs(doc.section("active constructs"))
    state.binding_rows, state.agent_rows = read_index(doc.section("index"))
    state.call_stack = read_call_stack(doc.section("call stack"))
    state.sections = other_sections(doc)
    return state
