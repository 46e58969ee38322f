"""The explorer's UI thread reads no journal for a live change (issue 31): a snapshot run's
history (a journal replay, read under the journal's lock) is built in a worker, and the
timeline still catches up with the change."""

from __future__ import annotations

import threading

from app_helpers import wait_until

from prose_tui.demo import DemoVM
from prose_tui.history.journal import Journal
from prose_tui.tui.app import ProseTUI
from prose_tui.tui.widgets.timeline import Timeline


async def test_a_live_change_of_a_snapshot_run_reads_its_journal_off_the_ui_thread(tmp_path, monkeypatch):
    vm = DemoVM(tmp_path / "project", seed=1)
    walk = vm.steps()
    for _ in range(6):
        next(walk)
    readers: list[str] = []  # the thread of each journal read the explorer made
    real_has, real_entries = Journal.has, Journal.entries

    def has(self, run_dir):
        readers.append(threading.current_thread().name)
        return real_has(self, run_dir)

    def entries(self, run_dir):
        readers.append(threading.current_thread().name)
        return real_entries(self, run_dir)

    monkeypatch.setattr(Journal, "has", has)
    monkeypatch.setattr(Journal, "entries", entries)
    app = ProseTUI(tmp_path / "project", watch=True, journal=Journal(tmp_path / "journal"))
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching") and explorer.pending() is None,
                         what="the demo run on screen, watched", turns=3000)
        timeline = explorer.query_one(Timeline)
        shown = len(timeline.events)
        readers.clear()
        for _ in range(2):  # the first change is journaled; the history of the second replays it
            next(walk)
            await wait_until(pilot, lambda: len(timeline.events) > shown and explorer.pending() is None,
                             what="the timeline caught up with the VM's step", turns=3000)
            shown = len(timeline.events)
    ui = threading.main_thread().name
    assert readers, "the history was never built from the journal"
    assert ui not in readers, f"the UI thread read the journal: {readers}"
