"""Soak: a writer process does 1,000 file operations a second for 30 s while the explorer
watches; afterwards the screen matches the files, nothing raised, and keys still work.

The writer behaves like a busy VM in its own process: it rewrites ``state.md`` atomically (``os.replace``) with
the ``<-- EXECUTING`` marker one statement further each time, appends to binding files and
creates agent segments. ``PROSE_TUI_SOAK_SECONDS`` shortens or lengthens the run.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest
from app_helpers import make_app, wait_until

from prose_tui.backends import open_run
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.trace_view import TraceView

SECONDS = float(os.environ.get("PROSE_TUI_SOAK_SECONDS", "30"))
RATE = 1000  # file operations per second
RUN_ID = "20260301-100000-soak00"
STATEMENTS = 40
BINDINGS = 8
SEGMENT_EVERY = 25  # one new segment per this many operations


def state_md(executing: int, round_: int) -> str:
    trace = []
    for i in range(STATEMENTS):
        line = f'let b{i % BINDINGS}_{i} = session "statement {i}"'
        if i < executing:
            line += f"  # --> bindings/b{i % BINDINGS}.md (complete)"
        elif i == executing:
            line += f"  # <-- EXECUTING (round {round_})"
        trace.append(line)
    return (
        f"# Execution State\n\nrun: {RUN_ID}\nprogram: soak.prose\nstarted: 2026-03-01T10:00:00Z\n"
        f"updated: 2026-03-01T10:07:00Z\n\n## Execution Trace\n\n```prose\n" + "\n".join(trace) + "\n```\n\n"
        "## Call Stack\n\n(empty)\n"
    )


def write_loop(run_dir: str, seconds: float, ops, stop) -> None:
    """Do ``RATE`` operations a second for ``seconds``; ``ops`` (a shared counter) says how many.

    Runs in its own process, as a VM would, so the explorer's work cannot slow it down.
    """
    run_dir = Path(run_dir)
    state, tmp = run_dir / "state.md", run_dir / ".state.md.tmp"
    agents = run_dir / "agents" / "captain"
    start = time.perf_counter()
    done = segments = 0
    while not stop.is_set():
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return
        due = int(elapsed * RATE)
        if done > due:
            time.sleep((done - due) / RATE)
            continue
        if done % SEGMENT_EVERY == 0:
            segments += 1
            (agents / f"captain-{segments:03d}.md").write_text(f"timestamp: 2026-03-01T10:{segments % 60:02d}:00Z\nprompt: step {segments}\n\nbody\n")
        elif done % 3 == 0:
            step = done // 3
            tmp.write_text(state_md(step % STATEMENTS, step // STATEMENTS))
            os.replace(tmp, state)
        else:
            with open(run_dir / "bindings" / f"b{done % BINDINGS}.md", "a", encoding="utf-8") as fh:
                fh.write(f"line {done}\n")
        done += 1
        ops.value = done


def make_soak_run(root: Path) -> Path:
    run_dir = root / ".prose" / "runs" / RUN_ID
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "agents" / "captain").mkdir(parents=True)
    (run_dir / "agents" / "captain" / "memory.md").write_text("# captain\n")
    for j in range(BINDINGS):
        (run_dir / "bindings" / f"b{j}.md").write_text(f"# b{j}\n\nkind: let\n\n---\n\n")
    (run_dir / "state.md").write_text(state_md(0, 0))
    return run_dir


def _summary(run) -> tuple:
    return (
        [(t.line, t.text, t.note, t.state) for t in run.trace],
        sorted((b.name, b.bytes, b.exists) for b in run.bindings),
        sorted((a.name, len(a.segments)) for a in run.agents),
    )


@pytest.mark.slow
async def test_1000_file_ops_per_second_for_30_s_while_watching(tmp_path):
    run_dir = make_soak_run(tmp_path)
    app = make_app(tmp_path, watch=True)
    ctx = multiprocessing.get_context("spawn")
    ops, stop = ctx.Value("q", 0), ctx.Event()
    writer = ctx.Process(target=write_loop, args=(str(run_dir), SECONDS, ops, stop), daemon=True)
    try:
        await _soak(app, writer, ops, run_dir)
    finally:
        stop.set()
        writer.join(5)
        if writer.is_alive():
            writer.terminate()
    assert app._exception is None


async def _soak(app, writer, ops, run_dir: Path) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching"), what="the watcher")
        trace = explorer.query_one(TraceView)
        writer.start()
        loop_lag = 0.0
        while writer.is_alive():  # keep the event loop turning and measure how late it runs
            t0 = time.perf_counter()
            await pilot.pause(0.05)
            loop_lag = max(loop_lag, time.perf_counter() - t0 - 0.05)
        writer.join(10)
        assert writer.exitcode == 0, f"the writer failed (exit code {writer.exitcode})"
        assert ops.value >= RATE * SECONDS * 0.9, f"only {ops.value} operations in {SECONDS} s"

        expected = open_run(run_dir)
        await wait_until(pilot, lambda: explorer.current_run is not None and _summary(explorer.current_run) == _summary(expected),
                         timeout=30, what="the explorer to catch up with the files")
        assert trace.lines == expected.trace
        executing = expected.executing
        assert executing is not None and trace.lines[trace.cursor].line == executing.line  # still following
        tree = explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: tree.shape == BindingTree.shape_of(explorer.current_run), what="the tree to catch up")
        assert app._exception is None

        # Still responsive: keys act at once.
        await pilot.press("2", "k")
        assert not trace.following
        await pilot.press("f")
        assert trace.following and trace.lines[trace.cursor].line == executing.line
        print(f"soak: {ops.value} ops in {SECONDS:.0f} s; worst event-loop lag {loop_lag * 1000:.0f} ms")
