"""Every performance figure of issue 6 in one table: target, median, peak memory, pass/miss.

    python benchmarks/run_all.py            # full sizes, 3 runs per case (about 10 minutes)
    python benchmarks/run_all.py --quick    # tiny sizes, short waits, 1 run, one process: a smoke test
    python benchmarks/run_all.py --only startup,open --repeat 5

Inputs come from ``benchmarks/generate.py`` (and the demo simulator, via ``bench_live.py``),
written to a temporary folder that is removed afterwards. Each run of each case is its own
``python run_all.py --case NAME ...`` subprocess, so its peak RSS (``ru_maxrss`` from
``os.wait4``) is that case's alone (``--quick`` runs every case in one such process, so
its peak RSS is that process's); the writers of the live cases are separate processes
too, so the CPU figures (``time.process_time`` of the app process) are the app's only. The
app runs headless (Textual ``run_test``, 120x40); a "painted" time is the first frame the
app hands to ``App._display`` once the widget holds what is measured. Figures, not
assertions: a MISS is printed, the exit status is 0 unless a case crashed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_cases import CASES, make_inputs  # noqa: E402

# settle_s, quiet_s: waits in seconds before a timed selection and before an idle or memory
# reading (bench_cases.py). --quick also runs every case in one process.
FULL = dict(runs=1000, bindings=10_000, trace=5_000, agents=200, segments=50, value_mb=100, writes=200,
            rate=100.0, idle_s=30.0, events=20_000, long_writes=400, rewrites=200, repeat=3,
            settle_s=0.3, quiet_s=1.0)
QUICK = dict(runs=20, bindings=50, trace=40, agents=3, segments=3, value_mb=2, writes=5,
             rate=100.0, idle_s=0.5, events=400, long_writes=8, rewrites=5, repeat=1,
             settle_s=0.05, quiet_s=0.1)

# (key, figure, target text, target value, unit, lower is better)
ROWS = [
    ("startup.first_frame", "Start-up: first frame ({runs} runs)", "", None, "ms"),
    ("startup.list", "Start-up: run list painted ({runs} runs)", "<= 1000 ms", 1000, "ms"),
    ("open.read", "Open big run: read ({bindings} bindings, {trace}-line trace, {agents}x{segments} segments)", "", None, "ms"),
    ("open.select", "Open big run: select -> trace painted (summary read at start-up)", "<= 300 ms", 300, "ms"),
    ("open.total", "Open big run: select -> bindings and agents painted (full read in a worker)", "", None, "ms"),
    ("live.binding.p50", "Live, binding append, 1 write/50 ms: p50", "", None, "ms"),
    ("live.binding.p95", "Live, binding append, 1 write/50 ms: p95", "<= 100 ms", 100, "ms"),
    ("live.binding.p99", "Live, binding append, 1 write/50 ms: p99", "", None, "ms"),
    ("live.state.p50", "Live, state.md rewrite, 1 write/50 ms: p50", "", None, "ms"),
    ("live.state.p95", "Live, state.md rewrite, 1 write/50 ms: p95", "<= 100 ms", 100, "ms"),
    ("live.state.p99", "Live, state.md rewrite, 1 write/50 ms: p99", "", None, "ms"),
    ("rate.binding.p50", "Live, binding append, {rate:g} writes/s: p50", "", None, "ms"),
    ("rate.binding.p95", "Live, binding append, {rate:g} writes/s: p95", "<= 100 ms", 100, "ms"),
    ("rate.binding.p99", "Live, binding append, {rate:g} writes/s: p99", "", None, "ms"),
    ("rate.state.p50", "Live, state.md rewrite, {rate:g} writes/s: p50", "", None, "ms"),
    ("rate.state.p95", "Live, state.md rewrite, {rate:g} writes/s: p95", "<= 100 ms", 100, "ms"),
    ("rate.state.p99", "Live, state.md rewrite, {rate:g} writes/s: p99", "", None, "ms"),
    ("value.first", "{value_mb} MB binding value: select -> first screen", "<= 200 ms", 200, "ms"),
    ("value.extra", "{value_mb} MB binding value: extra RSS (peak)", "<= 50 MB", 50, "MB"),
    ("cpu.idle", "CPU, watching an idle run ({idle_s:g} s)", "<= 1 %", 1, "%"),
    ("cpu.busy", "CPU, run writing 10 events/s ({idle_s:g} s)", "", None, "%"),
    ("long.rss_half", "Long run: RSS at {half} events", "", None, "MB"),
    ("long.rss_end", "Long run: RSS at {events} events", "", None, "MB"),
    ("long.growth", "Long run: RSS growth, 2nd half vs 1st half", "", None, "%"),
    ("long.rss_rewrites", "Long run: RSS after {rewrites} more rewrites, no new events", "", None, "MB"),
    ("long.rewrite_growth", "Long run: RSS growth over those rewrites", "", None, "%"),
]
CASE_OF = {"startup": "startup", "open": "open", "live": "live", "rate": "rate", "value": "value",
           "cpu": "cpu", "long": "long"}


def run_cases(cases: list[str], p: dict, workdir: Path) -> tuple[dict, float, str]:
    """One run of ``cases``, one after the other in one fresh subprocess (each case's inputs
    in a folder of its own): (metrics, the process's peak RSS MB, stderr tail)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{cases[0] if len(cases) == 1 else 'cases'}-", dir=workdir))
    try:
        for case in cases:
            make_inputs(case, folder / case, p)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--case", ",".join(cases), "--inputs", str(folder),
               "--params", json.dumps(p)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=1800)
        # communicate() reaped the child; its own rusage came back through the same wait
        peak = _peak.get(proc.pid, float("nan"))
        if proc.returncode != 0:
            return {}, peak, err[-2000:]
        return json.loads(out.strip().splitlines()[-1]), peak, ""
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_peak: dict[int, float] = {}


