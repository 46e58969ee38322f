"""Idle CPU with many runs listed (issue 35, item 8): nothing changes, what does the app cost?

    python benchmarks/bench_idle.py [--runs 5000] [--seconds 60] [--running 5] [--quiet-for 300] [--app-path PATH]

Writes ``--runs`` small runs under a temporary project (event-log ``state.md`` files, as
generations 2-3 write them: most ended with ``---end``, ``--running`` of them still running,
last written ``--quiet-for`` seconds before: a step waiting on a long call; under 90 s the
shown run's header says its age in seconds, a repaint every second), starts the real CLI (``prose-tui PROJECT``) in a tmux session at
120x40 on a socket of its own, waits until every run is listed and a few seconds more, then
reads the app process's CPU time (``/proc/PID/stat``, user + system, every thread) over
``--seconds`` of nothing changing on disk. Prints % of one core, and the main (UI) thread's
share. ``--app-path`` puts another checkout first on the app's ``PYTHONPATH`` (an older
tree, for a before/after). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = (120, 40)
SETTLE = 5.0  # seconds after every run is listed before the figure starts


def idle_runs(root: Path, n: int, *, running: int, quiet_for: float = 0.0) -> Path:
    """``root/.prose/runs`` with ``n`` event-log runs, a minute apart; the newest
    ``running`` of them still running (no ``---end``, last written ``quiet_for`` seconds
    ago), the rest ended."""
    runs = root / ".prose" / "runs"
    runs.mkdir(parents=True)
    now = datetime.now(timezone.utc)
    for i in range(n):
        started = now - timedelta(minutes=i + 1)
        run_id = started.strftime("%Y%m%d-%H%M%S-") + f"{i:06x}"
        folder = runs / run_id
        folder.mkdir()
        lines = [f"# run:{run_id} pipeline-{i % 50}.prose", "1→ fetch ✓", "2→ draft ✓"]
        if i >= running:
            lines += ["3→ review ✓", f"---end {(started + timedelta(seconds=40)).isoformat()}"]
        else:
            lines += ["3→ review"]
        (folder / "state.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        stamp = (started + timedelta(seconds=40)).timestamp() if i >= running else time.time() - quiet_for
        os.utime(folder / "state.md", (stamp, stamp))
    return root


class App:
    """The CLI in a detached tmux session on a socket of its own (``tmux -L``)."""

    def __init__(self, project: Path, app_path: Path) -> None:
        self.socket = f"bench-idle-{os.getpid()}"
        exe = Path(sys.executable).with_name("prose-tui")
        cmd = f"cd {project} && PYTHONPATH={app_path} exec {exe} {project}"
        subprocess.run(["tmux", "-L", self.socket, "new-session", "-d", "-s", "idle", "-x", str(SIZE[0]),
                        "-y", str(SIZE[1]), cmd], check=True, env={**os.environ, "TERM": "xterm-256color"})
        self.pid = int(subprocess.run(["tmux", "-L", self.socket, "display", "-p", "-t", "idle", "#{pane_pid}"],
                                      capture_output=True, text=True, check=True).stdout.strip())

    def screen(self) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p", "-t", "idle"],
                              capture_output=True, text=True).stdout

    def wait_for(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.screen():
                return True
            time.sleep(0.2)
        return False

    def cpu_seconds(self, task: int | None = None) -> float:
        """CPU seconds of the process (every thread), or of one thread (``task``)."""
        where = f"/proc/{self.pid}/stat" if task is None else f"/proc/{self.pid}/task/{task}/stat"
        fields = Path(where).read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def threads(self) -> dict[int, tuple[str, float]]:
        """Each thread's name and CPU seconds."""
        out = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                name = (task / "comm").read_text().strip()
                out[int(task.name)] = (name, self.cpu_seconds(int(task.name)))
            except OSError:
                continue
        return out

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def measure(runs: int, seconds: float, running: int, quiet_for: float, app_path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = idle_runs(Path(tmp), runs, running=running, quiet_for=quiet_for)
        app = App(project, app_path)
        try:
            if not app.wait_for(f"Runs ({runs}) ─", 600):  # the title once every run is read (not "· reading")
                raise SystemExit(f"the app did not list {runs} runs:\n{app.screen()}")
            time.sleep(SETTLE)
            before, threads_before, t0 = app.cpu_seconds(), app.threads(), time.monotonic()
            time.sleep(seconds)
            used, elapsed = app.cpu_seconds() - before, time.monotonic() - t0
            threads_after = app.threads()
        finally:
            app.close()
    print(f"app from {app_path}")
    load = os.getloadavg()[0]
    print(f"{runs} runs ({running} running), {elapsed:.0f} s idle, load {load:.1f}: "
          f"{used:.2f} CPU s = {100 * used / elapsed:.2f} % of a core")
    for task, (name, cpu) in sorted(threads_after.items()):
        spent = cpu - threads_before.get(task, (name, 0.0))[1]
        if spent > 0:
            which = "main (UI)" if task == app.pid else f"{name} {task}"
            print(f"  thread {which:24} {100 * spent / elapsed:6.2f} %")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--running", type=int, default=5)
    parser.add_argument("--quiet-for", type=float, default=300.0)
    parser.add_argument("--app-path", type=Path, default=ROOT)
    args = parser.parse_args()
    measure(args.runs, args.seconds, args.running, args.quiet_for, args.app_path.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
