"""Markdown structure for state files: sections, fences, tables (via markdown-it-py).

The VM writes Markdown by hand, so the structure comes from a real Markdown parser rather
than line regexes: a ``##`` inside a fenced block is not a heading, a table is a table
whatever its spacing.
"""

from __future__ import annotations

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


def parse_document(text: str) -> Document:
    """Split Markdown into title, preamble and ``##``/``###`` sections.

    Never raises on any text; text with no headings is all preamble.
    """
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

    title: str | None = None
    first_section = len(lines)
    for level, line, text_ in headings:
        if level == 1 and title is None and line < first_section:
            title = text_
        if level == 2:
            first_section = line
            break
    preamble = [ln for i, ln in enumerate(lines[:first_section]) if not (title is not None and i == _title_line(headings))]

    sections: list[Block] = []
    level2 = [(line, t) for lvl, line, t in headings if lvl == 2]
    for idx, (line, t) in enumerate(level2):
        end = level2[idx + 1][0] if idx + 1 < len(level2) else len(lines)
        sections.append(_block(t, 2, line + 1, end, lines, tokens, fences, headings))
    return Document(title, preamble, sections)


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