def _install_wait4() -> None:
    """Record each child's own peak RSS (``ru_maxrss`` from ``wait4``) as subprocess reaps it."""
    import subprocess as sp
    real = os.waitpid

    def waitpid(pid, options):
        if pid <= 0:
            return real(pid, options)
        got, status, usage = os.wait4(pid, options)
        if got:
            _peak[got] = usage.ru_maxrss / 1024
        return got, status

    sp.os.waitpid = waitpid  # subprocess calls os.waitpid through its module's 'os'


# -- the table --------------------------------------------------------------------------------------
def fmt(value: float | None, unit: str) -> str:
    if value is None or value != value:
        return "—"
    if unit == "%":
        return f"{value:.1f} %"
    if unit == "MB":
        return f"{value:.1f} MB"
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and one run per case (a smoke test)")
    parser.add_argument("--repeat", type=int, help="runs per case (default 3, 1 with --quick)")
    parser.add_argument("--only", help="comma-separated cases: " + ",".join(CASES))
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--e2e", action="store_true",
                        help="also run bench_e2e.py (issue 9: live latency through tmux and headless, CPU, memory)")
    parser.add_argument("--open", action="store_true",
                        help="also run bench_open.py (issue 33: launch to first screen in tmux 80x24 against toolong)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.case:  # inside a case process
        p = json.loads(args.params)
        result: dict = {}
        for case in args.case.split(","):
            result.update(asyncio.run(CASES[case](Path(args.inputs) / case, p)))
        print(json.dumps(result))
        return 0

    p = dict(QUICK if args.quick else FULL)
    if args.repeat:
        p["repeat"] = args.repeat
    p["half"] = p["events"] // 2
    cases = [c for c in (args.only.split(",") if args.only else CASES) if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    _install_wait4()
    load_before = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}; load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    print(f"command: python benchmarks/run_all.py {' '.join(sys.argv[1:])}".rstrip() + f"  ({p['repeat']} run(s) per case)",
          flush=True)
    results: dict[str, list[float]] = {}
    peaks: dict[str, list[float]] = {}
    failed = []
    # Each case in a process of its own, so its peak RSS is its own; --quick is a smoke test
    # and pays for one interpreter and one import of Textual instead of seven.
    batches = [cases] if args.quick else [[case] for case in cases]
    with tempfile.TemporaryDirectory(prefix="prose-bench-") as tmp:
        for batch in batches:
            name = ",".join(batch)
            for i in range(p["repeat"]):
                t = time.perf_counter()
                metrics, peak, err = run_cases(batch, p, Path(tmp))
                if err:
                    failed += batch
                    print(f"  {name} run {i + 1}: FAILED\n{err}", file=sys.stderr, flush=True)
                    continue
                for k, v in metrics.items():
                    results.setdefault(k, []).append(v)
                for case in batch:
                    peaks.setdefault(case, []).append(peak)
                print(f"  {name} run {i + 1}/{p['repeat']}: {time.perf_counter() - t:.0f} s, peak RSS {peak:.0f} MB",
                      file=sys.stderr, flush=True)
    load_after = os.getloadavg()

    header = ("figure", "target", "median", "peak RSS", "result")
    rows = []
    for key, figure, target_text, target, unit in ROWS:
        case = CASE_OF[key.split(".")[0]]
        if case not in cases:
            continue
        values = [v for v in results.get(key, []) if v == v]
        median = statistics.median(values) if values else None
        verdict = "—" if target is None else ("n/a" if median is None else "pass" if median <= target else "MISS")
        peak = [x for x in peaks.get(case, []) if x == x]
        spread = f" ({min(values):.0f}-{max(values):.0f})" if len(values) > 1 and unit == "ms" else ""
        rows.append((figure.format(**p), target_text or "—", fmt(median, unit) + spread,
                     fmt(statistics.median(peak), "MB") if peak else "—", verdict))
    lost = {k: sum(v) for k, v in results.items() if k.endswith(".lost") and sum(v)}
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        print("  ".join("-" * w for w in widths))
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; "
          "median of the runs (min-max); peak RSS is the case process's ru_maxrss"
          + (" (--quick: one process for every case)" if args.quick else ""))
    for k, v in lost.items():
        print(f"note: {k}: {v} write(s) never seen on screen")
    if failed:
        print(f"FAILED cases: {', '.join(sorted(set(failed)))}")
    if args.e2e:
        print("\nIssue 9, end to end (benchmarks/bench_e2e.py):", flush=True)
        rounds = "3" if args.quick else "15"
        only = ["--only", "eventlog-0,binding,snapshot-500"] if args.quick else ["--cpu", "--memory"]
        code = subprocess.call([sys.executable, str(Path(__file__).with_name("bench_e2e.py")), "--rounds", rounds, *only])
        failed += ["e2e"] if code else []
    if args.open:
        print("\nIssue 33, launch to first screen (benchmarks/bench_open.py):", flush=True)
        quick = ["--events", "1000", "--snapshot", "0", "--rounds", "1"] if args.quick else []
        code = subprocess.call([sys.executable, str(Path(__file__).with_name("bench_open.py")), *quick])
        failed += ["open"] if code else []
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
