"""Live latency end to end (issue 9): a write on disk until the screen shows it.

    python benchmarks/bench_e2e.py [--driver tmux|headless|both] [--rounds 15] [--only eventlog-20000,...]
    python benchmarks/bench_e2e.py --driver tmux --cpu --memory

Two drivers over the same cases:

* ``tmux``: the real CLI (``prose-tui PATH``) in a tmux session at 200x50 (``--size``); the benchmark
  writes the file, then polls ``tmux capture-pane -p`` until the written marker is on the
  screen. By default the captures go through one control-mode client (``tmux -C``), a
  capture every millisecond at 0.1 ms each; ``--probe spawn`` runs a ``tmux capture-pane``
  process per capture, back to back (4 ms each, p95 6 here: a busy core beside the app,
  and up to one capture's time in the figure), as the first passes measured.
* ``headless``: Textual ``run_test`` at the same size; done at the first frame handed to the
  display after the widget holds the marker (as ``bench_live.py``).

``--first N``: the first change written the moment the run is on screen (no settling: the
open's last frames and the watch starting are still under way), one change in each of N
fresh opens per case; p95 over the opens. The tmux driver also prints the time from the
launch to that change shown: a faster open moves work after the run is on screen, so the
first figure alone can read worse for a better open.

Cases (one write per 0.3 s, ``--period`` to change it, ``--rounds`` each; the first round is
the first change right after the run is on screen, so "first change after opening" is
included). Between changes the watcher sleeps on inotify and hands a change over a few ms
after it; a watch just started (a run just opened) looks every 5 ms until it has been quiet
for 3 s (``prose_tui.live.watcher``): ``--period 12`` measures changes after a pause, as
most of a real run's are.

* ``eventlog-N`` (N = 0, 2,000, 20,000, 100,000 earlier events): append one line to the
  event-log ``state.md``;
* ``binding``: append to the binding shown in the value pane;
* ``snapshot-N`` (N = 500, 2,000 statements, 500 binding files): rewrite ``state.md``
  (atomically, as a VM does) moving the executing marker to a statement whose text changed.

``--cpu``: CPU of the app (``/proc/PID/stat``) over 30 s while a 20,000-event run gets 10
events/s, and over 30 s idle. ``--memory``: RSS after opening runs of 1,000, 20,000 and
100,000 events; per event = the difference over the difference in events.
Figures, not assertions. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import EventLogWriter, huge_run  # noqa: E402

SIZE = (200, 50)
PERIOD = 0.3
SETTLE = 1.0  # seconds from the run on screen to the first write (--settle)
CASES = ["eventlog-0", "eventlog-2000", "eventlog-20000", "eventlog-100000", "binding", "snapshot-500",
         "snapshot-2000"]
TARGET = {"snapshot-2000": 80}
PROBE = "control"  # --probe: "control" (one tmux -C client) or "spawn" (a tmux process per capture)
PROBE_GAP = 0.001  # seconds between two control-mode captures: the figure's resolution


@dataclass
class Case:
    """A run to open, and ``write(i) -> marker``: the i-th change and the text that shows it."""

    root: Path
    write: Callable[[int], str]
    where: str  # "trace" or "value": the pane the marker shows in
    path: Path  # the file each write changes
    # Text on screen only once the run read from disk is shown in ``where`` (not a pane's
    # title, a placeholder row or the status line): the run is open from then on.
    opened: str


def make_case(name: str, folder: Path) -> Case:
    if name.startswith("eventlog-"):
        n = int(name.split("-")[1])
        writer = EventLogWriter(folder)
        step = 50_000
        while writer.count < n:
            writer.append(min(step, n - writer.count))

        def write(i: int) -> str:
            marker = f"bench_{i}"
            with open(writer.state, "a", encoding="utf-8") as fh:
                fh.write(f"{n + i + 1}→ {marker}\n")
            return marker

        # The trace's last line: an event, or the log's "# run:" header when it has none.
        return Case(folder, write, "trace", writer.state, f"step_{n}" if n else "# run:")
    if name == "binding":
        run = huge_run(folder, bindings=20, trace_lines=40, agents=0, segments=0)
        binding = run / "bindings" / "value_00019.md"
        binding.write_text("# value_00019\n\nkind: let\n\n---\n\nvalue_opened\n", encoding="utf-8")

        def write(i: int) -> str:
            marker = f"bench_{i}"
            with open(binding, "a", encoding="utf-8") as fh:
                fh.write(f"{marker} ")
            return marker

        return Case(folder, write, "value", binding, "value_opened")
    n = int(name.split("-")[1])
    run = huge_run(folder, bindings=500, trace_lines=n, agents=0, segments=0)
    state = run / "state.md"
    lines = state.read_text(encoding="utf-8").splitlines()
    statements = [i for i, ln in enumerate(lines) if ln.startswith("let value_")]
    executing = next(i for i, ln in enumerate(lines) if "<-- EXECUTING" in ln)
    start = statements.index(executing)

    def write(i: int) -> str:
        marker = f"bench_{i}"
        new = list(lines)
        prev = statements[(start + i - 1) % len(statements)] if i else executing
        new[prev] = new[prev].replace("# <-- EXECUTING", "# (complete)")
        pick = statements[(start + i) % len(statements)]
        new[pick] = f"let value_{i:05d} = session: {marker}".ljust(70) + " # <-- EXECUTING"
        lines[:] = new
        tmp = state.with_name(".state.md.tmp")
        tmp.write_text("\n".join(new) + "\n", encoding="utf-8")
        os.replace(tmp, state)
        return marker

    return Case(folder, write, "trace", state, "value_")


def stats(samples: list[float]) -> tuple[float, float, float]:
    if len(samples) < 2:
        v = samples[0] if samples else float("nan")
        return v, v, v
    qs = statistics.quantiles(samples, n=100, method="inclusive")
    return qs[49], qs[94], max(samples)


# -- tmux ------------------------------------------------------------------------------------------
class Tmux:
    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        exe = Path(sys.executable).with_name("prose-tui")
        # This tree first on the path: the console script alone imports wherever the venv's
        # editable install points (another checkout), and the figures would be that one's.
        cmd = f"cd {path} && PYTHONPATH={ROOT} exec {exe} {path}"
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(SIZE[0]), "-y", str(SIZE[1]), cmd],
                       check=True, env={**os.environ, "TERM": "xterm-256color"})
        self.pid = int(subprocess.run(["tmux", "display", "-p", "-t", name, "#{pane_pid}"], capture_output=True,
                                      text=True, check=True).stdout.strip())
        self._control: subprocess.Popen[str] | None = None
        if PROBE == "control":
            # One control-mode client (tmux -C) asks for every capture: 0.1 ms each here,
            # against 4 ms (p95 6) for a tmux process per capture, which kept a core busy
            # beside the app on this 2-core machine. Its pane output is switched off.
            self._control = subprocess.Popen(["tmux", "-u", "-C", "attach", "-t", name],
                                             stdin=subprocess.PIPE, errors="replace",
                                             stdout=subprocess.PIPE, text=True, bufsize=1)
            self._command("refresh-client -f no-output")

    def _command(self, command: str) -> str:
        """One tmux command through the control client; its output (``%begin`` .. ``%end``)."""
        assert self._control is not None and self._control.stdin and self._control.stdout
        self._control.stdin.write(command + "\n")
        self._control.stdin.flush()
        lines: list[str] = []
        inside = False
        for line in self._control.stdout:
            if line.startswith("%begin"):
                inside = line.split()[-1] == "1"  # flag 1: this client's command (0: the attach's own)
            elif inside and line.startswith(("%end", "%error")):
                return "".join(lines)
            elif inside:
                lines.append(line)
        raise RuntimeError("the tmux control client ended")

    def screen(self) -> str:
        if self._control is not None:
            return self._command(f"capture-pane -p -t {self.name}")
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True).stdout

    def wait_for(self, text: str, timeout: float = 60.0) -> float | None:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if text in self.screen():
                return time.perf_counter()
            if self._control is not None:
                time.sleep(PROBE_GAP)
        return None

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def main_thread_seconds(self) -> float:
        """CPU of the app's main thread (the UI: Textual's event loop) alone."""
        fields = Path(f"/proc/{self.pid}/task/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)
        if self._control is not None:
            # Read what the client printed since the last capture (notifications while the
            # CPU figures ran): with its pipe full it never sees the session end, and waits.
            try:
                self._control.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self._control.kill()
                self._control.communicate()


LAUNCHES: dict[str, list[float]] = {}  # case -> ms from launch to its first change shown (--first)


def tmux_case(name: str, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        case = make_case(name, Path(tmp))
        launched = time.perf_counter()
        term = Tmux(case.root, f"bench-{os.getpid()}")
        try:
            if term.wait_for("Trace", 120) is None:
                raise RuntimeError(f"{name}: the app did not start:\n{term.screen()}")
            if term.wait_for(case.opened, 120) is None:
                raise RuntimeError(f"{name}: the run did not open:\n{term.screen()}")
            time.sleep(SETTLE)
            samples = []
            for i in range(rounds):
                t0 = time.perf_counter()
                marker = case.write(i)
                seen = term.wait_for(marker, 10.0)
                samples.append((seen - t0) * 1000 if seen is not None else 10_000.0)
                if i == 0 and SETTLE == 0 and seen is not None:  # --first: the open and the change, as the user waits
                    LAUNCHES.setdefault(name, []).append((seen - launched) * 1000)
                time.sleep(PERIOD)
            return samples
        finally:
            term.close()


CPU_UI: dict[str, float] = {}  # "idle"/"busy" -> % CPU of the main (UI) thread alone


def tmux_cpu(seconds: float = 30.0) -> tuple[float, float]:
    """(% CPU idle, % CPU while 10 events/s are appended) for a 20,000-event run; the UI
    thread's share goes to ``CPU_UI`` (the rest: the watcher, the live worker, output)."""
    with tempfile.TemporaryDirectory() as tmp:
        case_root = Path(tmp)
        writer = EventLogWriter(case_root)
        writer.append(20_000)
        term = Tmux(case_root, f"cpu-{os.getpid()}")
        try:
            term.wait_for("step_20000", 120)
            time.sleep(3)
            c0, u0, t0 = term.cpu_seconds(), term.main_thread_seconds(), time.perf_counter()
            time.sleep(seconds)
            elapsed = time.perf_counter() - t0
            idle = (term.cpu_seconds() - c0) / elapsed * 100
            CPU_UI["idle"] = (term.main_thread_seconds() - u0) / elapsed * 100
            proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "generate.py"), "events",
                                     str(writer.run), "--rate", "10", "--count", str(int(seconds * 10))])
            c0, u0, t0 = term.cpu_seconds(), term.main_thread_seconds(), time.perf_counter()
            proc.wait()
            elapsed = time.perf_counter() - t0
            busy = (term.cpu_seconds() - c0) / elapsed * 100
            CPU_UI["busy"] = (term.main_thread_seconds() - u0) / elapsed * 100
            return idle, busy
        finally:
            term.close()


