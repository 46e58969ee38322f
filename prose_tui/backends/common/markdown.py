"""Markdown structure for state files: sections, fences, tables (via markdown-it-py).

The VM writes Markdown by hand, so the structure comes from a real Markdown parser rather
than line regexes: a ``##`` inside a fenced block is not a heading, a table is a table
whatever its spacing.

Text made only of lines whose block structure cannot be mistaken (ATX headings, pipe
tables after a blank line or heading with cells of plain text, paragraph and list lines
that start with a letter, blank lines: the usual shape of a snapshot's Index and Call
Stack) is read without markdown-it, line by line, into the same :class:`Document`
(:func:`_plain_document`; tests/test_markdown_plain.py compares the two). A 2,000-row
Index then takes milliseconds instead of half a second, and a first screen does not
import markdown-it (issue 33). Anything else goes to markdown-it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Imported on the first parse (a snapshot state file): markdown-it-py costs about a
    # tenth of the explorer's start-up, and an event-log run never needs it (issue 33).
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


@dataclass(slots=True)
class Table:
    """A GFM table: header cells and body rows, cell text stripped of inline markup."""

    header: list[str]
    rows: list[list[str]]

    def records(self) -> list[dict[str, str]]:
        """Rows as dicts keyed by lower-cased header (``"execution id"``), missing cells empty."""
        keys = [h.strip().lower() for h in self.header]
        return [{k: (row[i] if i < len(row) else "") for i, k in enumerate(keys)} for row in self.rows]


@dataclass(slots=True)
class Fence:
    """A fenced code block: its info string, content and 0-based first content line."""

    info: str
    content: str
    first_line: int


@dataclass(slots=True)
class Block:
    """A ``##`` section (level 2) or ``###`` subsection (level 3) of a document.

    ``start``/``end`` are 0-based source line numbers of the body (after the heading),
    end exclusive. ``lines`` is the body text as written.
    """

    title: str
    level: int
    start: int
    end: int
    lines: list[str]
    fences: list[Fence] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    children: list[Block] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


@dataclass(slots=True)
class Document:
    """A parsed Markdown file: the ``#`` title, the lines before the first ``##``, and sections."""

    title: str | None
    preamble: list[str]
    sections: list[Block]

    def section(self, *names: str) -> Block | None:
        """The first section whose title, lower-cased, starts with one of ``names``."""
        wanted = tuple(n.lower() for n in names)
        for block in self.sections:
            if block.title.lower().startswith(wanted):
                return block
        return None


def _inline_text(token: Token) -> str:
    if token.children:
        return "".join(c.content for c in token.children if c.type in ("text", "code_inline", "softbreak")).strip()
    return token.content.strip()


def _tables(tokens: list[Token]) -> list[Table]:
    tables: list[Table] = []
    header: list[str] = []
    rows: list[list[str]] = []
    row: list[str] = []
    in_head = False
    for tok in tokens:
        if tok.type == "table_open":
            header, rows = [], []
        elif tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            row.append(_inline_text(tok))
        elif tok.type == "tr_close":
            if in_head:
                header = row
            else:
                rows.append(row)
        elif tok.type == "table_close":
            tables.append(Table(header, rows))
    return tables


@dataclass(slots=True)
class TableRows:
    """Pipe-table body rows by their line as written, for a text parsed again after a
    rewrite (a snapshot's ``## Index``, a row more per statement): ``before`` holds the rows
    of the text parsed last, ``now`` receives this text's. A row whose line is in ``before``
    (with as many columns) is that row's cells list itself, neither split nor stripped
    again. Only the plain-text reader uses them; ``now`` stays empty when the text needs
    markdown-it. Values: ``(column count, cells, column count less the cells the line has)``."""

    before: dict[str, tuple[int, list[str], int]] = field(default_factory=dict)
    now: dict[str, tuple[int, list[str], int]] = field(default_factory=dict)


def parse_document(text: str, rows: TableRows | None = None) -> Document:
    """Split Markdown into title, preamble and ``##``/``###`` sections.

    Never raises on any text; text with no headings is all preamble. ``rows``: table
    rows known from the text parsed before it (see :class:`TableRows`); the document is the
    same with or without them.
    """
    plain = _plain_document(text, rows)
    if plain is None and rows is not None:
        rows.now.clear()
    return plain if plain is not None else markdown_it_document(text)


