"""Event-log parse speed: µs per line, this tree against another (issues 33 and 35).

    python benchmarks/bench_parse.py --baseline /tmp/old-parse            # 100,000 events
    python benchmarks/bench_parse.py --events 100000,1000000 --rounds 3 --baseline /tmp/old-parse
    python benchmarks/bench_parse.py --corpus /work/shared/corpus/real    # real logs too

Per ``generate.EventLogWriter`` log of N events (made once under ``--dir``) and, with
``--corpus``, every ``state.md``/``vm.log.md`` below that folder that sniffs as an event log
(read in place), each tree in turn, in a fresh process (the trees take turns round by round,
so both see the same load):

* **classify**: ``eventlog_lines.classify_line`` over every line (the per-line rules alone);
* **parse**: ``eventlog.parse_event_log`` on the whole text;
* **open**: ``FilesystemBackend().open`` of the run, the explorer's full read (the event
  log tailed in ``FEED_CHUNK`` pieces, bindings linked), for the generated logs;
* **startup**: the run opened (``Workspace.detail``) 0.3 s after the start-up run list began
  its summary of it (``Workspace.scan``) in another thread, as the explorer does when a long
  log is opened at once: the CPU of both (the old code parsed the log twice side by side).

Times are CPU seconds of the process (``time.process_time``; on a loaded machine the wall
time is mostly waiting for a core), the best of the rounds, per event line; the load average
is printed beside each figure. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import EventLogWriter  # noqa: E402

_MEASURE = r"""
import sys, time
from pathlib import Path
from prose_tui.backends.filesystem.eventlog import looks_like_event_log, parse_event_log
from prose_tui.backends.filesystem.eventlog_lines import classify_line
what, paths = sys.argv[1], sys.argv[2:]
texts = [Path(p).read_text(encoding="utf-8", errors="replace") for p in paths]
texts = [t for t in texts if looks_like_event_log(t)]
lines = [ln for t in texts for ln in t.splitlines() if ln.strip() and not ln.startswith("#")]
t0 = time.process_time()
if what in ("classify", "parse"):
    rounds = 0  # a small corpus is gone through again until it costs 0.5 s (the clock's resolution)
    while rounds == 0 or time.process_time() - t0 < 0.5:
        rounds += 1
        if what == "classify":
            for ln in lines:
                classify_line(ln)
        else:
            for t in texts:
                parse_event_log(t)
    lines = lines * rounds
elif what == "open":
    from prose_tui.backends.filesystem.backend import FilesystemBackend
    for p in paths:
        FilesystemBackend().open(Path(p).parent)
else:
    import threading
    from prose_tui.live.workspace import Workspace
    for p in paths:
        workspace = Workspace(Path(p).parent.parent.parent.parent)
        refs = workspace.discover()
        scan = threading.Thread(target=lambda: workspace.scan(detail_first=False, refs=refs))
        scan.start()
        time.sleep(0.3)  # the summary has begun (the old code has no signal to wait on)
        workspace.detail(Path(p).parent.resolve())
        scan.join()
print(time.process_time() - t0, len(lines))
"""


def log_of(folder: Path, events: int) -> Path:
    """The state file of an ``events``-event log under ``folder`` (written on first use)."""
    root = folder / f"eventlog-{events}"
    writer = EventLogWriter(root, run_id="20260101-090000-bench00")
    if writer.count == 0 and writer.state.stat().st_size < 100:
        while writer.count < events:
            writer.append(min(50_000, events - writer.count))
    return writer.state


def corpus_logs(corpus: Path) -> list[Path]:
    """Every state file below ``corpus`` (``state.md``, ``vm.log.md``); read in place."""
    return sorted(p for name in ("state.md", "vm.log.md") for p in corpus.rglob(name) if p.is_file())


def measure(tree: Path, what: str, paths: list[Path]) -> tuple[float, int]:
    """(CPU seconds, event lines) of ``what`` over ``paths`` with the tree ``tree``, in a fresh process."""
    # cwd=tree: "python -c" puts the working folder first on sys.path, before PYTHONPATH.
    out = subprocess.run([sys.executable, "-c", _MEASURE, what, *map(str, paths)], capture_output=True, text=True,
                         cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    seconds, lines = out.stdout.split()
    return float(seconds), int(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="100000", help="generated log sizes, comma-separated")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "prose-bench-parse",
                        help="where the logs are written (kept: a second run reuses them)")
    parser.add_argument("--baseline", type=Path, help="another prose-tui tree measured too")
    parser.add_argument("--corpus", type=Path, help="a folder of real runs, read in place")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--what", default="classify,parse,open,startup",
                        help="comma-separated: classify, parse, open, startup")
    args = parser.parse_args()
    trees = [("prose-tui", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    cases = [(f"generated {int(n):,}", [log_of(args.dir, int(n))]) for n in args.events.split(",") if n]
    if args.corpus:
        cases.append((f"corpus {args.corpus.name}", corpus_logs(args.corpus)))
    for label, paths in cases:
        for what in args.what.split(","):
            if what in ("open", "startup") and label.startswith("corpus"):
                continue  # a corpus run's open reads its bindings and agents too: not the parser alone
            best: dict[str, float] = {}
            for round_ in range(args.rounds):
                order = trees if round_ % 2 == 0 else trees[::-1]
                for name, tree in order:
                    load = os.getloadavg()[0]
                    seconds, lines = measure(tree, what, paths)
                    per = seconds / max(1, lines) * 1e6
                    best[name] = min(best.get(name, per), per)
                    print(f"{label:<20} {what:<8} {name:<10} {per:6.1f} µs/line  {seconds:7.2f} s CPU  "
                          f"(load {load:.1f})", flush=True)
            if len(best) == 2:
                print(f"{label:<20} {what:<8} best: prose-tui {best['prose-tui']:.1f}, baseline "
                      f"{best['baseline']:.1f} µs/line: {best['baseline'] / best['prose-tui']:.2f}x "
                      f"(load {os.getloadavg()[0]:.1f}, under load)", flush=True)


if __name__ == "__main__":
    main()
