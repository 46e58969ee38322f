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
however fast changes come; and a steady stream of changes is shown at most about three
times a second, twice under pressure, and once a second when the pressure lasts (a frame
costs the same whether it shows one event or ten: a run writing 10 events a second cost
the explorer 6.3-7.4 % of a core at two frames a second, 4.5 % at one), while a change
after a quiet moment, or a few close together, are shown at once.

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
FRAME_INTERVAL = 0.3  # seconds per frame while changes stream in (after a burst)
BUSY_INTERVAL = 0.5  # seconds per frame under pressure
STREAM_INTERVAL = 1.0  # seconds per frame when the pressure lasts (a run streaming events)
PRESSED = 2  # consecutive frames of merged changes that make pressure
STREAMING = 6  # consecutive frames of merged changes that make a stream (3 s at BUSY_INTERVAL)
BURST = 3  # frames shown at once before the interval applies


def merge(older: Delta, newer: Delta) -> Delta:
    """One delta saying what ``older`` then ``newer`` said, about ``newer.run``.

    Paths, bindings and changed trace lines are united (``None``, redraw the trace, wins);
    events are concatenated, except after a re-read (``newer.reread``: its events are the
    run's whole list already); the flags are or-ed, but ``streaming`` is the newer's (a
    stream that ended is no longer paced)."""
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
        values={**older.values, **newer.values},
        streaming=newer.streaming,
    )


class DeltaMailbox:
    """Deltas waiting for the consumer, one (merged) per run path.

    ``notify(path)`` is called by ``put`` when a run's first delta since the last ``take``
    arrives; later deltas for it merge silently. Thread-safe."""

    def __init__(self, notify: Callable[[Path], None]) -> None:
        self._notify = notify
        self._lock = threading.Lock()
        self._waiting: dict[Path, Delta] = {}
        self._counts: dict[Path, int] = {}
        self.merged = 0  # deltas merged into a waiting one (a measure of the consumer's lag)

    def put(self, delta: Delta) -> None:
        """Leave ``delta`` for the consumer (any thread; never blocks on the consumer)."""
        path = delta.run.path
        with self._lock:
            waiting = self._waiting.get(path)
            if waiting is not None:
                self._waiting[path] = merge(waiting, delta)
                self._counts[path] += 1
                self.merged += 1
                return
            self._waiting[path] = delta
            self._counts[path] = 1
        self._notify(path)

    def take(self, path: Path) -> Delta | None:
        """The merged delta waiting for ``path`` (``None`` when already taken); the next
        ``put`` for it notifies again."""
        return self.take_counted(path)[0]

    def take_counted(self, path: Path) -> tuple[Delta | None, int]:
        """``take``, with how many deltas were merged into it (0 when none waited)."""
        with self._lock:
            return self._waiting.pop(path, None), self._counts.pop(path, 0)

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)


class Pace:
    """How long the consumer waits before showing the next change (see the module doc).

    Two rules, the longer wait wins:

    * duty: after a change that took ``c`` seconds to show (apply and paint), wait
      ``c * ratio`` (at most ``max_wait``), so showing changes leaves the thread free;
    * frame rate: a bucket of ``burst`` frames refilled at one per ``interval`` seconds. A
      change after a quiet moment, or a few in quick succession (a binding, then the state
      file), are shown at once; a steady stream is shown at most once per ``interval``
      (0.3 s), each frame with what arrived meanwhile. Under sustained pressure (the last
      ``PRESSED`` frames each carried several merged changes) one per ``busy_interval``
      (0.5 s), and once the last ``STREAMING`` frames did, one per ``stream_interval``
      (1 s, as top or k9s refresh): a frame of the explorer costs 12-20 ms of CPU at
      200x50 whether it shows one event or ten, so a run writing 10 events a second costs
      one frame a second. A frame that carries a single change ends the pressure, unless
      it came within a stream (``Delta.streaming``: the watcher then batches the writes, so
      one delta may carry several; the caller passes ``merged`` 2 for it).

    ``begin(merged)`` before showing a change made of ``merged`` deltas, ``end()`` when it
    is shown (call again when the paint is done: the last call counts); ``wait()`` is the
    seconds still to wait. ``clock`` is ``time.perf_counter`` unless a test gives another."""

    def __init__(self, *, ratio: float = 1.0, max_wait: float = MAX_WAIT, interval: float = FRAME_INTERVAL,
                 busy_interval: float = BUSY_INTERVAL, stream_interval: float = STREAM_INTERVAL,
                 burst: int = BURST, clock: Callable[[], float] = time.perf_counter) -> None:
        self.ratio = ratio
        self.max_wait = max_wait
        self.interval = interval
        self.busy_interval = max(interval, busy_interval)
        self.stream_interval = max(self.busy_interval, stream_interval)
        self.burst = burst
        self.clock = clock
        self._start = 0.0
        self._end = 0.0
        self._turn = 0
        self._pressed = 0  # consecutive frames that carried merged changes
        self._tokens = float(burst)
        self._filled = clock()

    @property
    def current_interval(self) -> float:
        """Seconds per frame now: ``interval``, ``busy_interval`` under pressure,
        ``stream_interval`` when it lasts."""
        if self._pressed >= STREAMING:
            return self.stream_interval
        return self.busy_interval if self._pressed >= PRESSED else self.interval

    def _refill(self, now: float) -> float:
        interval = self.current_interval
        if interval > 0:
            self._tokens = min(float(self.burst), self._tokens + (now - self._filled) / interval)
        else:
            self._tokens = float(self.burst)
        self._filled = now
        return self._tokens

    def begin(self, merged: int = 1) -> int:
        """A change made of ``merged`` deltas starts being shown; returns its turn (for ``end``)."""
        now = self.clock()
        self._refill(now)
        self._tokens -= 1.0
        self._pressed = self._pressed + 1 if merged > 1 else 0
        self._turn += 1
        self._start = self._end = now
        return self._turn

    def end(self, turn: int | None = None) -> None:
        """The change of ``turn`` (the latest when ``None``) is shown, or painted."""
        if turn is None or turn == self._turn:
            self._end = self.clock()

    def wait(self) -> float:
        """Seconds before the next change may be shown (0: at once)."""
        now = self.clock()
        cost = (self._end - self._start) * self.ratio
        duty = min(self.max_wait, self._end + cost - now)
        tokens = self._refill(now)
        frame = (1.0 - tokens) * self.current_interval if tokens < 1.0 else 0.0
        return max(0.0, duty, frame)
