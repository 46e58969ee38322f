"""A run that cannot be read at all says so (issue 32 item 6).

A ``state.md`` or a run folder that cannot be read when the run is first read (permission
denied) is a run with status ``unreadable`` and the reason, in ``runs`` (and ``--json``), in
``show`` (exit 1, one line) and in the TUI's run list and header; never ``● running`` beside
a warning, and never left out of the list. (A state file that turns unreadable while watched
keeps its last good state: tests/test_live_faults.py.)

As root, mode 000 stops no read: the CLI runs in a second process that first drops the
capabilities that read any file (tests/as_a_user.py); the TUI test drops them in-process
(``reads_as_a_user``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from app_helpers import make_app, settled, wait_until
from as_a_user import CANNOT_DROP
from test_hostile import RUN_ID, SIZE, make_run, screen_text, state_md, watched
from test_live_faults import head_text, reads_as_a_user, trace_text, writer  # noqa: F401  (a fixture)

from prose_tui.tui.widgets.run_list import RunList

HERE = Path(__file__).parent
READABLE = "20260301-100000-good00"
NO_STATE = "20260301-110000-nostat"
NO_FOLDER = "20260301-120000-nodir0"


@pytest.fixture
def project(tmp_path):
    """Three runs: one readable, one whose state.md is mode 000, one whose folder is; all
    three say they are executing. Permissions are given back after the test (tmp cleanup)."""
    running = state_md(['session "first"  # <-- EXECUTING'])
    for run_id in (READABLE, NO_STATE, NO_FOLDER):
        make_run(tmp_path, [], run_id=run_id, state=running)
    runs = tmp_path / ".prose" / "runs"
    locked = [runs / NO_STATE / "state.md", runs / NO_FOLDER]
    for path in locked:
        os.chmod(path, 0)
    yield tmp_path
    for path in locked:
        os.chmod(path, 0o755)


def cli(*args: str) -> subprocess.CompletedProcess:
    """``prose-tui ARGS`` in a second process for which file permissions hold."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
           "NO_COLOR": "1", "COLUMNS": "160"}
    done = subprocess.run([sys.executable, str(HERE / "as_a_user.py"), *args], capture_output=True, text=True,
                          env=env, timeout=120)
    if done.returncode == CANNOT_DROP:
        pytest.skip("cannot drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH: cannot make a file unreadable to root")
    return done


def test_runs_lists_both_unreadable_runs_as_unreadable_with_the_reason(project):
    done = cli("runs", "--json", str(project))
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    assert set(rows) == {READABLE, NO_STATE, NO_FOLDER}  # the unreadable folder is not left out
    assert rows[NO_STATE]["status"] == "unreadable"
    assert rows[NO_STATE]["status_reason"] == "cannot read state.md: Permission denied"
    assert rows[NO_FOLDER]["status"] == "unreadable"
    assert rows[NO_FOLDER]["status_reason"] == "cannot read the run folder: Permission denied"
    assert rows[READABLE]["status"] != "unreadable"

    table = cli("runs", str(project))
    assert table.returncode == 0, table.stderr
    lines = {line.split()[0]: line for line in table.stdout.splitlines() if line.strip()}
    assert "unreadable" in lines[NO_STATE] and "running" not in lines[NO_STATE]
    assert "unreadable" in lines[NO_FOLDER]


@pytest.mark.parametrize("run_id,reason", [(NO_STATE, "cannot read state.md: Permission denied"),
                                           (NO_FOLDER, "cannot read the run folder: Permission denied")],
                         ids=["state.md", "folder"])
def test_show_on_an_unreadable_run_exits_1_with_one_line_saying_why(project, run_id, reason):
    run_dir = project / ".prose" / "runs" / run_id
    for args in (("show", str(run_dir)), ("show", "--json", str(run_dir))):
        done = cli(*args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert done.stdout == ""
        assert done.stderr.strip().splitlines() == [f"prose-tui: {run_dir}: unreadable: {reason}"]


def test_show_on_a_readable_run_beside_them_still_exits_0(project):
    done = cli("show", str(project / ".prose" / "runs" / READABLE))
    assert done.returncode == 0, done.stderr
    assert "unreadable" not in done.stdout


async def test_the_tui_lists_and_heads_an_unreadable_run_as_unreadable(project, reads_as_a_user):  # noqa: F811
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        run_list = app.explorer.query_one(RunList)
        await wait_until(pilot, lambda: {r.id for r in run_list.runs} >= {READABLE, NO_STATE, NO_FOLDER},
                         what="all three runs in the list")
        await settled(pilot)  # every row read, not its placeholder (listed at once, status unknown)
        shown = {r.id: r for r in run_list.runs}
        assert shown[NO_STATE].status == "unreadable" and shown[NO_FOLDER].status == "unreadable"
        await wait_until(pilot, lambda: screen_text(app).count("! 20260301-1") >= 2, what="the rows marked unreadable (!)")
        for run_id, reason in ((NO_STATE, "cannot read state.md"), (NO_FOLDER, "cannot read the run folder")):
            run_list.select_path(project / ".prose" / "runs" / run_id)
            await wait_until(pilot, lambda: app.explorer.current_run is not None and app.explorer.current_run.id == run_id,
                             what=f"{run_id} shown")
            await wait_until(pilot, lambda: "unreadable" in head_text(app) and reason in head_text(app),
                             what=f"{run_id}'s header to say unreadable and why")
            assert "running" not in head_text(app)


async def test_a_state_md_unreadable_at_first_is_shown_once_it_can_be_read(tmp_path, reads_as_a_user):  # noqa: F811
    run_dir = make_run(tmp_path, [], state=state_md(['session "first"  # (complete)', 'session "second"  # <-- EXECUTING']))
    state = run_dir / "state.md"
    os.chmod(state, 0)
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        await wait_until(pilot, lambda: "unreadable" in head_text(app), what="the run shown as unreadable")
        assert app.explorer.current_run.id == RUN_ID
        writer("os.chmod(state, 0o644); os.utime(state)", state=state)  # the VM's file, readable again
        await wait_until(pilot, lambda: "second" in trace_text(app), what="the state read")
        await wait_until(pilot, lambda: "unreadable" not in head_text(app), what="unreadable to go")
        assert app.explorer.current_run.read_problem is None


def test_an_unreadable_run_folder_in_a_native_runs_folder_is_listed_not_a_failure(tmp_path):
    """openprose-0.15 ``runs/`` at a repository's root: a child counts by its run-id name when
    it cannot be looked into (before, listing the project failed with Permission denied)."""
    runs = tmp_path / "runs"
    running = state_md(['session "first"  # <-- EXECUTING'])
    for run_id in (READABLE, NO_FOLDER):
        (runs / run_id).mkdir(parents=True)
        (runs / run_id / "state.md").write_text(running)
    os.chmod(runs / NO_FOLDER, 0)
    try:
        done = cli("runs", "--json", str(tmp_path))
    finally:
        os.chmod(runs / NO_FOLDER, 0o755)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    assert rows[NO_FOLDER]["status"] == "unreadable" and "Permission denied" in rows[NO_FOLDER]["status_reason"]
    assert rows[READABLE]["status"] != "unreadable"
