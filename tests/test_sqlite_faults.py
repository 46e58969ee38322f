"""SQLite runs read while a real second process writes them the way seeds/sqlite.md says
(issue 35, item 2): one ``sqlite3`` connection per statement in WAL mode, and a rollback-mode
writer holding its lock. The writer is ``tests/sqlite_vm_writer.py``, run as a subprocess
(the ``sqlite3`` CLI per statement, or one Python connection per statement); the tests wait
on the lines it prints after each commit, never on the clock."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from prose_tui.backends import registry
from prose_tui.backends.protocol import fallback_trace
from prose_tui.backends.sqlite.backend import SqliteBackend
from prose_tui.backends.sqlite import connect
from prose_tui.backends.sqlite.connect import _FILES
from prose_tui.live.workspace import Workspace
from prose_tui.model import RunStatus

WRITER = Path(__file__).with_name("sqlite_vm_writer.py")
READS = 80
"""Reads made while the writer writes (each one a whole read of the run)."""
BURST = 5
"""Statements the writer is asked for as each read begins, so every read meets a write."""
PATIENCE_S = 120.0
"""Only a bound for a writer that died: the tests wait on its lines, not on the clock."""
TROUBLE = ("malformed", "could not", "locked", "moved while")


class Writer:
    """A writer process; ``lines`` are what it printed, ``committed`` the last row count."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WRITER), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.committed = -1
        self._changed = threading.Condition()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.strip())
                if line.strip().isdigit():
                    self.committed = int(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append("<exit>")
            self._changed.notify_all()

    def wait(self, ready: Callable[[], bool]) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: ready() or "<exit>" in self.lines, PATIENCE_S), self.lines[-5:]
            assert ready(), f"the writer ended early: {self.lines[-5:]}"

    def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.say("stop")
                self.proc.stdin.close()  # type: ignore[union-attr]
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(PATIENCE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._pump.join(PATIENCE_S)


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / ".prose" / "runs" / "20260116-143052-a7b3c9"
    run_dir.mkdir(parents=True)
    return run_dir


@pytest.mark.parametrize("reader", ["headless", "headless-in-place", "live"])
@pytest.mark.parametrize("how", ["cli", "python"])
def test_reads_while_the_vm_writes_one_connection_per_statement_are_whole_and_never_older(
        tmp_path: Path, how: str, reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "cli" and shutil.which("sqlite3") is None:
        pytest.skip("the sqlite3 CLI is not installed (apt-get install sqlite3)")
    if reader == "headless-in-place":  # a database too big to copy per read: read in place, checked
        monkeypatch.setattr(connect, "COPY_LIMIT", 0)
    run_dir = _run_dir(tmp_path)
    db = run_dir / "state.db"
    open_before = _FILES.count()  # descriptors of other tests' databases
    writer = Writer("statements", str(db), str(BURST), how)
    backend = SqliteBackend()
    try:
        writer.wait(lambda: writer.committed >= 1)
        start = writer.committed
        run = None
        newest = 0
        for n in range(READS):
            assert writer.proc.poll() is None, "a statement of the VM failed while the run was read"
            floor = writer.committed  # committed before this read began: the read must show it
            writer.say(f"more {BURST}")  # the writer goes on while the run is read
            if reader.startswith("headless"):  # `prose-tui show`: a new process, nothing kept between reads
                fresh = SqliteBackend()
                run = fresh.open(run_dir)
                fresh.forget(run_dir)
            elif run is None:
                run = backend.open(run_dir)
            else:  # the live pipeline: the watcher saw state.db or its -wal change
                run = backend.apply(run, {db, Path(f"{db}-wal")}).run
            trouble = [w for w in run.warnings if any(word in w for word in TROUBLE)]
            assert trouble == [], f"read {n + 1}: {trouble}"
            assert run.status is RunStatus.RUNNING, f"read {n + 1}: {run.status} {run.warnings}"
            rows = int(run.header["execution_rows"])
            assert rows >= max(floor, newest), f"read {n + 1}: {rows} rows, {floor} committed, {newest} shown before"
            assert not any("SQLite format" in t.text for t in run.trace)
            newest = rows
        writer.wait(lambda: writer.committed > start)  # the writer wrote while the run was read
    finally:
        writer.stop()
        backend.forget(run_dir)
    assert _FILES.count() == open_before, "every descriptor of the database is closed with its last reader"


def test_a_rollback_lock_held_by_the_vm_keeps_the_last_good_state_with_a_note(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    db = run_dir / "state.db"
    first = Writer("statements", str(db), "5", "python", "delete")
    first.wait(lambda: first.committed == 5)
    first.stop()
    backend = SqliteBackend()
    run = backend.open(run_dir)
    assert run.status is RunStatus.RUNNING and len(run.trace) == 5 and run.warnings == []
    shown = ([t.text for t in run.trace], [b.name for b in run.bindings])
    holder = Writer("hold", str(db))
    try:
        holder.wait(lambda: "locked" in holder.lines)  # BEGIN EXCLUSIVE: no reader gets in
        delta = backend.apply(run, {db, Path(f"{db}-journal")})
        kept = delta.run
        assert kept.status is RunStatus.RUNNING
        assert ([t.text for t in kept.trace], [b.name for b in kept.bindings]) == shown
        note = kept.warnings[0]
        assert note.startswith("state.db could not be read just now") and "locked" in note
        assert re.search(r"as read at \d\d:\d\d:\d\d", note), note
        assert delta.status, "the header shows the note"
        holder.say("release")
        holder.wait(lambda: "released" in holder.lines)
    finally:
        holder.stop()
    fresh = backend.apply(kept, {db}).run
    assert int(fresh.header["execution_rows"]) == 6 and len(fresh.trace) == 6
    assert not any("could not be read" in w for w in fresh.warnings)
    backend.forget(run_dir)


def test_a_database_locked_at_its_first_read_is_never_shown_as_text(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    db = run_dir / "state.db"
    first = Writer("statements", str(db), "3", "python", "delete")
    first.wait(lambda: first.committed == 3)
    first.stop()
    holder = Writer("hold", str(db))
    try:
        holder.wait(lambda: "locked" in holder.lines)
        backend = SqliteBackend()
        run = backend.open(run_dir)
        assert any("locked" in w for w in run.warnings) and run.trace == []
        lines, banner = fallback_trace(run)  # what the explorer shows for a run with no trace
        assert lines == [] and banner == "no execution rows read from state.db"
        backend.forget(run_dir)
    finally:
        holder.stop()


def test_the_live_workspace_keeps_a_locked_run_and_takes_the_next_commit(tmp_path: Path) -> None:
    """The live worker's entry (``Workspace.apply``, what the pipeline calls per batch of
    changed paths): a re-read that meets the VM's EXCLUSIVE lock leaves the run read before
    in the workspace, with the note; the commit after the lock is shown."""
    run_dir = _run_dir(tmp_path)
    db = run_dir / "state.db"
    first = Writer("statements", str(db), "4", "python", "delete")
    first.wait(lambda: first.committed == 4)
    first.stop()
    ws = Workspace(tmp_path)
    ws.scan()
    run = ws.detail(run_dir)
    assert run is not None and len(run.trace) == 4
    holder = Writer("hold", str(db))
    try:
        holder.wait(lambda: "locked" in holder.lines)
        ws.apply({db, Path(f"{db}-journal")})
        shown = ws.runs[run_dir]
        assert shown.status is RunStatus.RUNNING and len(shown.trace) == 4
        assert "could not be read just now" in shown.warnings[0] and "locked" in shown.warnings[0]
        holder.say("release")
        holder.wait(lambda: "released" in holder.lines)
    finally:
        holder.stop()
    ws.apply({db})
    shown = ws.runs[run_dir]
    assert len(shown.trace) == 5 and not any("could not be read" in w for w in shown.warnings)
    _forget_everywhere(run_dir)


def _forget_everywhere(run_dir: Path) -> None:
    """Close what the registry's backends keep open for ``run_dir`` (the workspace uses them)."""
    for backend in registry.backends():
        backend.forget(run_dir)


def test_a_wal_index_a_writer_is_setting_up_is_read_again_not_called_unreadable(tmp_path: Path, monkeypatch) -> None:
    """A reader with a read-only WAL index (``-shm``) that SQLite would have to write first
    ("attempt to write a readonly database": the VM's ``sqlite3`` has just made ``-shm`` for
    its next statement and not written it yet) reads again shortly; it was shown as "could
    not be read as SQLite" for a healthy database (CI, under load). The error is SQLite's own
    text, raised once at the probe of a real WAL database left with its ``-wal`` and ``-shm``."""
    import sqlite3

    from prose_tui.backends.sqlite import connect

    live = tmp_path / "live.db"
    writer = sqlite3.connect(live)
    writer.execute("PRAGMA journal_mode=wal")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t(x)")
    writer.execute("INSERT INTO t VALUES (1)")
    writer.commit()
    db = tmp_path / "state.db"
    for suffix in ("", "-wal", "-shm"):  # as a writer leaves them while it is open
        shutil.copyfile(f"{live}{suffix}", f"{db}{suffix}")
    writer.close()
    real_probe = connect._probe
    failures = [sqlite3.OperationalError("attempt to write a readonly database")]

    def probe(conn) -> None:
        if failures:
            raise failures.pop()
        real_probe(conn)

    monkeypatch.setattr(connect, "_probe", probe)
    monkeypatch.setattr(connect, "RETRY_WAITS_S", (0.0,))
    opened, warnings = connect.open_readonly(db)
    try:
        assert opened is not None, warnings
        assert warnings == [] and opened.mode == "ro"
        assert opened.conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    finally:
        if opened is not None:
            opened.close()
