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
from array import array
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass
from itertools import compress
from operator import is_not
from pathlib import Path

from prose_tui.model import Binding, Run, TraceLine, assigned_name

_LOG_STEP = re.compile(r"^\s*(?P<step>\d+[a-z]?)\s*→\s*(?P<body>.*)$")
_LOG_NAME = re.compile(r"^(?:block:)?(?P<name>[A-Za-z_][\w-]*)")
# a program line that decides: ``if **cond**:``, ``gate **cond**:``, ``gate name:``
_GATE_LINE = re.compile(r"^(?:if\b|if\*\*|gate\b)")
# a gate step in the log: ``gate ✗ rejected``, ``gate:ship ✓ approved``, ``gate **cond** ✓``
_GATE_STEP = re.compile(r"^gate\b\s*(?::\s*(?P<name>[\w.-]+))?\s*(?:\*\*(?P<cond>.+?)\*\*)?")


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
    one the log ran). A live log is followed with :class:`ProgramAnnotator` instead."""
    annotator = ProgramAnnotator(program)
    annotator.update(log, None)
    return annotator.result()


_UNDO_KEPT = 512  # log lines whose mapping can be rewound (a re-stated last line, a provisional one)


def _restated(seen: list[TraceLine], log: list[TraceLine]) -> set[int] | None:
    """Indexes where ``log`` holds another object than ``seen`` (C-level), ``None`` when more
    than ``_UNDO_KEPT`` differ (mapping it all again costs less than rewinding)."""
    changed = set(compress(range(min(len(seen), len(log))), map(is_not, seen, log)))
    return changed if len(changed) + abs(len(seen) - len(log)) <= _UNDO_KEPT else None


class ProgramAnnotator:
    """``program_trace`` kept up to date while a log grows: each call costs the log lines
    appended or changed, not the log.

    The program line a log step annotates follows from the steps' texts alone (in order);
    a line's state, binding and attempts fold over the steps on it. So an appended step
    is mapped and folded in; a step whose state or binding changed in place re-folds its
    program line; a step whose text changed (a provisional last line re-stated) rewinds
    the mapping to it (kept for the last ``_UNDO_KEPT`` steps; older: all again).
    ``lines`` is one list, changed in place; ``update`` returns the indexes it changed.
    """

    def __init__(self, program: str) -> None:
        self.program = program
        self.source = program.splitlines()
        self.lines = [TraceLine(line=i + 1, text=text) for i, text in enumerate(self.source)]
        self.line_of: dict[int, int] = {}
        self._assigns: dict[str, int] = {}
        for i, text in enumerate(self.source):
            name = assigned_name(text)
            if name is not None:
                self._assigns.setdefault(name, i)
        stripped = [text.strip() for text in self.source]
        self._parallels = [i for i, text in enumerate(stripped) if text.startswith("parallel")]
        self._gates = [i for i, text in enumerate(stripped) if _GATE_LINE.match(text)]
        self._stripped = stripped
        self._calls_to: dict[str, int | None] = {}
        self._reset()

    def _reset(self) -> None:
        self.lines[:] = [TraceLine(line=i + 1, text=text) for i, text in enumerate(self.source)]
        self.line_of.clear()
        self.log: list[TraceLine] | None = None
        self.seen: list[TraceLine] = []  # the log lines mapped, as the objects they were
        self.targets = array("l")  # per log line mapped: its program line, -1 for none
        self.hits: dict[int, list[int]] = {}  # program line -> the log indexes on it, in order
        self.last = -1
        self.parallel_at: int | None = None
        self.calls: dict[str, int] = {}
        self.prev_step = -1  # the last step line that is not a retry
        self.undo: deque[tuple] = deque(maxlen=_UNDO_KEPT)  # per log line mapped lately: the state before it

    def result(self) -> ProgramTrace | None:
        return ProgramTrace(self.lines, self.line_of) if self.line_of else None

    def update(self, log: list[TraceLine], changed: set[int] | None) -> set[int] | None:
        """Follow ``log`` (the same list as before, grown or changed in place at the
        indexes ``changed``; ``None``: unknown, or another list: annotate it all again).
        Returns the indexes of ``lines`` that changed (``None``: all may have). Another list
        sharing the lines mapped but a few (the run as of the next history event,
        ``history.CursorMemo``) is followed as that list changed where it differs."""
        if log is not self.log and self.log is not None and changed is None:
            changed = _restated(self.seen, log)
            if changed is not None:
                self.log = log
        if log is not self.log or changed is None:
            self._reset()
            self.log = log
            self._map(0)
            return None
        n = len(self.seen)
        recent = range(max(0, n - _UNDO_KEPT // 2), min(n, len(log)))
        # A line that is not the object mapped (re-stated, or the log shrank) rewinds the mapping.
        moved = [i for i in (*changed, *recent) if i < n and (i >= len(log) or log[i] is not self.seen[i])]
        if len(log) < n:
            moved.append(len(log))
        rewind = min(moved, default=None)
        touched: set[int] = set()
        if rewind is not None:
            if n - rewind > len(self.undo):
                self._reset()
                self.log = log
                self._map(0)
                return None
            touched |= self._rewind(rewind)
        for i in changed:
            if i < len(self.seen) and self.targets[i] >= 0:
                touched.add(self.targets[i])
        for target in touched:
            self._refold(target)
        touched |= self._map(len(self.seen))
        return touched

    # -- mapping --------------------------------------------------------------------------
    def _do_line(self, name: str) -> int | None:
        if name not in self._calls_to:
            prefix = f"do {name}"
            self._calls_to[name] = next((i for i, s in enumerate(self._stripped) if s.startswith(prefix)), None)
        return self._calls_to[name]

    def _gate_line(self, name: str | None, cond: str | None) -> int | None:
        """The program gate a log's gate step executed: the one with its condition
        (``**all e2e tests pass**``) or its name (``gate:ship`` → ``gate ship:``), else the
        next decision (``gate``, ``if``) after the last step mapped."""
        for wanted in (f"**{cond.strip()}**" if cond else None, name):
            if not wanted:
                continue
            found = [i for i in self._gates if wanted in self._stripped[i]]
            if found:
                after = [i for i in found if i > self.last]
                return (after or found)[0]
        at = bisect_left(self._gates, max(0, self.last))
        return self._gates[at] if at < len(self._gates) else None

    def _map(self, start: int) -> set[int]:
        """Map and fold in the log lines from ``start``; returns the program lines touched."""
        log = self.log or []
        touched: set[int] = set()
        for index in range(start, len(log)):
            t = log[index]
            self.undo.append((self.last, self.parallel_at, self.prev_step, None, None))
            target = self._target(t)
            self.seen.append(t)
            self.targets.append(-1 if target is None else target)
            if target is None:
                continue
            self.last = target
            self.line_of[t.line] = target + 1
            self.hits.setdefault(target, []).append(index)
            self.lines[target] = _fold(self.lines[target], t)
            touched.add(target)
        return touched

    def _target(self, t: TraceLine) -> int | None:
        m = _LOG_STEP.match(t.text)
        if not m:
            return None
        previous_step = self.prev_step
        if "retry:" not in t.text:
            self.prev_step = t.line
        body = m.group("body").strip()
        if body.startswith(("∥", "‖", "||")):
            if "start" in body or self.parallel_at is None:
                at = bisect_left(self._parallels, max(0, self.last))
                self.parallel_at = self._parallels[at] if at < len(self._parallels) else (
                    self._parallels[0] if self._parallels else None)
            return self.parallel_at
        if body.startswith("#"):  # "#7 done": the block call returned
            words = body[1:].split()
            return self.calls.get(words[0]) if words else None
        if body.startswith("retry:"):
            previous = self.line_of.get(previous_step)
            return previous - 1 if previous is not None else None
        if (gate := _GATE_STEP.match(body)) is not None:
            return self._gate_line(gate.group("name"), gate.group("cond"))
        nm = _LOG_NAME.match(body)
        if not nm:
            return None
        name = nm.group("name")
        if body.startswith("block:"):
            target = self._do_line(name)
            words = body.rsplit("#", 1)[1].split() if "#" in body else []
            if target is not None and words:
                eid = words[0]
                undo = self.undo[-1]
                self.undo[-1] = (*undo[:3], eid, self.calls.get(eid, _MISSING))
                self.calls[eid] = target
            return target
        return self._assigns.get(name)

    def _rewind(self, index: int) -> set[int]:
        """Undo the mapping of log lines ``index`` and after; returns the program lines to re-fold."""
        touched: set[int] = set()
        while len(self.seen) > index:
            i = len(self.seen) - 1
            t = self.seen.pop()
            target = self.targets.pop()
            last, parallel_at, prev_step, eid, before = self.undo.pop()
            self.last, self.parallel_at, self.prev_step = last, parallel_at, prev_step
            if eid is not None:
                if before is _MISSING:
                    self.calls.pop(eid, None)
                else:
                    self.calls[eid] = before
            if target >= 0:
                hits = self.hits[target]
                if hits and hits[-1] == i:
                    hits.pop()
                if self.line_of.get(t.line) == target + 1:
                    del self.line_of[t.line]
                touched.add(target)
        return touched

    def _refold(self, target: int) -> None:
        line = TraceLine(line=target + 1, text=self.source[target])
        log = self.log or []
        for i in self.hits.get(target, []):
            line = _fold(line, log[i])
        self.lines[target] = line


_MISSING = object()


def _fold(old: TraceLine, t: TraceLine) -> TraceLine:
    """A program line after log step ``t`` on it: the step's state, note and step label."""
    m = _LOG_STEP.match(t.text)
    return TraceLine(line=old.line, text=old.text, state=t.state or old.state, note=t.text.strip(),
                     binding=t.binding or old.binding, attempt=t.attempt or old.attempt,
                     max_attempts=t.max_attempts or old.max_attempts, step=m.group("step") if m else old.step)


