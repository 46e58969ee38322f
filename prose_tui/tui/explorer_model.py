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

An event-log run's program annotated from its log is ``tui/program_trace.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.history import FailureContext, Journal, failure_context
from prose_tui.model import Binding, EventKind, Run, RunFormat, RunStatus, StatementState, TraceLine
from prose_tui.tui.navigator import HistoryNavigator
from prose_tui.tui.program_trace import ProgramTrace, program_trace

_STARTS = (EventKind.STATEMENT_STARTED, EventKind.RETRY, EventKind.RUN_RESUMED)


@dataclass(frozen=True, slots=True)
class Touch:
    """What one change to the shown run touches: ``same`` run as before, ``live`` change
    (``changed`` files given), ``only_bindings`` when nothing but binding files changed;
    ``follow``: whether the trace follows the executing statement from now on (``None``:
    as it was, the user's ``f`` stands); ``failed``: the run is seen failed for the first
    time, so the cursor goes to its failure (``failure_line``, then its failure event)."""

    same: bool
    live: bool
    only_bindings: bool
    follow: bool | None = None
    failed: bool = False


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


def _utc(time: datetime) -> datetime:
    """``time`` comparable with any other event time: one without a zone is taken as UTC
    (a backend may give both, e.g. SQLite timestamps stored with and without an offset)."""
    return time if time.tzinfo is not None else time.replace(tzinfo=timezone.utc)


def failure_line(lines: list[TraceLine]) -> int:
    """The index a failed run's trace cursor rests on until (or without) its failure event
    in the history: the first line marked failed, else the last line (0 for no lines)."""
    return next((i for i, t in enumerate(lines) if t.state is StatementState.FAILED), max(0, len(lines) - 1))


def newest_binding(run: Run, changed: set[Path] | None = None) -> Binding | None:
    """The most recently written readable binding (among ``changed`` when given)."""
    candidates = [b for b in run.bindings if b.exists and not b.encrypted and b.mtime is not None
                  and (changed is None or b.path in changed)]
    if not candidates:
        return None
    return max(candidates, key=lambda b: (b.mtime or 0.0, b.name))


class ExplorerModel:
    """The explorer's state. ``journal`` feeds history replay of snapshot runs."""

    def __init__(self, journal: Journal | None = None, *, follow_on_start: bool = True) -> None:
        self.nav = HistoryNavigator(journal)
        self.follow_on_start = follow_on_start  # the config's: a run opens following its executing statement
        self.run: Run | None = None
        self.viewer_follows_writes = True  # until the user picks something to read
        self.opened_on_failure: Path | None = None
        self._program: tuple[Path | None, float | None, str | None] = (None, None, None)

    # -- the run ------------------------------------------------------------------------------
    def touch(self, run: Run | None, changed: set[Path] | None, binding_only: bool = False) -> Touch:
        """Take ``run`` as the shown run; say what the change touches. A different run
        resets the follow policy and the cursor (it starts live).

        The follow policy (the one place it is decided): a run opens following its executing
        statement (``follow_on_start``), except a failed run, which opens on its failure; a
        shown run seen failed for the first time (the read after its placeholder, or a live
        run that just failed) stops following, so nothing moves the cursor off the failure."""
        same = run is not None and self.run is not None and run.path == self.run.path
        was_failed = same and self.run is not None and self.run.status is RunStatus.FAILED
        self.run = run
        follow: bool | None = None
        if not same:
            self.viewer_follows_writes = True
            follow = self.follow_on_start
        failed = run is not None and run.status is RunStatus.FAILED and not was_failed
        if failed:
            follow = False
        return Touch(same=same, live=same and changed is not None, only_bindings=same and changed is not None and binding_only,
                     follow=follow, failed=failed)

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
        until the next event with a time; times that run backwards count as 0."""
        events = self.nav.events
        end = (self.nav.position if upto is None else upto) + 1
        totals: dict[str, list[float]] = {}
        for i, event in enumerate(events[:end]):
            if event.kind not in _STARTS or event.time is None:
                continue
            name = event.name or event.step or event.text.strip()[:40]
            nxt = next((e.time for e in events[i + 1:end] if e.time is not None), None)
            seconds = (_utc(nxt) - _utc(event.time)).total_seconds() if nxt is not None else 0.0
            entry = totals.setdefault(name, [0.0, 0])
            entry[0] += max(0.0, seconds)
            entry[1] += 1
        out = [StatementTime(name, seconds, int(n)) for name, (seconds, n) in totals.items()]
        return sorted(out, key=lambda s: (-s.seconds, s.name))
