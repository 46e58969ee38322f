"""A run that was done (completed, failed) and then goes on is followed (issue 35).

A VM may resume a run the explorer shows as done: it appends a step after ``---end``
(FORMATS.md: a log ending with neither ``---end`` nor ``---error`` is running or
interrupted), or replaces ``---error`` with ``---resume`` and goes on. The one watcher sees
every run's files whatever its status (no status timer runs for a done run): the run
list, the header and the trace follow the run again. The VM is a real second process.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from app_helpers import make_app, settled, wait_until
from test_hostile import screen_lines, screen_text, state_md, watched
from test_live_faults import writer

from prose_tui.model import RunStatus
from prose_tui.tui.widgets.run_list import RunList

DONE_ID = "20260301-090000-d0ne00"
NEWEST_ID = "20260301-100000-4ew000"
STEPS = "".join(f"{i}→ step_{i} ✓\n" for i in range(1, 60))  # more lines than an 80x24 trace shows


def _log_run(root: Path, run_id: str, text: str) -> Path:
    run_dir = root / ".prose" / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "vm.log.md").write_text(f"# run:{run_id} resumed.prose\n{text}", encoding="utf-8")
    return run_dir


def _row(app, run_dir: Path):
    return next(r for r in app.explorer.query_one(RunList).runs if r.path == run_dir)


def _head(app) -> str:
    return str(app.explorer.query_one("#run-head").render())


async def test_a_completed_run_a_vm_goes_on_with_is_running_again_in_the_list_and_its_trace(tmp_path):
    done = _log_run(tmp_path, DONE_ID, STEPS + "---end 2026-03-01T09:10:00Z\n")
    _log_run(tmp_path, NEWEST_ID, "1→ other ✓\n")
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await watched(pilot)
        assert _row(app, done).status is RunStatus.COMPLETED  # a row, not the run shown
        # The VM goes on without writing ``---resume``: the log no longer ends with ``---end``.
        writer("open(os.path.join(run, 'vm.log.md'), 'a').write('60→ step_after_end\\n')", run=done)
        await wait_until(pilot, lambda: _row(app, done).status is RunStatus.RUNNING, what="the row to say running")
        app.explorer.query_one(RunList).select_path(done)
        await settled(pilot, done)
        assert "running" in _head(app) and "---end" not in _head(app)
        assert any("step_after_end" in line for line in screen_lines(app))
        writer("open(os.path.join(run, 'vm.log.md'), 'a').write('60→ step_after_end ✓\\n61→ step_next\\n')", run=done)
        await wait_until(pilot, lambda: "step_next" in screen_text(app), what="the next step followed")


async def test_a_failed_run_shown_on_its_failure_follows_the_vm_when_it_resumes(tmp_path):
    failed = _log_run(tmp_path, DONE_ID, STEPS + "60→ step_60 ✗ timeout\n---error 2026-03-01T09:10:00Z boom\n")
    app = make_app(failed, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await watched(pilot)
        assert "failed" in _head(app)
        # The VM resumes: the ``---error`` line becomes ``---resume`` and the next steps follow.
        steps = "".join(f"{i}→ step_{i} ✓\\n" for i in range(61, 90))
        writer(f"""
            p = os.path.join(run, 'vm.log.md')
            text = open(p).read().replace('---error 2026-03-01T09:10:00Z boom\\n', '---resume\\n{steps}90→ step_resumed\\n')
            open(p + '.tmp', 'w').write(text)
            os.replace(p + '.tmp', p)
        """, run=failed)
        await wait_until(pilot, lambda: "running" in _head(app), what="the header to say running")
        # The trace opened on the failure (not following); the run going on is followed again:
        # its newest step is on screen, not below the failure out of sight.
        await wait_until(pilot, lambda: "step_resumed" in screen_text(app), what="the resumed step on screen")
        assert _row(app, failed).status is RunStatus.RUNNING


SNAPSHOT_DONE = state_md(['session "step_one"  # (complete)'])
SNAPSHOT_RESUMED = state_md(['session "step_one"  # (complete)', 'session "step_resumed"  # <-- EXECUTING'])
SQLITE_SCHEMA = f"""
CREATE TABLE run (id TEXT PRIMARY KEY, program_path TEXT, started_at TEXT, updated_at TEXT, status TEXT);
CREATE TABLE execution (id INTEGER PRIMARY KEY AUTOINCREMENT, statement_index INTEGER, statement_text TEXT,
    status TEXT, started_at TEXT, completed_at TEXT, error_message TEXT, parent_id INTEGER, metadata TEXT);
