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

Textual-free; a keeper per explorer screen.
"""

from __future__ import annotations

import gc
from collections.abc import Hashable


class HeapKeeper:
    """Freezes the heap after a run's full read is shown; see the module doc.

    ``enabled=False`` (or an interpreter without ``gc.freeze``) makes every call a no-op.
    ``frozen`` is the key of the run the last freeze was for (``None``: nothing frozen).
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled and hasattr(gc, "freeze")
        self.frozen: Hashable | None = None
        self.freezes = 0  # how many times the heap was frozen (for tests and measurements)

    def run_shown(self, key: Hashable) -> None:
        """The full read of the run ``key`` is on screen: freeze what is alive now. The
        same run again is a no-op; another run first gives the previous one back (one full
        collection) and then freezes."""
        if not self.enabled or key == self.frozen:
            return
        if self.frozen is not None:
            gc.unfreeze()
            gc.collect()
        gc.freeze()
        self.frozen = key
        self.freezes += 1

    def release(self) -> None:
        """Give every frozen object back to the collector (the screen is going away)."""
        if self.enabled and self.frozen is not None:
            gc.unfreeze()
            self.frozen = None