def markdown_it_document(text: str) -> Document:
    """:func:`parse_document` through markdown-it always (the plain-text path's reference)."""
    lines = text.splitlines()
    tokens = _parser().parse(text)
    headings: list[tuple[int, int, str]] = []  # (level, line, title)
    fences: list[Fence] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            heading = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            headings.append((int(tok.tag[1]), tok.map[0], heading))
        elif tok.type in ("fence", "code_block") and tok.map:
            fences.append(Fence(tok.info.strip(), tok.content, tok.map[0] + (1 if tok.type == "fence" else 0)))

    title, preamble = _title_and_preamble(lines, headings)
    sections: list[Block] = []
    level2 = [(line, t) for lvl, line, t in headings if lvl == 2]
    for idx, (line, t) in enumerate(level2):
        end = level2[idx + 1][0] if idx + 1 < len(level2) else len(lines)
        sections.append(_block(t, 2, line + 1, end, lines, tokens, fences, headings))
    return Document(title, preamble, sections)


def _title_and_preamble(lines: list[str], headings: list[tuple[int, int, str]]) -> tuple[str | None, list[str]]:
    """The document's title (its first level-1 heading before any level-2 one) and the lines
    before its first level-2 heading, the title's line left out. ``headings``: (level,
    0-based line, text), in order. Shared by the markdown-it and the plain-text readers."""
    title: str | None = None
    first_section = len(lines)
    for level, line, text_ in headings:
        if level == 1 and title is None and line < first_section:
            title = text_
        if level == 2:
            first_section = line
            break
    title_line = _title_line(headings) if title is not None else -1
    return title, [ln for i, ln in enumerate(lines[:first_section]) if i != title_line]


def _title_line(headings: list[tuple[int, int, str]]) -> int:
    for level, line, _ in headings:
        if level == 1:
            return line
    return -1


def _block(title, level, start, end, lines, tokens, fences, headings) -> Block:
    block = Block(
        title=title,
        level=level,
        start=start,
        end=end,
        lines=lines[start:end],
        fences=[f for f in fences if start <= f.first_line < end],
        tables=_tables(_with_children(tokens, start, end)),
    )
    if level == 2:
        subs = [(line, t) for lvl, line, t in headings if lvl == 3 and start <= line < end]
        for idx, (line, t) in enumerate(subs):
            sub_end = subs[idx + 1][0] if idx + 1 < len(subs) else end
            block.children.append(_block(t, 3, line + 1, sub_end, lines, tokens, fences, headings))
    return block


def _with_children(tokens: list[Token], start: int, end: int) -> list[Token]:
    """Tokens of the table structures whose opening tag lies in [start, end)."""
    out: list[Token] = []
    inside = False
    for tok in tokens:
        if tok.type == "table_open":
            inside = bool(tok.map and start <= tok.map[0] < end)
        if inside:
            out.append(tok)
        if tok.type == "table_close":
            inside = False
    return out


# -- the plain-text path: what markdown-it would give, for text that cannot be read otherwise ----------

# Characters that make ``str.splitlines`` and markdown-it number lines differently, or that
# markdown-it replaces (NUL): such text goes to markdown-it.
_ODD_LINES = frozenset("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00")
_ATX = re.compile(r"(#{1,6})(?:[ \t]+([^#]*?))?[ \t]*")
# A paragraph or list item's text starts with a letter, a digit (not an ordered list's
# marker), a bracket or quote, or ``**`` and a word: nothing markdown-it reads as a block.
_PLAIN_START = re.compile(r"""(?:[^\W_]|[(\["']|\*\*[^*\s])""")
_ORDERED = re.compile(r"\d{1,9}[.)](?:[ \t]|$)")
_BULLET = re.compile(r"[-*+] +(?=\S)")
_DELIMITER = re.compile(r"[-:|][-:| \t]*")
_DELIMITER_CELL = re.compile(r":?-+:?")
# Inline markup: a cell holding none of these (``_`` only inside a word) is its own text.
_INLINE = re.compile(r"[\\`*\[\]!<&~]|(?<![^\W_])_|_(?![^\W_])")
_MD_TRIM = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_MAX_AUTOCOMPLETED = 0x10000  # markdown-it's cap on the empty cells it adds to short rows


def _paragraph_line(line: str) -> bool:
    """A line markdown-it reads as paragraph text or as a list item holding such text."""
    if _PLAIN_START.match(line) and not _ORDERED.match(line):
        return True
    marker = _BULLET.match(line) or _ORDERED.match(line)
    rest = line[marker.end():].lstrip(" \t") if marker else ""
    return bool(rest) and bool(_PLAIN_START.match(rest)) and not _ORDERED.match(rest)


def _cells(line: str) -> list[str]:
    """A table row's cells as markdown-it splits them (no backslash in ``line``): leading
    and trailing empty cells from the enclosing pipes dropped, not yet trimmed."""
    columns = line.strip(_MD_TRIM).split("|")
    if columns and columns[0] == "":
        columns.pop(0)
    if columns and columns[-1] == "":
        columns.pop()
    return columns


