"""A statement of the execution trace and the annotation the VM gave it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import attrgetter
from enum import StrEnum

# An event-log step line (seeds/filesystem.md, generations 2-3: "3→ body", "3a-> body",
# "10 → body"); an optional list bullet before the step is tolerated, and so are the arrow
# look-alikes ⟶ => ➜ ➔. Trace lines keep this text, so a view lays them out by it.
STEP_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?P<step>\d+(?:[A-Za-z._][A-Za-z0-9._]*)?)\s*(?:→|->|⟶|=>|➜|➔)\s*(?P<body>.*)$"
)
# An event log's terminator line ("--- end", "-- error ...", "--- resumed").
TERMINATOR_RE = re.compile(
    r"^\s*-{2,}\s*(?P<word>end|done|completed?|error|fail(?:ed)?|resumed?)\b\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_ASSIGNED = re.compile(r"^\s*(?:(?:let|const|output|input)\s+)?([A-Za-z_]\w*)\s*=(?!=)")


def assigned_name(text: str) -> str | None:
    """The binding name a statement assigns, or ``None``.

    One rule for every reader (seeds/filesystem.md, bindings are named by the statement):
    an optional ``let``/``const``/``output``/``input`` keyword *followed by whitespace*, then
    an identifier, then ``=``. So ``letter = x`` assigns ``letter`` (not ``ter``),
    ``output_file = x`` assigns ``output_file``, ``let a = x`` assigns ``a``; ``a == b`` and
    ``session: x`` assign nothing.
    """
    m = _ASSIGNED.match(text)
    return m.group(1) if m else None


class StatementState(StrEnum):
    """The state an annotation gives a statement (seeds/filesystem.md, Status annotations).

    ``pending`` is ``[not yet entered]``; ``next`` is ``[...next...]``.
    """

    COMPLETE = "complete"
    EXECUTING = "executing"
    NEXT = "next"
    PENDING = "pending"
    RETRYING = "retrying"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(slots=True)
class TraceLine:
    """One line of the annotated execution trace.

    ``line`` is 1-based within the trace. ``text`` is the program text without its
    annotation; ``note`` is the annotation as the VM wrote it (``"--> bindings/a.md
    (complete)"``, ``"<-- RETRYING (attempt 2/3)"``), ``None`` for a plain line.
    ``binding`` is the run-relative path an ``-->`` annotation points to when it names a
    binding file. ``attempt``/``max_attempts`` come from retry annotations. ``step`` is
    the event-log step label (``"3a"``) for event-log runs.
    """

    line: int
    text: str
    state: StatementState | None = None
    note: str | None = None
    binding: str | None = None
    attempt: int | None = None
    max_attempts: int | None = None
    step: str | None = None
    failure: str | None = None  # what the binding it wrote records as failed ("exit 1 · make: *** Error 1")

    @property
    def indent(self) -> int:
        """Leading spaces of the program text (block nesting as written)."""
        return len(self.text) - len(self.text.lstrip(" "))


_AT = frozenset((StatementState.EXECUTING, StatementState.RETRYING))
_RECENT = 64  # last lines looked through one at a time: where a run at work is
_SLICE = 4096  # lines looked through per C call further back (each well under a millisecond)
_STATE = attrgetter("state")


def executing_line(lines: list[TraceLine]) -> TraceLine | None:
    """The statement a run is at: the last executing or retrying line of its trace. A run at
    work is found among its last lines; one that is not (finished, failed) is looked
    through in C, a slice at a time (so another thread may run in between): 100,000 lines
    a line at a time took 30-60 ms, in slices 6-16."""
    for line in reversed(lines[-_RECENT:]):
        if line.state in _AT:
            return line
    end = len(lines) - _RECENT
    while end > 0:
        start = max(0, end - _SLICE)
        at = list(map(_AT.__contains__, map(_STATE, lines[start:end])))
        if True in at:
            at.reverse()
            return lines[end - 1 - at.index(True)]
        end = start
    return None
