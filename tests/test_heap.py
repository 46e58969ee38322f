"""The explorer freezes the heap once a run's full read is shown, and gives it back
(``prose_tui.tui.heap``): full garbage collections then skip the run's objects, and no
frozen object outlives the screen."""

from __future__ import annotations

import gc
import threading
import weakref

from app_helpers import make_app, settled, wait_until
from conftest import FIXTURES

from prose_tui.tui.heap import HeapKeeper
from prose_tui.tui.widgets.run_list import RunList

PROJECT = FIXTURES / "project"


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_keeper_freezes_once_per_run_and_gives_the_previous_run_back():
    before = gc.get_freeze_count()
    keeper = HeapKeeper()
    try:
        keeper.run_shown("a")
        frozen = gc.get_freeze_count()
        assert frozen > before and keeper.frozen == "a" and keeper.freezes == 1
        keeper.run_shown("a")  # the same run shown again (a live change): nothing more
        assert keeper.freezes == 1
        garbage = _Cycle()  # alive at the freeze, garbage after it: waits for the next run
        ref = weakref.ref(garbage)
        keeper.run_shown("b")
        del garbage
        gc.collect()
        assert ref() is not None  # frozen: the collector does not look at it
        keeper.run_shown("c")  # "b"'s freeze is given back and collected before this one
        assert keeper.freezes == 3 and keeper.frozen == "c"
        assert ref() is None
    finally:
        keeper.release()
    assert keeper.frozen is None and gc.get_freeze_count() == before
    keeper.run_shown("d")  # a callback queued before the screen went: nothing
    keeper.hold()
    assert gc.get_freeze_count() == before and gc.isenabled()


def test_a_disabled_keeper_leaves_the_collector_alone():
    before = gc.get_freeze_count()
    keeper = HeapKeeper(enabled=False)
    keeper.run_shown("a")
    assert gc.get_freeze_count() == before and keeper.frozen is None


async def test_the_explorer_freezes_after_each_run_it_shows_and_thaws_when_it_closes():
    before = gc.get_freeze_count()
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await settled(pilot)
        first = explorer.current_run.path
        await wait_until(pilot, lambda: explorer.heap.frozen == first, what="the freeze after the first run")
        assert gc.get_freeze_count() > before
        other = next(r.path for r in explorer.query_one(RunList).runs if r.path != first)
        explorer.open_run_at(other)
        await settled(pilot, other)
        await wait_until(pilot, lambda: explorer.heap.frozen == other, what="the freeze after the second run")
        assert explorer.heap.freezes == 2
    assert gc.get_freeze_count() == before  # nothing stays frozen once the screen is gone


def test_a_hold_keeps_the_collector_off_until_the_run_is_shown_or_its_time_is_up():
    from prose_tui.tui.heap import HOLD_S

    limits: list["_Limit"] = []

    class _Limit:
        """A hold's time limit that the test runs out itself (no waiting on a clock)."""

        def __init__(self, seconds, callback) -> None:
            self.seconds, self.callback, self.cancelled = seconds, callback, False
            limits.append(self)

        def start(self) -> None:
            pass

        def cancel(self) -> None:
            self.cancelled = True

    assert gc.isenabled()
    keeper = HeapKeeper(timer=_Limit)
    try:
        keeper.hold()
        assert not gc.isenabled() and keeper.holding and limits[-1].seconds == HOLD_S
        keeper.hold()  # a second open while one runs: the same hold
        assert len(limits) == 1
        limits[-1].callback()  # an open that never showed a run: on again when time is up
        assert gc.isenabled() and not keeper.holding
        keeper.hold()
        keeper.run_shown("a")
        assert gc.isenabled() and limits[-1].cancelled
        keeper.hold()
        keeper.release()
        assert gc.isenabled() and limits[-1].cancelled
        gc.disable()  # someone else's: the keeper neither holds nor ends it
        keeper.hold()
        keeper.release()
        assert not gc.isenabled() and len(limits) == 3
    finally:
        gc.enable()
        keeper.release()


def test_a_hold_ends_on_its_own_thread_when_nothing_else_ends_it():
    done = threading.Event()

    def timer(seconds, callback):
        def ended():
            callback()
            done.set()

        return threading.Timer(0.0, ended)  # the real kind of limit, run out at once

    keeper = HeapKeeper(timer=timer)
    keeper.hold()
    assert done.wait(30) and gc.isenabled() and not keeper.holding


async def test_no_garbage_collection_runs_while_the_explorer_opens_a_run(monkeypatch):
    """From the screen's start to the freeze after the first run is shown, the collector
    does not run (a run's open makes objects that all stay: a collection only pauses it)."""
    seen: list[str] = []
    real_hold, real_shown = HeapKeeper.hold, HeapKeeper.run_shown

    def hold(self):
        seen.append("hold")
        real_hold(self)

    def run_shown(self, key):
        seen.append("shown")
        real_shown(self, key)

    def collected(phase, info):
        if phase == "start":
            seen.append(f"gc{info['generation']}")

    monkeypatch.setattr(HeapKeeper, "hold", hold)
    monkeypatch.setattr(HeapKeeper, "run_shown", run_shown)
    gc.callbacks.append(collected)
    try:
        app = make_app(PROJECT)
        async with app.run_test(size=(120, 40)) as pilot:
            await settled(pilot)
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.heap.frozen is not None, what="the freeze")
            assert gc.isenabled()
    finally:
        gc.callbacks.remove(collected)
    start, end = seen.index("hold"), seen.index("shown")
    assert start < end and not [s for s in seen[start:end] if s.startswith("gc")]
