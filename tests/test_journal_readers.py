"""The UI's read of the journal never waits for the live worker's disk writes (issue 31).

The live worker journals each change (``Journal.record``: it reads ``state.md`` and appends
to the journal folder); the explorer builds the history pane from the same journal on the
UI thread (``history_of`` -> ``Journal.entries``). Here a real append to the index is held
inside the worker's write (a ``Journal`` subclass waits on an event in ``write_index``)
while another thread builds the history: it must come back with what was journaled
before, and the held record must show up once its write is done.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import BinaryIO

from prose_tui.backends import open_run
from prose_tui.demo.simulator import DemoVM
from prose_tui.history import Journal, history_of

START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
GUARD = 120  # seconds: only so a broken build fails instead of hanging; never reached when it works


class HeldJournal(Journal):
    """A journal whose next index write waits until the test lets it go."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.hold = False
        self.inside = threading.Event()
        self.release = threading.Event()

    def write_index(self, fh: BinaryIO, payload: bytes) -> None:
        if self.hold:
            self.inside.set()
            self.release.wait(GUARD)
        super().write_index(fh, payload)


def test_the_history_is_built_while_the_worker_is_inside_a_journal_write(tmp_path: Path) -> None:
    clock = iter(START + timedelta(seconds=n) for n in range(10_000))
    vm = DemoVM(tmp_path / "project", clock=lambda: next(clock))
    journal = HeldJournal(tmp_path / "state")
    steps = vm.steps()
    for _ in range(3):
        step = next(steps)
        journal.record(vm.run_dir, set(step.paths), next(clock))
    before = journal.entries(vm.run_dir)
    assert before, "the first steps were journaled"

    step = next(steps)  # the VM writes its next step; the worker journals it, held mid-write
    journal.hold = True
    worker = threading.Thread(target=journal.record, args=(vm.run_dir, set(step.paths), next(clock)))
    worker.start()
    try:
        assert journal.inside.wait(GUARD), "the worker reached the index write"
        built: dict[str, object] = {}
        done = threading.Event()

        def ui_side() -> None:
            run = open_run(vm.run_dir)
            built["entries"] = journal.entries(vm.run_dir)
            built["history"] = history_of(run, journal=journal)
            done.set()

        reader = threading.Thread(target=ui_side, daemon=True)
        reader.start()
        assert done.wait(GUARD), "reading the journal waited for the worker's file write"
        assert [(e.kind, e.sha256) for e in built["entries"]] == [(e.kind, e.sha256) for e in before]
        assert built["history"].origin == "journal"
    finally:
        journal.release.set()
        worker.join(GUARD)
    assert not worker.is_alive()
    after = journal.entries(vm.run_dir)
    assert len(after) > len(before), "the held record is seen once its write is done"
    assert after[: len(before)] == before
    assert after[-1].kind == "state" and after[-1].text == (vm.run_dir / "state.md").read_text()


def test_a_reader_that_read_the_index_during_a_write_keeps_nothing_stale(tmp_path: Path) -> None:
    """A fresh Journal (the run never read in this process) reads the index from disk while a
    record is being appended: later reads still see the record (none lost, none doubled)."""
    clock = iter(START + timedelta(seconds=n) for n in range(10_000))
    vm = DemoVM(tmp_path / "project", clock=lambda: next(clock))
    writer = HeldJournal(tmp_path / "state")
    steps = vm.steps()
    for _ in range(2):
        writer.record(vm.run_dir, set(next(steps).paths), next(clock))
    fresh = HeldJournal(tmp_path / "state")
    fresh.record(vm.run_dir, set(), next(clock))  # loads what the index says; adds nothing
    fresh.hold = True
    step = next(steps)
    worker = threading.Thread(target=fresh.record, args=(vm.run_dir, set(step.paths), next(clock)))
    worker.start()
    try:
        assert fresh.inside.wait(GUARD)
        during = fresh.entries(vm.run_dir)  # read from disk while the append is held
    finally:
        fresh.release.set()
        worker.join(GUARD)
    after = fresh.entries(vm.run_dir)
    on_disk = Journal(tmp_path / "state").entries(vm.run_dir)
    assert len(after) == len(on_disk) > len(during)
    assert [(e.kind, e.path, e.sha256) for e in after] == [(e.kind, e.path, e.sha256) for e in on_disk]
