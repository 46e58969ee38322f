"""A long log opened from the run list shows its newest events from its tail first (issue 33).

The first run shown has long been read tail first (``test_long_event_log``); a run opened
later from the list was read whole (summary, then full read) before anything of it showed:
2-5 s for a 100,000-event log. Now any run opened from the list shows its first screen
(header and last 64 KiB: the newest events and the status) at once, then the whole read
behind it; the keys stay free, and a run passed over quickly (down down down Enter) never
takes the place of the run chosen.

The whole read of the long logs is held here until the test has seen what it waits for,
so "before the full read completes" is a fact of the test, not a race it hopes to win.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from app_helpers import make_app, settled, wait_until

from prose_tui.backends.filesystem import backend as backend_module
from prose_tui.tui.widgets.trace_view import TraceView

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import EventLogWriter  # noqa: E402

NEWEST_ID = "20991231-235959-4ew000"  # listed first and opened first: small, read at once
PAD = " note" * 80  # long lines: a log over 1 MiB in few events (a quick whole parse)


def _held_whole_reads(monkeypatch, held: set[Path], *, summaries: bool = True) -> threading.Event:
    """Every whole read of a run in ``held`` (full reads, and summaries unless not
    ``summaries``) waits until the event is set."""
    release = threading.Event()
    load_run = backend_module.load_run

    def held_load_run(run_dir, *args, **kwargs):
        if Path(run_dir) in held and (summaries or not kwargs.get("summary")):
            release.wait()
        return load_run(run_dir, *args, **kwargs)

    monkeypatch.setattr(backend_module, "load_run", held_load_run)
    return release


def _small_newest(root: Path) -> None:
    run = root / ".prose" / "runs" / NEWEST_ID
    run.mkdir(parents=True)
    (run / "state.md").write_text(f"# run:{NEWEST_ID} small.prose\n1→ small_step ✓\n", encoding="utf-8")


def _head(app) -> str:
    return str(app.explorer.query_one("#run-head").render())


async def test_a_100000_event_log_opened_from_the_list_shows_its_newest_event_before_the_whole_read(tmp_path, monkeypatch):
    _small_newest(tmp_path)
    writer = EventLogWriter(tmp_path)
    writer.append(100_000)
    release = _held_whole_reads(monkeypatch, {writer.run})
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)
        try:
            await wait_until(pilot, lambda: "small_step" in "".join(line.text for line in trace.lines),
                             what="the newest run shown first")
            await pilot.press("1", "down", "enter")
            await wait_until(pilot, lambda: trace.lines and "step_100000 " in trace.lines[-1].text,
                             what="the log's newest event shown from its tail")
            assert writer.run_id in _head(app) and "still loading" in _head(app)
            assert trace.lines[-1].line == 100_000  # numbered as in the whole trace
            assert "step_1 " not in "".join(line.text for line in trace.lines)  # the tail, not the log
            assert app.explorer.feed.first_screens == 1
        finally:
            release.set()
        await settled(pilot, writer.run)
        assert "step_1 " in trace.lines[0].text and "step_100000 " in trace.lines[-1].text
        assert "still loading" not in _head(app)


async def test_a_long_log_listed_already_opens_from_its_tail_not_its_whole_summary(tmp_path, monkeypatch):
    """Its row read (a summary of 100,000 lines): painting that summary took the UI thread
    seconds, keys held, before the full read painted it again. Its header, then its tail."""
    _small_newest(tmp_path)
    writer = EventLogWriter(tmp_path)
    writer.append(100_000)
    release = _held_whole_reads(monkeypatch, {writer.run}, summaries=False)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)
        try:
            await wait_until(pilot, lambda: app.explorer.feed.watcher_state.startswith("watching"),
                             what="the list read (watching starts after it)")
            assert writer.run in app.explorer.workspace.runs  # its summary: read, not shown
            await pilot.press("1", "down", "enter")
            await wait_until(pilot, lambda: trace.lines and "step_100000 " in trace.lines[-1].text,
                             what="the log's newest event shown from its tail")
            assert "still loading" in _head(app) and len(trace.lines) < 5_000
        finally:
            release.set()
        await settled(pilot, writer.run)
        assert "step_1 " in trace.lines[0].text and "still loading" not in _head(app)


def _long_log(root: Path, run_id: str, name: str) -> tuple[Path, int]:
    run = root / ".prose" / "runs" / run_id
    run.mkdir(parents=True)
    lines, size, n = [f"# run:{run_id} {name}.prose\n"], 0, 0
    while size <= 1_100_000:
        n += 1
        lines.append(f"{n}→ {name}_{n} ✓{PAD}\n")
        size += len(lines[-1])
    (run / "state.md").write_text("".join(lines), encoding="utf-8")
    return run, n


async def test_runs_passed_over_quickly_never_take_the_place_of_the_run_chosen(tmp_path, monkeypatch):
    _small_newest(tmp_path)
    logs = [_long_log(tmp_path, f"2026030{i}-090000-10{i}000", f"log{i}") for i in (3, 2, 1)]  # newest first
    release = _held_whole_reads(monkeypatch, {run for run, _ in logs})
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)
        chosen, n = logs[-1]
        try:
            await wait_until(pilot, lambda: "small_step" in "".join(line.text for line in trace.lines),
                             what="the newest run shown first")
            await pilot.press("1", "down", "down", "down", "enter")
            await wait_until(pilot, lambda: trace.lines and f"log1_{n} " in trace.lines[-1].text,
                             what="the chosen run's newest event shown from its tail")
            for _ in range(20):  # what the runs passed over handed to the screen has arrived by now
                await pilot.pause()
                assert app.explorer.current_run.path == chosen
                assert "log1.prose" in _head(app) and f"log1_{n} " in trace.lines[-1].text
        finally:
            release.set()
        await settled(pilot, chosen)
        assert app.explorer.current_run.path == chosen
        assert f"log1_{n} " in trace.lines[-1].text and "log1_1 " in trace.lines[0].text
