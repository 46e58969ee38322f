"""Inputs for the benchmarks in ``run_all.py``, written under a folder the caller owns.

Every generator is deterministic and writes seed-format files (seeds/filesystem.md):

* ``many_runs(root, n)``: a project with ``n`` finished runs. One run is written by the demo
  simulator (``DemoVM``: program, state.md, bindings, agent memory and segments, an import);
  the rest are copies of it under ``{YYYYMMDD}-{HHMMSS}-{hex6}`` ids a minute apart.
* ``huge_run(root, bindings, trace_lines, agents, segments)``: one snapshot run with a
  ``trace_lines``-line program and trace, ``bindings`` binding files (all named in the
  Index), ``agents`` agents with ``segments`` segments each and a four-frame call stack.
* ``big_binding_run(root, mb)``: a small demo run plus a binding whose value is ``mb`` MiB
  (newest by mtime, so the explorer shows it as soon as the run opens).
* ``EventLogWriter``: appends compact event-log lines (``12→ name ✓``) to a run's
  ``state.md``, for the live CPU and long-run memory figures. Run as a script
  (``python benchmarks/generate.py events RUN_DIR --rate 10 --count 300``) it is the
  separate writer process those figures use, so its CPU is not counted as the app's.
* ``SnapshotWriter``: rewrites a snapshot run's ``state.md`` whole (write to a temporary
  name, rename), one more statement reached per rewrite until ``statements``, then only
  the ``updated:`` time and a note, as a VM that keeps re-saving would. ``python
  benchmarks/generate.py snapshot RUN_DIR --rate 1 --count 3600 --statements 600`` is the
  separate writer process of the journal benchmark and the soak.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prose_tui.demo import write_demo_project  # noqa: E402

BASE = datetime(2026, 1, 15, 9, 0, 0, tzinfo=timezone.utc)


def _run_id(t: datetime, n: int) -> str:
    return t.strftime("%Y%m%d-%H%M%S-") + f"{(n * 2654435761) & 0xFFFFFF:06x}"


def many_runs(root: Path, n: int) -> Path:
    """A project at ``root`` with ``n`` runs; returns ``root``."""
    template = write_demo_project(root, clock=lambda: BASE)
    runs = template.parent
    have = sum(1 for p in runs.iterdir() if p.is_dir())  # the two history runs count towards n
    for i in range(max(0, n - have)):
        shutil.copytree(template, runs / _run_id(BASE - timedelta(minutes=i + 1), i))
    return root


def huge_run(root: Path, *, bindings: int = 10_000, trace_lines: int = 5_000, agents: int = 200,
             segments: int = 50, run_id: str | None = None) -> Path:
    """One big snapshot run below ``root``; returns its folder."""
    run_id = run_id or _run_id(BASE, 1)
    run = root / ".prose" / "runs" / run_id
    (run / "bindings").mkdir(parents=True)
    names = [f"value_{i:05d}" for i in range(bindings)]
    program: list[str] = []
    trace: list[str] = []
    for i in range(trace_lines):
        if i % 2 == 0:
            name = names[(i // 2) % len(names)] if names else f"v{i}"
            stmt = f"let {name} = session: worker_{(i // 2) % max(1, agents):03d}"
            note = f"# --> bindings/{name}.md" if i < trace_lines - 40 else "# [...next...]"
            if i == trace_lines - 40:
                note = "# <-- EXECUTING"
        else:
            stmt, note = f'  prompt: "step {i} of the long program"', ""
        program.append(stmt)
        trace.append(f"{stmt.ljust(70)} {note}".rstrip())
    (run / "program.prose").write_text("\n".join(program) + "\n", encoding="utf-8")
    for i, name in enumerate(names):
        (run / "bindings" / f"{name}.md").write_text(
            f"# {name}\n\nkind: let\n\nsource:\n```prose\nlet {name} = session: worker\n```\n\n---\n\n"
            f"Value {i}: a short result with a [link](https://example.com/{i}) and some **bold** text.\n",
            encoding="utf-8")
    for a in range(agents):
        folder = run / "agents" / f"worker_{a:03d}"
        folder.mkdir(parents=True)
        (folder / "memory.md").write_text(f"# worker_{a:03d}\n\nRemembers {a}.\n", encoding="utf-8")
        for s in range(1, segments + 1):
            (folder / f"worker_{a:03d}-{s:03d}.md").write_text(
                f"# Segment {s:03d}\n\ntimestamp: 2026-01-15T09:{s % 60:02d}:00Z\nprompt: \"step {s}\"\n\n"
                f"## Summary\n\nDid step {s}.\n", encoding="utf-8")
    out = ["# Execution State", "", f"run: {run_id}", "program: huge.prose", "started: 2026-01-15T09:00:00Z",
           "updated: 2026-01-15T10:00:00Z", "", "## Execution Trace", "", "```prose", *trace, "```", "",
           "## Active Constructs", "", "(none)", "", "## Index", "", "### Bindings", "",
           "| Name | Kind | Path | Execution ID |", "|------|------|------|--------------|"]
    out += [f"| {n} | let | bindings/{n}.md | (root) |" for n in names]
    out += ["", "### Agents", "", "| Name | Scope | Path |", "|------|-------|------|"]
    out += [f"| worker_{a:03d} | execution | agents/worker_{a:03d}/ |" for a in range(agents)]
    out += ["", "## Call Stack", "", "| execution_id | block | depth | status |",
            "|--------------|-------|-------|--------|"]
    out += [f"| {4 - d} | step | {4 - d} | {'executing' if d == 0 else 'waiting'} |" for d in range(4)]
    (run / "state.md").write_text("\n".join(out) + "\n", encoding="utf-8")
    return run


def big_binding_run(root: Path, *, mb: int = 100) -> tuple[Path, Path]:
    """A demo project whose newest run has a ``mb`` MiB binding; returns (run folder, binding)."""
    run = write_demo_project(root, clock=lambda: BASE)
    path = run / "bindings" / "corpus.md"
    chunk = "".join(f"line {i}: the quick brown fox jumps over the lazy dog, **again** and again.\n"
                    for i in range(1024)).encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(b"# corpus\n\nkind: let\n\nsource:\n```prose\nlet corpus = session: scout\n```\n\n---\n\n")
        target = mb * 1024 * 1024
        while fh.tell() < target:
            fh.write(chunk)
    os.utime(path, None)  # newest binding of the run
    return run, path


class EventLogWriter:
    """Writes an event-log run (``# run:`` header, one event per line) and appends to it."""

    def __init__(self, root: Path, run_id: str | None = None) -> None:
        self.run_id = run_id or _run_id(BASE, 7)
        self.run = root / ".prose" / "runs" / self.run_id
        self.run.mkdir(parents=True, exist_ok=True)
        self.state = self.run / "state.md"
        self.count = 0
        if not self.state.exists():
            self.state.write_text(f"# run:{self.run_id} long.prose\n", encoding="utf-8")

    def append(self, n: int = 1) -> None:
        lines = []
        for _ in range(n):
            self.count += 1
            i = self.count
            t = BASE + timedelta(seconds=i)
            lines.append(f"{i}→ step_{i} ✓ [{t:%H:%M:%S}]\n")
        with open(self.state, "a", encoding="utf-8") as fh:
            fh.write("".join(lines))


class SnapshotWriter:
    """Rewrites ``{root}/.prose/runs/{run_id}/state.md`` whole: revision ``k`` has
    ``min(k + 1, statements)`` statements in its trace, all complete but the last, which is
    executing, each complete one with its Index row; from revision ``statements`` on the
    run loops: all statements are there, statement ``k % statements`` executing again
    (its Index row stays). The run stays ``running``; ``updated:`` is ``updated`` (default
    ``BASE + k`` s)."""

    def __init__(self, root: Path, run_id: str | None = None, *, statements: int = 600) -> None:
        self.run_id = run_id or _run_id(BASE, 9)
        self.run = root / ".prose" / "runs" / self.run_id
        (self.run / "bindings").mkdir(parents=True, exist_ok=True)
        self.state = self.run / "state.md"
        self.statements = statements
        self.count = 0

    def text(self, k: int, updated: datetime | None = None) -> str:
        """The ``state.md`` of revision ``k`` (0-based)."""
        reached = min(k + 1, self.statements)
        trace: list[str] = []
        rows: list[str] = []
        for i in range(reached):
            name = f"value_{i:04d}"
            stmt = f"let {name} = session: worker_{i % 7:02d}"
            last = i == reached - 1 if k < self.statements else i == k % self.statements
            note = "# <-- EXECUTING" if last else f"# --> bindings/{name}.md"
            trace.append(f"{stmt.ljust(60)} {note}")
            if not last or k >= self.statements:
                rows.append(f"| {name} | let | bindings/{name}.md | (root) |")
        updated = updated or BASE + timedelta(seconds=k)
        status = "running"
        out = ["# Execution State", "", f"run: {self.run_id}", "program: soak.prose",
               f"started: {BASE:%Y-%m-%dT%H:%M:%SZ}", f"updated: {updated:%Y-%m-%dT%H:%M:%SZ}",
               f"status: {status}", "", "## Execution Trace", "", "```prose", *trace, "```", "",
               "## Active Constructs", "", "(none)", "", "## Index", "", "### Bindings", "",
               "| Name | Kind | Path | Execution ID |", "|------|------|------|--------------|", *rows,
               "", "## Notes", "", f"Re-saved {k} times.", ""]
        return "\n".join(out)

    def rewrite(self) -> None:
        """Write the next revision (temporary name, then rename, as seeds/filesystem.md asks)."""
        tmp = self.run / ".state.md.tmp"
        tmp.write_text(self.text(self.count, datetime.now(timezone.utc)), encoding="utf-8")
        os.replace(tmp, self.state)
        self.count += 1


def _snapshot_main(args: argparse.Namespace) -> None:
    """Rewrite the snapshot run at ``run_dir`` ``count`` times, ``rate`` rewrites/s."""
    root = Path(args.run_dir).parent.parent.parent
    writer = SnapshotWriter(root, Path(args.run_dir).name, statements=args.statements)
    writer.count = args.start
    period = 1.0 / args.rate
    start = time.perf_counter()
    for n in range(1, args.count + 1):
        writer.rewrite()
        if args.progress:
            print(writer.count, flush=True)
        delay = start + n * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def _events_main(args: argparse.Namespace) -> None:
    """Append ``count`` events to the run at ``run_dir``, ``batch`` per write, ``rate`` writes/s."""
    root = Path(args.run_dir).parent.parent.parent
    writer = EventLogWriter(root, Path(args.run_dir).name)
    period = 1.0 / args.rate
    start = time.perf_counter()
    writes = 0
    while writer.count < args.count:
        writer.append(min(args.batch, args.count - writer.count))
        writes += 1
        if args.progress:
            print(writer.count, flush=True)
        delay = start + writes * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def main() -> None:
    parser = argparse.ArgumentParser(description="benchmark input generators")
    sub = parser.add_subparsers(dest="cmd", required=True)
    ev = sub.add_parser("events", help="append event-log lines to RUN_DIR/state.md at a fixed rate")
    ev.add_argument("run_dir")
    ev.add_argument("--rate", type=float, default=10.0, help="writes per second")
    ev.add_argument("--batch", type=int, default=1, help="events per write")
    ev.add_argument("--count", type=int, default=300, help="events in all")
    ev.add_argument("--progress", action="store_true", help="print the event count after each write")
    sn = sub.add_parser("snapshot", help="rewrite RUN_DIR/state.md whole at a fixed rate")
    sn.add_argument("run_dir")
    sn.add_argument("--rate", type=float, default=1.0, help="rewrites per second")
    sn.add_argument("--count", type=int, default=600, help="rewrites in all")
    sn.add_argument("--start", type=int, default=0, help="the first revision's number")
    sn.add_argument("--statements", type=int, default=600, help="statements the run grows to")
    sn.add_argument("--progress", action="store_true", help="print the revision count after each rewrite")
    args = parser.parse_args()
    if args.cmd == "events":
        _events_main(args)
    elif args.cmd == "snapshot":
        _snapshot_main(args)


if __name__ == "__main__":
    main()