def _aligns(line: str) -> int | None:
    """The column count of a GFM delimiter row (``|---|:--:|``), or ``None`` when ``line``
    is none (markdown-it's table rule)."""
    if not _DELIMITER.fullmatch(line) or len(line) < 2 or (line[0] == "-" and line[1] in " \t"):
        return None
    columns = line.split("|")
    count = 0
    for i, column in enumerate(columns):
        cell = column.strip(_MD_TRIM)
        if not cell:
            if i in (0, len(columns) - 1):
                continue
            return None
        if not _DELIMITER_CELL.fullmatch(cell):
            return None
        count += 1
    return count


def _plain_table(lines: list[str], at: int, known: TableRows | None = None) -> tuple[Table, int] | None:
    """The pipe table starting at ``lines[at]`` and the index after it, or ``None`` when it
    is not one whose every line starts with ``|`` and every cell is plain text (its own
    text: no backslash, no inline markup). ``known``: rows of the text parsed before,
    reused by line (see :class:`TableRows`)."""
    if at + 1 >= len(lines):
        return None
    count = _aligns(lines[at + 1])
    header = _cells(lines[at])
    if count is None or count == 0 or len(header) != count:
        return None
    end = at + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    before = known.before if known is not None else {}
    # A line's edges are pipes, so "_" inside a word is told from "_" at a cell's edge line
    # by line as well as over the whole table; a known row's line was searched when it was
    # first read.
    if _INLINE.search(lines[at]) or _INLINE.search(lines[at + 1]) or \
            any(_INLINE.search(line) for line in lines[at + 2:end] if line not in before):
        return None
    rows: list[list[str]] = []
    missing = 0
    for line in lines[at + 2:end]:
        row = before.get(line)
        if row is None or row[0] != count:
            cells = _cells(line)
            row = (count, [c.strip() for c in cells[:count]] + [""] * (count - len(cells)), count - len(cells))
        missing += row[2]
        if missing > _MAX_AUTOCOMPLETED:
            return None
        if known is not None:
            known.now[line] = row
        rows.append(row[1])
    return Table([c.strip() for c in header], rows), end


def _plain_document(text: str, known: TableRows | None = None) -> Document | None:
    """``text`` as :func:`parse_document` gives it, read line by line, or ``None`` when it
    has any line whose block structure needs markdown-it: a fence, indented or quoted text,
    HTML, a rule or setext underline, a table not after a blank line or heading or with
    inline markup in a cell, a line a table row would take in (see the module docstring)."""
    if not _ODD_LINES.isdisjoint(text):
        return None
    lines = text.splitlines()
    headings: list[tuple[int, int, str]] = []
    tables: list[tuple[int, Table]] = []
    after_block = True  # the line before is blank, a heading or the start: a table may start here
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip(" \t"):
            after_block = True
            i += 1
            continue
        first = line[0]
        if first == "#":
            m = _ATX.fullmatch(line)
            if m is None:
                return None  # "#tag", "####### x", "## a ##": paragraph text or closing hashes
            headings.append((len(m.group(1)), i, (m.group(2) or "").strip()))
            after_block = True
            i += 1
            continue
        if first == "|":
            if not after_block:
                return None  # a paragraph's next line: markdown-it may read it either way
            found = _plain_table(lines, i, known)
            if found is None:
                return None
            table, end = found
            tables.append((i, table))
            if end < len(lines) and lines[end].strip(" \t") and not _ATX.fullmatch(lines[end]):
                return None  # a line a table row would take in, or a block ending the table
            i = end
            continue
        if not _paragraph_line(line):
            return None
        after_block = False
        i += 1
    return _document(lines, headings, tables)


def _document(lines: list[str], headings: list[tuple[int, int, str]], tables: list[tuple[int, Table]]) -> Document:
    title, preamble = _title_and_preamble(lines, headings)

    def block(title_: str, level: int, start: int, end: int) -> Block:
        out = Block(title_, level, start, end, lines[start:end], [], [t for at, t in tables if start <= at < end])
        if level == 2:
            subs = [(line, t) for lvl, line, t in headings if lvl == 3 and start <= line < end]
            for idx, (line, t) in enumerate(subs):
                sub_end = subs[idx + 1][0] if idx + 1 < len(subs) else end
                out.children.append(block(t, 3, line + 1, sub_end))
        return out

    level2 = [(line, t) for lvl, line, t in headings if lvl == 2]
    sections = [block(t, 2, line + 1, level2[idx + 1][0] if idx + 1 < len(level2) else len(lines))
                for idx, (line, t) in enumerate(level2)]
    return Document(title, preamble, sections)
