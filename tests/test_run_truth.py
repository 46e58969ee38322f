"""The truth kept through faults (issue 35, items 3, 4 and 7), as a user sees it in
``show --json``, ``runs --json`` and the explorer's run header, run list and status line.

* A retry that then succeeds is a recovered failure, not a failed run.
* A header time in the future does not switch stale detection off: the file's own time decides.
* An in-place rewrite that changes the header but keeps the last bytes is read again.

Writers are a second process (``WRITER`` below); waits are on conditions the app shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from app_helpers import wait_until

from prose_tui.model import RunStatus
from prose_tui.tui.app import ProseTUI
from prose_tui.tui.glyphs import STATUS_SHORT
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.status_line import StatusLine

ROOT = Path(__file__).resolve().parent.parent

# The VM: appends lines to a file, or rewrites it in place (same inode, no truncation
# first: the bytes are overwritten where they are, as ``open(path, "r+")`` does).
WRITER = r"""
import os, sys
mode, path, text = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "append":
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
elif mode == "rewrite-in-place":
    data = text.encode("utf-8")
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate(len(data))
        fh.flush()
        os.fsync(fh.fileno())
elif mode == "replace":
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
"""


def vm_writes(mode: str, path: Path, text: str) -> None:
    subprocess.run([sys.executable, "-c", WRITER, mode, str(path), text], check=True, timeout=120)


def cli(*args: str) -> object:
    """``prose-tui ARGS`` as a user runs it, its stdout parsed as JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "prose_tui", *args], capture_output=True, text=True, env=env,
                          check=True, timeout=300)
    return json.loads(done.stdout)


def real_clock() -> datetime:
    return datetime.now(timezone.utc)


def app_on(path: Path, clock=real_clock) -> ProseTUI:
    # The real clock by default: the files here are written now, and their age is what is tested.
    return ProseTUI(path, watch=True, clock=clock, stale_after=1800)


def status_line(app) -> str:
    return app.explorer.query_one(StatusLine).shown.plain


def run_rows(app) -> str:
    widget = app.explorer.query_one(RunList)
    return "\n".join("".join(seg.text for seg in widget.render_line(y)) for y in range(widget.size.height))


def _run_dir(tmp_path: Path, run_id: str) -> Path:
    run_dir = tmp_path / ".prose" / "runs" / run_id
    run_dir.mkdir(parents=True)
    return run_dir


# -- 3. retries are not failures ---------------------------------------------------------

LOG_HEAD = "# run:{id} demo.prose\n1→ research ✓\n2→ ✗ timeout\n"
RETRY_THEN_OK = "2→ retry:2/3\n2→ call ✓\n"


def test_a_retry_that_succeeds_leaves_an_event_log_run_running_with_a_recovered_failure(tmp_path):
    run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-retry1")
    state = _run_dir(tmp_path, run_id) / "state.md"
    state.write_text(LOG_HEAD.format(id=run_id), encoding="utf-8")
    vm_writes("append", state, RETRY_THEN_OK)

    shown = cli("show", "--json", str(state.parent))
    assert shown["status"] == "running", shown["status_reason"]
    assert "failed" not in shown["status_reason"]
    assert shown["failures"] == [{"statement": "call", "line": 2, "error": "timeout", "attempt": "1/3", "event": 1,
                                  "recovered": True}]
    assert shown["failure"] is None
    [row] = cli("runs", "--json", str(tmp_path))
    assert row["status"] == "running" and "failed" not in row["status_reason"]


def test_a_failure_nothing_followed_still_fails_the_run_and_the_retry_brings_it_back(tmp_path):
    """The status follows the last event: failed at ``2→ ✗``, running once the retry is written."""
    run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-retry2")
    state = _run_dir(tmp_path, run_id) / "state.md"
    state.write_text(LOG_HEAD.format(id=run_id), encoding="utf-8")
    before = cli("show", "--json", str(state.parent))
    assert before["status"] == "failed" and "2→ ✗ timeout" in before["status_reason"]
    assert [f["recovered"] for f in before["failures"]] == [False]
    vm_writes("append", state, "2→ retry:2/3\n")
    retrying = cli("show", "--json", str(state.parent))
    assert retrying["status"] == "running" and "RETRYING" in retrying["status_reason"]
    assert [(f["attempt"], f["recovered"]) for f in retrying["failures"]] == [("1/3", False)]


