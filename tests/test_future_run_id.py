"""A run whose id is dated in the future (a VM's wrong clock: ``20990101-…``) has no age
from that date in the run list: its state file's modification time decides, and with no
state file the age is left blank (it read "0 s", then a few seconds, for ever)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

from prose_tui.backends import open_run
from prose_tui.tui.widgets.run_rows import run_prompt

NOW = datetime(2026, 3, 1, 10, 8, 0, tzinfo=timezone.utc)
RUN_ID = "20990101-000000-abcdef"


def test_a_bare_run_dated_2099_shows_no_age(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / RUN_ID
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "bindings" / "x.md").write_text("# x\n\nkind: let\n\n---\n\nhello\n", encoding="utf-8")
    (run_dir / "program.prose").write_text('session "x"\n', encoding="utf-8")
    run = open_run(run_dir, now=NOW, summary=True)
    assert run.started is not None and run.started.year == 2099
    row = run_prompt(run, NOW).plain
    assert not row.rstrip().endswith(" s"), row  # no "0 s" / "8 s" from a date that has not come


def test_the_state_files_time_decides_over_a_start_in_the_future(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    state = run_dir / "state.md"
    state.write_text("# Execution State\n\nprogram: x.prose\nstatus: completed\n\n## Execution Trace\n\n"
                     "```prose\nsession \"a\"   # --> done\n```\n", encoding="utf-8")
    three_hours_ago = (NOW - timedelta(hours=3)).timestamp()
    os.utime(state, (three_hours_ago, three_hours_ago))
    run = open_run(run_dir, now=NOW, summary=True)
    run.updated = None  # as a reader that did not take the file's time for the last change
    assert run_prompt(run, NOW).plain.rstrip().endswith("3 h")
