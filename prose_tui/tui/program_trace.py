"""An event-log or contract run's trace as its program, annotated from the log, and the
marks a binding's recorded failure puts on the statement that wrote it. No Textual.

* ``program_trace(log, program)``: the program's lines, each with the state and note of
  the latest log step on it (FORMATS.md compact event log), and which log line maps to
  which program line.
* ``mark_failures(lines, view)``: lines whose binding records a failure (exit code, error
  line) carry it in ``failure`` and at the end of their note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prose_tui.model import Run, TraceLine, assigned_name

_LOG_STEP = re.compile(r"^\s*(?P<step>\d+[a-z]?)\s*→\s*(?P<body>.*)$")
_LOG_NAME = re.compile(r"^(?:block:)?(?P<name>[A-Za-z_][\w-]*)")


@dataclass(frozen=True, slots=True)
class ProgramTrace:
    """The program's lines annotated from an event log. ``line_of`` maps a log line number
    to the program line it annotates (for jumps: a failure, a search hit in the log)."""

    lines: list[TraceLine]
    line_of: dict[int, int]


def program_trace(log: list[TraceLine], program: str) -> ProgramTrace | None:
    """Annotate ``program`` (the run's program text) from ``log`` (an event log's trace
    lines, FORMATS.md compact event log: ``4→ draft ✗ timeout``, ``2→ ∥start a,b``,
    ``3→ block:review#7``, ``3→ #7 done``).

    Each log step is matched to the program line that assigns its name (one
    ``assigned_name`` rule), ``do name(...)`` for a block call, or the next ``parallel``
    for ``∥start``/``∥done``; the line takes the state of the latest step on it and the
    step's text as its note. ``None`` when no step matches a line (the program is not the
    one the log ran)."""
    source = program.splitlines()
    out = [TraceLine(line=i + 1, text=text) for i, text in enumerate(source)]
    line_of: dict[int, int] = {}
    calls: dict[str, int] = {}
    parallel_at: int | None = None
    last = -1
    for t in log:
        m = _LOG_STEP.match(t.text)
        if not m:
            continue
        body = m.group("body").strip()
        target: int | None = None
        if body.startswith(("∥", "‖", "||")):
            if "start" in body or parallel_at is None:
                parallel_at = next((i for i in range(max(0, last), len(source)) if source[i].strip().startswith("parallel")),
                                   next((i for i, s in enumerate(source) if s.strip().startswith("parallel")), None))
            target = parallel_at
        elif body.startswith("#"):  # "#7 done": the block call returned
            eid = body[1:].split()[0]
            target = calls.get(eid)
        elif body.startswith("retry:"):
            previous = line_of.get(_previous_line(log, t.line))
            target = previous - 1 if previous is not None else None
        elif body.startswith("gate:"):  # a gate is the next condition after the last step
            target = next((i for i in range(max(0, last), len(source)) if source[i].strip().startswith(("if ", "if**"))), None)
        elif nm := _LOG_NAME.match(body):
            name = nm.group("name")
            if body.startswith("block:"):
                target = next((i for i, s in enumerate(source) if s.strip().startswith(f"do {name}")), None)
                if target is not None and "#" in body:
                    calls[body.rsplit("#", 1)[1].split()[0]] = target
            else:
                target = next((i for i, s in enumerate(source) if assigned_name(s) == name), None)
        if target is None:
            continue
        last = target
        line_of[t.line] = target + 1
        old = out[target]
        out[target] = TraceLine(line=old.line, text=old.text, state=t.state or old.state, note=t.text.strip(),
                                binding=t.binding or old.binding, attempt=t.attempt or old.attempt,
                                max_attempts=t.max_attempts or old.max_attempts, step=m.group("step"))
    if not line_of:
        return None
    return ProgramTrace(out, line_of)


def _previous_line(log: list[TraceLine], line: int) -> int:
    before = [t.line for t in log if t.line < line and _LOG_STEP.match(t.text) and "retry:" not in t.text]
    return before[-1] if before else -1


def mark_failures(lines: list[TraceLine], view: Run) -> list[TraceLine]:
    """Trace lines whose binding records a failure (exit code, error line) get it in
    ``failure`` and at the end of their note, so the trace shows where it failed."""
    failed = {b.path: b for b in view.bindings if b.failure}
    if not failed:
        return lines
    by_name = {b.name: b for b in failed.values()}
    out = []
    for t in lines:
        b = None
        if t.binding:
            b = failed.get((view.path / t.binding).resolve()) or failed.get(view.path / t.binding)
        if b is None and (name := assigned_name(t.text)):
            b = by_name.get(name)
        if b is not None and b.failure:
            mark = f"✗ {b.failure}"
            note = f"{t.note}  {mark}" if t.note else f"# {mark}"
            t = TraceLine(line=t.line, text=t.text, state=t.state, note=note, binding=t.binding, attempt=t.attempt,
                          max_attempts=t.max_attempts, step=t.step, failure=b.failure)
        out.append(t)
    return out
