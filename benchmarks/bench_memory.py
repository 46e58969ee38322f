"""Memory of a long event log once read: RSS per event, against toolong (issue 33).

    python benchmarks/bench_memory.py                              # 1,000 .. 1,000,000 events
    python benchmarks/bench_memory.py --events 100000 --baseline /tmp/main --breakdown

Per ``generate.EventLogWriter`` log of N events (made once under ``--dir``), in turns:

* **open**: a fresh Python process imports the filesystem backend, notes its RSS, opens the
  run as the explorer's full read does (``FilesystemBackend().open``), collects garbage
  and notes RSS again and the peak (``VmHWM``). Per event: the difference over N.
* **tui**: prose-tui (``python -m prose_tui PROJECT``) in a tmux pane of 80x24, as
  ``bench_open.py`` launches it; RSS when the first screen shows, then every 2 s until it
  stays within 1 MB for 6 s (the full read done), up to ``--settle`` seconds. Per event:
  the settled RSS less the 1,000-event case's, over the events beyond 1,000.
* **toolong** (``--toolong``, skipped when absent) on the same file, the same way.

``--baseline TREE`` measures another tree too (``git archive main | tar -x -C /tmp/main``).
``--breakdown`` prints, for the open of the largest log, ``tracemalloc``'s top lines (what
each event costs, by the line that allocated it). Figures, not assertions; memory is not
affected by load, time is (the load average is printed beside each figure).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_open  # noqa: E402
from generate import EventLogWriter  # noqa: E402

_OPEN = r"""
import gc, sys, time, tracemalloc
from pathlib import Path
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
from prose_tui.backends.filesystem.backend import FilesystemBackend
gc.collect()
base = status("VmRSS")
top = int(sys.argv[2])
if top:
    tracemalloc.start()
t0 = time.perf_counter()
run = FilesystemBackend().open(Path(sys.argv[1]))
seconds = time.perf_counter() - t0
gc.collect()
print(base, status("VmRSS"), status("VmHWM"), len(run.events), seconds)
if top:
    for stat in tracemalloc.take_snapshot().statistics("lineno")[:top]:
        frame = stat.traceback[0]
        print(f"  {stat.size / 2**20:7.2f} MB {stat.count:>9} x {stat.size / max(1, stat.count):5.0f} B  "
              f"{Path(frame.filename).name}:{frame.lineno}", file=sys.stderr)
"""


def log_of(folder: Path, events: int) -> Path:
    """The run folder of an ``events``-event log under ``folder`` (written on first use)."""
    root = folder / f"eventlog-{events}"
    runs = root / ".prose" / "runs"
    if not runs.is_dir() or not any(runs.iterdir()):
        writer = EventLogWriter(root)
        while writer.count < events:
            writer.append(min(50_000, events - writer.count))
    return next(runs.iterdir())


def open_rss(tree: Path, run: Path, top: int = 0) -> tuple[float, float, float, int, float]:
    """(RSS before, after, peak in MB, events, seconds) of the backend's full read, in a fresh process."""
    # cwd=tree: "python -c" puts the working folder first on sys.path, before PYTHONPATH.
    out = subprocess.run([sys.executable, "-c", _OPEN, str(run), str(top)], capture_output=True, text=True,
                         cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    if out.stderr:
        print(out.stderr, end="")
    base, after, peak, events, seconds = out.stdout.split()
    return float(base), float(after), float(peak), int(events), float(seconds)


def tui_rss(tool: str, run: Path, events: int, env: dict[str, str], toolong: Path,
            settle: float) -> tuple[float, float, float]:
    """(RSS MB at the first screen, RSS MB settled, seconds to settle) of ``tool`` on ``run``."""
    case = bench_open.Case(f"eventlog-{events}", run.parent.parent.parent, run / "state.md",
                           [f"step_{events} ", "interrupted"], [f"step_{events} "])
    pane = bench_open.Pane((80, 24))
    try:
        pane.launch(bench_open.command_for(tool, case, env, toolong))
        if pane.wait_for(case.theirs if tool == "toolong" else case.ours, 300) is None:
            return float("nan"), float("nan"), float("nan")
        first = pane.rss_mb()
        seen, start = [first], time.perf_counter()
        while time.perf_counter() - start < settle:
            time.sleep(2)
            seen.append(pane.rss_mb())
            if len(seen) >= 4 and max(seen[-4:]) - min(seen[-4:]) < 1.0:
                break
        return first, seen[-1], time.perf_counter() - start
    finally:
        pane.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="1000,20000,100000,1000000", help="log sizes, comma-separated")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "prose-bench-memory",
                        help="where the logs are written (kept: a second run reuses them)")
    parser.add_argument("--baseline", type=Path, help="another prose-tui tree measured too")
    parser.add_argument("--toolong", type=Path, default=bench_open.TOOLONG)
    parser.add_argument("--settle", type=float, default=900.0, help="longest wait for the TUI's RSS to settle, s")
    parser.add_argument("--skip", default="", help="comma-separated: open, tui, toolong")
    parser.add_argument("--breakdown", type=int, nargs="?", const=20, default=0,
                        help="tracemalloc's top lines for the largest log's open (default 20)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.events.split(",") if n]
    skip = set(args.skip.split(","))
    trees = [("prose-tui", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    runs = {n: log_of(args.dir, n) for n in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        env = {"PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"),
               "XDG_STATE_HOME": str(Path(tmp) / "state")}
        for n in sizes:
            if "open" not in skip:
                for name, tree in trees:
                    base, after, peak, events, seconds = open_rss(tree, runs[n])
                    line = (f"open  {n:>9,} {name:<10} RSS {base:6.1f} -> {after:7.1f} MB (peak {peak:7.1f}), "
                            f"{(after - base) * 2**20 / max(1, events):5.0f} B/event, read {seconds:6.1f} s "
                            f"(load {os.getloadavg()[0]:.1f})")
                    print(line, flush=True)
            tools = [] if "tui" in skip else [(name, "prose-tui" if tree == ROOT else f"prose-tui@{tree}")
                                              for name, tree in trees]
            if "toolong" not in skip and args.toolong.exists():
                tools.append(("toolong", "toolong"))
            for name, tool in tools:
                first, settled, seconds = tui_rss(tool, runs[n], n, env, args.toolong, args.settle)
                line = (f"tui   {n:>9,} {name:<10} RSS first screen {first:6.1f} MB, settled {settled:7.1f} MB "
                        f"after {seconds:5.0f} s (load {os.getloadavg()[0]:.1f})")
                print(line, flush=True)
        if args.breakdown:
            print(f"\ntracemalloc, the open of {max(sizes):,} events ({trees[0][0]}):")
            open_rss(ROOT, runs[max(sizes)], args.breakdown)


if __name__ == "__main__":
    main()
