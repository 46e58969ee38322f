"""Runs kept off disk (a PostgreSQL database) are polled, not watched (issue 13).

``SourcePoll`` is a component of the explorer's ``RunFeed``: a thread worker on the screen
polls the workspace's sources on a fixed cadence (``poll_interval``, or at once on a LISTEN
notification) whatever the screen is doing, and hands over what a poll found without waiting
for it: a run's delta to the live inbox (merged with one still waiting, shown like a change
on disk), the rest (runs added or removed, list rows, the source's state) to one call the
screen takes when it can, merged into while it waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from textual.css.query import NoMatches
from textual.worker import get_current_worker

from prose_tui.live.workspace import Applied, Workspace
from prose_tui.tui.live_inbox import LiveInbox


class PollHost(Protocol):
    """What the poll uses of the screen: a thread worker, the UI loop, ``is_attached``."""

    @property
    def is_attached(self) -> bool: ...

    def run_worker(self, work: Any, name: str | None = ..., group: str = ..., description: str = ...,
                   exit_on_error: bool = ..., start: bool = ..., exclusive: bool = ..., thread: bool = ...) -> Any: ...
    def call_later(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...


class SourcePoll:
    """Polls ``workspace``'s sources in a worker on ``screen`` until ``stopped`` is set (or
    the worker is cancelled); ``inbox()`` is where a run's delta goes (the live feed's, when
    watching), ``polled`` takes the rest on the UI thread. ``polls`` counts the polls made
    (tests wait on it)."""

    def __init__(self, screen: PollHost, workspace: Workspace, *, stopped: threading.Event,
                 inbox: Callable[[], LiveInbox | None], polled: Callable[[Applied], None]) -> None:
        self.screen = screen
        self.workspace = workspace
        self.stopped = stopped
        self.inbox = inbox
        self.polled = polled
        self.polls = 0
        self._lock = threading.Lock()
        self._waiting: Applied | None = None  # what polls found, waiting for the screen to take it

    def start(self) -> None:
        """Poll in a thread worker on the screen (group ``poll``; a new start replaces one running)."""
        self.screen.run_worker(self._poll, name="_poll_sources", group="poll", exclusive=True, thread=True)

    def _poll(self) -> None:
        """Runs off disk (a PostgreSQL database) are polled, not watched: on a fixed cadence of
        ``poll_interval`` seconds (or at once on a LISTEN notification), whatever the screen
        is doing. The source lists new and removed runs and polls the runs read in full (the
        pipeline leaves them to it). What a poll found is handed over without waiting for the
        screen (:meth:`_hand_over`): a run's delta goes to the live inbox (merged with one
        still waiting, shown as a delta like a change on disk), the rest to one waiting call."""
        worker = get_current_worker()
        sources = self.workspace.sources
        interval = min(s.poll_interval for s in sources)
        wait = sources[0].wait if len(sources) == 1 and sources[0].notifies else None
        shown: list[str] | None = None
        due = time.monotonic()
        gone = [False]

        def runs_polled(applied: Applied) -> None:  # the runs read in full: handed over before the list is asked
            if not applied.empty and not self._hand_over(applied, False):
                gone[0] = True

        while not worker.is_cancelled and not self.stopped.is_set():
            applied = self.workspace.poll_sources(on_deltas=runs_polled)
            self.polls += 1
            if gone[0]:
                return
            states = self.workspace.source_states()
            if not applied.empty or states != shown:  # nothing to hand over for a quiet poll
                if not self._hand_over(applied, states != shown):
                    return
                shown = states
            due += interval
            now = time.monotonic()
            if due < now:
                due = now  # a poll slower than the cadence: the next one at once, no burst to catch up
            if wait is not None:
                if wait(due - now):
                    due = time.monotonic()  # notified: polled now, the cadence restarts from here
            else:
                self.stopped.wait(due - now)

    def _hand_over(self, applied: Applied, state_moved: bool) -> bool:
        """Give what one poll found to the screen without waiting for it (poll worker): the
        deltas to the inbox, the rest (and a source's new state, ``state_moved``) to one call
        that waits for the screen, merged into it while it waits. ``False`` when the screen
        is gone."""
        inbox = self.inbox()
        rest = Applied(runs_added=applied.runs_added, runs_removed=applied.runs_removed)
        for path, change in applied.changed.items():
            delta = applied.deltas.get(path)
            if delta is not None and inbox is not None:
                delta.paths |= change.paths  # what show_run is told changed (the run's key: more than bindings)
                inbox.put(delta)
            else:
                rest.changed[path] = change
        if rest.empty and not state_moved:
            return True  # only deltas: the inbox tells the screen
        with self._lock:
            waiting = self._waiting
            if waiting is not None:  # the screen has not taken the last one yet: merge into it
                waiting.changed.update(rest.changed)
                waiting.runs_added += [p for p in rest.runs_added if p not in waiting.runs_added]
                waiting.runs_removed += rest.runs_removed
                return True
            self._waiting = rest
        if not self.screen.is_attached:
            return False
        try:
            self.screen.call_later(self._take_polled)  # posts a message: thread-safe, does not wait
        except RuntimeError:  # the app's loop is closed
            return False
        return True

    def _take_polled(self) -> None:
        with self._lock:
            applied, self._waiting = self._waiting, None
        if applied is not None and self.screen.is_attached:
            try:
                self.polled(applied)
            except NoMatches:
                pass  # the screen is closing
