"""The UI end of the live pipeline: deltas reach a screen through a coalescing mailbox.

The live worker calls ``LiveInbox.put`` (its sink) for every delta; the screen is told with
one ``DeltasWaiting`` message per run while nothing for that run is waiting, and later
deltas merge into the waiting one (``prose_tui.live.mailbox``). When the message is
handled, the merged delta is taken and shown, paced so that showing changes takes at most
about half of the UI thread however fast the VM writes: the screen's message queue never
holds more than one message per run, and the work of one turn of the event loop is one
delta's, whatever piled up behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message
from textual.timer import Timer

from prose_tui.backends.common.foreground import change_shown
from prose_tui.live.mailbox import DeltaMailbox, Pace
from prose_tui.model import Delta

# Seconds after a change is shown before its paint counts as done without a frame (a change
# that altered nothing on screen makes none): waiters on ``wait_painted`` go on then.
NO_FRAME_AFTER = 0.25


class DeltasWaiting(Message):
    """A merged delta for the run at ``path`` waits in the inbox (posted from the worker)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class InboxHost(Protocol):
    """What the inbox uses of the screen it delivers to: messages and timers."""

    def post_message(self, message: Message) -> bool: ...
    def set_timer(self, delay: float, callback: Any = ...) -> Timer: ...
    def call_after_refresh(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...


class LiveInbox:
    """``put`` on the worker thread; ``deliver(path)`` on the UI thread, from the screen's
    ``DeltasWaiting`` handler. ``show(delta)`` is the screen's way to show one delta.

    ``after_frame(callback)`` calls ``callback()`` once the next frame is handed to the
    terminal (``ProseTUI.after_frame``); a change counts as painted then. Without it, after
    the screen's next refresh (``call_after_refresh``), which in the explorer comes before
    the frame that shows the change: the trace tells its screen it needs painting on its own
    next turn."""

    def __init__(self, screen: InboxHost, show: Callable[[Delta], None], *, pace: Pace | None = None,
                 on_screen: Callable[[Path], bool] | None = None,
                 after_frame: Callable[[Callable[[], None]], None] | None = None) -> None:
        self.screen = screen
        self.show = show
        self.after_frame = after_frame
        self.on_screen = on_screen  # whether a run's changes are painted beyond its list row
        self.pace = pace or Pace()
        self.mailbox = DeltaMailbox(self._notify)
        self.shown = 0  # merged deltas shown so far
        self._painted = threading.Event()  # clear from a put for the run on screen to the paint
        self._painted.set()

    def _notify(self, path: Path) -> None:
        self.screen.post_message(DeltasWaiting(path))  # thread-safe

    def put(self, delta: Delta) -> None:
        """The pipeline's UI sink (any thread)."""
        if (self.on_screen is None or self.on_screen(delta.run.path)) and self.pace.current_interval <= self.pace.interval:
            self._painted.clear()  # shown at once (no stream being paced): painted in a moment
        self.mailbox.put(delta)

    def wait_painted(self, timeout: float) -> bool:
        """Block (any thread but the UI's) until the changes put for the run on screen are
        painted, or ``timeout`` seconds; False on the timeout. The live worker's later sinks
        (the journal) wait for it: their Python would hold the GIL the paint needs."""
        return self._painted.wait(timeout)

    def deliver(self, path: Path) -> None:
        """Show what waits for ``path`` now, or after the pace's wait. A run not on screen
        (``on_screen``) costs one list row: shown at once, outside the pace, so a hundred runs
        changing status together (a tick over a database's list) never hold up the run shown."""
        if self.on_screen is not None and not self.on_screen(path):
            delta = self.mailbox.take(path)
            if delta is not None:
                self.show(delta)
                self.shown += 1
            change_shown()  # a list row: background reads need not wait for its frame
            return
        wait = self.pace.wait()
        if wait > 0:
            self.screen.set_timer(wait, lambda: self._show_now(path))
        else:
            self._show_now(path)

    def _show_now(self, path: Path) -> None:
        delta, merged = self.mailbox.take_counted(path)
        if delta is None:
            return
        # A change handed over within a stream (the watcher batches it: one delta may carry
        # several writes) keeps the pace's pressure as merged changes would.
        turn = self.pace.begin(max(merged, 2) if delta.streaming else merged)
        try:
            self.show(delta)
        finally:
            self.shown += 1
            self.pace.end(turn)
            # The paint that follows is part of the change's cost.
            if self.after_frame is not None:
                self.after_frame(partial(self._painted_now, turn))
                self.screen.set_timer(NO_FRAME_AFTER, self._painted.set)
            else:
                self.screen.call_after_refresh(self._painted_now, turn)

    def _painted_now(self, turn: int) -> None:
        self.pace.end(turn)
        self._painted.set()
        change_shown()  # background reads (a long log's whole read) go on
