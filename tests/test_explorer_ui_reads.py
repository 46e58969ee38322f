"""The explorer's UI thread opens no file of the run or of its journal (issue 31): the open,
a live change, the compact layout's strip, a frozen history cursor on a journaled snapshot
run and a run with no parsed trace all read on a worker, and the screen still shows them.

Every ``open`` for reading (``sys.addaudithook``: ``open()`` and ``os.open``) made on the app's thread
under the project or the journal is recorded while a test watches."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from app_helpers import wait_until

from prose_tui.demo import DemoVM
from prose_tui.history.journal import Journal
from prose_tui.tui.app import ProseTUI
from prose_tui.tui.widgets.context_strip import ContextStrip
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView

_WATCHED: list[tuple[tuple[str, ...], list[str]]] = []  # (roots, reads) of the test watching


def _audit(event: str, args: tuple) -> None:
    if event != "open" or not _WATCHED or threading.current_thread() is not threading.main_thread():
        return
    target, mode, flags = args
    if isinstance(target, int) or target is None:
        return
    writes = (any(c in mode for c in "wax+") if isinstance(mode, str)
              else (flags or 0) & os.O_ACCMODE != os.O_RDONLY)
    if writes:  # the demo VM writing the run (the test's own steps), not a read
        return
    path = os.fsdecode(os.fspath(target))
    roots, reads = _WATCHED[-1]
    if path.startswith(roots):
        reads.append(path)
        if os.environ.get("UIREADS_STACK"):  # set it to see where each read comes from
            traceback.print_stack(limit=14)


sys.addaudithook(_audit)  # audit hooks cannot be removed: it records only while a test watches


@contextmanager
def ui_reads(*roots: Path) -> Iterator[list[str]]:
    """The files under ``roots`` opened on the UI thread (the main thread) while inside."""
    reads: list[str] = []
    _WATCHED.append((tuple(str(r.resolve()) for r in roots) + tuple(str(r) for r in roots), reads))
    try:
        yield reads
    finally:
        _WATCHED.pop()


def demo(tmp_path: Path, steps: int) -> tuple[DemoVM, Iterator[object]]:
    vm = DemoVM(tmp_path / "project", seed=1)
    walk = vm.steps()
    for _ in range(steps):
        next(walk)
    return vm, walk


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["wide", "compact"])
async def test_the_open_and_a_live_change_read_no_file_on_the_ui_thread(tmp_path, size):
    _, walk = demo(tmp_path, 6)
    with ui_reads(tmp_path) as reads:
        app = ProseTUI(tmp_path / "project", watch=True, journal=Journal(tmp_path / "journal"))
        async with app.run_test(size=size) as pilot:
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching")
                             and explorer.pending() is None, what="the demo run on screen, watched", turns=3000)
            timeline = explorer.query_one(Timeline)
            strip = explorer.query_one(ContextStrip)
            shown = len(timeline.events)
            for _ in range(2):
                next(walk)
                await wait_until(pilot, lambda: len(timeline.events) > shown and explorer.pending() is None,
                                 what="the timeline caught up with the VM's step", turns=3000)
                shown = len(timeline.events)
            if strip.display:  # compact: the strip shows the newest binding with its first line
                await wait_until(pilot, lambda: "◆" in strip.shown.plain, what="the strip's binding line")
    assert not reads, f"the UI thread read files: {sorted(set(reads))}"


async def test_a_run_with_no_parsed_trace_is_read_raw_off_the_ui_thread(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-abc123"
    (run_dir / "bindings").mkdir(parents=True)
    state = run_dir / "state.md"
    state.write_text("nothing parsed here\n", encoding="utf-8")
    with ui_reads(tmp_path) as reads:
        app = ProseTUI(tmp_path, watch=True)
        async with app.run_test(size=(120, 40)) as pilot:
            explorer = app.explorer
            trace = explorer.query_one(TraceView)
            await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching")
                             and "nothing parsed here" in trace_text(trace), what="the state file shown raw")
            assert "shown raw" in explorer.head_text.plain
            state.write_text("still nothing parsed\nbut a second line\n", encoding="utf-8")  # a live change
            await wait_until(pilot, lambda: "but a second line" in trace_text(trace), what="the change shown raw",
                             turns=3000)
    assert not reads, f"the UI thread read files: {sorted(set(reads))}"


def trace_text(trace: TraceView) -> str:
    return "\n".join(line.text for line in trace.lines)


async def test_a_frozen_cursor_on_a_journaled_snapshot_run_reads_no_file_on_the_ui_thread(tmp_path):
    _, walk = demo(tmp_path, 6)
    app = ProseTUI(tmp_path / "project", watch=True, journal=Journal(tmp_path / "journal"))
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching")
                         and explorer.pending() is None, what="the demo run on screen, watched", turns=3000)
        timeline = explorer.query_one(Timeline)
        shown = len(timeline.events)
        for _ in range(12):  # journaled changes: more revisions of state.md than are kept in memory
            next(walk)
            await wait_until(pilot, lambda: len(timeline.events) > shown and explorer.pending() is None,
                             what="the timeline caught up with the VM's step", turns=3000)
            shown = len(timeline.events)
        trace_pane = explorer.query_one("#trace-pane")
        with ui_reads(tmp_path) as reads:
            for key, where in (("left_curly_bracket", lambda: explorer.nav.position == 0),
                               ("right_square_bracket", lambda: explorer.nav.position == 1),
                               ("right_square_bracket", lambda: explorer.nav.position == 2)):
                await pilot.press(key)
                await wait_until(pilot, lambda: where() and f"as of event {explorer.nav.position}"
                                 in str(trace_pane.border_title) and explorer.pending() is None,
                                 what="the run as of the event the cursor is on")
    assert not reads, f"the UI thread read files: {sorted(set(reads))}"


async def test_the_first_event_of_a_journaled_run_is_not_todays_state_file_shown_raw(tmp_path):
    """Issue 32: the journal takes in a run's bindings before its first ``state.md`` revision,
    so event 0 has no statements. It says so; it is not today's ``state.md`` under "no
    statements parsed ... shown raw" (another moment's text, and a false warning)."""
    _, walk = demo(tmp_path, 2)
    app = ProseTUI(tmp_path / "project", watch=True, journal=Journal(tmp_path / "journal"))
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching")
                         and explorer.pending() is None, what="the demo run on screen, watched", turns=3000)
        timeline = explorer.query_one(Timeline)
        shown = len(timeline.events)
        for _ in range(3):
            next(walk)
            await wait_until(pilot, lambda: len(timeline.events) > shown and explorer.pending() is None,
                             what="the timeline caught up with the VM's step", turns=3000)
            shown = len(timeline.events)
        await pilot.press("left_curly_bracket")
        trace_pane = explorer.query_one("#trace-pane")
        await wait_until(pilot, lambda: explorer.nav.position == 0 and "as of event 0" in str(trace_pane.border_title)
                         and explorer.pending() is None, what="the run as of its first event")
        assert not explorer.model.view().trace  # the journal's event 0 precedes its first state.md revision
        assert "shown raw" not in explorer.head_text.plain
        assert "no statements yet as of this event" in explorer.head_text.plain
        assert trace_text(explorer.query_one(TraceView)) == ""
