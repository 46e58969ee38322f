"""What one change costs the live pipeline, without the UI (issue 9: cost follows the change).

    python benchmarks/bench_apply.py [--rounds 30]

For the cases of ``bench_e2e.py`` (event logs of 0 to 100,000 events, a binding append,
snapshot rewrites of 500 and 2,000 statements), each change is applied twice:

* ``apply``: ``Workspace.apply`` on the changed path, in process (routing, the backend's
  ``apply``; for event logs the history extended too): the CPU work a change costs;
* ``pipeline``: the file written until the Delta reaches a sink of a running
  ``LivePipeline`` (watcher debounce, worker queue, apply).

Prints p50/p95 in milliseconds as a Markdown table. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_e2e import CASES, make_case  # noqa: E402

from prose_tui.history import history_of  # noqa: E402
from prose_tui.live.pipeline import LivePipeline  # noqa: E402
from prose_tui.live.workspace import Workspace  # noqa: E402


def _q(samples: list[float]) -> tuple[float, float]:
    qs = statistics.quantiles(samples, n=100, method="inclusive") if len(samples) > 1 else samples * 100
    return qs[49], qs[94]


def measure(name: str, rounds: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        case = make_case(name, Path(tmp))
        ws = Workspace(case.root)
        ws.scan()
        (run_dir,) = list(ws.runs)
        history_of(ws.runs[run_dir])
        applied: list[float] = []
        for i in range(rounds):
            case.write(i)
            t0 = time.perf_counter()
            ws.apply({case.path})
            if ws.runs[run_dir].events:  # a log's history is extended per change; a snapshot's
                history_of(ws.runs[run_dir])  # comes from the journal, appended by its sink
            applied.append((time.perf_counter() - t0) * 1000)
        got: list[float] = []
        cond = threading.Condition()

        def sink(_delta) -> None:
            with cond:
                got.append(time.perf_counter())
                cond.notify_all()

        ready = threading.Event()
        pipeline = LivePipeline(ws, [sink])
        pipeline.start()
        assert pipeline._sub is not None
        pipeline._sub.on_ready = ready.set
        pipeline.watcher.update(pipeline._sub, list(pipeline._sub.roots))
        ready.wait(30)
        piped: list[float] = []
        try:
            for i in range(rounds, 2 * rounds):
                with cond:
                    n = len(got)
                t0 = time.perf_counter()
                case.write(i)
                with cond:
                    if cond.wait_for(lambda: len(got) > n, timeout=10):
                        piped.append((got[n] - t0) * 1000)
                # One change per 0.3 s, as bench_e2e.py: faster than five a second is a stream,
                # which the watcher looks at on its idle step (prose_tui.live.watcher).
                time.sleep(0.3)
        finally:
            pipeline.stop()
        return applied, piped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    print("| case | apply p50 ms | apply p95 ms | write -> delta p50 ms | write -> delta p95 ms |\n|---|---|---|---|---|")
    for name in CASES:
        if args.only and name not in args.only.split(","):
            continue
        applied, piped = measure(name, args.rounds)
        a50, a95 = _q(applied)
        p50, p95 = _q(piped) if piped else (float("nan"), float("nan"))
        print(f"| {name} | {a50:.1f} | {a95:.1f} | {p50:.1f} | {p95:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