def tmux_memory() -> dict[int, float]:
    out = {}
    for n in (1_000, 20_000, 100_000):
        with tempfile.TemporaryDirectory() as tmp:
            writer = EventLogWriter(Path(tmp))
            while writer.count < n:
                writer.append(min(50_000, n - writer.count))
            term = Tmux(Path(tmp), f"mem-{os.getpid()}")
            try:
                term.wait_for(f"step_{n}", 180)
                time.sleep(2)
                out[n] = term.rss_mb()
            finally:
                term.close()
    return out


# -- headless --------------------------------------------------------------------------------------
UI_CPU: dict[str, list[float]] = {}  # case -> UI thread CPU ms per change (headless driver)


async def headless_case(name: str, rounds: int, profile: str | None = None, *, cpu_rounds: bool = True) -> list[float]:
    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.widgets.trace_view import TraceView
    from prose_tui.tui.widgets.value_viewer import ValueViewer

    with tempfile.TemporaryDirectory() as tmp:
        case = make_case(name, Path(tmp))
        app = ProseTUI(case.root, watch=True)
        frames: list[float] = []
        original = app._display

        def timed(screen, renderable):
            frames.append(time.perf_counter())
            return original(screen, renderable)

        app._display = timed

        async def until(predicate, timeout: float) -> bool:
            deadline = time.perf_counter() + timeout
            while not predicate():
                if time.perf_counter() > deadline:
                    return False
                await asyncio.sleep(0.0005)
            return True

        async with app.run_test(size=SIZE):
            explorer = app.explorer
            trace = explorer.query_one(TraceView)
            viewer = explorer.query_one(ValueViewer)
            def opened() -> bool:  # as the tmux driver waits for it: the run's own text shown
                if case.where == "value":
                    return case.opened in (viewer.text or "")
                return any(case.opened in line.text for line in trace.lines[-3:])

            if not await until(opened, 120):
                raise RuntimeError(f"{name}: the run did not open")
            await asyncio.sleep(SETTLE)

            # The live worker may re-state the trace list in place before the UI has taken
            # the delta: a marker counts once the trace was told (set_lines/lines_changed).
            told = [0.0]
            for method in ("set_lines", "lines_changed"):
                real = getattr(trace, method)

                def telling(*args, _real=real, **kwargs):
                    told[0] = time.perf_counter()
                    return _real(*args, **kwargs)

                setattr(trace, method, telling)

            def shows(marker: str) -> bool:
                if case.where == "value":
                    return marker in (viewer.text or "")
                if told[0] < t0:
                    return False
                lo, hi = max(0, trace.cursor - 5), min(len(trace.lines), trace.cursor + 6)
                return any(marker in trace.lines[j].text for j in range(lo, hi))

            samples = []
            cpu = UI_CPU.setdefault(name, []) if cpu_rounds else []
            profiler = None
            if profile:
                import cProfile

                profiler = cProfile.Profile()  # the UI thread only: the app's loop runs here
                profiler.enable()
            for i in range(rounds):
                t0 = time.perf_counter()
                marker = case.write(i)
                if await until(lambda: shows(marker), 10):
                    t1 = time.perf_counter()
                    await until(lambda: frames and frames[-1] >= t1, 5)
                    samples.append((frames[-1] - t0) * 1000)
                else:
                    samples.append(10_000.0)
                await asyncio.sleep(PERIOD)
            # UI CPU per change, without the polling above (it runs on this thread too): a
            # write, then PERIOD seconds of the app alone (the change, its paint, timers).
            for i in range(rounds, 2 * rounds if cpu_rounds else rounds):
                c0 = time.thread_time()
                case.write(i)
                await asyncio.sleep(PERIOD)
                cpu.append((time.thread_time() - c0) * 1000)
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(f"{profile}.{name}.prof")
            return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", choices=["tmux", "headless", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", default="")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--period", type=float, default=PERIOD,
                        help="seconds between two writes (past 10: each change after a quiet spell)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds between the run on screen and the first write (0: while the open settles)")
    parser.add_argument("--first", type=int, default=0, metavar="N",
                        help="also: the first change written the moment the run is on screen (settle 0), one "
                             "change in each of N fresh opens per case")
    parser.add_argument("--probe", choices=["control", "spawn"], default="control",
                        help="tmux: capture through one control-mode client (default) or a tmux process each time")
    parser.add_argument("--size", default="200x50", metavar="WxH",
                        help="terminal (tmux) and headless screen size; 80x24 is the SSH user's")
    parser.add_argument("--profile", metavar="PREFIX",
                        help="headless: cProfile the UI thread over the rounds into PREFIX.CASE.prof")
    args = parser.parse_args()
    globals()["SETTLE"] = args.settle
    globals()["PERIOD"] = args.period
    globals()["PROBE"] = args.probe
    width, _, height = args.size.partition("x")
    globals()["SIZE"] = (int(width), int(height))
    cases = [c for c in CASES if not args.only or c in args.only.split(",")]
    from prose_tui.tui.screens.explorer import COMPACT_HEIGHT, COMPACT_WIDTH

    if (SIZE[0] < COMPACT_WIDTH or SIZE[1] < COMPACT_HEIGHT) and "binding" in cases:
        cases.remove("binding")  # the value pane is not on the compact screen
        print(f"(binding: left out at {args.size}: the compact screen shows no value pane)\n")
    drivers = ["headless", "tmux"] if args.driver == "both" else [args.driver]
    if "tmux" in drivers and shutil.which("tmux") is None:
        print("tmux is not installed (apt-get install tmux)", file=sys.stderr)
        return 2
    print("| case | driver | p50 ms | p95 ms | max ms | target p95 | result |\n|---|---|---|---|---|---|---|")
    if not args.no_latency:
        for name in cases:
            for driver in drivers:
                samples = (tmux_case(name, args.rounds) if driver == "tmux"
                           else asyncio.run(headless_case(name, args.rounds, args.profile)))
                p50, p95, top = stats(samples)
                target = TARGET.get(name, 50)
                print(f"| {name} | {driver} | {p50:.0f} | {p95:.0f} | {top:.0f} | <= {target} | "
                      f"{'pass' if p95 <= target else 'MISS'} |", flush=True)
    if args.first:
        settle = SETTLE
        globals()["SETTLE"] = 0.0
        try:
            for name in cases:
                for driver in drivers:
                    samples = [
                        (tmux_case(name, 1) if driver == "tmux" else asyncio.run(headless_case(name, 1, cpu_rounds=False)))[0]
                        for _ in range(args.first)
                    ]
                    p50, p95, top = stats(samples)
                    target = TARGET.get(name, 50)
                    print(f"| {name}, first change at once ({args.first} opens) | {driver} | {p50:.0f} | {p95:.0f} | "
                          f"{top:.0f} | <= {target} | {'pass' if p95 <= target else 'MISS'} |", flush=True)
                    if driver == "tmux" and LAUNCHES.get(name):
                        # The figure above starts when the run is on screen: an open that shows
                        # the run sooner leaves more of its work after that moment. From launch
                        # is what the user waits for the change (no target: a figure).
                        p50, p95, top = stats(LAUNCHES[name])
                        print(f"| {name}, launch to that change shown | tmux | {p50:.0f} | {p95:.0f} | {top:.0f} | - | - |",
                              flush=True)
        finally:
            globals()["SETTLE"] = settle
    if UI_CPU:
        print(f"\nUI thread CPU per change (headless; a write every {PERIOD:g} s without polling: the change, its "
              "paint, the app's timers): less sensitive to the machine's load than latency.\n")
        print("| case | p50 ms | p95 ms |\n|---|---|---|")
        for name, values in UI_CPU.items():
            c50, c95, _ = stats(values)
            print(f"| {name} | {c50:.1f} | {c95:.1f} |")
    if args.cpu:
        idle, busy = tmux_cpu()
        print(f"| CPU idle, 20,000-event run (30 s) | tmux | {idle:.1f} % | | | <= 1 % | {'pass' if idle <= 1 else 'MISS'} |")
        print(f"| CPU, 20,000-event run + 10 events/s (30 s) | tmux | {busy:.1f} % | | | <= 5 % | "
              f"{'pass' if busy <= 5 else 'MISS'} |", flush=True)
        print(f"| of which the UI (main) thread, idle / 10 events/s | tmux | {CPU_UI['idle']:.1f} / "
              f"{CPU_UI['busy']:.1f} % | | | | |", flush=True)
    if args.memory:
        rss = tmux_memory()
        for n, mb in rss.items():
            print(f"| RSS at {n:,} events | tmux | {mb:.1f} MB | | | | |")
        for n in (20_000, 100_000):
            per = (rss[n] - rss[1_000]) * 1024 / (n - 1_000)
            print(f"| memory per event past 1,000 (at {n:,}) | tmux | {per:.2f} KB | | | <= 1 KB | {'pass' if per <= 1 else 'MISS'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