async def test_the_explorer_shows_a_run_retried_live_as_running_not_failed(tmp_path):
    run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-retry3")
    state = _run_dir(tmp_path, run_id) / "state.md"
    state.write_text(LOG_HEAD.format(id=run_id) + "2→ retry:2/3\n", encoding="utf-8")
    app = app_on(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        await wait_until(pilot, lambda: "RETRYING" in app.explorer.head_text.plain, what="the retry in the header")
        vm_writes("append", state, "2→ call ✓\n")
        await wait_until(pilot, lambda: len(app.explorer.current_run.events) == 4, what="the success to arrive")
        await wait_until(pilot, lambda: "RETRYING" not in app.explorer.head_text.plain, what="the header to move on")
        header = app.explorer.head_text.plain
        assert "running" in header, header
        assert "failed" not in header, header
        assert "failed" not in status_line(app)
        running_glyph = STATUS_SHORT[RunStatus.RUNNING][0]
        await wait_until(pilot, lambda: run_rows(app).startswith(running_glyph), what="the run list row running")
        assert app.explorer.current_run.status.value == "running"


def _snapshot(run_id: str, call_note: str, retry_note: str | None, updated: str) -> str:
    retry = f'let b = session "call"              # {retry_note}\n' if retry_note else ""
    started = datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").strftime("%Y-%m-%dT%H:%M:%SZ")
    return (f"# Execution State\n\nrun: {run_id}\nprogram: demo.prose\nstarted: {started}\n"
            f"updated: {updated}\n\n## Execution Trace\n\n```prose\n"
            'let a = session "research"          # --> bindings/a.md (complete)\n'
            f'let b = session "call"              # {call_note}\n{retry}'
            'let c = session "write"             # [...next...]\n```\n')


def test_a_snapshot_retried_after_a_failure_is_not_failed(tmp_path):
    written = datetime.now(timezone.utc)  # one reading: the id and the header agree, even across midnight
    run_id = written.strftime("%Y%m%d-%H%M%S-snap01")
    state = _run_dir(tmp_path, run_id) / "state.md"
    now = written.strftime("%Y-%m-%dT%H:%M:%SZ")
    state.write_text(_snapshot(run_id, "✗ timeout", None, now), encoding="utf-8")
    assert cli("show", "--json", str(state.parent))["status"] == "failed"
    vm_writes("replace", state, _snapshot(run_id, "✗ timeout", "<-- RETRYING (attempt 2/3)", now))
    retrying = cli("show", "--json", str(state.parent))
    assert retrying["status"] == "running" and "RETRYING" in retrying["status_reason"]
    vm_writes("replace", state, _snapshot(run_id, "✗ timeout", "✓ (attempt 2/3)", now))
    done = cli("show", "--json", str(state.parent))
    assert done["status"] == "running", done["status_reason"]
    assert [(f["line"], f["error"], f["recovered"]) for f in done["failures"]] == [(2, "timeout", True)]
    [row] = cli("runs", "--json", str(tmp_path))
    assert row["status"] == "running"


# -- 4. a future clock ------------------------------------------------------------------

def _dead_snapshot_with_a_future_header(tmp_path: Path) -> tuple[Path, datetime]:
    """A run last written 3 hours ago (its file's time, set with os.utime) whose header says 2099."""
    three_hours_ago = datetime.now(timezone.utc) - timedelta(hours=3)
    run_id = three_hours_ago.strftime("%Y%m%d-%H%M%S-future")
    state = _run_dir(tmp_path, run_id) / "state.md"
    vm_writes("replace", state, _snapshot(run_id, "<-- EXECUTING", None, "2099-01-01T00:00:00Z"))
    os.utime(state, (three_hours_ago.timestamp(), three_hours_ago.timestamp()))
    return state, three_hours_ago


def test_a_future_updated_header_does_not_keep_a_dead_run_running(tmp_path):
    state, written = _dead_snapshot_with_a_future_header(tmp_path)
    [row] = cli("runs", "--json", str(tmp_path))
    assert row["status"] == "interrupted", row["status_reason"]
    assert "3 h ago" in row["status_reason"] and "in the future" in row["status_reason"]
    assert abs(datetime.fromisoformat(row["updated"]) - written) < timedelta(seconds=2)  # the file's time
    shown = cli("show", "--json", str(state.parent))
    assert shown["status"] == "interrupted"
    assert shown["header"]["updated"] == "2099-01-01T00:00:00Z"  # what the VM wrote, kept as written
    assert any("2099-01-01" in w and "in the future" in w for w in shown["warnings"])


def test_a_small_skew_is_still_trusted(tmp_path):
    """A header a minute ahead (a VM rounding up) is the VM's clock, not an error."""
    written = datetime.now(timezone.utc)  # one reading: the header is a minute ahead of the id, exactly
    run_id = written.strftime("%Y%m%d-%H%M%S-skew01")
    state = _run_dir(tmp_path, run_id) / "state.md"
    ahead = (written + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    vm_writes("replace", state, _snapshot(run_id, "<-- EXECUTING", None, ahead))
    shown = cli("show", "--json", str(state.parent))
    assert shown["status"] == "running" and "per its updated: header" in shown["status_reason"]
    assert not any("in the future" in w for w in shown["warnings"])


async def test_the_explorer_ages_a_future_header_run_by_its_file(tmp_path):
    _state, written = _dead_snapshot_with_a_future_header(tmp_path)
    app = app_on(tmp_path, clock=lambda: written + timedelta(hours=3))  # 3 h however long the test takes
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: "interrupted" in app.explorer.head_text.plain, what="interrupted in the header")
        await wait_until(pilot, lambda: "changed 3 h ago" in status_line(app), what="the file's age in the status line")
        assert "0 s" not in status_line(app)
        assert "3 h" in run_rows(app)


# -- 7. an in-place rewrite that keeps the last bytes -------------------------------------

def _long_log(run_id: str, program: str) -> str:
    events = "".join(f"{i}→ step{i:03d} ✓\n" for i in range(1, 40))  # well over the 256-byte probe
    return f"# run:{run_id} {program}\n{events}"


async def test_an_in_place_rewrite_of_the_header_is_read_again(tmp_path):
    run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-rewr01")
    state = _run_dir(tmp_path, run_id) / "state.md"
    state.write_text(_long_log(run_id, "old.prose"), encoding="utf-8")
    app = app_on(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        await wait_until(pilot, lambda: "old.prose" in app.explorer.head_text.plain, what="the first program")
        # The same length, the same last 256 bytes and more: only the header differs.
        vm_writes("rewrite-in-place", state, _long_log(run_id, "new.prose"))
        await wait_until(pilot, lambda: "new.prose" in app.explorer.head_text.plain, what="the new program in the header")
        assert app.explorer.current_run.program == "new.prose"


def test_a_reactor_ledger_touched_in_the_future_is_not_receipts_arriving_for_ever(tmp_path):
    """A Reactor ledger file from a machine whose clock ran ahead (or an archive's 2099
    stamp) is not a ledger that just changed: file times are no evidence (issue 28)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))  # as test_reactor.py: the ledger writer lives there
    from bench_reactor import build

    state = tmp_path / "proj" / ".reactor"
    build(state, 60, 8)  # a flaky node fails once and recovers: the ledger is healthy
    future = datetime(2099, 1, 1, tzinfo=timezone.utc).timestamp()
    os.utime(state / "receipts.json", (future, future))
    shown = cli("show", "--json", str(state))
    assert shown["status"] != "running", shown["status_reason"]
    assert "receipts arriving" not in shown["status_reason"]
    # issue 28: a Reactor ledger is never dated by its file, in the future or not; its receipts carry no time
    assert shown["updated"] is None and shown["started"] is None


def test_a_tail_tells_a_head_rewrite_from_an_append(tmp_path):
    """FileTail (the event log's and receipts.jsonl's): appends are appends; the same
    bytes at the end with another header are a rewrite, read again whole."""
    from prose_tui.backends.filesystem.tail import Change, FileTail

    path = tmp_path / "state.md"
    body = "".join(f"{i}→ step{i:04d} ✓\n" for i in range(1, 400))  # past HEAD: the head hash is full
    vm_writes("replace", path, "# run:20260301-090000-c0ffee old.prose\n" + body)
    tail = FileTail(path)
    change, st, data = tail.look()
    tail.advance(len(data), st, data)
    assert change is Change.GREW
    vm_writes("append", path, "400→ more ✓\n")
    change, st, data = tail.look()
    assert (change, data) == (Change.GREW, "400→ more ✓\n".encode())
    tail.advance(len(data), st, data)
    assert tail.look()[0] is Change.SAME
    vm_writes("rewrite-in-place", path, "# run:20260301-090000-c0ffee new.prose\n" + body + "400→ more ✓\n")
    assert tail.look()[0] is Change.RESET


def test_each_failed_attempt_is_listed_with_the_retries_after_it():
    """The fixture's draft fails three times (retry:2/3, retry:3/3) and the run ends with
    ---error: every attempt is listed, none recovered, and a retry line and the failure it
    announced are one attempt, not two."""
    shown = cli("show", "--json", str(ROOT / "tests" / "fixtures" / "eventlog" / ".prose" / "runs"
                                     / "20260305-120000-e1e2e3"))
    assert shown["status"] == "failed" and "---error" in shown["status_reason"]
    assert [(f["line"], f["error"], f["attempt"], f["recovered"]) for f in shown["failures"]] == [
        (7, "timeout", "1/3", False), (9, "timeout", "2/3", False), (11, "rate limited", "3/3", False),
        (13, "rejected — Draft failed after 3 attempts; not shipping.", None, False)]
