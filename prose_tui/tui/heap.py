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
the screen goes, or after ``HOLD_S`` seconds (a timer thread of its own, so also when the
app's loop is gone): an open that never shows a run (an empty folder, a failed read)
leaves the collector off no longer than that.

Textual-free; a keeper per explorer screen.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Hashable
from typing import Protocol

HOLD_S = 10.0  # seconds at most that an open keeps the collector off


class _Timer(Protocol):
    def start(self) -> None: ...

    def cancel(self) -> None: ...


def _thread_timer(seconds: float, callback: Callable[[], None]) -> _Timer:
    timer = threading.Timer(seconds, callback)
    timer.daemon = True
    return timer


class HeapKeeper:
    """Holds the collector off during an open and freezes the heap after a run's full read
    is shown; see the module doc.

    ``enabled=False`` (or an interpreter without ``gc.freeze``) makes every call a no-op.
    ``frozen`` is the key of the run the last freeze was for (``None``: nothing frozen);
    ``holding`` whether a hold has the collector off. ``timer(seconds, callback)`` makes the
    hold's time limit (``threading.Timer`` unless a test gives another).
    """

    def __init__(self, *, enabled: bool = True,
                 timer: Callable[[float, Callable[[], None]], _Timer] = _thread_timer) -> None:
        self.enabled = enabled and hasattr(gc, "freeze")
        self.frozen: Hashable | None = None
        self.freezes = 0  # how many times the heap was frozen (for tests and measurements)
        self._timer_of = timer
        self._lock = threading.Lock()  # the time limit ends a hold on its own thread
        self._limit: _Timer | None = None  # the running hold's time limit (None: no hold)

    @property
    def holding(self) -> bool:
        return self._limit is not None

    def hold(self) -> None:
        """A run is being read and shown: the collector is off until ``run_shown``, the
        screen's ``release`` or ``HOLD_S`` seconds, whichever comes first. Does nothing while
        a hold runs, or when the collector was off already (someone else's: theirs to end)."""
        if not self.enabled:
            return
        with self._lock:
            if self._limit is not None or not gc.isenabled():
                return
            gc.disable()
            limit = self._limit = self._timer_of(HOLD_S, self._end_hold)
        limit.start()

    def _end_hold(self) -> None:
        with self._lock:
            limit, self._limit = self._limit, None
            if limit is None:
                return
            gc.enable()
        limit.cancel()  # a no-op when it is the limit itself that ends the hold

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
        """Give every frozen object back to the collector, and end a hold: the screen is
        going away, and later calls (a callback that was already queued) do nothing."""
        self._end_hold()
        if self.enabled and self.frozen is not None:
            gc.unfreeze()
            self.frozen = None
        self.enabled = False
