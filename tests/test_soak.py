"""Soak: a writer thread does 1,000 file operations a second for 30 s while the explorer
watches; afterwards the screen matches the files, nothing raised, and keys still work.

The writer behaves like a busy VM: it rewrites ``state.md`` atomically (``os.replace``) with
the ``<-- EXECUTING`` marker one statement further each time, appends to binding files and
creates agent segments. ``PROSE_TUI_SOAK_SECONDS`` shortens or lengthens the run.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from app_helpers import make_app, wait_until
from prose_tui.sources import open_run
from prose_tui.widgets.binding_tree import BindingTree
from prose_tui.widgets.trace_view import TraceView

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


class Writer(threading.Thread):
    """Does ``RATE`` operations a second for ``seconds``; records what it did and any error."""

    def __init__(self, run_dir: Path, seconds: float) -> None:
        super().__init__(daemon=True)
        self.run_dir = run_dir
        self.seconds = seconds
        self.ops = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _loop(self) -> None:
        state, tmp = self.run_dir / "state.md", self.run_dir / ".state.md.tmp"
        agents = self.run_dir / "agents" / "captain"
        start = time.perf_counter()
        segments = 0
        while not self.stop.is_set():
            elapsed = time.perf_counter() - start
            if elapsed >= self.seconds:
                return
            due = int(elapsed * RATE)
            if self.ops > due:
                time.sleep((self.ops - due) / RATE)
                continue
            kind = self.ops % 3
            if self.ops % SEGMENT_EVERY == 0:
                segments += 1
                (agents / f"captain-{segments:03d}.md").write_text(f"timestamp: 2026-03-01T10:{segments % 60:02d}:00Z\nprompt: step {segments}\n\nbody\n")
            elif kind == 0:
                step = self.ops // 3
                tmp.write_text(state_md(step % STATEMENTS, step // STATEMENTS))
                os.replace(tmp, state)
            else:
                with open(self.run_dir / "bindings" / f"b{self.ops % BINDINGS}.md", "a", encoding="utf-8") as fh:
                    fh.write(f"line {self.ops}\n")
            self.ops += 1


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
    writer = Writer(run_dir, SECONDS)
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
        writer.join()
        assert writer.error is None, f"the writer failed: {writer.error!r}"
        assert writer.ops >= RATE * SECONDS * 0.9, f"only {writer.ops} operations in {SECONDS} s"

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
        print(f"soak: {writer.ops} ops in {SECONDS:.0f} s; worst event-loop lag {loop_lag * 1000:.0f} ms")
    assert app._exception is None
