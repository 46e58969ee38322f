"""What the explorer shows, without Textual: the current run, the history cursor, the follow
policy and what a live change touches.

The screen (``tui/screens/explorer.py``) lays this out and maps keys to it; everything it
decides is here so it can be tested without an app:

* ``run``: the run on screen; ``nav`` the history cursor on it (``HistoryNavigator``).
* ``view()``: the run as of the cursor (the run itself when live); every pane, the header
  and the status line render this, so a frozen cursor shows that moment everywhere.
* ``moment()``: where the cursor is (event index, 0-based like ``Event.seq`` and
  ``prose-tui show --at N``), its time and the status as of then.
* ``touch(run, changed)``: what a live change means for the panes (``Touch``).
* the history moves (``step``, ``start``, ``live``, ``problem``, ``first_failure``) return
  a ``Moved`` saying whether the cursor moved and what to tell the user when it did not.
* ``statement_times()``: where the time went, per statement, slowest first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.history import FailureContext, Journal, failure_context
from prose_tui.model import Binding, EventKind, Run, RunFormat, RunStatus, TraceLine, assigned_name
from prose_tui.tui.navigator import HistoryNavigator

_STARTS = (EventKind.STATEMENT_STARTED, EventKind.RETRY, EventKind.RUN_RESUMED)


@dataclass(frozen=True, slots=True)
class Touch:
    """What one change to the shown run touches: ``same`` run as before, ``live`` change
    (``changed`` files given), ``only_bindings`` when nothing but binding files changed."""

    same: bool
    live: bool
    only_bindings: bool


@dataclass(frozen=True, slots=True)
class Moment:
    """The moment under the cursor. ``index`` is 0-based (``Event.seq``), ``last`` the last
    index; ``time`` the event's time (``None`` where unknown); ``status``/``reason`` the run's
    status as of then."""

    live: bool
    index: int
    last: int
    time: datetime | None
    status: RunStatus
    reason: str

    def label(self, today: datetime | None = None) -> str:
        """``as of event 41 of 0–85 · 14:02:11`` (the date too where it is not today)."""
        when = ""
        if self.time is not None:
            when = f" · {when_text(self.time, today)}"
        return f"as of event {self.index} of 0–{self.last}{when}"


@dataclass(frozen=True, slots=True)
class Moved:
    """The result of a history key: ``moved`` or not, and ``message`` for the user."""

    moved: bool
    message: str = ""


@dataclass(frozen=True, slots=True)
class StatementTime:
    """Seconds spent on one statement (summed over its attempts), how many times it began."""

    name: str
    seconds: float
    attempts: int


def when_text(time: datetime, today: datetime | None = None) -> str:
    """``14:02:11`` for today (UTC), ``2026-11-21 14:02:11`` for another day."""
    t = time.astimezone(timezone.utc) if time.tzinfo else time
    today = today or datetime.now(timezone.utc)
    if t.date() == today.date():
        return f"{t:%H:%M:%S}"
    return f"{t:%Y-%m-%d %H:%M:%S}"


def newest_binding(run: Run, changed: set[Path] | None = None) -> Binding | None:
    """The most recently written readable binding (among ``changed`` when given)."""
    candidates = [b for b in run.bindings if b.exists and not b.encrypted and b.mtime is not None
                  and (changed is None or b.path in changed)]
    if not candidates:
        return None
    return max(candidates, key=lambda b: (b.mtime or 0.0, b.name))


class ExplorerModel:
    """The explorer's state. ``journal`` feeds history replay of snapshot runs."""

    def __init__(self, journal: Journal | None = None) -> None:
        self.nav = HistoryNavigator(journal)
        self.run: Run | None = None
        self.viewer_follows_writes = True  # until the user picks something to read
        self.opened_on_failure: Path | None = None
        self._program: tuple[Path | None, float | None, str | None] = (None, None, None)
        self._clock: _Clock | None = None  # statement_times carried forward

    # -- the run ------------------------------------------------------------------------------
    def touch(self, run: Run | None, changed: set[Path] | None, binding_only: bool = False) -> Touch:
        """Take ``run`` as the shown run; say what the change touches. A different run
        resets the follow policy and the cursor (it starts live)."""
        same = run is not None and self.run is not None and run.path == self.run.path
        self.run = run
        if not same:
            self.viewer_follows_writes = True
        return Touch(same=same, live=same and changed is not None, only_bindings=same and changed is not None and binding_only)

    def load_history(self) -> None:
        self.nav.load(self.run)

    def view(self) -> Run | None:
        return self.nav.view(self.run) if self.run is not None else None

    def moment(self) -> Moment | None:
        """The cursor's moment, ``None`` without a run or events."""
        events = self.nav.events
        if self.run is None or not events:
            return None
        index = self.nav.position
        event = events[index]
        view = self.view() or self.run
        return Moment(live=self.nav.live, index=index, last=len(events) - 1, time=event.time,
                      status=view.status, reason=view.status_reason)

    def failure_to_open_on(self) -> FailureContext | None:
        """For a failed run seen for the first time (once per run): its first failure, to open
        on (report and statement) while the cursor stays live, so the run reads as failed."""
        run = self.run
        if run is None or run.status is not RunStatus.FAILED or self.opened_on_failure == run.path:
            return None
        history = self.nav.history
        index = history.first_failure() if history is not None else None
        if history is None or index is None:
            return None
        self.opened_on_failure = run.path
        try:
            return failure_context(run, history, index)
        except Exception:  # a failure that cannot be explained must not stop the run opening
            return None

    def newest_binding_now(self) -> Binding | None:
        """The binding written last as of the cursor: live, the newest file; at a past event,
        the one the latest ``binding_written`` event up to it names (file times are of now)."""
        view = self.view()
        if view is None:
            return None
        if self.nav.live:
            return newest_binding(view)
        for event in reversed(self.nav.events[: self.nav.position + 1]):
            if event.kind is not EventKind.BINDING_WRITTEN:
                continue
            for b in view.bindings:
                stem = b.path.stem
                if b.exists and (event.name in (b.name, stem) or (stem and stem in event.text)):
                    return b
        return None

    def program_view(self, view: Run) -> ProgramTrace | None:
        """An event-log or contract run's program annotated from its log, when the program
        file is there (read again only when the file changes)."""
        path = view.program_path
        if view.format not in (RunFormat.EVENT_LOG, RunFormat.CONTRACT) or path is None:
            return None
        try:
            mtime = path.stat().st_mtime
            if self._program[:2] != (path, mtime):
                self._program = (path, mtime, path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None
        text = self._program[2]
        return program_trace(view.trace, text) if text else None

    # -- history moves -----------------------------------------------------------------------------
    def step(self, delta: int) -> Moved:
        return Moved(self.nav.step(delta), "This run has no events to step through")

    def start(self) -> Moved:
        return Moved(self.nav.to_start(), "This run has no events to step through")

    def live(self) -> Moved:
        self.nav.go_live()
        return Moved(True)

    def to(self, index: int) -> Moved:
        return Moved(self.nav.move_to(index), "This run has no events to step through")

    def problem(self, forward: bool) -> Moved:
        found = self.nav.next_problem(forward)
        return Moved(found is not None, f"No {'later' if forward else 'earlier'} failure or retry")

    def first_failure(self) -> Moved:
        return Moved(self.nav.first_failure() is not None, "This run has no failure")

    def failure_here(self) -> FailureContext | None:
        return self.nav.failure_here(self.run) if self.run is not None else None

    # -- where the time went -----------------------------------------------------------------------
    def statement_times(self, upto: int | None = None) -> list[StatementTime]:
        """Seconds per statement up to the cursor, slowest first: each start (or retry) runs
        until the next event with a time; times that run backwards count as 0.

        Following a live run this costs what was appended since the last call (``_Clock``
        carries on where it stopped while the history only grew)."""
        events = self.nav.events
        end = (self.nav.position if upto is None else upto) + 1
        clock = self._clock
        if clock is None or not clock.continues(events, end):
            clock = self._clock = _Clock()
        return clock.advance(events, end)


class _Clock:
    """``statement_times`` carried forward over a growing list of events.

    ``done`` events are counted; ``pending`` are the starts (name, time) still waiting for
    the next event with a time; ``totals`` maps a name to [seconds, starts]."""

    def __init__(self) -> None:
        self.events: list | None = None
        self.done = 0
        self.last: object = None  # the last event counted (the list may be a new one that grew)
        self.pending: list[tuple[str, datetime]] = []
        self.totals: dict[str, list[float]] = {}
        self.sorted: list[StatementTime] | None = None

    def continues(self, events: list, end: int) -> bool:
        """True when ``events[:end]`` extends what was counted (same events, not fewer)."""
        if end < self.done:
            return False
        if self.done == 0:
            return True
        return len(events) >= self.done and events[self.done - 1] is self.last

    def advance(self, events: list, end: int) -> list[StatementTime]:
        end = min(end, len(events))
        if end > self.done:
            totals, pending = self.totals, self.pending
            for event in events[self.done:end]:
                time = event.time
                if time is not None and pending:
                    for name, began in pending:
                        totals[name][0] += max(0.0, (time - began).total_seconds())
                    pending.clear()
                if event.kind in _STARTS and time is not None:
                    name = event.name or event.step or event.text.strip()[:40]
                    entry = totals.setdefault(name, [0.0, 0])
                    entry[1] += 1
                    pending.append((name, time))
            self.done = end
            self.last = events[end - 1]
            self.sorted = None
        if self.sorted is None:
            out = [StatementTime(name, seconds, int(n)) for name, (seconds, n) in self.totals.items()]
            self.sorted = sorted(out, key=lambda s: (-s.seconds, s.name))
        return self.sorted


# -- event-log runs: the program annotated from the log ------------------------------------------------
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
