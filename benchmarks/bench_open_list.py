"""Opening a long log from the run list: keys to its newest event on screen (issue 33).

    python benchmarks/bench_open_list.py                         # 100,000 and 1,000,000 events
    python benchmarks/bench_open_list.py --events 100000 --rounds 1 --baseline /tmp/main

The project holds two runs: a small newest one (opened first, read at once) and an event
log of N events (``generate.EventLogWriter``). prose-tui starts in a tmux pane of ``--size``
(80x24; ``bench_open.Pane``); once the log's row is listed, ``1 Down Enter`` goes to the run
list and opens the log. Timed from those keys: the log's newest event (``step_N``) on screen
(*first screen*) and the whole read shown (the tail's "reading the whole log" warning
gone: *whole*). ``--when``: ``listed`` sends the keys as soon as the row is listed (the
start-up read still reading the list), ``read`` once the list is read (the status line
says ``watching``).
``--baseline TREE`` runs another tree too (``git archive main | tar -x -C /tmp/main``),
the trees taking turns. Figures, not assertions; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_open import Pane  # noqa: E402
from generate import EventLogWriter  # noqa: E402

NEWEST_ID = "20991231-235959-4ew000"
LOADING = "reading the whole log"


def make_project(folder: Path, events: int) -> EventLogWriter:
    writer = EventLogWriter(folder)
    while writer.count < events:
        writer.append(min(50_000, events - writer.count))
    small = folder / ".prose" / "runs" / NEWEST_ID
    small.mkdir(parents=True)
    (small / "state.md").write_text(f"# run:{NEWEST_ID} small.prose\n1→ small_step ✓\n", encoding="utf-8")
    return writer


def open_once(tree: Path, folder: Path, writer: EventLogWriter, when: str, size: tuple[int, int], cache: Path,
              timeout: float) -> tuple[float, float, float]:
    """(ms from the keys to the newest event, ms to the whole read shown, load average then)."""
    pane = Pane(size)
    env = {"PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(cache / tree.name),
           "XDG_STATE_HOME": str(cache / "state")}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    try:
        pane.launch(f"cd {shlex.quote(str(folder))} && exec env -u PYTHONDONTWRITEBYTECODE {exports} "
                    f"{shlex.quote(sys.executable)} -m prose_tui {shlex.quote(str(folder))}")
        if pane.wait_for([writer.run_id], timeout) is None:
            return float("nan"), float("nan"), os.getloadavg()[0]
        # The list read: the status line says what is watched once the start-up read ended
        # (the Runs pane's title is hidden at 80x24 once the first run's trace is shown).
        if when == "read" and pane.wait_for(["watching 1 folder"], timeout) is None:
            return float("nan"), float("nan"), os.getloadavg()[0]
        t0 = time.perf_counter()
        pane.command("send-keys -t o 1 Down Enter")
        last = f"step_{writer.count} "
        first = pane.wait_for([last], timeout)
        whole = None
        if first is not None:
            deadline = time.perf_counter() + timeout
            while time.perf_counter() < deadline:
                screen = pane.command("capture-pane -p -t o")
                if last in screen and LOADING not in screen:
                    whole = time.perf_counter()
                    break
                time.sleep(0.005)
        ms = [(t - t0) * 1000 if t is not None else float("nan") for t in (first, whole)]
        return ms[0], ms[1], os.getloadavg()[0]
    finally:
        pane.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="100000,1000000")
    parser.add_argument("--when", default="listed,read")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="80x24")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--baseline", type=Path, help="another prose-tui tree, taking turns with this one")
    parser.add_argument("--no-warmup", action="store_true", help="no warm-up open (bytecode cached already: --cache)")
    parser.add_argument("--cache", type=Path, help="bytecode cache folder kept between runs (default: a temporary one)")
    args = parser.parse_args()
    size = (int(args.size.split("x")[0]), int(args.size.split("x")[1]))
    trees = [ROOT] + ([args.baseline.resolve()] if args.baseline else [])
    names = {ROOT: "this tree", **({args.baseline.resolve(): "baseline"} if args.baseline else {})}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache.resolve() if args.cache else Path(tmp) / "cache"
        for i, n in enumerate(int(x) for x in args.events.split(",")):
            folder = Path(tmp) / f"log-{n}"
            writer = make_project(folder, n)
            for tree in trees if i == 0 and not args.no_warmup else ():  # warm-up (first size): bytecode, page cache
                open_once(tree, folder, writer, "listed", size, cache, args.timeout)
            for when in args.when.split(","):
                figures: dict[Path, list[tuple[float, float, float]]] = {t: [] for t in trees}
                for r in range(args.rounds):
                    for tree in trees[r % len(trees):] + trees[:r % len(trees)]:
                        figures[tree].append(open_once(tree, folder, writer, when, size, cache, args.timeout))
                        print(f"{n} {when} {names[tree]}: {figures[tree][-1]}", flush=True)
                for tree in trees:
                    f = figures[tree]
                    rows.append((n, when, names[tree], statistics.median(x[0] for x in f), max(x[0] for x in f),
                                 statistics.median(x[1] for x in f), statistics.median(x[2] for x in f)))
    print(f"\n{size[0]}x{size[1]}, median (max) of {args.rounds}, ms from `1 Down Enter`; under load\n")
    print("| events | keys sent | tree | newest event on screen | whole read shown | load avg |")
    print("|---|---|---|---|---|---|")
    for n, when, name, med, mx, whole, load in rows:
        print(f"| {n:,} | {when} | {name} | {med:,.0f} ({mx:,.0f}) | {whole:,.0f} | {load:.1f} |")


if __name__ == "__main__":
    main()
