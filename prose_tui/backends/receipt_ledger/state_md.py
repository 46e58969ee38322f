"""``state.md`` of a receipt-ledger run (FORMATS.md generation 8).

``# Run State — {id}``, bold fields (``**Program:** …``, ``**State backend:** …``,
``**Input:** …``, ``**Status:** completed``), then ``## Execution`` with a fenced ``prose``
block whose lines end in statement ids (``# s005 ✓ -> bindings/plan.md``, ``# s006 ✓ joined
(all, 2/2)``, ``# s002 (definition)``, ``# s010; discretion s010.d1 -> TRUE``), then free
sections (``## Discretion evaluation (s010.d1)``, ``## Notes``). Parsed by rule: a line that
fits none is kept in its section's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from prose_tui.model import Section

_TITLE = re.compile(r"^#\s*Run\s+State\b\s*[—–:-]*\s*(.*?)\s*$", re.IGNORECASE)
_FIELD = re.compile(r"^\s*(?:[-*]\s+)?\*\*([^*]+?)\*\*\s*:?\s*(.*?)\s*$")
_ID = re.compile(r"\b(s\d{3,}(?:\.[a-z]\d+)*)\b")
_ANNOTATED = re.compile(r"^(?P<code>.*?)\s*#\s*(?P<note>s\d{3,}\b.*)$")
_BINDING = re.compile(r"(?:->|→)\s*`?([\w./-]+\.(?:md|json|txt|ya?ml))`?")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(slots=True)
class Statement:
    """One program line of the Execution block: its 1-based ``line`` in state.md, the
    program ``code`` (before the ``#``), the ``note`` after it and the binding it names."""

    line: int
    code: str
    note: str
    binding: str | None = None


@dataclass(slots=True)
class StateMd:
    """What ``state.md`` says: ``run_id`` of its title, the bold ``fields`` (names as written,
    the trailing colon dropped), each statement id's line (a discretion id such as
    ``s010.d1`` maps to the line that names it), and the sections in order (the Execution
    block among them, verbatim)."""

    run_id: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    statements: dict[str, Statement] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)


def parse_state_md(text: str) -> StateMd:
    """Parse ``text``; never raises."""
    out = StateMd()
    title: str | None = None
    body: list[str] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            if title is not None:
                body.append(line)
            continue
        if fenced:
            if title is not None:
                body.append(line)
            if (m := _ANNOTATED.match(line)) is not None:
                ids = _ID.findall(m.group("note"))
                binding = _BINDING.search(m.group("note"))
                statement = Statement(number, m.group("code").rstrip(), m.group("note").strip(),
                                      binding.group(1) if binding else None)
                for sid in ids:
                    out.statements.setdefault(sid, statement)
            continue
        if line.startswith("## "):
            if title is not None:
                out.sections.append(Section(title, "\n".join(body).strip("\n")))
            title, body = line[3:].strip(), []
            continue
        if title is None:
            if out.run_id is None and (m := _TITLE.match(line)) is not None:
                out.run_id = m.group(1).strip("` ") or None
            elif (m := _FIELD.match(line)) is not None:
                name = m.group(1).strip().rstrip(":").strip()
                out.fields[name] = m.group(2).strip()
            continue
        body.append(line)
    if title is not None:
        out.sections.append(Section(title, "\n".join(body).strip("\n")))
    return out
