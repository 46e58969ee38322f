"""Issue 33: how long a long log's full-read preparation holds the interpreter in one go.

Headless, no terminal. A compact event log of ``--events`` events (``generate.EventLogWriter``)
is read in full and prepared as the reader thread does (``Panes.prepare``: ``prepare_read``,
``TraceLayout.of``, ``Steps.of``). Printed: the CPU time of ``TraceLayout.of`` and ``Steps.of``
(thread time, min and median of ``--rounds``), the longest stretch between two
``wait_turn`` calls inside a ``background_read()`` (where a live change written meanwhile
would wait for its turn), and the lines ``widest`` measures on a first screen of 8,000
event-log lines of one length. Run it alone on a quiet machine; the load average is printed.

    PYTHONPATH=. python benchmarks/bench_give_way.py --events 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import EventLogWriter  # noqa: E402

from prose_tui.backends.common import foreground  # noqa: E402
from prose_tui.backends.filesystem.folder import load_run  # noqa: E402
from prose_tui.tui.widgets import trace_layout  # noqa: E402
from prose_tui.viewmodel import steps  # noqa: E402
from prose_tui.viewmodel.explorer_model import prepare_read  # noqa: E402


def _cpu_ms(work: Callable[[], object], rounds: int) -> tuple[float, float]:
    spent = []
    for _ in range(rounds):
        start = time.thread_time()
        work()
        spent.append((time.thread_time() - start) * 1e3)
    return min(spent), statistics.median(spent)


def _longest_stretch_ms(work: Callable[[], object], rounds: int) -> tuple[float, float, int]:
    """Longest time between two ``wait_turn`` calls (the call's start and end count as calls)."""
    stamps: list[float] = []
    real = foreground.wait_turn

    def stamped() -> None:
        stamps.append(time.perf_counter())
        real()

    trace_layout.wait_turn = steps.wait_turn = stamped
    worst, calls, kept = [], 0, []
    try:
        for _ in range(rounds):
            stamps.clear()
            with foreground.background_read():
                stamps.append(time.perf_counter())
                kept.append(work())  # kept: freeing the result is the UI's, later
                stamps.append(time.perf_counter())
            worst.append(max(b - a for a, b in zip(stamps, stamps[1:])) * 1e3)
            calls = len(stamps) - 2
    finally:
        trace_layout.wait_turn = steps.wait_turn = real
    return min(worst), statistics.median(worst), calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        writer.append(args.events)
        run = load_run(writer.run)
    read = prepare_read(run)
    shown = read.program if read.program is not None else run.trace
    events = read.history.history.events if read.history is not None else []
    print(f"{len(shown):,} trace lines, {len(events):,} events")
    for name, work in (("TraceLayout.of", lambda: trace_layout.TraceLayout.of(shown, 200)),
                       ("Steps.of", lambda: steps.Steps.of(events))):
        low, mid = _cpu_ms(work, args.rounds)
        worst, worst_mid, calls = _longest_stretch_ms(work, args.rounds)
        print(f"{name:<15} CPU {low:6.1f} ms (median {mid:6.1f});"
              f" longest stretch without wait_turn {worst:5.1f} ms (median {worst_mid:5.1f}), {calls} calls")
    first = shown[-8001:-1]  # a first screen's lines, all of one length
    measured = 0
    real_measured = trace_layout.measured

    def counted(line):
        nonlocal measured
        measured += 1
        return real_measured(line)

    trace_layout.measured = counted
    start = time.perf_counter()
    most = trace_layout.widest(first, array("i"))
    spent = (time.perf_counter() - start) * 1e3
    trace_layout.measured = real_measured
    print(f"widest over {len(first):,} first-screen lines: {most} cells, {measured} lines measured, {spent:.1f} ms")
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
