"""A coalescing mailbox between the live worker and a slower consumer (the UI thread).

The live worker produces one ``Delta`` per changed run per batch, as fast as the VM writes.
A UI that posted one message per delta would fall behind a busy VM: messages queue up,
Textual drains a queue without yielding to the event loop, and a backlog of a thousand
deltas becomes seconds of frozen screen. So the worker ``put``\\ s deltas here instead:
while a delta for a run is waiting un-taken, a new one is *merged* into it (``merge``) and
the consumer is not told again. The consumer is told once (``notify(path)``, on the
worker's thread: post a message), and ``take``\\ s the merged delta when it gets to it.

``Pace`` bounds the consumer's share of its thread: after showing a change that cost
``c`` seconds (applying it and painting it), the next one waits until ``c`` more seconds
have passed (at most ``MAX_WAIT``), so the event loop is free at least half the time
however fast changes come, and a cheap change (a few ms) is shown at once.

Textual-free.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from prose_tui.model import Delta

MAX_WAIT = 0.5  # seconds: the longest a change waits for the consumer's previous one


def merge(older: Delta, newer: Delta) -> Delta:
    """One delta saying what ``older`` then ``newer`` said, about ``newer.run``.

    Paths, bindings and changed trace lines are united (``None``, redraw the trace, wins);
    events are concatenated, except after a re-read (``newer.reread``: its events are the
    run's whole list already); the flags are or-ed."""
    if older.trace_lines is None or newer.trace_lines is None:
        trace_lines: set[int] | None = None
    else:
        trace_lines = older.trace_lines | newer.trace_lines
    return replace(
        newer,
        paths=older.paths | newer.paths,
        events=list(newer.events) if newer.reread else [*older.events, *newer.events],
        trace_lines=trace_lines,
        bindings=older.bindings | newer.bindings,
        agents=older.agents or newer.agents,
        imports=older.imports or newer.imports,
        stack=older.stack or newer.stack,
        status=older.status or newer.status,
        program=older.program or newer.program,
        reread=older.reread or newer.reread,
    )


class DeltaMailbox:
    """Deltas waiting for the consumer, one (merged) per run path.

    ``notify(path)`` is called by ``put`` when a run's first delta since the last ``take``
    arrives; later deltas for it merge silently. Thread-safe."""

    def __init__(self, notify: Callable[[Path], None]) -> None:
        self._notify = notify
        self._lock = threading.Lock()
        self._waiting: dict[Path, Delta] = {}
        self.merged = 0  # deltas merged into a waiting one (a measure of the consumer's lag)

    def put(self, delta: Delta) -> None:
        """Leave ``delta`` for the consumer (any thread; never blocks on the consumer)."""
        path = delta.run.path
        with self._lock:
            waiting = self._waiting.get(path)
            if waiting is not None:
                self._waiting[path] = merge(waiting, delta)
                self.merged += 1
                return
            self._waiting[path] = delta
        self._notify(path)

    def take(self, path: Path) -> Delta | None:
        """The merged delta waiting for ``path`` (``None`` when already taken); the next
        ``put`` for it notifies again."""
        with self._lock:
            return self._waiting.pop(path, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)


class Pace:
    """How long the consumer waits before showing the next change (see the module doc).

    ``begin()`` before showing a change, ``end()`` when it is shown (call again when the
    paint is done: the last call counts); ``wait()`` is the seconds still to wait. ``clock``
    is ``time.perf_counter`` unless a test gives another."""

    def __init__(self, *, ratio: float = 1.0, max_wait: float = MAX_WAIT,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.ratio = ratio
        self.max_wait = max_wait
        self.clock = clock
        self._start = 0.0
        self._end = 0.0
        self._turn = 0

    def begin(self) -> int:
        """A change starts being shown; returns its turn (for ``end``)."""
        self._turn += 1
        self._start = self._end = self.clock()
        return self._turn

    def end(self, turn: int | None = None) -> None:
        """The change of ``turn`` (the latest when ``None``) is shown, or painted."""
        if turn is None or turn == self._turn:
            self._end = self.clock()

    def wait(self) -> float:
        """Seconds before the next change may be shown (0: at once)."""
        cost = (self._end - self._start) * self.ratio
        return max(0.0, min(self.max_wait, self._end + cost - self.clock()))
