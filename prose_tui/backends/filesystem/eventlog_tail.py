"""The compact event log parsed as it grows: only the lines appended since the last read.

:class:`EventLogParser` is the compact event log parser (:mod:`.eventlog`; FORMATS.md,
Generations 2-4) kept as a state machine, so appended lines are parsed alone: open
frames, open parallels, the terminator state and which trace lines are live are carried
from one chunk to the next. Feeding a whole file in chunks split at line ends gives the
same ``EventLog`` as ``parse_event_log`` on the whole text (tests/test_live_tail.py checks
it on generated and real logs). :class:`EventLogTail` pairs it with a
:class:`~.tail.FileTail`: a trailing line without its newline is parsed provisionally and
rolled back when more bytes arrive, so the run shows it as a fresh open would.
"""

from __future__ import annotations

import os
import re
from array import array
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import chain
from pathlib import Path

from prose_tui.backends.common.foreground import wait_turn
from prose_tui.backends.common.superseded import check_superseded
from prose_tui.backends.common.text import decode
from prose_tui.backends.filesystem.eventlog import (
    LIVE_STATES,
    RUN_LEVEL,
    EventLog,
    OpenFrames,
    apply_event,
    base_date,
    is_binding_event,
    take_header_line,
)
from prose_tui.backends.filesystem.eventlog_lines import classify_line
from prose_tui.backends.filesystem.tail import FileTail
from prose_tui.model import Event, EventKind, StatementState, TraceLine

_BRACE_START_RE = re.compile(r"\s*\{")
_WORDS = 4096  # distinct names, steps, statuses and notes one parser shares (``EventLogParser._line``)
_RECENT = 16  # recent line numbers and event times one parser shares (``EventLogParser._line``)
# Bytes of whole lines decoded and parsed at a time (``EventLogTail.feed_bytes``): decoding
# (and the pictures of control characters) is one C call per chunk, which holds the
# interpreter: 1 MiB took 12-16 ms here while a live change waited; 256 KiB, 3-4 ms.
FEED_CHUNK = 1 << 18
# Lines parsed between two looks for a live change in flight (``foreground.wait_turn``): some
# 2-5 ms of parsing, so a change written during a whole read waits that long for the read.
FEED_LINES = 256
_KINDS = list(EventKind)
_KIND_CODE = {k: i for i, k in enumerate(_KINDS)}
_STATES: list[StatementState | None] = [None, *StatementState]
_STATE_CODE = {s: i for i, s in enumerate(_STATES)}


def _pack(kind: EventKind, single: bool, state: StatementState | None) -> int:
    """A trace line's first kind, item count and classified state in one 16-bit number
    (the parser keeps one per line: two bytes, not a tuple)."""
    return _KIND_CODE[kind] << 6 | int(single) << 5 | _STATE_CODE[state]


_PACKED = {(kind, single, state): _pack(kind, single, state)
           for kind in _KINDS for single in (False, True) for state in _STATES}


def _unpack(code: int) -> tuple[EventKind, bool, StatementState | None]:
    return _KINDS[code >> 6], bool(code >> 5 & 1), _STATES[code & 31]


@dataclass(slots=True)
class _OpenParallel:
    step: str
    index: int
    children: dict[str, int] = field(default_factory=dict)  # child step -> its latest line index


@dataclass(slots=True)
class _Checkpoint:
    events: int
    trace: int
    warnings: int
    bindings: int
    lines: int
    in_header: bool
    header: dict[str, str]
    scalars: tuple
    frames: OpenFrames
    last_stepped: int | None
    open_par: list[_OpenParallel]
    join_stack: list[int]
    joined_log: int
    live: set[int]
    failed_line: int | None


