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

One process, one screen: the state is process-wide. Textual-free; every function may be
called from any thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["HOLD", "background_read", "change_in_flight", "change_shown", "wait_turn"]

HOLD = 0.15  # seconds a change in flight holds background reads at most (its paint: 20-40 ms)

_clear = threading.Event()  # set: no change in flight
_clear.set()
_until = 0.0  # monotonic time the current hold ends at the latest
_BACKGROUND: ContextVar[bool] = ContextVar("prose_tui_background_read", default=False)


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
    changes. Per thread (a context variable); reads outside it never wait."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def wait_turn() -> None:
    """In a background read: sleep while a live change is in flight (at most until its
    hold ends); return at once otherwise (an ``Event.is_set`` when nothing is in flight)."""
    if _clear.is_set() or not _BACKGROUND.get():
        return
    left = _until - time.monotonic()
    if left > 0:
        _clear.wait(left)
