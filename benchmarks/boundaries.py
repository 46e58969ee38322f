"""Module boundaries one demo step crosses on the way to the screen (issue 31).

    python benchmarks/boundaries.py [--steps 12] [--top 12]

The built-in demo VM (``prose_tui.demo.DemoVM``) writes ``--steps`` steps, the explorer
(Textual ``run_test``, 120x40) opens the run and watches it; then a profiler on every thread
(``sys.setprofile`` and ``threading.setprofile``) records the next step: from the VM's write
until the trace widget is handed the step's lines (``TraceView.set_lines`` or
``lines_changed``), and on until nothing is pending (``ExplorerScreen.pending()``, which
includes the history catching up). A *boundary* is a call from a function of one
``prose_tui`` module into a function of another (``f_globals["__name__"]`` differs; calls
into Textual, Rich or the standard library are not counted, calls back out of them into
``prose_tui`` count from the last ``prose_tui`` frame). Figures per thread: the UI thread
(the app's event loop) and the workers (watcher, pipeline, readers), and the modules entered
most often. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prose_tui.demo import DemoVM  # noqa: E402
from prose_tui.tui.app import ProseTUI  # noqa: E402
from prose_tui.tui.widgets.trace_view import TraceView  # noqa: E402


TRACE_PAINTS = ("set_lines", "lines_changed")  # the trace widget taking new or changed lines


class Crossings:
    """Counts calls from one ``prose_tui`` module into another, per thread kind."""

    def __init__(self, ui: int) -> None:
        self.ui = ui
        self.active = False  # counting (the profiler is installed before any thread starts)
        self.at_trace: dict[str, int] | None = None  # the counts when the trace showed the step
        self.boundaries: Counter[str] = Counter()  # "ui" / "worker" -> crossings
        self.entered: dict[str, Counter[str]] = {"ui": Counter(), "worker": Counter()}
        self.lock = threading.Lock()

    def profile(self, frame, event, arg) -> None:
        if event != "call" or not self.active:
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("prose_tui"):
            return
        caller_frame = frame.f_back
        if caller_frame is not None and caller_frame.f_globals.get("__name__") == __name__:
            return  # this script polling the screen
        while caller_frame is not None and not caller_frame.f_globals.get("__name__", "").startswith("prose_tui"):
            caller_frame = caller_frame.f_back
        caller = caller_frame.f_globals.get("__name__", "") if caller_frame is not None else ""
        if caller == callee:
            return
        kind = "ui" if threading.get_ident() == self.ui else "worker"
        if (kind == "ui" and self.at_trace is None and callee == TraceView.__module__
                and frame.f_code.co_name in TRACE_PAINTS):
            self.at_trace = dict(self.boundaries)  # the trace widget is touched: the hops before it
        with self.lock:
            self.boundaries[kind] += 1
            self.entered[kind][callee] += 1


async def until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(0.001)
    return True


async def measure(steps: int) -> Crossings:
    with tempfile.TemporaryDirectory() as tmp:
        vm = DemoVM(Path(tmp), seed=1)
        walk = vm.steps()
        for _ in range(steps):
            next(walk)
        crossings = Crossings(threading.get_ident())
        # Python 3.11 has no setprofile_all_threads: every thread gets the profiler as it
        # starts, and it counts only while ``active``.
        threading.setprofile(crossings.profile)
        sys.setprofile(crossings.profile)
        app = ProseTUI(Path(tmp), watch=True)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                explorer = app.explorer
                await until(lambda: explorer.watcher_state.startswith("watching") and explorer.pending() is None, 60)
                await pilot.pause()
                trace = explorer.query_one(TraceView)

                def shown_now() -> list[tuple]:
                    return [(t.line, t.text, t.state, t.note) for t in trace.lines]

                before = shown_now()
                crossings.active = True
                step = next(walk)
                shown = await until(lambda: shown_now() != before and crossings.at_trace is not None)
                await until(lambda: explorer.pending() is None)
                await pilot.pause()
                crossings.active = False
                if not shown:
                    print(f"the step ({step.description}) did not reach the trace", file=sys.stderr)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    return crossings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12, help="demo steps written before the explorer opens")
    parser.add_argument("--top", type=int, default=12, help="modules listed per thread")
    args = parser.parse_args()
    crossings = asyncio.run(measure(args.steps))
    at_trace = crossings.at_trace or {}
    for kind in ("worker", "ui"):
        print(f"{kind}: {at_trace.get(kind, 0)} module boundaries crossed until the trace showed the step, "
              f"{crossings.boundaries[kind]} until nothing was pending")
        for module, n in crossings.entered[kind].most_common(args.top):
            print(f"  {n:4d}  {module}")


if __name__ == "__main__":
    main()
