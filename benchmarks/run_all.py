"""Every performance figure of issue 6 in one table: target, median, peak memory, pass/miss.

    python benchmarks/run_all.py            # full sizes, 3 runs per case (about 10 minutes)
    python benchmarks/run_all.py --quick    # tiny sizes, 1 run per case: a smoke test
    python benchmarks/run_all.py --only startup,open --repeat 5

Inputs come from ``benchmarks/generate.py`` (and the demo simulator, via ``bench_live.py``),
written to a temporary folder that is removed afterwards. Each run of each case is its own
``python run_all.py --case NAME ...`` subprocess, so its peak RSS (``ru_maxrss`` from
``os.wait4``) is that case's alone; the writers of the live cases are separate processes
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

FULL = dict(runs=1000, bindings=10_000, trace=5_000, agents=200, segments=50, value_mb=100, writes=200,
            rate=100.0, idle_s=30.0, events=20_000, long_writes=400, rewrites=200, repeat=3)
QUICK = dict(runs=20, bindings=50, trace=40, agents=3, segments=3, value_mb=2, writes=8,
             rate=100.0, idle_s=1.0, events=400, long_writes=20, rewrites=10, repeat=1)

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


# -- helpers used inside the case processes ------------------------------------------------------
def rss_mb() -> float:
    """Current resident set size of this process, MB (from /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


def hwm_mb() -> float:
    """Peak resident set size of this process so far, MB."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def until(predicate, timeout: float = 30.0, step: float = 0.001) -> bool:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(step)
    return True


class Frames:
    """Wraps ``App._display`` to record when frames are handed out."""

    def __init__(self, app) -> None:
        self.times: list[float] = []
        original = app._display

        def timed(screen, renderable):
            self.times.append(time.perf_counter())
            return original(screen, renderable)

        app._display = timed

    async def after(self, t: float, timeout: float = 10.0) -> float:
        await until(lambda: self.times and self.times[-1] >= t, timeout)
        return next((f for f in self.times if f >= t), float("nan"))


def _app(path: Path, watch: bool = True):
    from prose_tui.tui.app import ProseTUI
    return ProseTUI(path, watch=watch)


def _tree_binding_select(explorer, path: Path) -> None:
    explorer.query_one("#tree").select_binding_path(path)


# -- cases: each returns {metric key: value} -------------------------------------------------------
async def case_startup(inp: Path, p: dict) -> dict:
    from prose_tui.tui.widgets.run_list import RunList
    t0 = time.perf_counter()
    app = _app(inp / "project")
    frames = Frames(app)
    async with app.run_test(size=(120, 40)):
        run_list = app.explorer.query_one(RunList)
        await until(lambda: frames.times, 30)
        first = frames.times[0]
        await until(lambda: run_list.option_count >= p["runs"], 120)
        painted = await frames.after(time.perf_counter())
    return {"startup.first_frame": (first - t0) * 1000, "startup.list": (painted - t0) * 1000}


async def case_open(inp: Path, p: dict) -> dict:
    from prose_tui.backends import open_run
    from prose_tui.tui.widgets.run_list import RunList
    from prose_tui.tui.widgets.trace_view import TraceView
    huge = Path((inp / "huge.txt").read_text().strip())
    t = time.perf_counter()
    run = open_run(huge)
    read_ms = (time.perf_counter() - t) * 1000
    n_trace = len(run.trace)
    del run
    app = _app(inp / "project", watch=False)
    frames = Frames(app)
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        run_list = explorer.query_one(RunList)
        trace = explorer.query_one(TraceView)
        await until(lambda: run_list.option_count >= 2 and explorer.current_run is not None, 120)
        await until(lambda: huge in explorer.workspace.runs, 120)  # the start-up read reached it
        await pilot.pause()
        await asyncio.sleep(0.3)
        t0 = time.perf_counter()
        run_list.select_path(huge)
        await until(lambda: explorer.current_run is not None and explorer.current_run.path == huge
                    and len(trace.lines) == n_trace, 60)
        painted = await frames.after(time.perf_counter())
        # The run list holds a summary (state file only); the full read runs in a worker and
        # the bindings/agents tree fills when it lands.
        await until(lambda: huge in explorer.workspace.detailed and explorer.current_run is not None
                    and len(explorer.current_run.bindings) > 0, 60)
        full = await frames.after(time.perf_counter())
    select_ms = (painted - t0) * 1000
    return {"open.read": read_ms, "open.select": select_ms, "open.total": (full - t0) * 1000}


async def case_live(inp: Path, p: dict, rate: float | None = None) -> dict:
    import bench_live
    results = await bench_live.measure(p["writes"], rate)
    prefix = "rate" if rate else "live"
    out = {}
    for name, key in (("binding append", "binding"), ("state.md rewrite", "state")):
        samples = results.get(name) or [float("nan")] * 2
        if len(samples) < 2:
            samples = samples * 2
        qs = statistics.quantiles(samples, n=100, method="inclusive")
        out.update({f"{prefix}.{key}.p50": qs[49], f"{prefix}.{key}.p95": qs[94], f"{prefix}.{key}.p99": qs[98]})
        out[f"{prefix}.{key}.lost"] = p["writes"] - len(results.get(name) or [])
    return out


async def case_value(inp: Path, p: dict) -> dict:
    from prose_tui.tui.widgets.value_viewer import ValueViewer
    big = Path((inp / "big.txt").read_text().strip())
    app = _app(inp / "project", watch=False)
    frames = Frames(app)
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        viewer = explorer.query_one(ValueViewer)
        await until(lambda: explorer.current_run is not None and explorer.current_run.path == big.parent.parent
                    and viewer.target is not None, 60)
        await pilot.pause()
        await asyncio.sleep(0.3)
        before, hwm_before = rss_mb(), hwm_mb()
        t0 = time.perf_counter()
        _tree_binding_select(explorer, big)
        await until(lambda: viewer.target is not None and viewer.target.path == big, 30)
        painted = await frames.after(time.perf_counter())
        await asyncio.sleep(0.3)
        after = max(rss_mb(), hwm_mb() if hwm_mb() > hwm_before else 0)
    return {"value.first": (painted - t0) * 1000, "value.extra": after - before}


async def _watch_cpu(inp: Path, p: dict, writer: list[str] | None) -> float:
    app = _app(inp / "project")
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await until(lambda: explorer.watcher_state.startswith("watching") and explorer.current_run is not None, 60)
        await pilot.pause()
        await asyncio.sleep(1.0)
        proc = subprocess.Popen(writer) if writer else None
        c0, w0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(p["idle_s"])
        c1, w1 = time.process_time(), time.perf_counter()
        if proc is not None:
            proc.terminate()
            proc.wait()
    return (c1 - c0) / (w1 - w0) * 100


async def case_cpu(inp: Path, p: dict) -> dict:
    idle = await _watch_cpu(inp / "idle", p, None)
    run = Path((inp / "events.txt").read_text().strip())
    writer = [sys.executable, str(HERE / "generate.py"), "events", str(run), "--rate", "10",
              "--count", str(int(10 * p["idle_s"] + 100))]
    busy = await _watch_cpu(inp / "busy", p, writer)
    return {"cpu.idle": idle, "cpu.busy": busy}


async def case_long(inp: Path, p: dict) -> dict:
    from prose_tui.tui.widgets.trace_view import TraceView
    run = Path((inp / "events.txt").read_text().strip())
    app = _app(inp / "project")
    events = p["events"]
    batch = max(1, events // p["long_writes"])  # 20 writes per second
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        await until(lambda: explorer.watcher_state.startswith("watching") and explorer.current_run is not None, 60)
        await pilot.pause()
        writer = subprocess.Popen([sys.executable, str(HERE / "generate.py"), "events", str(run), "--rate", "20",
                                   "--batch", str(batch), "--count", str(events), "--progress"],
                                  stdout=subprocess.PIPE, text=True)
        loop = asyncio.get_running_loop()
        half_rss = None
        while True:
            line = await loop.run_in_executor(None, writer.stdout.readline)
            if not line:
                break
            if half_rss is None and int(line) >= events // 2:
                await until(lambda: len(trace.lines) >= events // 2, 30, 0.01)
                half_rss = rss_mb()
        writer.wait()
        await until(lambda: len(trace.lines) >= events, 60, 0.01)
        await asyncio.sleep(1.0)
        end_rss = rss_mb()
        shown = len(trace.lines)
        # The same content written again and again (a VM re-saving its log): each rewrite is
        # re-read; memory should stay where it is.
        data = run.joinpath("state.md").read_bytes()
        tmp = run / ".state.md.rewrite"
        for _ in range(p["rewrites"]):
            tmp.write_bytes(data)
            os.replace(tmp, run / "state.md")
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        rewrites_rss = rss_mb()
    return {"long.rss_half": half_rss or float("nan"), "long.rss_end": end_rss,
            "long.growth": (end_rss - half_rss) / half_rss * 100 if half_rss else float("nan"),
            "long.rss_rewrites": rewrites_rss, "long.rewrite_growth": (rewrites_rss - end_rss) / end_rss * 100,
            "long.shown": shown}


CASES = {
    "startup": case_startup,
    "open": case_open,
    "live": lambda inp, p: case_live(inp, p, None),
    "rate": lambda inp, p: case_live(inp, p, p["rate"]),
    "value": case_value,
    "cpu": case_cpu,
    "long": case_long,
}


# -- inputs -----------------------------------------------------------------------------------------
def make_inputs(case: str, folder: Path, p: dict) -> None:
    import generate as g
    if case == "startup":
        g.many_runs(folder / "project", p["runs"])
    elif case == "open":
        g.write_demo_project(folder / "project", clock=lambda: g.BASE)
        huge = g.huge_run(folder / "project", bindings=p["bindings"], trace_lines=p["trace"],
                          agents=p["agents"], segments=p["segments"], run_id="20260101-000000-0b1e55")
        (folder / "huge.txt").write_text(str(huge))
    elif case == "value":
        _run, big = g.big_binding_run(folder / "project", mb=p["value_mb"])
        os.utime(big, (g.BASE.timestamp(), g.BASE.timestamp()))  # not the newest: opened on demand
        (folder / "big.txt").write_text(str(big))
    elif case == "cpu":
        g.write_demo_project(folder / "idle" / "project", clock=lambda: g.BASE)
        g.write_demo_project(folder / "busy" / "project", clock=lambda: g.BASE)
        w = g.EventLogWriter(folder / "busy" / "project", run_id="20990101-000000-bb0000")
        w.append(50)
        (folder / "events.txt").write_text(str(w.run))
    elif case == "long":
        g.write_demo_project(folder / "project", clock=lambda: g.BASE)
        w = g.EventLogWriter(folder / "project", run_id="20990101-000000-10a600")
        (folder / "events.txt").write_text(str(w.run))


def run_case(case: str, p: dict, workdir: Path) -> tuple[dict, float, str]:
    """One run of ``case`` in a fresh subprocess: (metrics, peak RSS MB, stderr tail)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{case}-", dir=workdir))
    try:
        make_inputs(case, folder, p)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--case", case, "--inputs", str(folder),
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
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.case:  # inside a case process
        p = json.loads(args.params)
        result = asyncio.run(CASES[args.case](Path(args.inputs), p))
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
    with tempfile.TemporaryDirectory(prefix="prose-bench-") as tmp:
        for case in cases:
            for i in range(p["repeat"]):
                t = time.perf_counter()
                metrics, peak, err = run_case(case, p, Path(tmp))
                if err:
                    failed.append(case)
                    print(f"  {case} run {i + 1}: FAILED\n{err}", file=sys.stderr, flush=True)
                    continue
                for k, v in metrics.items():
                    results.setdefault(k, []).append(v)
                peaks.setdefault(case, []).append(peak)
                print(f"  {case} run {i + 1}/{p['repeat']}: {time.perf_counter() - t:.0f} s, peak RSS {peak:.0f} MB",
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
          "median of the runs (min-max); peak RSS is the case process's ru_maxrss")
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