INSERT INTO run VALUES ('{DONE_ID}', 'resumed.prose', '2026-03-01T09:00:00Z', '2026-03-01T09:10:00Z', 'completed');
INSERT INTO execution (statement_index, statement_text, status, started_at, completed_at)
    VALUES (1, 'session "step_one"', 'completed', '2026-03-01T09:00:00Z', '2026-03-01T09:10:00Z');
"""
SQLITE_RESUME = """
db = sqlite3.connect(os.path.join(run, 'state.db'))  # one connection, as the seed's sqlite3 CLI call
db.execute("UPDATE run SET status = 'running', updated_at = '2026-03-01T10:07:00Z'")
db.execute("INSERT INTO execution (statement_index, statement_text, status, started_at) "
           "VALUES (2, 'session \\"step_resumed\\"', 'executing', '2026-03-01T10:07:00Z')")
db.commit()
db.close()
"""


@pytest.mark.parametrize("kind", ["snapshot", "sqlite"])
async def test_a_completed_run_of_another_format_is_followed_when_it_resumes(tmp_path, kind):
    """A guard beside the two above (these formats were followed already): a completed
    snapshot rewritten with a statement executing, a completed state.db given a row."""
    done = tmp_path / ".prose" / "runs" / DONE_ID
    done.mkdir(parents=True)
    if kind == "snapshot":
        (done / "state.md").write_text(SNAPSHOT_DONE, encoding="utf-8")
        script = ("p = os.path.join(run, 'state.md')\nopen(p + '.tmp', 'w').write(TEXT)\nos.replace(p + '.tmp', p)\n"
                  .replace("TEXT", repr(SNAPSHOT_RESUMED)))
    else:
        db = sqlite3.connect(done / "state.db")
        db.executescript(SQLITE_SCHEMA)
        db.close()
        script = "import sqlite3\n" + SQLITE_RESUME
    _log_run(tmp_path, NEWEST_ID, "1→ other ✓\n")
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await watched(pilot)
        await wait_until(pilot, lambda: _row(app, done).status is RunStatus.COMPLETED, what="the row read as completed")
        app.explorer.query_one(RunList).select_path(done)
        await settled(pilot, done)
        assert "completed" in _head(app)
        writer(script, run=done)
        await wait_until(pilot, lambda: _row(app, done).status is RunStatus.RUNNING and "running" in _head(app),
                         what="the row and the header to say running")
        await wait_until(pilot, lambda: "step_resumed" in screen_text(app), what="the resumed statement in the trace")


async def test_a_running_run_that_fails_live_stops_on_its_failure(tmp_path):
    """The other way round: a run being followed fails while shown. The trace stops following
    and its cursor goes to the failed statement, as when a failed run is opened. An event-log
    run changes in place, so the status the view last showed is what says it just failed
    (the run's own status was already the new one, and the failure was passed by)."""
    from prose_tui.tui.widgets.trace_view import TraceView

    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)  # one reading for the id and the app's clock, even across midnight
    today = now.strftime("%Y%m%d-%H%M%S") + "-fa1100"  # a run started just now
    running = _log_run(tmp_path, today, STEPS + "60→ step_60\n")  # step 60 under way
    app = make_app(running, watch=True, now=now)  # written just now: running
    async with app.run_test(size=(80, 24)) as pilot:
        await watched(pilot)
        assert "running" in _head(app)
        trace = app.explorer.query_one(TraceView)
        assert trace.following
        more = "60→ step_60 ✓\\n" + "".join(f"{i}→ step_{i} ✓\\n" for i in range(61, 63))
        writer(f"open(os.path.join(run, 'vm.log.md'), 'a').write('{more}63→ step_63 ✗ timeout\\n"
               "64→ step_64 ✓\\n65→ step_65 ✓\\n---error 2026-03-01T09:10:00Z boom\\n')", run=running)
        await wait_until(pilot, lambda: "failed" in _head(app), what="the header to say failed")
        await wait_until(pilot, lambda: not trace.following, what="following to stop on the failure")
        await wait_until(pilot, lambda: "step_63" in (trace.lines[trace.cursor].text + (trace.lines[trace.cursor].note or "")),
                         what="the cursor on the failed statement")