class EventLogParser:
    """A compact event log parsed line by line; ``log`` is what the lines fed so far say.

    ``feed(lines)`` takes complete lines (as ``str.splitlines`` gives them, 1-based
    numbering continuing from the last feed) and returns the indexes of the trace lines
    whose state or text changed (new lines included; with ``changes=False`` only the
    earlier lines whose state changed). ``checkpoint``/``rollback`` undo a
    provisional feed (a last line still being written). ``finish`` fills the derived
    fields a whole-file parse sets at the end (call stack, end-of-log warnings).
    Raises nothing for any text. A log starting with a SOPS block is not handled here
    (``supports`` is false): the caller parses it whole.
    """

    def __init__(self, source_name: str = "state.md") -> None:
        self.source_name = source_name
        self.log = EventLog()
        self.line_warnings: list[str] = []
        self.lines = 0  # lines consumed, header and blank lines included
        # Trace lines before the first one fed (a log read from its tail: they were counted,
        # not parsed): trace line numbers continue from it, as in the whole log.
        self.trace_base = 0
        self.in_header = True
        self.base: date | None = None
        self.frames = OpenFrames()
        # Per trace line: first item's kind, whether it had one item, and its classified state.
        self.kinds = array("H")  # per trace line, _pack(first kind, single item, classified state)
        self.last_stepped: int | None = None
        self.open_par: list[_OpenParallel] = []
        self.join_stack: list[int] = []
        self.joined: set[int] = set()
        self.joined_log: list[int] = []
        self.live: set[int] = set()
        self.failed_line: int | None = None
        self.dirty: set[int] = set()
        self._ints: dict[int, int] = {}  # recent numbers, one int object each (``_line``)
        self._words: dict[str, str] = {}  # names, steps, statuses and notes seen, one str each (``_line``)
        self._times: dict[tuple, datetime] = {}  # recent event times, one datetime each (``_line``)

    @staticmethod
    def supports(first_text: str) -> bool:
        """False for a log that starts with a ``{`` block (possibly SOPS): parsed whole."""
        return _BRACE_START_RE.match(first_text) is None  # (no stripped copy of a long text)

    # -- feeding --------------------------------------------------------------------------
    def feed(self, lines: list[str], *, changes: bool = True) -> set[int]:
        log = self.log
        first_trace = len(log.trace)
        warnings_before = len(log.warnings)
        joined_before = len(self.joined_log)
        for text in lines:
            self.lines += 1
            if self.in_header:
                if not text.strip() or take_header_line(text, log):
                    continue
                self._leave_header()
            if not text.strip():
                continue
            self._line(self.lines, text)
        # apply_event appends its warnings to log.warnings; keep them in line order.
        self.line_warnings.extend(log.warnings[warnings_before:])
        del log.warnings[warnings_before:]
        settled = self._settle(self.dirty)
        self.dirty = set()
        if not changes:  # a set of every new line's index, made and dropped, would leave holes in the heap
            return settled
        return settled | set(range(first_trace, len(log.trace))) | set(self.joined_log[joined_before:])

    def _leave_header(self) -> None:
        log = self.log
        self.in_header = False
        if log.program is None:
            log.program = log.header.get("program") or log.header.get("source")
        self.base = base_date(log)

    def _line(self, number: int, text: str) -> None:
        """Parse one non-blank event line (file line ``number``) into events, a trace line and
        the parallel/step bookkeeping. Runs once per line of a 1,000,000-event log, so the
        sharing of equal values is written out here, not called per field (issue 35):

        * a line's number, an event's ``seq`` and a trace line's number are the same few
          values a line or two apart: one int object (32 bytes) for them, from ``_ints``;
        * a name, step, status or note is written on many lines (a loop's steps, an agent's
          statements): one str object for them all, from ``_words``;
        * event times close together are often the same second: one datetime, from
          ``_times`` (keyed with the UTC offset: equal instants in other zones stay apart).

        ``_ints`` and ``_times`` keep about the last ``_RECENT`` values (the oldest leave
        first), ``_words`` about ``_WORDS`` (it starts again when full)."""
        log = self.log
        ints, words, times = self._ints, self._words, self._times
        while len(ints) > _RECENT:  # about one new number a line: the oldest goes
            del ints[next(iter(ints))]
        while len(times) > _RECENT:
            del times[next(iter(times))]
        if len(words) >= _WORDS:
            words.clear()
        number = ints.setdefault(number, number)
        info = classify_line(text, self.base)
        step = info.step
        if step is not None:
            step = info.step = words.setdefault(step, step)
        if info.note is not None:
            info.note = words.setdefault(info.note, info.note)
        if not info.recognised:
            log.warnings.append(f"{self.source_name} line {number}: unrecognised event, kept as a note")
        events, frames = log.events, self.frames
        for item in info.items:
            when, name, status, kind = item.time, item.name, item.status, item.kind
            if when is not None:
                when = times.setdefault((when, when.utcoffset()), when)
            if name is not None:
                name = words.setdefault(name, name)
            if status is not None:
                status = words.setdefault(status, status)
            seq = len(events)
            # Positional (Event's field order): a call with keywords costs twice as much.
            event = Event(ints.setdefault(seq, seq), kind, info.text, when, step, name, status, number,
                          item.execution_id)
            if kind in RUN_LEVEL or log.status is not None or frames:  # else apply_event changes nothing
                apply_event(log, event, item.message, frames, self.source_name)
            events.append(event)
            if kind is EventKind.STATEMENT_COMPLETED and is_binding_event(event) and event.name:
                log.bindings.append(event.name)
        first = info.items[0]
        index = len(log.trace)
        position = index + 1 + self.trace_base
        # Positional, TraceLine's field order: line, text, state, note, binding, attempt, max_attempts, step.
        log.trace.append(TraceLine(ints.setdefault(position, position), info.text, info.state, info.note, None,
                                   first.attempt, first.max_attempts, step))
        kind = first.kind
        single = len(info.items) == 1
        self.kinds.append(_PACKED[kind, single, info.state])
        if single and kind is EventKind.PARALLEL_STARTED:
            self.join_stack.append(index)
        elif single and kind is EventKind.PARALLEL_JOINED and self.join_stack:
            start = self.join_stack.pop()
            self.joined.add(start)
            self.joined_log.append(start)
        if info.step is not None:
            self.last_stepped = index
            step = info.step or ""
            for par in self.open_par:
                if step != par.step and step.startswith(par.step):
                    par.children[step] = index
            if kind is EventKind.PARALLEL_STARTED:
                self.open_par.append(_OpenParallel(step, index))
            elif kind is EventKind.PARALLEL_JOINED and self.open_par:
                self.open_par.pop()

    # -- live states ----------------------------------------------------------------------
    def _live_set(self) -> set[int]:
        live: set[int] = set()
        if self.last_stepped is None or self.log.status is not None:
            return live
        if _KINDS[self.kinds[self.last_stepped] >> 6] in LIVE_STATES:
            live.add(self.last_stepped)
        for par in self.open_par[-8:]:
            live.add(par.index)
            for index in par.children.values():
                if index > par.index and _KINDS[self.kinds[index] >> 6] is EventKind.STATEMENT_STARTED:
                    live.add(index)
        return live

    def _state_of(self, index: int, live: set[int], failed_line: int | None) -> StatementState | None:
        kind, single, base = _unpack(self.kinds[index])
        state = base
        if single and kind in LIVE_STATES:
            if index in live:
                state = LIVE_STATES[kind]
            elif kind is EventKind.PARALLEL_STARTED and index in self.joined:
                state = StatementState.COMPLETE
            else:
                state = None
        if index == failed_line:
            state = StatementState.FAILED
        return state

    def _settle(self, extra: set[int]) -> set[int]:
        """Re-state the lines whose state can have changed; return those that did."""
        live = self._live_set()
        failed_line = None
        if self.log.status == "failed" and self.last_stepped is not None \
                and _KINDS[self.kinds[self.last_stepped] >> 6] is EventKind.STATEMENT_STARTED:
            failed_line = self.last_stepped
        touched = live | self.live | self.joined_log_recent() | extra
        for index in (failed_line, self.failed_line):
            if index is not None:
                touched.add(index)
        touched.difference_update(range(self._settled_upto, len(self.log.trace)))
        changed: set[int] = set()
        for index in chain(touched, range(self._settled_upto, len(self.log.trace))):
            state = self._state_of(index, live, failed_line)
            line = self.log.trace[index]
            if line.state is not state:
                line.state = state
                changed.add(index)
        self.live, self.failed_line = live, failed_line
        self._settled_upto = len(self.log.trace)
        self._joined_settled = len(self.joined_log)
        return changed

    _settled_upto: int = 0
    _joined_settled: int = 0

    def joined_log_recent(self) -> set[int]:
        return set(self.joined_log[self._joined_settled:])

    def status_lines(self) -> list[int]:
        """The trace lines status inference looks at (``common.status.infer_status``): the
        executing line and the last statement line (a failure there, with nothing after it,
        is the run's; an earlier one was retried or got past), in order; found without a scan."""
        picks = {self.last_stepped} if self.last_stepped is not None else set()
        executing = [i for i in self.live if self.log.trace[i].state in (StatementState.EXECUTING,
                                                                          StatementState.RETRYING)]
        if executing:
            picks.add(max(executing))
        return sorted(picks)

    # -- provisional lines ------------------------------------------------------------------
    def checkpoint(self) -> _Checkpoint:
        log = self.log
        return _Checkpoint(
            len(log.events), len(log.trace), len(self.line_warnings), len(log.bindings), self.lines,
            self.in_header, dict(log.header) if self.in_header else {},
            (log.run_id, log.program, log.ended, log.errored, log.error_message, log.resumed, log.status,
             log.bullet_status, self.base, self._settled_upto),
            self.frames.copy(),
            self.last_stepped,
            [_OpenParallel(p.step, p.index, dict(p.children)) for p in self.open_par],
            list(self.join_stack), len(self.joined_log), set(self.live), self.failed_line,
        )

    def rollback(self, cp: _Checkpoint) -> None:
        """Undo every feed since ``cp`` (their lines will be fed again, completed)."""
        log = self.log
        touched = set(self.live) | set(self.joined_log[cp.joined_log:])
        if self.failed_line is not None:
            touched.add(self.failed_line)
        del log.events[cp.events:]
        del log.trace[cp.trace:]
        del self.kinds[cp.trace:]
        del self.line_warnings[cp.warnings:]
        del log.bindings[cp.bindings:]
        for start in self.joined_log[cp.joined_log:]:
            self.joined.discard(start)
        del self.joined_log[cp.joined_log:]
        self.lines, self.in_header = cp.lines, cp.in_header
        if cp.in_header:
            log.header = cp.header
        (log.run_id, log.program, log.ended, log.errored, log.error_message, log.resumed, log.status,
         log.bullet_status, self.base, self._settled_upto) = cp.scalars
        self.frames.restore(cp.frames)
        self.last_stepped, self.open_par, self.join_stack = cp.last_stepped, cp.open_par, cp.join_stack
        self.live, self.failed_line = cp.live, cp.failed_line
        self._joined_settled = min(self._joined_settled, cp.joined_log)
        self.dirty = {i for i in touched | self.dirty if i < len(log.trace)}

    # -- the log as a whole-file parse gives it -------------------------------------------------
    def finish(self) -> EventLog:
        """``log`` with its derived fields (program, warnings, call stack) set."""
        log = self.log
        warnings: list[str] = []
        program = log.program
        if self.in_header and program is None:
            program = log.header.get("program") or log.header.get("source")
        if log.run_id and log.run_id.endswith("-"):
            warnings.append(f"{self.source_name}: run id {log.run_id!r} looks truncated")
        warnings.extend(self.line_warnings)
        stack = self.frames.innermost_first()
        for frame in stack:
            frame.status = {"failed": "failed", None: "executing"}.get(log.status)
            if log.status == "completed":
                warnings.append(f"{self.source_name}: block {frame.block}#{frame.execution_id} never returned")
        return EventLog(run_id=log.run_id, program=program, header=log.header, events=log.events, trace=log.trace,
                        call_stack=stack, ended=log.ended, errored=log.errored, error_message=log.error_message,
                        resumed=log.resumed, status=log.status, bullet_status=log.bullet_status, warnings=warnings,
                        bindings=log.bindings, encrypted_lines=0)


