"""The compact event log: ``state.md`` from about v0.8.1 and ``vm.log.md`` from about v0.12.

Source: FORMATS.md, Generations of the filesystem format, 2. Compact event log (also
3. contract-markdown runs, whose log may use ASCII ``->``, and 4. ``vm.log.md``), and the
"Event-log dialects" bullet of "Dialects seen in real runs".

A log is a header followed by one event per line::

    # run:20260101-120000-abc123 example.prose
    1→ research ✓
    2→ ∥start a,b
    2a→ a ✓
    2b→ b ✗ timeout
    2→ ∥done
    ---end 2026-01-01T12:05:00Z

Headers accepted: ``# run:ID program`` (``run:`` with or without a space), ``run_id:`` /
``program:`` / any ``key: value`` lines, the three-line ``# OpenProse Execution Log`` /
``# Program:`` / ``# Run:`` header, and ``# VM Log`` files whose header is ``- key: value``
bullets. The per-line rules live in :mod:`prose_tui.backends.filesystem.eventlog_lines`.

Dialect decisions (documented here because the VM is not a program):

* ``⚠`` is *completed with a warning*: STATEMENT_COMPLETED, status ``"warning"`` (or the word
  after it), trace state complete. The VM went on, so the statement is not failed. A ``⚠``
  line with neither step nor subject (``⚠ disk nearly full``) is a NOTE.
* A step line with no outcome mark is STATEMENT_STARTED. Its trace state is ``executing``
  only while it is live: it is the last step line (or an unfinished branch of a parallel
  still open at the end) and no ``---end``/``---error`` follows. An earlier started line
  gets state ``None`` (outcome not recorded). The same goes for ``retry:`` (``retrying``
  only while live), so ``Run.executing`` never points into a finished run. When the run
  ended with ``---error`` and the last step line had no outcome, that line's state is
  ``failed``.
* ``if(true)`` / ``if: true`` is STATEMENT_COMPLETED status ``"true"``; ``if(false) …`` /
  ``if: false …`` is STATEMENT_SKIPPED status ``"skip"``. Their ``name`` is ``"if"``.
* Gates are statements named ``gate`` or ``gate:name``; the word after the mark
  (``approved``, ``rejected``) becomes the status.
* ``Event.name`` is the statement's subject as written, minus a ``[tag]``, a ``(annotation)``
  and a leading ``let``/``const``/``output``/``input``/``exec``. :attr:`EventLog.bindings`
  lists the names that are bindings (see :func:`is_binding_event`).
* The last terminator wins: ``---end`` -> completed, ``---error`` -> failed, ``---resume``
  -> neither (running again); so does any event but a note after a terminator (the VM
  went on without writing ``---resume``). ``ended``/``errored`` are set only by the terminator that
  decided the status.
* ``loop:i/n`` is LOOP_ITERATION, name ``"loop"``, status ``"exit"`` when ``exit(...)``
  follows, else ``None``; ``retry:a/n`` is RETRY with status ``"a/n"`` and the trace line's
  ``attempt``/``max_attempts``; ``#id done`` is FRAME_POPPED named after its block, status
  ``"done"`` (or the outcome of a mark: ``#7 ✗ timeout`` -> ``"timeout"``, state failed).
* Terminator synonyms: ``---done``/``---complete(d)`` end, ``---fail(ed)`` errors,
  ``---resumed`` resumes; a bare ``---`` after the header is a NOTE.
* ``status`` is never taken from a ``# VM Log`` ``- status:`` bullet; that is
  ``bullet_status``, as written, for the caller to weigh.
* Blocks still open at the end stay in ``call_stack`` with status ``executing`` (no
  terminator), ``failed`` (``---error``) or ``None`` plus a warning (``---end``: the VM
  forgot the pop).
* Event times: a full ISO stamp on the line (``Z``/offsets kept), or a bare clock time
  (``[12:01:03]``) placed on the run id's date (naive); otherwise ``None``.
* A leading SOPS-encrypted JSON block (a VM appended plain events to an encrypted file) is
  skipped with one warning; the events after it are parsed.
* Look-alike marks (✔ ✅ ✘ ✖ ❌), arrows (⟶ => ➜ ➔) and ``‖`` for ``∥`` are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime

from prose_tui.backends.filesystem.eventlog_lines import (
    IDENTIFIER_RE,
    MARKS,
    STEP_RE,
    TERMINATOR_RE,
    classify_line,
)
from prose_tui.model import Event, EventKind, Frame, StatementState, TraceLine

__all__ = ["EventLog", "is_binding_event", "looks_like_event_log", "parse_event_log"]

# Values are captured greedily and stripped in code (see eventlog_lines on linear regexes).
_RUN_HEADER_RE = re.compile(r"^#\s*run\s*:\s*(?P<id>\S*)(?P<prog>.*)$", re.IGNORECASE)
_HASH_KV_RE = re.compile(r"^#+\s*(?P<key>[A-Za-z][\w -]{0,30}?)\s*:(?P<value>.*)$")
_KV_RE = re.compile(r"^(?P<bullet>[-*]\s+)?(?P<key>[A-Za-z][\w-]*)\s*:(?P<value>.*)$")
_TITLE_RE = re.compile(r"^#+\s+(?P<title>[^:\s][^:]*)$")
_EVENT_KEYWORDS = {"loop", "block", "retry", "gate", "if"}
_EVENT_CHARS = set(MARKS) | set("∥‖→")
_NOT_BINDINGS = {"if", "gate", "else", "loop", "block", "retry"}
SNIFF_LINES = 40  # the first lines ``looks_like_event_log`` judges a file by (non-empty among them)
_SNIFF_CHARS = 64 * 1024  # the head a sniff splits into lines first (more when its lines are longer)
_BRACE_START_RE = re.compile(r"\s*\{")


@dataclass(slots=True)
class EventLog:
    """What a compact event log says (FORMATS.md, Generations, 2. Compact event log).

    ``header`` maps lower-case keys (``program``, ``run_id``, ``status``, ``title``...) to
    values as written. ``events`` has one or more events per non-blank line after the
    header, ``seq`` dense from 0, ``line`` the 1-based line in the file. ``trace`` has one
    :class:`TraceLine` per event line (``line`` 1-based within the trace, ``text`` the line
    as written); the k-th trace line belongs to the events with the k-th distinct
    ``Event.line``. ``call_stack`` holds the frames still open at the end, innermost first.
    Times are timezone-aware when the file gave a zone. ``status`` is ``"completed"``,
    ``"failed"`` or ``None`` (running or interrupted: the caller decides from file age).
    ``warnings`` are human sentences. ``bindings`` lists, in order, the names of completed
    steps that are bindings (:func:`is_binding_event`). ``encrypted_lines`` counts the lines
    of a leading SOPS-encrypted JSON block that a VM appended plain events after; the block
    is skipped (not shown as notes) and said so in ``warnings``.
    """

    run_id: str | None = None
    program: str | None = None
    header: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    trace: list[TraceLine] = field(default_factory=list)
    call_stack: list[Frame] = field(default_factory=list)
    ended: datetime | None = None
    errored: datetime | None = None
    error_message: str | None = None
    resumed: int = 0
    status: str | None = None
    bullet_status: str | None = None
    warnings: list[str] = field(default_factory=list)
    bindings: list[str] = field(default_factory=list)
    encrypted_lines: int = 0

    @property
    def failing_event(self) -> Event | None:
        """For a failed run, the statement it failed at: the last STATEMENT_FAILED or
        STATEMENT_STARTED event (a step begun and never finished before ``---error``).
        ``None`` when the run did not fail or has no such event."""
        if self.status != "failed":
            return None
        for event in reversed(self.events):
            if event.kind in (EventKind.STATEMENT_FAILED, EventKind.STATEMENT_STARTED):
                return event
        return None


def is_binding_event(event: Event) -> bool:
    """True when ``event`` is a completed step whose name is an identifier (the binding it
    wrote, to be found at ``bindings/{name}.md``). ``if``/``gate`` steps are not bindings."""
    return (
        event.kind is EventKind.STATEMENT_COMPLETED
        and event.name is not None
        and IDENTIFIER_RE.match(event.name) is not None
        and event.name not in _NOT_BINDINGS
    )


def looks_like_event_log(text: str) -> bool:
    """Cheap sniff of the first lines: is ``text`` a compact event log or a ``# VM Log``?

    True for a ``# run:`` first line, a ``run_id:`` line, the three-line ``# OpenProse
    Execution Log`` / ``# Program:`` / ``# Run:`` header, ``N→``/``N->`` step lines, or a
    ``# VM Log`` title followed by ``- key: value`` bullets. False for annotated snapshots
    (``## Execution Trace``) and anything else. Never raises.
    """
    if not isinstance(text, str):
        return False
    if _BRACE_START_RE.match(text):  # a leading ``{`` block (SOPS) may be long: split it all
        all_lines = text.splitlines()
        all_lines = all_lines[_sops_prefix_end(all_lines):]
    else:
        all_lines = _first_lines(text, SNIFF_LINES)
    lines = [ln.strip() for ln in all_lines[:SNIFF_LINES]]
    lines = [ln for ln in lines if ln]
    if not lines:
        return False
    if any(ln.lower().startswith("## execution trace") for ln in lines):
        return False
    first = lines[0]
    if _RUN_HEADER_RE.match(first):
        return True
    if first.lower().startswith("# openprose execution log"):
        heads = [ln.lower() for ln in lines[1:4]]
        return any(h.startswith("# program:") for h in heads) and any(h.startswith("# run:") for h in heads)
    if first.lower().startswith("# vm log"):
        return len(lines) == 1 or any(_KV_RE.match(ln) and ln.startswith(("-", "*")) for ln in lines[1:6])
    if any(re.match(r"^run_id\s*:", ln, re.IGNORECASE) for ln in lines[:10]):
        return True
    return any(STEP_RE.match(ln) for ln in lines)


def _first_lines(text: str, count: int) -> list[str]:
    """``text.splitlines()[:count]`` without splitting the rest of ``text`` (a 1,000,000-event
    log is sniffed without a list of its lines)."""
    size = _SNIFF_CHARS
    while True:
        lines = text[:size].splitlines()
        if len(lines) > count or size >= len(text):  # the first ``count`` are whole lines
            return lines[:count]
        size *= 4


def _sops_prefix_end(lines: list[str]) -> int:
    """Number of leading lines forming a SOPS-encrypted JSON object (0 if there is none).

    The block runs from a first ``{`` line to the first ``}`` line at column 0; when that
    closing line is missing (a truncated file), up to the first event-looking line.
    """
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines) or not lines[start].lstrip().startswith("{"):
        return 0
    head = "\n".join(lines[start : start + 50])
    if '"sops"' not in head and "ENC[" not in head:
        return 0
    for i in range(start, len(lines)):
        if lines[i].rstrip() == "}":
            return i + 1
    for i in range(start, len(lines)):
        if STEP_RE.match(lines[i]) or TERMINATOR_RE.match(lines[i]):
            return i
    return len(lines)


def take_header_line(line: str, log: EventLog) -> bool:
    """Take ``line`` into ``log``'s header if it is a header line; return whether it was.

    Header lines (FORMATS.md, generations 2-4): ``# run:ID program``, ``# key: value`` and
    ``key: value`` (``- key: value`` bullets of a ``# VM Log``; a ``- status:`` bullet goes
    to ``bullet_status``), a ``# Title`` and a bare ``---``. A step or terminator line is
    not one. Sets ``run_id``/``program`` once and keeps the first of each key."""
    stripped = line.strip()
    if stripped == "---":
        return True
    if TERMINATOR_RE.match(stripped) or STEP_RE.match(stripped):
        return False
    if m := _RUN_HEADER_RE.match(stripped):
        if log.run_id is None:
            log.run_id = m.group("id") or None
        if log.program is None and m.group("prog").strip():
            log.program = m.group("prog").strip()
        return True
    m = _HASH_KV_RE.match(stripped) if stripped.startswith("#") else _KV_RE.match(stripped)
    if m and not (_EVENT_CHARS & set(m.group("value"))) and m.group("key").lower() not in _EVENT_KEYWORDS:
        key = re.sub(r"[\s-]+", "_", m.group("key").strip().lower())
        value = m.group("value").strip()
        log.header.setdefault(key, value)
        if key in ("run_id", "run", "id") and log.run_id is None:
            log.run_id = value or None
        if key == "status" and m.groupdict().get("bullet"):
            log.bullet_status = value
        return True
    if m := _TITLE_RE.match(stripped):
        log.header.setdefault("title", m.group("title").strip())
        return True
    return False


def base_date(log: EventLog) -> date | None:
    """The run's date for bare clock times (``[12:01:03]``): the run id's ``YYYYMMDD``, else
    the ``started:`` header's date, else ``None``. Read once the header is complete."""
    candidates = []
    if log.run_id and (m := re.match(r"^(\d{8})", log.run_id)):
        candidates.append(m.group(1))
    if started := log.header.get("started"):
        candidates.append(started[:10])
    for candidate in candidates:
        try:
            return date.fromisoformat(candidate)
        except ValueError:
            continue
    return None


def parse_event_log(text: str, *, source_name: str = "state.md") -> EventLog:
    """Parse a compact event log (``state.md``) or ``vm.log.md`` into an :class:`EventLog`.

    ``text`` is the whole file; ``source_name`` only labels warnings. Every non-blank line
    after the header becomes at least one event; a line no rule matches is kept as a NOTE
    and warned about. Never raises on a ``str`` (anything else gives an empty log with a
    warning). Source: FORMATS.md, Generations of the filesystem format, 2. Compact event log.
    """
    log = EventLog()
    if not isinstance(text, str):
        log.warnings.append(f"{source_name}: not text, nothing parsed")
        return log
    try:
        _parse_into(log, text, source_name)
    except Exception as exc:  # pragma: no cover - a safety net; the rules should not raise
        log.warnings.append(f"{source_name}: parsing stopped early ({type(exc).__name__}: {exc})")
    return log


def _parse_into(log: EventLog, text: str, source_name: str) -> None:
    lines = text.splitlines()
    index = log.encrypted_lines = _sops_prefix_end(lines)
    if index:
        log.warnings.append(f"{source_name} lines 1-{index}: SOPS-encrypted block, not readable; "
                            "the plain lines after it are parsed")
    while index < len(lines) and (not lines[index].strip() or take_header_line(lines[index], log)):
        index += 1
    if log.program is None:
        log.program = log.header.get("program") or log.header.get("source")
    if log.run_id and log.run_id.endswith("-"):
        log.warnings.append(f"{source_name}: run id {log.run_id!r} looks truncated")
    base = base_date(log)
    # Per trace line, what settling its live state needs: (step, first item's kind, one item?),
    # a tuple of plain values (the collector stops tracking it), not the whole LineInfo.
    shapes: list[tuple[str | None, EventKind, bool]] = []
    frames = OpenFrames()
    events = log.events
    position = 0
    for number in range(index, len(lines)):
        line = lines[number]
        if not line.strip():
            continue
        info = classify_line(line, base)
        number += 1
        position += 1
        if not info.recognised:
            log.warnings.append(f"{source_name} line {number}: unrecognised event, kept as a note")
        for item in info.items:
            # Positional, in Event's field order (a call with keywords costs twice as much).
            event = Event(len(events), item.kind, info.text, item.time, info.step, item.name, item.status,
                          number, item.execution_id)
            if item.kind in RUN_LEVEL or log.status is not None or frames:  # else apply_event changes nothing
                apply_event(log, event, item.message, frames, source_name)
            events.append(event)
        first = info.items[0]
        # Positional: line, text, state, note, binding, attempt, max_attempts, step.
        log.trace.append(TraceLine(position, info.text, info.state, info.note, None, first.attempt,
                                   first.max_attempts, info.step))
        shapes.append((info.step, first.kind, len(info.items) == 1))
    _settle_live_states(log, shapes)
    for frame in frames.innermost_first():
        frame.status = {"failed": "failed", None: "executing"}.get(log.status)
        if log.status == "completed":
            log.warnings.append(f"{source_name}: block {frame.block}#{frame.execution_id} never returned")
    log.call_stack = frames.innermost_first()
    completed = EventKind.STATEMENT_COMPLETED
    log.bindings = [e.name for e in log.events if e.kind is completed and is_binding_event(e) and e.name]


class OpenFrames:
    """The blocks of an event log pushed (``4→ block:process#43``) and not yet popped
    (``4→ #43 done``), in push order; push, pop-by-id and top are O(1). Each is a
    :class:`~prose_tui.model.Frame` with depth, status ``executing`` and its parent's id."""

    def __init__(self) -> None:
        self._frames: dict[int, Frame] = {}  # push counter -> frame, insertion-ordered
        self._by_id: dict[int | None, list[int]] = {}
        self._counter = 0

    def __len__(self) -> int:
        """How many frames are open."""
        return len(self._frames)

    def top(self) -> Frame | None:
        """The innermost open frame, ``None`` when none is open."""
        return self._frames[next(reversed(self._frames))] if self._frames else None

    def push(self, execution_id: int | None, block: str) -> None:
        """Open a frame for ``block`` inside the current top."""
        top = self.top()
        self._counter += 1
        self._frames[self._counter] = Frame(
            execution_id, block, depth=len(self._frames) + 1, status="executing",
            parent_id=top.execution_id if top else None,
        )
        self._by_id.setdefault(execution_id, []).append(self._counter)

    def pop(self, execution_id: int | None) -> Frame | None:
        """Remove the latest open frame with this id (not necessarily the top); None if none."""
        pushed = self._by_id.get(execution_id)
        return self._frames.pop(pushed.pop()) if pushed else None

    def innermost_first(self) -> list[Frame]:
        """The open frames, innermost first (the order of ``Run.call_stack``)."""
        return list(reversed(self._frames.values()))

    def copy(self) -> OpenFrames:
        """A copy whose pushes and pops do not touch this one (the frames themselves are
        shared): a checkpoint of the incremental parser."""
        other = OpenFrames()
        other._frames, other._by_id, other._counter = dict(self._frames), {k: list(v) for k, v in self._by_id.items()}, self._counter
        return other

    def restore(self, saved: OpenFrames) -> None:
        """Become ``saved`` (a :meth:`copy`), undoing every push and pop since it was taken."""
        self._frames, self._by_id, self._counter = saved._frames, saved._by_id, saved._counter


def apply_event(log: EventLog, event: Event, message: str | None, frames: OpenFrames, source_name: str) -> None:
    """Fold one event into the run-level state of ``log`` before it is appended: a frame
    push or pop on ``frames`` (a pop names the event after its block; an unmatched one is
    a warning), a terminator's status and times (``---end``/``---error``/``---resume``), and
    the innermost open block's id on an event without one. ``message`` is the error text
    of ``---error``; ``source_name`` labels warnings."""
    kind = event.kind
    if kind is EventKind.FRAME_PUSHED:
        frames.push(event.execution_id, event.name or "?")
        return
    if kind is EventKind.FRAME_POPPED:
        popped = frames.pop(event.execution_id)
        if popped is not None:
            event.name = popped.block
            return
        log.warnings.append(f"{source_name} line {event.line}: #{event.execution_id} done "
                            "but no open block has that id")
        return
    if kind is EventKind.RUN_ENDED:
        log.status, log.ended, log.errored, log.error_message = "completed", event.time, None, None
        if event.time is None:
            log.warnings.append(f"{source_name} line {event.line}: ---end without a readable timestamp")
        return
    if kind is EventKind.RUN_ERRORED:
        log.status, log.ended, log.errored, log.error_message = "failed", None, event.time, message
        return
    if kind is EventKind.RUN_RESUMED:
        log.status, log.ended, log.errored, log.error_message = None, None, None, None
        log.resumed += 1
        return
    if log.status is not None and kind is not EventKind.NOTE:
        # A step after ``---end``/``---error`` without ``---resume``: the VM went on, and the
        # log no longer ends with its terminator (FORMATS.md: neither = running or interrupted).
        log.status, log.ended, log.errored, log.error_message = None, None, None, None
    top = frames.top()
    if top is not None and event.execution_id is None and kind is not EventKind.NOTE:
        event.execution_id = top.execution_id


RUN_LEVEL = frozenset({EventKind.FRAME_PUSHED, EventKind.FRAME_POPPED, EventKind.RUN_ENDED,
                       EventKind.RUN_ERRORED, EventKind.RUN_RESUMED})
"""The events :func:`apply_event` always has work for; any other changes nothing while no
terminator was seen and no block is open (the parsers skip the call then: once a line)."""

LIVE_STATES = {
    EventKind.STATEMENT_STARTED: StatementState.EXECUTING,
    EventKind.PARALLEL_STARTED: StatementState.EXECUTING,
    EventKind.RETRY: StatementState.RETRYING,
}
"""The trace state of a started line (``N→ name``, ``∥start``, ``retry:a/n``) while it is
still live: the last step, or an unfinished branch of a parallel still open at the end."""


def _settle_live_states(log: EventLog, shapes: list[tuple[str | None, EventKind, bool]]) -> None:
    """Give started/retry trace lines ``executing``/``retrying`` only where still live.
    ``shapes`` has, per trace line, its step, its first event's kind and whether it has one."""
    # One pass: the step lines, the single-item lines whose state depends on what follows
    # (``pending``: started, retry, ∥start) and the ∥start lines a later ∥done closed
    # (``joined``, innermost first); the rest of the work is on those lines only.
    stepped: list[int] = []
    pending: list[int] = []
    open_starts: list[int] = []
    joined: set[int] = set()
    for i, (step, kind, single) in enumerate(shapes):
        if step is not None:
            stepped.append(i)
        if single:
            if kind in LIVE_STATES:
                pending.append(i)
                if kind is EventKind.PARALLEL_STARTED:
                    open_starts.append(i)
            elif kind is EventKind.PARALLEL_JOINED and open_starts:
                joined.add(open_starts.pop())
    live: set[int] = set()
    if stepped and log.status is None:
        last = stepped[-1]
        if shapes[last][1] in LIVE_STATES:
            live.add(last)
        open_par: list[tuple[str, int]] = []
        for i in stepped:
            kind = shapes[i][1]
            if kind is EventKind.PARALLEL_STARTED:
                open_par.append((shapes[i][0] or "", i))
            elif kind is EventKind.PARALLEL_JOINED and open_par:
                open_par.pop()
        for par_step, start in open_par[-8:]:  # innermost few: bounded work on odd files
            live.add(start)
            seen: set[str] = set()
            for i in reversed([j for j in stepped if j > start]):
                step = shapes[i][0] or ""
                if step.startswith(par_step) and step != par_step and step not in seen \
                        and shapes[i][1] is EventKind.STATEMENT_STARTED:
                    live.add(i)
                seen.add(step)
    for i in pending:
        kind = shapes[i][1]
        if i in live:
            log.trace[i].state = LIVE_STATES[kind]
        elif kind is EventKind.PARALLEL_STARTED and i in joined:
            log.trace[i].state = StatementState.COMPLETE
        else:
            log.trace[i].state = None
    if log.status == "failed" and stepped:
        last = stepped[-1]
        if shapes[last][1] is EventKind.STATEMENT_STARTED:
            log.trace[last].state = StatementState.FAILED
