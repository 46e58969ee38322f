"""A snapshot run watched for a long time: the journal stays the run's size (issue 35, item 1).

A VM in its own process (``snapshot_vm.py``) rewrites ``state.md`` whole, revision after
revision, while the journal records each one as the live pipeline's journal sink does.
After many rewrites a user still steps through every revision and sees it exactly as it
was; the journal on disk costs what changed, not the run's size per rewrite; a journal
written by an older prose-tui (whole ``revisions/<sha>.md`` files) still replays, and one
cut short by a crash still replays what it holds. Sizes are asserted, never time or RSS
(those are in benchmarks/bench_journal.py).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from snapshot_vm import text

from prose_tui.backends import open_run
from prose_tui.backends.filesystem.snapshot import parse_snapshot
from prose_tui.history import Journal, history_of, state_at

HERE = Path(__file__).resolve().parent
START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
RUN_ID = "20260301-090000-50a4e0"


class VM:
    """The writer process: ``rewrite(k)`` has it write revision ``k`` and returns its sha256."""

    def __init__(self, run_dir: Path, statements: int) -> None:
        self.run_dir = run_dir
        self.proc = subprocess.Popen([sys.executable, str(HERE / "snapshot_vm.py"), str(run_dir), str(statements)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def rewrite(self, k: int) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{k}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def vm(tmp_path):
    machine = VM(tmp_path / "project" / ".prose" / "runs" / RUN_ID, STATEMENTS)
    yield machine
    machine.close()


STATEMENTS = 80
REWRITES = 240


def watch(vm: VM, journal: Journal, revisions: range) -> list[str]:
    """Have the VM write each revision and the journal record it; the shas written."""
    shas = []
    for k in revisions:
        shas.append(vm.rewrite(k))
        journal.record(vm.run_dir, {vm.run_dir / "state.md"}, START + timedelta(seconds=k))
    return shas


def seen(run) -> list[tuple[str, object]]:
    return [(t.text, t.state) for t in run.trace]


def expected(k: int) -> list[tuple[str, object]]:
    return [(t.text, t.state) for t in parse_snapshot(text(k, STATEMENTS)).trace]


def steps_through_every_revision(run, history, journal: Journal, shas: list[str], first: int) -> None:
    cursors = history.revision_cursors()
    assert [sha for sha, _ in cursors] == shas
    for k, (_sha, cursor) in enumerate(cursors, start=first):
        at = state_at(run, history, cursor, journal=journal)
        assert seen(at) == expected(k), f"revision {k} shown wrong"
        assert not at.warnings, at.warnings


def journal_bytes(journal: Journal, run_dir: Path) -> int:
    return sum(p.stat().st_size for p in journal.folder(run_dir).rglob("*") if p.is_file())


def test_after_many_rewrites_every_revision_is_shown_and_the_journal_costs_what_changed(tmp_path, vm):
    journal = Journal(tmp_path / "state")
    shas = watch(vm, journal, range(REWRITES))
    whole = sum(len(text(k, STATEMENTS).encode()) for k in range(REWRITES))
    assert journal_bytes(journal, vm.run_dir) <= whole // 10  # whole revisions cost 10x more
    # A fresh explorer (another process, another Journal) opens the run and steps through it.
    fresh = Journal(tmp_path / "state")
    run = open_run(vm.run_dir)
    history = history_of(run, journal=fresh)
    assert history.origin == "journal"
    steps_through_every_revision(run, history, fresh, shas, 0)


def write_old_layout(journal: Journal, run_dir: Path, revisions: list[tuple[int, bytes]]) -> None:
    """The journal an older prose-tui wrote: ``revisions/<sha256>.md`` whole, no ``at``."""
    folder = journal.folder(run_dir)
    (folder / "revisions").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run": str(run_dir.resolve())}))
    with open(folder / "index.jsonl", "w", encoding="utf-8") as fh:
        for k, data in revisions:
            sha = hashlib.sha256(data).hexdigest()
            (folder / "revisions" / f"{sha}.md").write_bytes(data)
            fh.write(json.dumps({"t": (START + timedelta(seconds=k)).isoformat(), "k": "state", "p": "state.md",
                                 "sha": sha, "size": len(data), "mtime": 0.0}) + "\n")


def test_a_journal_in_the_old_layout_still_replays_and_grows_by_differences(tmp_path, vm):
    journal = Journal(tmp_path / "state")
    old = [(k, text(k, STATEMENTS).encode()) for k in range(40)]
    write_old_layout(journal, vm.run_dir, old)
    shas = [hashlib.sha256(data).hexdigest() for _, data in old]
    before = journal_bytes(journal, vm.run_dir)
    # The VM goes on (its last old revision is on disk), this prose-tui watches it.
    vm.rewrite(39)
    shas += watch(vm, journal, range(40, 160))
    added = journal_bytes(journal, vm.run_dir) - before
    assert added <= sum(len(text(k, STATEMENTS).encode()) for k in range(40, 160)) // 10
    run = open_run(vm.run_dir)
    fresh = Journal(tmp_path / "state")
    steps_through_every_revision(run, history_of(run, journal=fresh), fresh, shas, 0)


def test_a_journal_cut_short_by_a_crash_replays_what_it_holds(tmp_path, vm):
    journal = Journal(tmp_path / "state")
    shas = watch(vm, journal, range(60))
    folder = journal.folder(vm.run_dir)
    # A crash: half a revision written to the pack and half an index line, nothing after.
    pack = next(p for p in folder.iterdir() if p.suffix == ".pack")
    with open(pack, "ab") as fh:
        fh.write(b'{"sha":"' + b"0" * 64 + b'","base":0,"ops":[[0,9')
    with open(folder / "index.jsonl", "ab") as fh:
        fh.write(b'{"t": "2026-03-01T09:01:00+00:00", "k": "state", "p": "state.md", "sha": "')
    # prose-tui starts again and watches on
    journal = Journal(tmp_path / "state")
    shas += watch(vm, journal, range(60, 120))
    assert journal_bytes(journal, vm.run_dir) <= sum(len(text(k, STATEMENTS).encode()) for k in range(120)) // 10
    run = open_run(vm.run_dir)
    fresh = Journal(tmp_path / "state")
    steps_through_every_revision(run, history_of(run, journal=fresh), fresh, shas, 0)


def test_a_revision_lost_from_the_journal_is_skipped_and_said_so(tmp_path, vm):
    journal = Journal(tmp_path / "state")
    shas = watch(vm, journal, range(30))
    folder = journal.folder(vm.run_dir)
    pack = next(p for p in folder.iterdir() if p.suffix == ".pack")
    data = pack.read_bytes()
    entries = [e for e in journal.entries(vm.run_dir) if e.kind == "state"]
    cut = entries[20].stored.at  # the pack loses revision 20 and everything after it
    pack.write_bytes(data[:cut])
    run = open_run(vm.run_dir)
    fresh = Journal(tmp_path / "state")
    history = history_of(run, journal=fresh)
    cursors = history.revision_cursors()
    # revisions 0-19 as they were; the lost ones are skipped; the file as it is now ends it
    assert [sha for sha, _ in cursors] == shas[:20] + [shas[-1]]
    for k, (_sha, cursor) in enumerate(cursors[:20]):
        assert seen(state_at(run, history, cursor, journal=fresh)) == expected(k)
