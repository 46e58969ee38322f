"""Opening a run: launch until the first screen shows, against toolong and tail -f (issue 33).

    python benchmarks/bench_open.py                                # all cases, 3 opens each, 80x24
    python benchmarks/bench_open.py --events 1000,100000 --snapshot 0 --rounds 1 --tools prose-tui

Each tool is launched in a tmux pane of ``--size`` (80x24) on a tmux server of its own
(``tmux -L bench-open-PID``): the pane starts on a placeholder, one control-mode client
(``tmux -C``) attaches, the clock starts and ``respawn-pane`` runs the tool; the client
captures the pane every millisecond until all of the case's first-screen texts are on it.
Per open: that time, the CPU time the tool's process had used by then (user + system, from
``/proc``: on a loaded machine the wall time is mostly waiting for a core, the CPU time much
less so), and its RSS (VmRSS) when the first screen showed and 3 s later.

First screen, per case and tool:

* ``eventlog-N`` (N events, ``generate.EventLogWriter``): prose-tui shows the newest event
  (``step_N``) and the run's status (``interrupted``: the generated run is weeks old);
  toolong and ``tail -f`` show the file's last line.
* ``snapshot-N`` (``generate.huge_run``: N statements, N bindings, a trace of 2N lines):
  prose-tui shows the executing statement and the run's status; toolong and ``tail -f``
  the last line of ``state.md`` (the call stack's last row).

prose-tui runs as ``python -m prose_tui PROJECT`` with this tree first on ``PYTHONPATH`` and
its bytecode written to (and read from) a cache folder of the benchmark's, as an installed
package has it (the shell may set ``PYTHONDONTWRITEBYTECODE``, which would make every
start compile the package). Its journal goes to a temporary ``XDG_STATE_HOME``. toolong is
``tl`` from ``--toolong`` (default ``/work/venv-toolong/bin/tl``; ``pip install toolong``
into a venv of its own: it pins an older Textual); skipped when absent. One open per tool
(first case) is a warm-up (bytecode, page cache), not counted; then the tools take turns,
``--rounds`` times. Median and max of ``--rounds``. ``--baseline TREE`` opens prose-tui from
another tree as well (``git archive main | tar -x -C /tmp/main``): before and after, in turns.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import EventLogWriter, huge_run  # noqa: E402

TOOLONG = Path("/work/venv-toolong/bin/tl")


@dataclass
class Case:
    name: str
    root: Path  # the project prose-tui opens
    file: Path  # the file toolong and tail -f open
    ours: list[str]  # texts of prose-tui's first screen
    theirs: list[str]  # texts of toolong's and tail -f's
    figures: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)


def make_case(name: str, folder: Path) -> Case:
    kind, n = name.split("-")
    count = int(n)
    if kind == "eventlog":
        writer = EventLogWriter(folder)
        while writer.count < count:
            writer.append(min(50_000, count - writer.count))
        last = f"step_{count} "
        return Case(name, folder, writer.state, [last, "interrupted"], [last])
    run = huge_run(folder, bindings=count, trace_lines=2 * count, agents=0, segments=0)
    state = run / "state.md"
    executing = next(ln for ln in state.read_text(encoding="utf-8").splitlines() if "<-- EXECUTING" in ln)
    return Case(name, folder, state, [executing.split(" = ")[0].split()[-1], "interrupted"], ["executing |"])


class Pane:
    """A tmux server of its own with one pane, driven through a control-mode client."""

    opened = 0

    def __init__(self, size: tuple[int, int]) -> None:
        Pane.opened += 1  # a server name per pane: the last one may still be shutting down
        self.server = f"bench-open-{os.getpid()}-{Pane.opened}"
        subprocess.run(["tmux", "-L", self.server, "new-session", "-d", "-s", "o", "-x", str(size[0]),
                        "-y", str(size[1]), "sleep 3600"], check=True, env={**os.environ, "TERM": "xterm-256color"})
        self.control = subprocess.Popen(["tmux", "-L", self.server, "-u", "-C", "attach", "-t", "o"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                        errors="replace")
        self.command("refresh-client -f no-output")

    def command(self, command: str) -> str:
        assert self.control.stdin is not None and self.control.stdout is not None
        self.control.stdin.write(command + "\n")
        self.control.stdin.flush()
        lines: list[str] = []
        inside = False
        for line in self.control.stdout:
            if line.startswith("%begin"):
                inside = line.split()[-1] == "1"
            elif inside and line.startswith(("%end", "%error")):
                return "".join(lines)
            elif inside:
                lines.append(line)
        raise RuntimeError("the tmux control client ended")

    def launch(self, shell_command: str) -> float:
        t0 = time.perf_counter()
        self.command(f"respawn-pane -k -t o {shlex.quote(shell_command)}")
        return t0

    def wait_for(self, texts: list[str], timeout: float) -> float | None:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            screen = self.command("capture-pane -p -t o")
            if all(t in screen for t in texts):
                return time.perf_counter()
            time.sleep(0.001)
        return None

    def rss_mb(self) -> float:
        pid = self.command("display -p -t o '#{pane_pid}'").strip()
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")

    def cpu_ms(self) -> float:
        """User + system CPU time of the pane's process so far (``/proc/PID/stat``), ms."""
        pid = self.command("display -p -t o '#{pane_pid}'").strip()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.server, "kill-server"], capture_output=True)
        try:
            self.control.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.control.kill()
            self.control.communicate()


