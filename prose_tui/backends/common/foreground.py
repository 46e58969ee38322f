"""Background reads step aside while a live change is on its way to the screen (issue 33).

Opening a long event log shows its tail at once, then parses the whole log in a thread
(about 2 s at 100,000 events) while the tail is followed live. Python runs one thread at a
time: the parse and the path of a live change (the watcher, the live worker's apply, the
UI's paint) shared the interpreter turn about, every 5 ms, and a change written during the
parse took 60-160 ms to show instead of about 30.

Now the live pipeline marks a change in flight (:func:`change_in_flight`) when the watcher
hears it (or hands it over), and the UI marks it shown (:func:`change_shown`) once the frame
that shows it is out; a key is marked the same way, from its arrival to its frame. A background read (one run inside :func:`background_read`: the workspace's
start-up and "open in full" reads, never a live apply) calls :func:`wait_turn` between
pieces of work (``EventLogTail.feed_bytes``: every ``FEED_LINES`` lines) and sleeps there
while a change is in flight, for at most ``HOLD`` seconds from its mark: a change nobody
marks shown (it altered nothing on screen) holds no read for longer.

Work in one C call (a sort, a ``list(map(...))`` over 100,000 events) holds the interpreter
until it returns, however long: a background read does O(events) work in slices of
``SLICE`` items (:func:`in_turns`), each a few milliseconds, with its turn waited before each.
Work in Python is shared out by the interpreter every switch interval: while a background
read runs, that interval is ``BACKGROUND_SWITCH_S`` instead of Python's 5 ms, so a thread
that wakes for a live change (the watcher, the live worker, Textual's writer) waits that
long for the interpreter, not 5 ms at each of its steps.

One process, one screen: the state is process-wide. Textual-free; every function may be
called from any thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["BACKGROUND_SWITCH_S", "HOLD", "SLICE", "background_read", "change_in_flight", "change_shown", "in_turns",
           "turn_every", "wait_turn"]

_T = TypeVar("_T")

HOLD = 0.15  # seconds a change in flight holds background reads at most (its paint: 20-40 ms)
# Items of O(n) work in one C call between two turns (``in_turns``): 1-3 ms here for the
# history's and the trace's per-event maps at 100,000 events (docs/performance.md).
SLICE = 4096
# The interpreter's switch interval (seconds) while any background read runs (Python's
# default: 0.005). A thread waking for a live change got the interpreter up to 5 ms after it
# asked, at each of its wake-ups; with 1 ms the parse itself runs about as fast.
BACKGROUND_SWITCH_S = 0.001

_clear = threading.Event()  # set: no change in flight
_clear.set()
_until = 0.0  # monotonic time the current hold ends at the latest
_BACKGROUND: ContextVar[bool] = ContextVar("prose_tui_background_read", default=False)
_readers_lock = threading.Lock()
_readers = 0  # background reads under way (any thread)
_switch_before = 0.005  # the switch interval before the first of them began


def change_in_flight(hold: float = HOLD) -> None:
    """A live change is on its way to the screen: background reads pause for at most
    ``hold`` seconds (a later mark extends the hold)."""
    global _until
    _until = time.monotonic() + hold
    _clear.clear()


def change_shown() -> None:
    """The changes in flight are on screen (or were dropped): background reads go on."""
    _clear.set()


@contextmanager
def background_read() -> Iterator[None]:
    """Run the block as a background read: its :func:`wait_turn` calls give way to live
    changes. Per thread (a context variable); reads outside it never wait. While any
    background read runs, the interpreter's switch interval is ``BACKGROUND_SWITCH_S``
    (restored when the last one ends)."""
    global _readers, _switch_before
    token = _BACKGROUND.set(True)
    with _readers_lock:
        if _readers == 0:
            _switch_before = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_before, BACKGROUND_SWITCH_S))
        _readers += 1
    try:
        yield
    finally:
        _BACKGROUND.reset(token)
        with _readers_lock:
            _readers -= 1
            if _readers == 0:
                sys.setswitchinterval(_switch_before)


def wait_turn() -> None:
    """In a background read: sleep while a live change is in flight (at most until its
    hold ends); return at once otherwise (an ``Event.is_set`` when nothing is in flight)."""
    if _clear.is_set() or not _BACKGROUND.get():
        return
    left = _until - time.monotonic()
    if left > 0:
        _clear.wait(left)


def in_turns(stop: int, size: int = SLICE, *, start: int = 0) -> Iterator[tuple[int, int]]:
    """``(first, end)`` pairs that cover ``range(start, stop)`` in slices of ``size`` items,
    in order; before each, :func:`wait_turn`. For O(n) work done a slice per C call, so a
    background read holds the interpreter a few milliseconds at a time. An empty range
    gives nothing."""
    for first in range(start, stop, size):
        wait_turn()
        yield first, min(stop, first + size)


def turn_every(items: Iterable[_T], size: int) -> Iterator[_T]:
    """``items``, with :func:`wait_turn` before every ``size``-th: for work done an item at a
    time in Python (a few microseconds each), so a background read gives way every
    ``size`` items."""
    for count, item in enumerate(items):
        if count % size == size - 1:
            wait_turn()
        yield item
