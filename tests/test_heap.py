"""The explorer freezes the heap once a run's full read is shown, and gives it back
(``prose_tui.tui.heap``): full garbage collections then skip the run's objects, and no
frozen object outlives the screen."""

from __future__ import annotations

import gc
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