def mark_failures(lines: list[TraceLine], view: Run) -> list[TraceLine]:
    """Trace lines whose binding records a failure (exit code, error line) get it in
    ``failure`` and at the end of their note, so the trace shows where it failed."""
    return FailureMarks().apply(lines, view, None)[0]


class FailureMarks:
    """``mark_failures`` kept up to date while a trace changes: ``apply`` with the same
    lines list, the same failed bindings and the indexes that changed marks only those."""

    def __init__(self) -> None:
        self.source: list[TraceLine] | None = None
        self.key: tuple = ()
        self.out: list[TraceLine] = []
        self._paths: dict[tuple[Path, str], Path] = {}

    def apply(self, lines: list[TraceLine], view: Run,
              changed: set[int] | None) -> tuple[list[TraceLine], set[int] | None]:
        """``(marked lines, indexes changed since the last call)``: ``lines`` itself when no
        binding records a failure; ``changed`` (``None``: all) is what changed in ``lines``."""
        failed = {b.path: b for b in view.bindings if b.failure}
        if not failed:
            self.source = None
            return lines, changed
        key = (view.path, tuple(sorted((str(p), b.failure or "") for p, b in failed.items())))
        by_name = {b.name: b for b in failed.values()}
        if lines is self.source and key == self.key and changed is not None and len(lines) >= len(self.out):
            out = self.out
            fresh = set(range(len(out), len(lines)))
            for i in sorted(changed | fresh):
                marked = self._mark(lines[i], view, failed, by_name)
                if i < len(out):
                    out[i] = marked
                else:
                    out.append(marked)
            return out, changed | fresh
        self.source, self.key = lines, key
        self.out = [self._mark(t, view, failed, by_name) for t in lines]
        return self.out, None

    def _mark(self, t: TraceLine, view: Run, failed: dict[Path, Binding], by_name: dict[str, Binding]) -> TraceLine:
        b = None
        if t.binding:
            b = failed.get(self._resolved(view.path, t.binding)) or failed.get(view.path / t.binding)
        if b is None and (name := assigned_name(t.text)):
            b = by_name.get(name)
        if b is None or not b.failure:
            return t
        mark = f"✗ {b.failure}"
        note = f"{t.note}  {mark}" if t.note else f"# {mark}"
        return TraceLine(line=t.line, text=t.text, state=t.state, note=note, binding=t.binding, attempt=t.attempt,
                         max_attempts=t.max_attempts, step=t.step, failure=b.failure)

    def _resolved(self, root: Path, rel: str) -> Path:
        key = (root, rel)
        path = self._paths.get(key)
        if path is None:
            if len(self._paths) > 50_000:
                self._paths.clear()
            path = self._paths[key] = (root / rel).resolve()
        return path
