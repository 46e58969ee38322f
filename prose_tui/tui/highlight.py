"""Syntax highlighting for OpenProse program text (the trace and program views).

A small tokenizer for the OpenProse language: keywords, ``"strings"`` and ``\"\"\"blocks\"\"\"``,
``**discretion conditions**``, ``# comments``, numbers and ``{ context }`` names. It returns
``rich.text.Text`` built with ``append`` (never markup), so program text cannot inject styles.
"""

from __future__ import annotations

import re

from rich.text import Text

KEYWORDS = frozenset(
    "agent session let const input output parallel loop until while block use import resume if elif "
    "else try catch finally throw choice option return repeat for in do pipeline map filter reduce "
    "retry context prompt model persist skills permissions max first any all on-fail backoff as "
    "with and or not true false".split()
)
_TOKEN = re.compile(
    r'(?P<triple>""".*?(?:"""|$))'
    r'|(?P<string>"(?:[^"\\]|\\.)*"?)'
    r"|(?P<discretion>\*\*.+?\*\*)"
    r"|(?P<comment>(?<!\S)#.*$)"
    r"|(?P<number>\b\d+(?:\.\d+)?\b)"
    r"|(?P<word>[A-Za-z_][\w-]*)"
)
STYLES = {
    "keyword": "bold #c678dd",
    "property": "#61afef",
    "string": "#98c379",
    "discretion": "italic #e5c07b",
    "comment": "dim italic",
    "number": "#d19a66",
}


def highlight(line: str, in_string: bool = False) -> tuple[Text, bool]:
    """Highlight one line; ``in_string`` says a ``\"\"\"`` block is open from a previous line.

    Returns the styled text and whether the block is still open after this line.
    """
    text = Text()
    pos = 0
    if in_string:
        end = line.find('"""')
        if end < 0:
            text.append(line, STYLES["string"])
            return text, True
        text.append(line[: end + 3], STYLES["string"])
        pos = end + 3
    open_block = False
    for m in _TOKEN.finditer(line, pos):
        if m.start() > pos:
            text.append(line[pos: m.start()])
        kind = m.lastgroup or ""  # every alternative of _TOKEN is a named group
        value = m.group(0)
        if kind == "triple":
            text.append(value, STYLES["string"])
            open_block = not (len(value) >= 6 and value.endswith('"""'))
        elif kind == "word":
            after = line[m.end(): m.end() + 1]
            if value in KEYWORDS and after == ":" and m.start() == len(line) - len(line.lstrip()):
                text.append(value, STYLES["property"])
            elif value in KEYWORDS:
                text.append(value, STYLES["keyword"])
            else:
                text.append(value)
        else:
            text.append(value, STYLES[kind])
        pos = m.end()
    if pos < len(line):
        text.append(line[pos:])
    return text, open_block


def highlight_lines(lines: list[str]) -> list[Text]:
    """Highlight consecutive program lines, carrying ``\"\"\"`` blocks across lines."""
    out: list[Text] = []
    open_block = False
    for line in lines:
        styled, open_block = highlight(line, open_block)
        out.append(styled)
    return out
