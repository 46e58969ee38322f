"""A long event log opened while the run list's start-up summary reads it is parsed once
(issues 33 and 35): the full read stops the summary, which then shows the full read's run,
instead of both parsing the same file side by side.

The order is made certain through the workspace's own signal (``Workspace.on_read``): the
summary holds at its start until the full read has said it superseded it.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path

from prose_tui.live.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import EventLogWriter  # noqa: E402

WAIT = 120  # seconds: a guard against a hang, not a measure (each wait is a few ms)


def test_a_log_opened_while_the_start_up_summary_reads_it_is_parsed_once(tmp_path):
    writer = EventLogWriter(tmp_path)
    writer.append(20_000)
    workspace = Workspace(tmp_path)
    run_dir = writer.run.resolve()
    told: Counter[str] = Counter()
    summary_began, superseding = threading.Event(), threading.Event()

    def on_read(path: Path, what: str) -> None:
        if path != run_dir:
            return
        told[what] += 1
        if what == "summary":
            summary_began.set()
            assert superseding.wait(WAIT), "the full read never began"
        elif what == "superseding":
            superseding.set()

    workspace.on_read = on_read
    listed: list = []
    scan = threading.Thread(target=lambda: listed.extend(workspace.scan(detail_first=False)))
    scan.start()
    assert summary_began.wait(WAIT), "the start-up summary never began"
    opened = workspace.detail(run_dir)  # the user opens the run while its summary is under way
    scan.join(WAIT)
    assert not scan.is_alive()

    assert told == Counter({"summary": 1, "superseding": 1, "summary superseded": 1, "full": 1, "full read": 1})
    assert opened is not None and len(opened.events) == 20_000
    assert listed == [opened]  # the run list shows the full read's run, not a second parse
    assert run_dir in workspace.detailed


def test_a_summary_with_no_full_read_beside_it_reads_to_the_end(tmp_path):
    writer = EventLogWriter(tmp_path)
    writer.append(3_000)
    workspace = Workspace(tmp_path)
    told: list[str] = []
    workspace.on_read = lambda path, what: told.append(what)
    (run,) = workspace.scan(detail_first=False)
    assert told == ["summary", "summary read"]
    assert len(run.events) == 3_000 and run.path not in workspace.detailed