def command_for(tool: str, case: Case, env: dict[str, str], toolong: Path) -> str:
    if tool.startswith("prose-tui@"):  # another tree (``--baseline``), its own bytecode cache
        tree = tool.split("@", 1)[1]
        env = {**env, "PYTHONPATH": tree, "PYTHONPYCACHEPREFIX": env["PYTHONPYCACHEPREFIX"] + "-baseline"}
        tool = "prose-tui"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    if tool == "prose-tui":
        return (f"cd {shlex.quote(str(case.root))} && exec env -u PYTHONDONTWRITEBYTECODE {exports} "
                f"{shlex.quote(sys.executable)} -m prose_tui {shlex.quote(str(case.root))}")
    if tool == "toolong":
        return f"exec {shlex.quote(str(toolong))} {shlex.quote(str(case.file))}"
    return f"exec tail -f {shlex.quote(str(case.file))}"


def open_once(tool: str, case: Case, size: tuple[int, int], env: dict[str, str], toolong: Path,
              timeout: float) -> tuple[float, float, float, float]:
    """(ms to the first screen, RSS MB then, RSS MB 3 s later, CPU ms used by the first screen)."""
    pane = Pane(size)
    try:
        t0 = pane.launch(command_for(tool, case, env, toolong))
        seen = pane.wait_for(case.ours if tool.startswith("prose-tui") else case.theirs, timeout)
        if seen is None:  # the figure is "never" (nan); what the screen showed instead is printed
            screen = pane.command("capture-pane -p -t o")
            print(f"{label(tool)} {case.name}: no first screen in {timeout:.0f} s; the screen:\n{screen}", flush=True)
            return float("nan"), pane.rss_mb(), pane.rss_mb(), float("nan")
        cpu = pane.cpu_ms()
        rss = pane.rss_mb()
        time.sleep(3)
        return (seen - t0) * 1000, rss, pane.rss_mb(), cpu
    finally:
        pane.close()


def label(tool: str) -> str:
    return "prose-tui (baseline)" if tool.startswith("prose-tui@") else tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="1000,10000,100000,1000000", help="event-log sizes, comma-separated")
    parser.add_argument("--snapshot", type=int, default=2000, help="statements of the snapshot case (0: none)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tools", default="tail,toolong,prose-tui")
    parser.add_argument("--size", default="80x24")
    parser.add_argument("--toolong", type=Path, default=TOOLONG)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--baseline", type=Path, help="another prose-tui tree (e.g. main, git archive) opened too")
    args = parser.parse_args()
    size = tuple(int(x) for x in args.size.split("x"))
    tools = [t for t in args.tools.split(",") if t != "toolong" or args.toolong.exists()]
    if args.baseline is not None:
        tools.append(f"prose-tui@{args.baseline.resolve()}")
    if "toolong" in args.tools and "toolong" not in tools:
        print(f"toolong: {args.toolong} not found, skipped", file=sys.stderr)
    names = [f"eventlog-{n}" for n in args.events.split(",") if n] + ([f"snapshot-{args.snapshot}"] if args.snapshot else [])
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = {"PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache"),
               "XDG_STATE_HOME": str(tmp_path / "state")}
        cases = []
        for name in names:
            case = make_case(name, tmp_path / name)
            for tool in tools:
                if not cases:  # bytecode written, the tool's files in the page cache (a new case's file is)
                    open_once(tool, case, size, env, args.toolong, args.timeout)
                case.figures[tool] = []
            for r in range(args.rounds):  # the tools take turns (the order rotating): the same load for each
                for tool in tools[r % len(tools):] + tools[:r % len(tools)]:
                    case.figures[tool].append(open_once(tool, case, size, env, args.toolong, args.timeout))
            for tool in tools:
                ms = [f[0] for f in case.figures[tool]]
                print(f"{name:<18} {label(tool):<10} first screen ms: {' '.join(f'{m:.0f}' for m in ms)}; "
                      f"CPU ms: {' '.join(f'{f[3]:.0f}' for f in case.figures[tool])}; "
                      f"RSS MB {case.figures[tool][-1][1]:.0f} -> {case.figures[tool][-1][2]:.0f}; "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
            cases.append(case)
    load = os.getloadavg()
    print(f"\n{size[0]}x{size[1]}, median (max) of {args.rounds} opens, ms; CPU ms used by the first screen, "
          f"median; RSS 3 s after the first screen, MB; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}\n")
    others = [t for t in tools if t != "tail"]
    print("| case | " + " | ".join(map(label, tools)) + " | " + " | ".join(f"CPU {label(t)}" for t in others)
          + " | " + " | ".join(f"RSS {label(t)}" for t in others) + " |")
    print("|---" * (1 + len(tools) + 2 * len(others)) + "|")
    for case in cases:
        cells = []
        for tool in tools:
            ms = [f[0] for f in case.figures[tool]]
            cells.append("never" if any(m != m for m in ms) else f"{statistics.median(ms):,.0f} ({max(ms):,.0f})")
        cpu = [f"{statistics.median(f[3] for f in case.figures[t]):,.0f}" for t in others]
        rss = [f"{statistics.median(f[2] for f in case.figures[t]):.0f}" for t in others]
        print(f"| {case.name} | " + " | ".join(cells) + " | " + " | ".join(cpu) + " | " + " | ".join(rss) + " |")


if __name__ == "__main__":
    main()
