"""The UI thread's share of a live change to an event-log run with a program file (issue 9):
``ExplorerModel.trace_lines`` after one appended step (the program annotated from the log,
failure marks), without Textual's paint. Figures, not assertions.

    python benchmarks/bench_program_view.py [--rounds 30] [--events 2000,20000]

A run of N steps over a 300-statement program (``let step_K = session: …``; step i names
``step_{i % 300}``) is opened; each round appends one step, applies it as the live worker
does (``FilesystemBackend.apply``) and times ``trace_lines()`` on the model. Prints p50/p95
in milliseconds as a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prose_tui.backends.filesystem.backend import FilesystemBackend  # noqa: E402
from prose_tui.viewmodel.explorer_model import ExplorerModel  # noqa: E402

STATEMENTS = 300


def measure(events: int, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / ".prose" / "runs" / "20260301-090000-c0ffee"
        run_dir.mkdir(parents=True)
        (run_dir / "program.prose").write_text(
            "".join(f"let step_{k} = session: worker\n" for k in range(STATEMENTS)), encoding="utf-8")
        state = run_dir / "state.md"
        state.write_text("# run:20260301-090000-c0ffee long.prose\n"
                         + "".join(f"{i}→ step_{i % STATEMENTS} ✓\n" for i in range(1, events + 1)), encoding="utf-8")
        backend = FilesystemBackend()
        run = backend.open(run_dir)
        model = ExplorerModel()
        model.touch(run, None)
        model.trace_lines()
        note = getattr(model, "note_delta", None)
        out = []
        for r in range(rounds):
            i = events + r + 1
            with open(state, "a", encoding="utf-8") as fh:
                fh.write(f"{i}→ step_{i % STATEMENTS} ✓\n")
            delta = backend.apply(run, {state})
            if note is not None:
                note(delta)
            model.touch(delta.run, set(delta.paths), binding_only=False)
            t0 = time.perf_counter()
            lines = model.trace_lines()
            out.append((time.perf_counter() - t0) * 1000)
            assert lines and lines[(i % STATEMENTS)].step == str(i), "the program view did not follow"
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--events", default="2000,20000")
    args = parser.parse_args()
    print("| events | trace_lines p50 ms | p95 ms |\n|---|---|---|")
    for n in (int(x) for x in args.events.split(",")):
        samples = measure(n, args.rounds)
        qs = statistics.quantiles(samples, n=100, method="inclusive")
        print(f"| {n} | {qs[49]:.2f} | {qs[94]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