@dataclass(slots=True)
class EventLogTail:
    """A tailed event-log file: where reading stopped, the parser's state, and the
    provisional last line (no newline yet) parsed on top of it."""

    file: FileTail
    parser: EventLogParser
    pending: _Checkpoint | None = None  # taken before the provisional line
    pending_data: bytes = b""  # the provisional line's bytes (after the committed offset)
    warnings_at: int = 0  # where the log's warnings start in Run.warnings
    shown_warnings: int = 0  # how many log warnings Run.warnings holds
    last_time: tuple[int, datetime | None] = (0, None)  # (n events scanned, last event time among them)
    unlinked: dict[str, set[int]] = field(default_factory=dict)  # binding name -> trace lines naming it
    unlinked_ready: bool = False  # ``unlinked`` covers every line (built on the first binding write)
    from_tail: bool = False  # the parse began at the log's tail (a first screen): blocks opened before are unknown

    def committed_events(self) -> int:
        """Events parsed from complete lines (a provisional last line's are not counted)."""
        return self.pending.events if self.pending is not None else len(self.parser.log.events)

    @classmethod
    def start(cls, path: Path, source_name: str) -> EventLogTail:
        return cls(FileTail(path), EventLogParser(source_name))

    def feed_bytes(self, data: bytes, st: os.stat_result | None, *, changes: bool = True) -> set[int]:
        """Parse ``data`` (the bytes from the committed offset to the end of the file) and
        return the indexes of the trace lines it added or changed; with ``changes=False``
        (a first read: every line is new) an empty set, so a 1,000,000-line read does not
        build a set of a million numbers. The whole lines are decoded and parsed
        ``FEED_CHUNK`` bytes at a time: the text of a long log is never held as one string
        and a list of all its lines besides the lines the trace keeps. Raises
        ``ReadSuperseded`` before a chunk when the read was superseded
        (:mod:`prose_tui.backends.common.superseded`): a start-up summary whose run is being
        read in full; the parser is then half-fed and must be dropped. A background read
        (:mod:`prose_tui.backends.common.foreground`) pauses every ``FEED_LINES`` lines while a
        live change is on its way to the screen."""
        parser = self.parser
        changed: set[int] = set()
        if self.pending is not None:
            parser.rollback(self.pending)
            self.pending = None
        cut = data.rfind(b"\n") + 1
        start = 0
        while start < cut:
            check_superseded()  # a start-up summary stops here once a full read of the run began
            end = data.rfind(b"\n", start, min(start + FEED_CHUNK, cut)) + 1
            if end <= start:  # a line longer than a chunk: up to its end
                end = data.find(b"\n", start) + 1
            lines = decode(data[start:end]).splitlines()
            for at in range(0, len(lines), FEED_LINES):
                wait_turn()  # a background read gives way to a live change on its way to the screen
                fed = parser.feed(lines[at:at + FEED_LINES] if len(lines) > FEED_LINES else lines, changes=changes)
                if changes:
                    changed |= fed
            start = end
        rest = data[cut:]
        self.file.advance(cut, st, data)
        self.pending_data = rest
        if rest:
            self.pending = parser.checkpoint()
            changed |= parser.feed(decode(rest).splitlines())
        return {i for i in changed if i < len(parser.log.trace)}
