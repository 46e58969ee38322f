"""The cases of ``run_all.py``, run inside a case process, and the inputs each one reads.

Each ``case_NAME(inputs, params)`` is a coroutine returning ``{metric key: value}`` (ms, %,
MB as ``run_all.ROWS`` says); ``make_inputs(case, folder, params)`` writes what it reads
(``generate.py``, the demo simulator). ``params`` are ``run_all.FULL`` or ``run_all.QUICK``:
sizes, and two waits in seconds, ``settle_s`` (before a timed selection, so start-up work
is over) and ``quiet_s`` (before an idle or memory reading, so the last write is handled).
The app runs headless (Textual ``run_test``, 120x40).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))


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
        await asyncio.sleep(p["settle_s"])
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
        await asyncio.sleep(p["settle_s"])
        before, hwm_before = rss_mb(), hwm_mb()
        t0 = time.perf_counter()
        _tree_binding_select(explorer, big)
        await until(lambda: viewer.target is not None and viewer.target.path == big, 30)
        painted = await frames.after(time.perf_counter())
        await asyncio.sleep(p["settle_s"])
        after = max(rss_mb(), hwm_mb() if hwm_mb() > hwm_before else 0)
    return {"value.first": (painted - t0) * 1000, "value.extra": after - before}


async def _watch_cpu(inp: Path, p: dict, writer: list[str] | None) -> float:
    app = _app(inp / "project")
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        await until(lambda: explorer.watcher_state.startswith("watching") and explorer.current_run is not None, 60)
        await pilot.pause()
        await asyncio.sleep(p["quiet_s"])
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
        await asyncio.sleep(p["quiet_s"])
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
        await asyncio.sleep(p["quiet_s"])
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
