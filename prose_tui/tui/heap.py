"""Keep Python's full garbage collections off a long run's live path.

CPython's cyclic collector looks at every tracked object in a *full* (generation 2)
collection, and runs one whenever the objects that survived younger collections grow by a
quarter. Opening a run of 20,000 events or 2,000 statements makes a few hundred thousand
objects (its model, its history, the painted panes), so for seconds after the open a full
collection ran every half second or so, each 25-200 ms on this 2-core machine (measured
with ``gc.callbacks`` under ``benchmarks/bench_e2e.py``), and a change that arrived during
one waited for it: these pauses were the slow rounds behind most of the live latency p95.

``HeapKeeper.run_shown(key)`` is called once a run's full read is on screen. It moves every
object alive then into the collector's permanent generation (``gc.freeze()``, made for this:
long-lived objects the collector need not look at again), so later collections look only
at what the live changes add. Objects keep their reference counts: a frozen object dropped
later is still freed at once unless it sits in a reference cycle. Cycles among frozen
objects (a widget removed later) wait for ``gc.unfreeze()``, which comes when another run is
shown (then one full collection, part of that open, reclaims the previous run) and when the
screen goes (``release``). What can wait so is bounded by what was alive at the freeze.

While a run is being read and first shown (``hold``, from the screen's start and from
choosing another run, to ``run_shown``) the collector does not run at all
(``gc.disable()``): the open makes objects that all stay, so a collection then finds no
garbage and only pauses the reader and the paint. The hold ends when the run is shown, when
the screen goes, or after ``HOLD_S`` seconds (``expire``, from a timer the screen sets):
an open that never shows a run (an empty folder, a failed read) leaves the collector off
no longer than that.

Textual-free; a keeper per explorer screen.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Hashable

HOLD_S = 10.0  # seconds at most that an open keeps the collector off


class HeapKeeper:
    """Holds the collector off during an open and freezes the heap after a run's full read
    is shown; see the module doc.

    ``enabled=False`` (or an interpreter without ``gc.freeze``) makes every call a no-op.
    ``frozen`` is the key of the run the last freeze was for (``None``: nothing frozen).
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled and hasattr(gc, "freeze")
        self.frozen: Hashable | None = None
        self.freezes = 0  # how many times the heap was frozen (for tests and measurements)
        self.held_since: float | None = None  # monotonic time the collector was turned off (None: on)

    def hold(self) -> None:
        """A run is being read and shown: the collector is off until ``run_shown`` (at most
        ``HOLD_S`` seconds: call ``expire`` then). Does nothing when the collector was
        already off before the keeper (someone else turned it off: theirs to turn on)."""
        if not self.enabled or self.held_since is not None or not gc.isenabled():
            return
        gc.disable()
        self.held_since = time.monotonic()

    def expire(self) -> None:
        """Turn the collector on again if a hold has lasted ``HOLD_S`` seconds."""
        if self.held_since is not None and time.monotonic() - self.held_since >= HOLD_S:
            self._end_hold()

    def _end_hold(self) -> None:
        if self.held_since is not None:
            self.held_since = None
            gc.enable()

    def run_shown(self, key: Hashable) -> None:
        """The full read of the run ``key`` is on screen: freeze what is alive now and end a
        hold. The same run again freezes nothing more; another run first gives the previous
        one back (one full collection) and then freezes."""
        if not self.enabled:
            return
        if key != self.frozen:
            if self.frozen is not None:
                gc.unfreeze()
                gc.collect()
            gc.freeze()
            self.frozen = key
            self.freezes += 1
        self._end_hold()

    def release(self) -> None:
        """Give every frozen object back to the collector, and turn it on if a hold has it
        off (the screen is going away)."""
        self._end_hold()
        if self.enabled and self.frozen is not None:
            gc.unfreeze()
            self.frozen = None
