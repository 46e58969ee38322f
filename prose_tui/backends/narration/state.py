"""Parser state and the helpers every narration marker handler shares (seeds/in-context.md).

The base of :class:`~.markers.NarrationParser` (which documents the protocol); the line
shapes the handlers match live in :mod:`.grammar`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from prose_tui.model import (
    ActiveConstruct,
    Agent,
    Binding,
    Event,
    EventKind,
    Frame,
    Run,
    RunStatus,
    StatementState,
    TraceLine,
)


@dataclass(slots=True)
class _Open:
    """A trace line still open; ``container`` lines close by their end marker, leaves by the next step."""

    index: int
    container: bool
    kind: str = ""



@dataclass(slots=True)
class ParserState:
    """Everything a :class:`~.markers.NarrationParser` has read so far, and shared helpers."""


    source: Path | None = None
    events: list[Event] = field(default_factory=list)
    trace: list[TraceLine] = field(default_factory=list)
    bindings: dict[tuple[str, int | None], Binding] = field(default_factory=dict)
    frames: list[Frame] = field(default_factory=list)  # outermost first
    imports: dict[str, Run] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    loops: list[ActiveConstruct] = field(default_factory=list)
    parallels: list[ActiveConstruct] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)
    status: RunStatus = RunStatus.UNKNOWN
    status_reason: str = ""
    program: str | None = None
    started: datetime | None = None
    updated: datetime | None = None
    dialects: set[str] = field(default_factory=set)
    _open: list[_Open] = field(default_factory=list)
    _frame_lines: dict[int, int] = field(default_factory=dict)
    _context: str = ""
    _import: Run | None = None
    _pending_import: Run | None = None
    _last_result: str | None = None
    _par_results: dict[str, str] = field(default_factory=dict)
    _stack_snapshot: list[Frame] = field(default_factory=list)
    _line: int = 0
    _time: datetime | None = None

    # --- helpers ----------------------------------------------------------------------------

    def _warn(self, sentence: str) -> None:
        if len(self.warnings) < 50:
            self.warnings.append(sentence)
        elif len(self.warnings) == 50:
            self.warnings.append("more lines could not be understood; further warnings are not listed.")

    def _event(self, kind: EventKind, text: str, *, name: str | None = None, status: str | None = None,
               step: str | None = None, execution_id: int | None = None) -> Event:
        if execution_id is None and self.frames:
            execution_id = self.frames[-1].execution_id
        ev = Event(len(self.events), kind, text, time=self._time, step=step, name=name, status=status,
                   line=self._line, execution_id=execution_id)
        self.events.append(ev)
        return ev

    def _depth(self) -> int:
        return len(self.frames) + len(self.loops) + len(self.parallels)

    def _open_line(self, text: str, step: str | None, container: bool, kind: str = "") -> int:
        self._close_leaves(StatementState.COMPLETE)
        self.trace.append(TraceLine(line=len(self.trace) + 1, text="  " * self._depth() + text, state=StatementState.EXECUTING, step=step))
        self._open.append(_Open(len(self.trace) - 1, container, kind))
        return len(self.trace) - 1

    def _claim_or_open(self, kind: str, body: str) -> None:
        """Give the construct the container line its ``[Position]`` opened, or open one."""
        self._close_leaves(StatementState.COMPLETE)
        words = ("loop", "repeat", "for ", "while") if kind == "loop" else ("parallel",)
        last = self._open[-1] if self._open else None
        if last and last.container and not last.kind and any(w in self.trace[last.index].text.lower() for w in words):
            last.kind = kind
        else:
            self._open_line(body, None, True, kind)

    def _close_leaves(self, state: StatementState) -> None:
        for op in [o for o in self._open if not o.container]:
            self._set_state(op.index, state)
            self._open.remove(op)

    def _close_kind(self, kind: str, state: StatementState = StatementState.COMPLETE) -> None:
        self._close_leaves(state)
        for op in reversed(self._open):
            if op.kind == kind:
                self._set_state(op.index, state)
                self._open.remove(op)
                return

    def _set_state(self, index: int, state: StatementState) -> None:
        if 0 <= index < len(self.trace) and self.trace[index].state in (StatementState.EXECUTING, StatementState.RETRYING):
            self.trace[index].state = state

    def _bind(self, name: str, value: str, kind: str | None, eid: int | None, *, target: Run | None = None) -> None:
        if value.strip() in ("<result>", "<value>") and self._last_result is not None:
            value = self._last_result
        b = Binding(name=name, path=self.source or Path("<stdin>"), kind=kind, execution_id=eid,
                    source=f"line {self._line}", bytes=len(value.encode("utf-8", "replace")),
                    fields={"value": value, "line": str(self._line)})
        if target is not None:
            target.bindings = [x for x in target.bindings if x.name != name] + [b]
        else:
            old = self.bindings.get((name, eid))
            if old is not None and kind is None:
                b.kind = old.kind
            self.bindings[(name, eid)] = b
        self._event(EventKind.BINDING_WRITTEN, f"{name} = {value}"[:500], name=name, execution_id=eid)
