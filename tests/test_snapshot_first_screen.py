"""A snapshot run with many binding files shows its first screen before they are read (issue 33).

Opening a run read every binding file's head (2,000 files for ``benchmarks/generate.py``'s
``huge_run``) before anything of the run was on screen. ``state.md`` alone says what the
first screen shows: the executing statement, the call stack and the run's status (the
binding files only by name: one written for a statement still to come says the run was
interrupted). ``folder.load_snapshot_first_screen`` reads just that; the explorer shows it,
then the whole run once its bindings and agents are read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from prose_tui.backends.filesystem.folder import FIRST_SCREEN_FILES, load_run, load_snapshot_first_screen
from prose_tui.backends.filesystem.snapshot import parse_snapshot
from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_cached, parse_snapshot_first_screen
from prose_tui.model import StatementState
from prose_tui.tui.widgets.trace_view import TraceView
from tests.app_helpers import FIXED_NOW, held_run_reads, make_app, settled, wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from generate import huge_run  # noqa: E402

BINDINGS = FIRST_SCREEN_FILES + 44


def _big_run(tmp_path: Path) -> tuple[Path, str]:
    """A snapshot run with more binding files than the first-screen threshold; the name its
    executing statement binds."""
    run = huge_run(tmp_path, bindings=BINDINGS, trace_lines=2 * BINDINGS, agents=0, segments=0)
    executing = next(ln for ln in (run / "state.md").read_text(encoding="utf-8").splitlines() if "<-- EXECUTING" in ln)
    return run, executing.split(" = ")[0].split()[-1]


def test_the_first_screen_agrees_with_the_full_read_on_what_it_shows(tmp_path) -> None:
    run, name = _big_run(tmp_path)
    first = load_snapshot_first_screen(run, now=FIXED_NOW)
    whole = load_run(run, now=FIXED_NOW)
    assert first is not None and whole.status == "interrupted"
    assert (first.status, first.status_reason) == (whole.status, whole.status_reason)
    assert "bindings for later statements exist" in first.status_reason  # the names were listed
    assert first.trace == whole.trace and first.executing is not None and name in first.executing.text
    assert (first.call_stack, first.header, first.program, first.updated, first.sections) == \
        (whole.call_stack, whole.header, whole.program, whole.updated, whole.sections)
    assert first.bindings == [] and len(whole.bindings) == BINDINGS
    assert "still loading" in first.warnings[0]
    assert not any("still loading" in w for w in whole.warnings)


def test_a_parse_after_a_first_screen_reads_the_index_and_all(tmp_path) -> None:
    run, _name = _big_run(tmp_path)
    # A text no other test parsed (a text parsed whole before is taken, Index and all, from the cache).
    text = (run / "state.md").read_text(encoding="utf-8").replace("updated: 2026-01-15T10:00:00Z", f"updated: {tmp_path.name}")
    first = parse_snapshot_first_screen(text, run)
    assert first is not None and first.binding_rows == [] and first.trace
    assert parse_snapshot_cached(text, run) == parse_snapshot(text)
    assert len(parse_snapshot(text).binding_rows) == BINDINGS


def test_a_run_with_few_bindings_is_read_whole_at_once(tmp_path) -> None:
    run = huge_run(tmp_path, bindings=FIRST_SCREEN_FILES, trace_lines=40, agents=0, segments=0)
    assert load_snapshot_first_screen(run, now=FIXED_NOW) is None


def test_the_first_screen_of_a_plain_snapshot_does_not_load_markdown_it(tmp_path) -> None:
    run, _name = _big_run(tmp_path)
    probe = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from prose_tui.backends.filesystem.folder import load_snapshot_first_screen\n"
        f"run = load_snapshot_first_screen(Path({str(run)!r}))\n"
        "print(json.dumps([run.status.value, 'markdown_it' in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == ["interrupted", False]


async def test_the_explorer_shows_the_executing_statement_and_status_before_the_bindings_are_read(
        tmp_path, monkeypatch) -> None:
    run, name = _big_run(tmp_path)
    full_read = held_run_reads(monkeypatch)  # the bindings are read only once the first screen was seen
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)
        head = app.explorer.query_one("#run-head")

        def executing_shown() -> bool:
            return any(line.state is StatementState.EXECUTING and name in line.text for line in trace.lines)

        try:
            await wait_until(pilot, lambda: executing_shown() and "interrupted" in str(head.render()),
                             what="the executing statement and the run's status shown")
            assert "still loading" in str(head.render())
            assert app.explorer.model.run is not None and app.explorer.model.run.bindings == []
        finally:
            full_read.release()
        await settled(pilot)
        await wait_until(pilot, lambda: len(app.explorer.model.run.bindings) == BINDINGS, what="the bindings shown")
        assert "still loading" not in str(head.render())
        assert executing_shown() and "interrupted" in str(head.render())
