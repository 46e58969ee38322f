"""What a watched snapshot rewrite and a binding append cost between the write and the
screen (issue 33, branch ``snap``).

Counted, never timed: a VM's atomic rewrite of a 200-statement run with 100 bindings,
written by the test between frames, as ``benchmarks/bench_e2e.py``'s ``snapshot-N``
cases do."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app_helpers import make_app, settled, wait_until

from prose_tui.model import Run
from prose_tui.tui.widgets.trace_view import TraceView

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import huge_run  # noqa: E402


def _snapshot(tmp_path: Path) -> tuple[Path, list[str], list[int], int]:
    """A snapshot run (200 trace lines, 100 bindings); its state.md lines, the statement
    lines and the executing one."""
    run = huge_run(tmp_path, bindings=100, trace_lines=200, agents=0, segments=0)
    lines = (run / "state.md").read_text(encoding="utf-8").splitlines()
    statements = [i for i, ln in enumerate(lines) if ln.startswith("let value_")]
    executing = next(i for i, ln in enumerate(lines) if "<-- EXECUTING" in ln)
    return run, lines, statements, executing


def _move_marker(run: Path, lines: list[str], frm: int, to: int, text: str) -> None:
    """Rewrite state.md as a VM does (a temporary file renamed over it): the statement at
    line ``frm`` completes, the one at ``to`` executes with ``text``."""
    lines[frm] = lines[frm].replace("# <-- EXECUTING", "# (complete)")
    lines[to] = f"let value_{to:05d} = session: {text}".ljust(70) + " # <-- EXECUTING"
    tmp = run / ".state.md.tmp"
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, run / "state.md")


async def test_building_a_watched_runs_history_does_not_write_the_run_out_as_text(tmp_path, monkeypatch):
    # Each rewrite builds the run's history in a worker. Textual describes a worker by the
    # repr of its work unless given a description: here a partial holding the whole run,
    # 300-600 KB of text formatted on the UI thread (7-14 ms at 500-2,000 statements) for
    # every rewrite, beside the next change's paint.
    run_dir, lines, statements, executing = _snapshot(tmp_path)
    formatted: list[str] = []
    real = Run.__repr__

    def counting(self):
        formatted.append(self.id)
        return real(self)

    monkeypatch.setattr(Run, "__repr__", counting)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching"), what="the watcher")
        await settled(pilot)
        trace = explorer.query_one(TraceView)
        formatted.clear()
        nxt = statements[statements.index(executing) + 1]
        _move_marker(run_dir, lines, executing, nxt, "marker_one")
        await wait_until(pilot, lambda: any("marker_one" in line.text for line in trace.lines), what="the rewrite")
        await wait_until(pilot, lambda: explorer.panes.history_pending, what="a history build to start")
        await settled(pilot)  # the history caught up (built in a worker, adopted)
        assert formatted == []


async def test_a_rewrite_that_wrote_no_binding_does_not_order_the_runs_bindings(tmp_path, monkeypatch):
    # Which binding the value pane follows is asked of every live change; a rewrite of
    # state.md alone names no binding file, and ordering the run's bindings by its trace
    # (500-2,000 statements: 1.5-4 ms of the UI thread) cannot pick one.
    import threading

    from prose_tui.model import write_order as order_module

    run_dir, lines, statements, executing = _snapshot(tmp_path)
    on_ui: list[bool] = []
    real = order_module.write_order

    def counting(run, *, first=False):
        on_ui.append(threading.current_thread() is threading.main_thread())
        return real(run, first=first)

    monkeypatch.setattr(order_module, "write_order", counting)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching"), what="the watcher")
        await settled(pilot)
        trace = explorer.query_one(TraceView)
        shown = explorer.panes.value_target
        on_ui.clear()
        nxt = statements[statements.index(executing) + 1]
        _move_marker(run_dir, lines, executing, nxt, "marker_two")
        await wait_until(pilot, lambda: any("marker_two" in line.text for line in trace.lines), what="the rewrite")
        await pilot.pause()
        assert explorer.panes.value_target == shown  # the value pane still shows what it showed
        assert not any(on_ui), f"the bindings were ordered {on_ui.count(True)} times on the UI thread"
