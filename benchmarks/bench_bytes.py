"""Bytes on the link (issue 33): what the app writes to its terminal while a run grows, and idle.

    python benchmarks/bench_bytes.py [--events 40] [--idle 30] [--sizes 80x24,200x50] [--no-tail]

The real CLI (``prose-tui PATH``) in a tmux session, its output copied to a file by
``tmux pipe-pane -o 'cat >> FILE'`` from the moment the run is on screen and settled (the
open's own frames are not counted). Per terminal size, one session, in turn:

* **idle**: nothing written for ``--idle`` seconds: bytes per second (the target is 0, apart
  from at most one age label update a minute);
* **2 events/s** and **10 events/s**: a writer process (a second Python process) appends
  ``--events`` (2/s) and ``5 * --events`` (10/s) event lines to the event log ``state.md``
  of a 200-event run; bytes per event, counted until 2 s after the last write;
* **snapshot rewrite**: a 500-statement snapshot run (``bench_e2e``'s ``snapshot-500``)
  rewritten atomically once a second, moving the executing marker: bytes per rewrite.

``tail -f`` on the same event log at 80x24 is the baseline (toolong is not installed in
the project's environment). Figures, not assertions; prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_e2e import make_case  # noqa: E402
from generate import EventLogWriter  # noqa: E402

# A tmux server of its own (other sessions on the machine stay apart), and the app from this
# tree whatever environment a server already running has.
TMUX = ["tmux", "-L", f"bench-bytes-{os.getpid()}"]
APP = f"PYTHONPATH={ROOT} exec {Path(sys.executable).with_name('prose-tui')}"
START_EVENTS = 200
SETTLE = 3.0  # seconds from the run on screen to the first byte counted
AFTER = 2.0  # seconds after the last write still counted (the last frames)

# The writer process: appends COUNT events after START to STATE at RATE events/s.
WRITER = """
import sys, time
state, start, count, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
t0 = time.perf_counter()
for k in range(count):
    i = start + k + 1
    with open(state, "a", encoding="utf-8") as fh:
        fh.write(f"{i}\\u2192 step_{i} \\u2713 [12:{i // 60 % 60:02d}:{i % 60:02d}]\\n")
    delay = t0 + (k + 1) / rate - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
"""


class Pane:
    """A tmux session running ``command`` at ``size``, its output piped to a file."""

    def __init__(self, command: str, size: tuple[int, int], name: str, out: Path) -> None:
        self.name, self.out = name, out
        subprocess.run([*TMUX, "kill-session", "-t", name], capture_output=True)
        subprocess.run([*TMUX, "new-session", "-d", "-s", name, "-x", str(size[0]), "-y", str(size[1]), command],
                       check=True, env={**os.environ, "TERM": "xterm-256color"})

    def screen(self) -> str:
        return subprocess.run([*TMUX, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True).stdout

    def wait_for(self, text: str, timeout: float = 60.0) -> bool:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if text in self.screen():
                return True
            time.sleep(0.05)
        return False

    def pipe(self) -> None:
        self.out.touch()
        subprocess.run([*TMUX, "pipe-pane", "-o", "-t", self.name, f"cat >> {self.out}"], check=True)

    def bytes(self) -> int:
        return self.out.stat().st_size

    def close(self) -> None:
        subprocess.run([*TMUX, "kill-session", "-t", self.name], capture_output=True)
        keep = os.environ.get("BENCH_BYTES_KEEP")  # a folder: keep the raw output there, to read
        if keep and self.out.exists():
            shutil.copy(self.out, Path(keep) / f"{self.name}-{int(time.time())}.out")


def _writer(state: Path, start: int, count: int, rate: float) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(state), str(start), str(count), str(rate)], check=True)


def measure_follow(command_for, size: tuple[int, int], events: int, idle: float, opened: str) -> dict[str, float]:
    """Bytes for idle, 2/s and 10/s on a 200-event log shown by ``command_for(state_path)``."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        writer.append(START_EVENTS)
        pane = Pane(command_for(Path(tmp), writer.state), size, f"bytes-{os.getpid()}", Path(tmp) / "pane.out")
        try:
            if not pane.wait_for(opened, 120):
                raise RuntimeError(f"did not open:\n{pane.screen()}")
            time.sleep(SETTLE)
            pane.pipe()
            time.sleep(0.5)
            b0 = pane.bytes()
            time.sleep(idle)
            out["idle B/s"] = (pane.bytes() - b0) / idle
            count = START_EVENTS
            for rate, n in ((2.0, events), (10.0, 5 * events)):
                b0 = pane.bytes()
                _writer(writer.state, count, n, rate)
                count += n
                if not pane.wait_for(f"step_{count}", 30):
                    raise RuntimeError(f"step_{count} not shown:\n{pane.screen()}")
                time.sleep(AFTER)
                out[f"{rate:g}/s B/event"] = (pane.bytes() - b0) / n
        finally:
            pane.close()
    return out


def measure_snapshot(size: tuple[int, int], rewrites: int) -> float:
    """Bytes per atomic rewrite of a 500-statement snapshot, one a second."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        folder.mkdir()
        case = make_case("snapshot-500", folder)
        pane = Pane(f"cd {folder} && {APP} {folder}", size, f"snap-{os.getpid()}", Path(tmp) / "pane.out")
        try:
            if not pane.wait_for(case.opened, 120):
                raise RuntimeError(f"did not open:\n{pane.screen()}")
            time.sleep(SETTLE)
            pane.pipe()
            time.sleep(0.5)
            b0 = pane.bytes()
            for i in range(rewrites):
                marker = case.write(i)
                pane.wait_for(marker, 10)
                time.sleep(1.0)
            return (pane.bytes() - b0) / rewrites
        finally:
            pane.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=40, help="events at 2/s (5x as many at 10/s)")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds idle")
    parser.add_argument("--rewrites", type=int, default=8)
    parser.add_argument("--sizes", default="80x24,200x50")
    parser.add_argument("--no-tail", action="store_true")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed (apt-get install tmux)", file=sys.stderr)
        return 2
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    print("| tool | size | idle B/s | 2 events/s: B/event | 10 events/s: B/event | snapshot rewrite: B |\n"
          "|---|---|---|---|---|---|")
    if not args.no_tail:
        r = measure_follow(lambda root, state: f"exec tail -f {state}", (80, 24), args.events, args.idle,
                           f"step_{START_EVENTS}")
        print(f"| tail -f | 80x24 | {r['idle B/s']:.0f} | {r['2/s B/event']:.0f} | {r['10/s B/event']:.0f} | |",
              flush=True)
    for w, h in sizes:
        r = measure_follow(lambda root, state: f"cd {root} && {APP} {root}", (w, h), args.events, args.idle,
                           f"step_{START_EVENTS}")
        snap = measure_snapshot((w, h), args.rewrites)
        print(f"| prose-tui | {w}x{h} | {r['idle B/s']:.0f} | {r['2/s B/event']:.0f} | {r['10/s B/event']:.0f} | "
              f"{snap:.0f} |", flush=True)
    subprocess.run([*TMUX, "kill-server"], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
