"""Live latency: a write on disk until the explorer shows it, headless (Textual run_test).

    python benchmarks/bench_live.py [--writes 200] [--rate 100]

Two cases, each over ``--writes`` writes spaced 50 ms apart:
- binding: append a line to the binding shown in the value viewer; done when the viewer
  holds the new text and the screen has refreshed;
- state.md: rewrite state.md moving the executing marker; done when the trace cursor is
  on the new executing line and the screen has refreshed.
"Shows it" is the first frame the app hands to its display after the widget holds the
change (``App._display`` is wrapped to time frames; headless, nothing is written out).
Prints p50/p95/p99 in milliseconds. Figures, not assertions: the target is p95 <= 100 ms.

``--rate R`` writes at R writes per second without waiting for each to show (the VM does not
wait for the viewer): each write carries a counter, and every frame the app hands to its
display marks as shown all writes up to the newest one the widget holds then (a state.md
rewrite superseded by a newer one counts as shown when the newer one is). ``measure`` is
the entry point ``run_all.py`` uses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prose_tui.demo import DemoVM  # noqa: E402
from prose_tui.tui.app import ProseTUI  # noqa: E402
from prose_tui.tui.widgets.trace_view import TraceView  # noqa: E402
from prose_tui.tui.widgets.value_viewer import ValueViewer  # noqa: E402


async def until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(0.0005)
    return True


def percentiles(samples: list[float]) -> str:
    qs = statistics.quantiles(samples, n=100, method="inclusive")
    return f"p50 {qs[49]:6.1f}  p95 {qs[94]:6.1f}  p99 {qs[98]:6.1f}  max {max(samples):6.1f}  (n={len(samples)})"


async def measure(writes: int, rate: float | None = None) -> dict[str, list[float]]:
    """Latency samples in ms: ``{"binding append": [...], "state.md rewrite": [...]}``."""
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        vm = DemoVM(project)
        steps = vm.steps()
        for _ in range(12):
            next(steps)
        state = vm.run_dir / "state.md"
        binding = sorted((vm.run_dir / "bindings").glob("*.md"))[0]
        app = ProseTUI(project, watch=True)
        frames: list[float] = []
        original = app._display

        def timed_display(screen, renderable):
            frames.append(time.perf_counter())
            return original(screen, renderable)

        app._display = timed_display

        async def painted_after(t_state: float) -> float:
            await until(lambda: frames and frames[-1] >= t_state, 2.0)
            return next(f for f in frames if f >= t_state)

        async with app.run_test(size=(120, 40)) as pilot:
            explorer = app.explorer
            await until(lambda: explorer.watcher_state.startswith("watching"), 10)
            explorer.query_one("#tree").select_binding_path(binding)
            viewer = explorer.query_one(ValueViewer)
            await until(lambda: viewer.target is not None and viewer.target.path == binding)
            await pilot.pause()
            if rate:
                await _at_rate(app, explorer, binding, state, writes, rate, out)
                return out

            samples: list[float] = []
            for i in range(writes):
                marker = f"bench line {i}"
                t0 = time.perf_counter()
                with open(binding, "a", encoding="utf-8") as fh:
                    fh.write(f"\n{marker}\n")
                if await until(lambda: marker in viewer.text):
                    painted = await painted_after(time.perf_counter())
                    samples.append((painted - t0) * 1000)
                await asyncio.sleep(0.05)
            out["binding append"] = samples

            trace = explorer.query_one(TraceView)
            text = state.read_text(encoding="utf-8")
            lines = text.splitlines()
            targets = [i for i, ln in enumerate(lines) if "= session" in ln and "#" not in ln.split("=", 1)[0]]
            samples = []
            for i in range(writes):
                pick = targets[i % len(targets)]
                new = [ln.split("  # ", 1)[0].replace("# <-- EXECUTING", "").rstrip() if "<-- EXECUTING" in ln else ln for ln in lines]
                new[pick] = new[pick].split("  # ")[0] + "  # <-- EXECUTING"
                expected_line = None
                t0 = time.perf_counter()
                tmp_path = state.with_name(".state.md.bench")
                tmp_path.write_text("\n".join(new) + f"\n<!-- {i} -->\n", encoding="utf-8")
                os.replace(tmp_path, state)

                def moved():
                    nonlocal expected_line
                    cur = trace.lines[trace.cursor] if trace.lines else None
                    return cur is not None and cur.note == "<-- EXECUTING" and cur.text.strip() == new[pick].split("  # ")[0].strip()

                if await until(moved):
                    painted = await painted_after(time.perf_counter())
                    samples.append((painted - t0) * 1000)
                await asyncio.sleep(0.05)
            out["state.md rewrite"] = samples
    return out


def _state_lines(state: Path) -> tuple[list[str], list[int]]:
    lines = state.read_text(encoding="utf-8").splitlines()
    targets = [i for i, ln in enumerate(lines) if "= session" in ln and "#" not in ln.split("=", 1)[0]]
    return lines, targets


def _rewrite(lines: list[str], pick: int, i: int) -> tuple[str, str]:
    """state.md with the executing marker on line ``pick`` and ``bench: i`` in the header."""
    new = [ln.split("  # ", 1)[0].replace("# <-- EXECUTING", "").rstrip() if "<-- EXECUTING" in ln else ln for ln in lines]
    new[pick] = new[pick].split("  # ")[0] + "  # <-- EXECUTING"
    statement = new[pick].split("  # ")[0].strip()
    head = next(n for n, ln in enumerate(new) if ln.startswith("updated:"))
    new.insert(head + 1, f"bench: {i}")
    return "\n".join(new) + "\n", statement


async def _at_rate(app, explorer, binding: Path, state: Path, writes: int, rate: float, out: dict) -> None:
    period = 1.0 / rate
    viewer = explorer.query_one(ValueViewer)
    trace = explorer.query_one(TraceView)
    sent: list[float] = []
    shown: list[float] = []
    probe = [lambda: -1]
    original = app._display

    def timed_display(screen, renderable):
        now = time.perf_counter()
        newest = probe[0]()
        while len(shown) < len(sent) and len(shown) <= newest:
            shown.append(now)
        return original(screen, renderable)

    app._display = timed_display

    def binding_newest() -> int:
        # markers are appended in order: find the newest one the viewer holds
        j = len(shown)
        while j < len(sent) and f"bench rate {j}\n" in viewer.text:
            j += 1
        return j - 1

    async def drive(write_one, tail_wait: float = 3.0) -> list[float]:
        sent.clear(), shown.clear()
        start = time.perf_counter()
        for i in range(writes):
            delay = start + i * period - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent.append(time.perf_counter())
            write_one(i)
        await until(lambda: len(shown) >= len(sent), tail_wait)
        return [(b - a) * 1000 for a, b in zip(sent, shown)]

    def append(i: int) -> None:
        with open(binding, "a", encoding="utf-8") as fh:
            fh.write(f"\nbench rate {i}\n")

    probe[0] = binding_newest
    out["binding append"] = await drive(append)

    lines, targets = _state_lines(state)
    expected: dict[int, str] = {}

    def rewrite(i: int) -> None:
        text, line = _rewrite(lines, targets[i % len(targets)], i)
        expected[i] = line
        tmp_path = state.with_name(".state.md.bench")
        tmp_path.write_text(text, encoding="utf-8")
        os.replace(tmp_path, state)

    def state_newest() -> int:
        run = explorer.current_run
        try:
            j = int(run.header.get("bench", "-1")) if run is not None else -1
        except ValueError:
            return -1
        cur = trace.lines[trace.cursor] if trace.lines else None
        ok = cur is not None and cur.note == "<-- EXECUTING" and cur.text.strip() == expected.get(j)
        return j if ok else -1

    probe[0] = state_newest
    out["state.md rewrite"] = await drive(rewrite)
    app._display = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--rate", type=float, default=None, help="writes per second, not waiting for each to show")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}")
    print("latency from write to updated widget, ms" + (f", {args.rate:g} writes/s" if args.rate else ""))
    results = asyncio.run(measure(args.writes, args.rate))
    for name, samples in results.items():
        lost = args.writes - len(samples)
        print(f"{name:<17}{percentiles(samples) if len(samples) > 1 else 'no samples'}" + (f"  ({lost} never shown)" if lost else ""))


if __name__ == "__main__":
    main()
