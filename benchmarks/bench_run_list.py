"""How fast the run list widget alone paints, ticks and moves with many runs (headless).

A minimal app holds one ``RunList`` (120x40 terminal, the list 40 cells wide); synthetic runs
(``--runs``, default 10,000 and 100,000) are handed to it with ``set_runs`` as the explorer
does. Times are from the call to the first frame after it (``App._display`` is wrapped, as
``run_all.Frames`` does); each figure is the best of ``--repeat`` (default 3). Prints
figures, asserts nothing:

* ``set_runs`` -> first frame with the rows (the cost of a new list);
* an age tick (``tick``) -> frame; one run changed (``update_run``) -> frame;
* ``j`` x 20 (cursor down, each key to its frame), ``G`` (the last run) -> frame;
* ``/`` filter to ~2 % of the runs -> frame, and back to all.

Only the widget's public API is used, so the same script measures an older ``RunList``:
``PYTHONPATH=/path/to/old/checkout python benchmarks/bench_run_list.py``.

Usage: ``python benchmarks/bench_run_list.py [--runs 10000 100000] [--repeat N]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from textual.app import App, ComposeResult

from prose_tui.model import Run, RunStatus
from prose_tui.tui.widgets.run_list import RunList

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
STATUSES = [RunStatus.COMPLETED] * 7 + [RunStatus.FAILED, RunStatus.RUNNING, RunStatus.INTERRUPTED]


def synthetic(n: int) -> list[Run]:
    """``n`` runs, newest first, with ids, programs and ages like a busy team's."""
    return [Run(id=f"{(NOW - timedelta(minutes=i)):%Y%m%d-%H%M%S}-{i:06x}", path=Path(f"/bench/runs/{i:07d}"),
                program=f"src/pipeline-{i % 50}.prose.md", status=STATUSES[i % len(STATUSES)],
                started=NOW - timedelta(minutes=i), updated=NOW - timedelta(minutes=i) + timedelta(seconds=30))
            for i in range(n)]


class ListApp(App):
    CSS = "RunList { width: 40; height: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[float] = []

    def compose(self) -> ComposeResult:
        yield RunList(id="runs")

    def _display(self, screen, renderable) -> None:  # type: ignore[override]
        self.frames.append(time.perf_counter())
        return super()._display(screen, renderable)


async def frame_after(app: ListApp, t: float, timeout: float = 600.0) -> float:
    """Milliseconds from ``t`` to the first frame handed out after it."""
    deadline = time.perf_counter() + timeout
    while not (app.frames and app.frames[-1] >= t):
        if time.perf_counter() > deadline:
            return float("nan")
        await asyncio.sleep(0.0005)
    return (next(f for f in app.frames if f >= t) - t) * 1000


async def measure(n: int, repeat: int) -> dict[str, float]:
    runs = synthetic(n)
    best: dict[str, float] = {}

    def keep(name: str, ms: float) -> None:
        best[name] = min(best.get(name, float("inf")), ms)

    for _ in range(repeat):
        app = ListApp()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            run_list = app.query_one(RunList)
            run_list.focus()
            clock = lambda: NOW  # noqa: E731
            t = time.perf_counter()
            run_list.set_runs(runs, clock=clock)
            keep("set_runs -> painted", (time.perf_counter() - t) * 1000 + await frame_after(app, time.perf_counter()))
            await pilot.pause()
            t = time.perf_counter()
            run_list.tick()
            keep("age tick -> painted", await frame_after(app, t))
            await pilot.pause()
            t = time.perf_counter()
            run_list.update_run(replace(runs[3], status=RunStatus.FAILED), clock=clock)
            keep("update_run (one row) -> painted", await frame_after(app, t))
            await pilot.pause()
            total = 0.0
            for _ in range(20):
                t = time.perf_counter()
                await pilot.press("j")
                total += await frame_after(app, t)
            keep("j (cursor down) -> painted, mean of 20", total / 20)
            t = time.perf_counter()
            await pilot.press("G")
            keep("G (last run) -> painted", await frame_after(app, t))
            await pilot.pause()
            t = time.perf_counter()
            run_list.search("pipeline-7.")
            keep(f"filter to {run_list.option_count} runs -> painted", await frame_after(app, t))
            await pilot.pause()
            t = time.perf_counter()
            run_list.search("")
            keep("filter cleared -> painted", await frame_after(app, t))
            assert run_list.option_count == n
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"RunList from {sys.modules[RunList.__module__].__file__}")
    for n in args.runs:
        for name, ms in asyncio.run(measure(n, args.repeat)).items():
            print(f"{n:>7} runs  {name:42} {ms:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
