"""Faults while a run is watched (issue 35): the truth kept on screen.

A run folder that vanishes and comes back (deleted and made again, moved away and back)
is followed: it stays chosen, the panes say it is gone while it is, and it is shown and
followed again when it returns. A state file that cannot be read for a while keeps the
last good state on screen, marked with the reason and the time it was last read.

The filesystem changes are made by a real second process (``writer``), as a VM would.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from app_helpers import make_app, wait_until
from test_hostile import RUN_ID, SIZE, make_run, notifications, screen_text, state_md, trace_rows, watched

from prose_tui.live.pipeline import LivePipeline
from prose_tui.live.workspace import Workspace
from prose_tui.model import Delta, RunStatus
from prose_tui.tui.widgets.run_list import RunList

OTHER_ID = "20260228-090000-keep00"


def writer(script: str, **paths: Path) -> None:
    """Run ``script`` in a second Python process (the VM's side); ``paths`` are its variables."""
    head = "".join(f"{name} = {str(path)!r}\n" for name, path in paths.items())
    subprocess.run([sys.executable, "-c", "import os, shutil\n" + head + textwrap.dedent(script)], check=True)


def trace_text(app) -> str:
    return "\n".join(trace_rows(app))


def shown_id(app) -> str | None:
    run = app.explorer.current_run
    return run.id if run is not None else None


# -- a run folder that vanishes and comes back ----------------------------------------------------------------
async def _gone_then_back(pilot, app, run_dir: Path, *, away: str, back: str, scratch: Path) -> None:
    """The second process takes the shown run away (``away``), the panes say it is gone and
    no other run is opened; it brings it back (``back``) with a new statement, which the
    trace follows without a key pressed."""
    writer(away, run_dir=run_dir, scratch=scratch)
    await wait_until(pilot, lambda: "is gone from disk" in screen_text(app), what="the panes to say the run is gone")
    assert any(f"run {RUN_ID} was removed from disk" in n for n in notifications(app))
    assert shown_id(app) is None  # no other run was opened in its place
    assert app.explorer.query_one(RunList).highlighted is None
    assert "no run selected" not in screen_text(app)
    writer(back, run_dir=run_dir, scratch=scratch)
    await wait_until(pilot, lambda: shown_id(app) == RUN_ID, what="the run to be shown again")
    await wait_until(pilot, lambda: 'session "after return"' in trace_text(app), what="the new statement to show")
    assert "is gone from disk" not in screen_text(app)
    # Followed from here on: the next statement the VM writes shows too.
    writer("""
        with open(os.path.join(run_dir, "state.md.tmp"), "w") as fh:
            fh.write(TEXT)
        os.replace(os.path.join(run_dir, "state.md.tmp"), os.path.join(run_dir, "state.md"))
    """.replace("TEXT", repr(state_md(['session "after return"  # (complete)', 'session "next one"  # <-- EXECUTING']))),
        run_dir=run_dir)
    await wait_until(pilot, lambda: 'session "next one"' in trace_text(app), what="the run to be followed after its return")


MOVE_AWAY = "os.rename(run_dir, os.path.join(scratch, 'away'))"
MOVE_BACK = """
    os.rename(os.path.join(scratch, 'away'), run_dir)
    with open(os.path.join(run_dir, "state.md"), "w") as fh:
        fh.write(TEXT)
"""
DELETE = "shutil.rmtree(run_dir)"
RECREATE = """
    os.makedirs(os.path.join(run_dir, "bindings"))
    with open(os.path.join(run_dir, "state.md"), "w") as fh:
        fh.write(TEXT)
"""
BACK_TEXT = repr(state_md(['session "y"  # (complete)', 'session "after return"  # <-- EXECUTING']))


async def test_a_run_moved_away_and_back_while_shown_is_followed_again(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'])
    make_run(tmp_path, ['session "z"  # (complete)'], run_id=OTHER_ID)
    scratch = tmp_path / "elsewhere"
    scratch.mkdir()
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        assert shown_id(app) == RUN_ID
        await _gone_then_back(pilot, app, run_dir, away=MOVE_AWAY, back=MOVE_BACK.replace("TEXT", BACK_TEXT),
                              scratch=scratch)


async def test_a_run_deleted_and_made_again_while_shown_is_followed_again(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'])
    make_run(tmp_path, ['session "z"  # (complete)'], run_id=OTHER_ID)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        assert shown_id(app) == RUN_ID
        await _gone_then_back(pilot, app, run_dir, away=DELETE, back=RECREATE.replace("TEXT", BACK_TEXT), scratch=tmp_path)


async def test_the_only_run_deleted_and_made_again_is_shown_again(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'])
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        await _gone_then_back(pilot, app, run_dir, away=DELETE, back=RECREATE.replace("TEXT", BACK_TEXT), scratch=tmp_path)


async def test_a_run_opened_by_its_folder_deleted_and_made_again_is_shown_again(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'])
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        await _gone_then_back(pilot, app, run_dir, away=DELETE, back=RECREATE.replace("TEXT", BACK_TEXT), scratch=tmp_path)


async def test_choosing_another_run_while_one_is_gone_stops_waiting_for_it(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'])
    make_run(tmp_path, ['session "z"  # (complete)'], run_id=OTHER_ID)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        writer(DELETE, run_dir=run_dir)
        await wait_until(pilot, lambda: "is gone from disk" in screen_text(app), what="the panes to say the run is gone")
        await pilot.press("1", "down")
        await wait_until(pilot, lambda: shown_id(app) == OTHER_ID, what="the other run to open")
        assert "is gone from disk" not in screen_text(app)
        writer(RECREATE.replace("TEXT", BACK_TEXT), run_dir=run_dir)
        await wait_until(pilot, lambda: RUN_ID in [r.id for r in app.explorer.query_one(RunList).runs],
                         what="the run to be listed again")
        assert shown_id(app) == OTHER_ID  # the user's choice stands


# -- a state file that cannot be read for a while ------------------------------------------------------------
class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CAP_V3 = 0x20080522
_DAC = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


@pytest.fixture
def reads_as_a_user():
    """File permissions hold for this test's process as for a user's: as root, the
    capabilities that read any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) are dropped from
    the calling thread's effective set, which every thread it starts after (the app's
    readers, the live worker) inherits; a mode-000 file then fails to open with a real
    ``EACCES`` from the kernel. Restored after the test. The writer (a second process) is not
    affected. A non-root user needs nothing."""
    if os.geteuid() != 0:
        yield
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        header, data = _CapHeader(_CAP_V3, 0), (_CapData * 2)()
        if libc.capget(ctypes.byref(header), data) != 0:
            pytest.skip(f"capget failed (errno {ctypes.get_errno()}): cannot make a file unreadable to root")
    except (OSError, AttributeError) as exc:
        pytest.skip(f"no capget/capset here ({exc}): cannot make a file unreadable to root")
    saved = data[0].effective
    data[0].effective = saved & ~_DAC
    if libc.capset(ctypes.byref(header), data) != 0:
        pytest.skip(f"capset failed (errno {ctypes.get_errno()}): cannot make a file unreadable to root")
    try:
        yield
    finally:
        data[0].effective = saved
        libc.capset(ctypes.byref(header), data)


def head_text(app) -> str:
    return app.explorer.head_text.plain


SNAPSHOT_BEFORE = state_md(['session "first"  # (complete)', 'session "second"  # <-- EXECUTING'])
SNAPSHOT_AFTER = state_md(['session "first"  # (complete)', 'session "second"  # (complete)',
                           'session "third"  # <-- EXECUTING'], updated="2026-03-01T10:07:30Z")
LOG_BEFORE = f"# run:{RUN_ID} triage.prose\n1→ first ✓\n2→ second\n"
LOG_AFTER = LOG_BEFORE + "2→ second ✓\n3→ third\n"


@pytest.mark.parametrize("before,after", [(SNAPSHOT_BEFORE, SNAPSHOT_AFTER), (LOG_BEFORE, LOG_AFTER)],
                         ids=["snapshot", "event-log"])
async def test_an_unreadable_state_md_keeps_the_last_good_state_with_a_warning(tmp_path, reads_as_a_user, before, after):
    run_dir = make_run(tmp_path, [], state=before)
    state = run_dir / "state.md"
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        assert "second" in trace_text(app)
        writer("os.chmod(state, 0)", state=state)  # the VM's file, unreadable for a while
        await wait_until(pilot, lambda: "cannot read state.md" in head_text(app), what="the warning")
        warning = head_text(app)
        assert "Permission denied" in warning and "last read" in warning
        # The last good state stays: the trace, not "no statements yet" or a blank.
        assert "first" in trace_text(app) and "second" in trace_text(app)
        assert "no statements" not in screen_text(app)
        assert app.explorer.current_run is not None and app.explorer.current_run.read_problem
        writer("""
            with open(state, "w") as fh:
                fh.write(TEXT)
            os.chmod(state, 0o644)
        """.replace("TEXT", repr(after)), state=state)
        await wait_until(pilot, lambda: "third" in trace_text(app), what="the state read again")
        await wait_until(pilot, lambda: "cannot read" not in head_text(app), what="the warning to go")
        assert app.explorer.current_run.read_problem is None
        # Nothing else was given up over it: the history is still recorded.
        assert app.explorer.journal is not None, notifications(app)


# -- idle: statuses re-inferred only for runs that can change --------------------------------------------------
class CountingWorkspace(Workspace):
    """A workspace that counts the runs whose status each ``refresh_statuses`` re-infers, and
    wakes the test on every call (one a status tick)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.inferred: list[int] = []  # runs re-inferred, per call
        self.ticked = threading.Condition()

    def refresh_statuses(self, paths=None):
        changed = super().refresh_statuses(paths) if paths is not None else super().refresh_statuses()
        with self.ticked:
            self.inferred.append(len(self.runs) if paths is None else sum(1 for p in set(paths) if p in self.runs))
            self.ticked.notify_all()
        return changed

    def wait_ticks(self, n: int) -> None:
        with self.ticked:
            start = len(self.inferred)
            assert self.ticked.wait_for(lambda: len(self.inferred) >= start + n, timeout=120), "no status ticks"


def test_idle_ticks_reinfer_only_the_open_run_and_a_running_run_still_turns_interrupted(tmp_path):
    """300 ended runs and one running: while nothing changes, a status tick re-infers the run
    read in full (its reason says an age), not every run listed; the running run still
    turns interrupted once ``stale_after`` has passed since its last change."""
    t0 = datetime(2026, 3, 1, 10, 0, 0, tzinfo=timezone.utc)
    runs = tmp_path / ".prose" / "runs"
    for i in range(300):
        run_dir = runs / f"20260228-{i // 60:02d}{i % 60:02d}00-ended{i:03d}"
        run_dir.mkdir(parents=True)
        (run_dir / "state.md").write_text(f"# run:{run_dir.name} p.prose\n1→ a ✓\n---end 2026-02-28T09:00:00Z\n",
                                          encoding="utf-8")
    running = runs / "20260301-095900-live00"
    running.mkdir()
    (running / "state.md").write_text(f"# run:{running.name} p.prose\n1→ a ✓\n2→ b\n", encoding="utf-8")
    os.utime(running / "state.md", (t0.timestamp(), t0.timestamp()))
    now = [t0 + timedelta(seconds=60)]
    ws = CountingWorkspace(tmp_path, clock=lambda: now[0], stale_after=600)
    ws.scan()  # the newest (the running run) in full, the others as summaries
    assert ws.runs[running].status is RunStatus.RUNNING and len(ws.runs) == 301
    seen: list[Delta] = []
    turned = threading.Event()

    def sink(delta: Delta) -> None:
        seen.append(delta)
        if delta.run.path == running and delta.run.status is RunStatus.INTERRUPTED:
            turned.set()

    pipeline = LivePipeline(ws, [sink], tick=0.01)
    pipeline.start()
    try:
        ws.wait_ticks(30)
        idle = ws.inferred[-25:]
        assert max(idle) <= 1, f"an idle tick re-inferred {max(idle)} runs (of {len(ws.runs)})"
        now[0] = t0 + timedelta(seconds=601)  # past stale_after since the running run's last change
        assert turned.wait(120), "the running run did not turn interrupted"
        assert not [d for d in seen if d.run.path != running], "an ended run's status changed"
    finally:
        pipeline.stop()
