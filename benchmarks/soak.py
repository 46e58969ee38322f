"""Soak: the explorer watching a snapshot run and an event-log run for a long time (issue 35).

    python benchmarks/soak.py --minutes 60 --out /work/soak-out
    python benchmarks/soak.py --minutes 2 --every 5 --out /tmp/soak     # a quick look

What runs, each its own process:
- the explorer (``python -m prose_tui PROJECT``) in a tmux pane of 120x40, on its own tmux
  server (``tmux -L soak-PID``), with ``XDG_STATE_HOME`` in ``OUT/state`` so its journal is
  measured apart from the user's;
- a VM rewriting a snapshot ``state.md`` once a second (``generate.py snapshot``: one
  statement more per rewrite until 600, then re-saved with a new ``updated:``);
- a VM appending to an event log at 10 events a second (``generate.py events``).

Every ``--every`` seconds one line goes to ``OUT/series.csv``: seconds since start, the
explorer's RSS (MB, /proc/PID/statm) and CPU over the interval (% of one core, utime+stime
from /proc/PID/stat), the journal folder's bytes and the number of rewrites written. At
the end the pane's text goes to ``OUT/screen.txt`` and a summary to ``OUT/summary.json``;
every process started here is stopped (the tmux server by its own socket name).

Run it detached for the full hour (``setsid nohup python benchmarks/soak.py ... &``): a
hang-up then leaves it running. Without ``nohup``, a hang-up (the terminal or session that
started it going away) or ``SIGTERM`` stops it the way the end does: writers and tmux
stopped, the series so far summarised. (The first hour-long soak stopped at 34.5 minutes
so: its session hung up, the sampler died of the default ``SIGHUP`` action without its
``finally``, and the explorer's tmux server ran on unsampled.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import generate as g  # noqa: E402

SNAPSHOT_RUN = "20260115-090001-5a5a5a"  # newer than the log: the run the explorer opens on
LOG_RUN = "20260115-090000-e0e0e0"


def _stat(pid: int) -> tuple[float, float] | None:
    """``(RSS MB, CPU seconds)`` of ``pid`` from /proc, or ``None`` once it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            rss = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return rss, (int(fields[11]) + int(fields[12])) / ticks
    except (OSError, IndexError, ValueError):
        return None


def _du(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:
            pass
    return total


def _revisions(run: Path) -> int:
    """Rewrites so far: the writer's note line ``Re-saved K times.``, plus one."""
    try:
        text = (run / "state.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    marker = "Re-saved "
    at = text.rfind(marker)
    try:
        return int(text[at + len(marker):].split()[0]) + 1 if at >= 0 else 0
    except (ValueError, IndexError):
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--out", type=Path, required=True, help="a folder for the project, journal and series")
    parser.add_argument("--statements", type=int, default=600)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the writers and tmux (finally below)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # under nohup a hang-up stays ignored
        signal.signal(signal.SIGHUP, lambda *_: sys.exit(1))
    out: Path = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    project = out / "project"
    state_home = out / "state"
    state_home.mkdir(parents=True)
    log = g.EventLogWriter(project, run_id=LOG_RUN)
    log.append(10)
    time.sleep(1.1)  # the snapshot run is the newer
    snap = g.SnapshotWriter(project, run_id=SNAPSHOT_RUN, statements=args.statements)
    snap.rewrite()
    seconds = int(args.minutes * 60)
    env = dict(os.environ, XDG_STATE_HOME=str(state_home), PYTHONPATH=str(ROOT), TERM="xterm-256color")
    server = f"soak-{os.getpid()}"
    app_cmd = f"exec {sys.executable} -m prose_tui {project}"
    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-x", "120", "-y", "40", "-s", "soak", app_cmd],
                   env=env, check=True)
    pid = int(subprocess.run(["tmux", "-L", server, "list-panes", "-t", "soak", "-F", "#{pane_pid}"],
                             capture_output=True, text=True, check=True).stdout.split()[0])
    time.sleep(5)  # start-up, first paint
    writers = [
        subprocess.Popen([sys.executable, str(HERE / "generate.py"), "snapshot", str(snap.run), "--rate", "1",
                          "--count", str(seconds + 60), "--start", "1", "--statements", str(args.statements)]),
        subprocess.Popen([sys.executable, str(HERE / "generate.py"), "events", str(log.run), "--rate", "10",
                          "--count", str(10 * (seconds + 60) + 10)]),
    ]
    series = out / "series.csv"
    samples: list[dict] = []
    stopped_early = True
    try:
        with open(series, "w", encoding="utf-8") as fh:
            fh.write("seconds,rss_mb,cpu_percent,journal_bytes,rewrites\n")
            t0 = time.monotonic()
            last = _stat(pid)
            last_t = t0
            if last is None:
                raise SystemExit("the explorer did not start (see tmux)")
            fh.write(f"0,{last[0]:.1f},,{_du(state_home)},{_revisions(snap.run)}\n")
            fh.flush()
            while time.monotonic() - t0 < seconds:
                time.sleep(max(0.0, args.every - ((time.monotonic() - t0) % args.every)))
                now = time.monotonic()
                cur = _stat(pid)
                if cur is None:
                    fh.write(f"{now - t0:.0f},,,,the explorer exited\n")
                    break
                cpu = (cur[1] - last[1]) / (now - last_t) * 100
                row = {"seconds": round(now - t0), "rss_mb": round(cur[0], 1), "cpu_percent": round(cpu, 1),
                       "journal_bytes": _du(state_home), "rewrites": _revisions(snap.run)}
                samples.append(row)
                fh.write(",".join(str(row[k]) for k in ("seconds", "rss_mb", "cpu_percent", "journal_bytes",
                                                        "rewrites")) + "\n")
                fh.flush()
                last, last_t = cur, now
        screen = subprocess.run(["tmux", "-L", server, "capture-pane", "-p", "-t", "soak"],
                                capture_output=True, text=True).stdout
        (out / "screen.txt").write_text(screen, encoding="utf-8")
        stopped_early = False
    finally:
        for w in writers:
            w.terminate()
        for w in writers:
            w.wait()
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True)
        if samples:
            _summarise(out, args.minutes, samples, stopped_early)


def _summarise(out: Path, minutes: float, samples: list[dict], stopped_early: bool) -> None:
    """``OUT/summary.json``: first and last samples, peak RSS, mean CPU, RSS slope (MB/h)."""
    first, last = samples[0], samples[-1]
    hours = (last["seconds"] - first["seconds"]) / 3600
    summary = {"minutes": minutes, "stopped_early": stopped_early, "first": first, "last": last,
               "rss_max_mb": max(s["rss_mb"] for s in samples),
               "rss_slope_mb_per_h": round((last["rss_mb"] - first["rss_mb"]) / hours, 1) if hours else None,
               "cpu_mean_percent": round(sum(s["cpu_percent"] for s in samples) / len(samples), 1)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=2), flush=True)


if __name__ == "__main__":
    main()
