"""The journal of a long-watched snapshot run: memory per rewrite, disk, opening it (issue 35).

    python benchmarks/bench_journal.py                  # 1,000 rewrites, 600 statements
    python benchmarks/bench_journal.py --rewrites 100 --warmup 20   # a quick look
    python benchmarks/bench_journal.py --case memory --folder /tmp/j --shapes growing  # one figure

A VM rewrites ``state.md`` whole (``generate.SnapshotWriter``: one statement more per
rewrite until ``--statements``, then re-saved with a new ``updated:`` and note). Cases,
each in a process of its own (so its RSS is its own):

- ``memory``: per rewrite, what the live pipeline and the explorer's history do for a
  change: ``Journal.record`` (the journal sink), ``load_run`` and ``history_of`` (the
  history pane). RSS after ``--warmup`` rewrites and after ``--rewrites`` more, as MB per
  1,000 rewrites; two shapes: ``growing`` (from the first statement) and ``steady`` (all
  statements there, re-saved). Target: <= 5 MB per 1,000 rewrites. The growing shape's
  figure is split at the rewrite where the run reaches ``--statements``: the MB the run's
  growth cost (bounded by the run) and the MB per 1,000 rewrites after it (by time watched).
- ``disk``: the journal folder's bytes after the growing shape, against the bytes of all
  the revisions it saw whole. Target: <= 10 %.
- ``open``: a fresh process shows a run with a long journal: ``history_of`` plus
  ``state_at`` of the middle revision (headless), and the explorer (Textual ``run_test``,
  120x40) until its history pane lists every event. Seconds and peak RSS (``ru_maxrss``);
  for the journal as written now and for one in the layout before issue 35
  (``revisions/<sha256>.md``, still read).

Figures, not assertions: a MISS is printed; the exit status is 0 unless a case crashed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import generate as g  # noqa: E402

T0 = datetime(2026, 1, 15, 9, 0, tzinfo=timezone.utc)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _journal(root: Path):
    from prose_tui.history import Journal
    return Journal(root / "state")


def case_memory(folder: Path, args) -> dict:
    """RSS growth per 1,000 rewrites, both shapes, and the disk ratio of the growing one."""
    from prose_tui.backends.filesystem.folder import load_run
    from prose_tui.history import history_of
    out: dict[str, float] = {}
    for shape, start in (("growing", 0), ("steady", args.statements)):
        if shape not in args.shapes.split(","):
            continue
        root = folder / shape
        writer = g.SnapshotWriter(root / "project", statements=args.statements)
        writer.count = start
        journal = _journal(root)
        whole = 0

        def rewrite(k: int) -> None:
            nonlocal whole
            data = writer.text(writer.count).encode("utf-8")
            whole += len(data)
            tmp = writer.run / ".state.md.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, writer.state)
            writer.count += 1
            journal.record(writer.run, {writer.state}, T0 + timedelta(seconds=k))
            history_of(load_run(writer.run), journal=journal)

        for k in range(args.warmup):
            rewrite(k)
        gc.collect()
        before = rss_mb()
        full: tuple[int, float] | None = None  # (rewrite, RSS) when the run reached its size
        t = time.perf_counter()
        for k in range(args.warmup, args.warmup + args.rewrites):
            rewrite(k)
            if full is None and writer.count >= args.statements and k > args.warmup:
                gc.collect()
                full = (k, rss_mb())
        gc.collect()
        end = rss_mb()
        out[f"{shape}.mb_per_1000"] = (end - before) * 1000 / args.rewrites
        if shape == "growing" and full is not None and full[0] < args.warmup + args.rewrites - 1:
            # the split: RSS while the run grew to its size, and per 1,000 rewrites at that size
            out["growing.mb_while_growing"] = full[1] - before
            out["growing.mb_per_1000_at_full_size"] = (end - full[1]) * 1000 / (args.warmup + args.rewrites - 1 - full[0])
        out[f"{shape}.ms_per_rewrite"] = (time.perf_counter() - t) * 1000 / args.rewrites
        if shape == "growing":
            jbytes = sum(p.stat().st_size for p in (root / "state").rglob("*") if p.is_file())
            out["disk.journal_mb"] = jbytes / 2**20
            out["disk.whole_mb"] = whole / 2**20
            out["disk.percent"] = jbytes / whole * 100
    return out


def write_long_journal(folder: Path, revisions: int, statements: int, old_layout: bool) -> Path:
    """A project with one snapshot run and its journal of ``revisions`` rewrites under
    ``folder/state`` (``old_layout``: whole ``revisions/<sha>.md`` files, no ``at``)."""
    writer = g.SnapshotWriter(folder / "project", statements=statements)
    journal = _journal(folder)
    if not old_layout:
        for k in range(revisions):
            writer.rewrite()
            journal.record(writer.run, {writer.state}, T0 + timedelta(seconds=k))
        return writer.run
    jdir = journal.folder(writer.run)
    (jdir / "revisions").mkdir(parents=True)
    (jdir / "run.json").write_text(json.dumps({"run": str(writer.run.resolve())}))
    rows = []
    for k in range(revisions):
        writer.rewrite()
        data = writer.state.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        (jdir / "revisions" / f"{sha}.md").write_bytes(data)
        st = writer.state.stat()
        rows.append(json.dumps({"t": (T0 + timedelta(seconds=k)).isoformat(), "k": "state", "p": "state.md",
                                "sha": sha, "size": st.st_size, "mtime": st.st_mtime}))
    (jdir / "index.jsonl").write_text("\n".join(rows) + "\n")
    return writer.run


def case_open(folder: Path, args) -> dict:
    """In this (fresh) process: show the run of ``folder`` with its journal."""
    from prose_tui.backends.filesystem.folder import load_run
    from prose_tui.history import history_of, state_at
    run_dir = Path((folder / "run.txt").read_text())
    base = peak_mb()
    t = time.perf_counter()
    run = load_run(run_dir)
    history = history_of(run, journal=_journal(folder))
    cursors = history.revision_cursors()
    mid = state_at(run, history, cursors[len(cursors) // 2][1], journal=_journal(folder))
    took = time.perf_counter() - t
    assert mid.trace, "the middle revision shows no trace"
    return {"open.s": took, "open.peak_mb": peak_mb(), "open.base_mb": base, "open.events": len(history.events),
            "open.revisions": len(cursors)}


def case_open_app(folder: Path, args) -> dict:
    """In this (fresh) process: the explorer opens the project until its history pane
    lists every event of the run's journal."""
    from prose_tui.history import Journal
    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.widgets.timeline import Timeline

    expected = int((folder / "events.txt").read_text())
    base = peak_mb()

    async def go() -> float:
        t = time.perf_counter()
        app = ProseTUI(folder / "project", watch=False, journal=Journal(folder / "state"))
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.perf_counter() + 600
            while time.perf_counter() < deadline:
                timelines = list(app.query(Timeline))
                if timelines and len(timelines[0].events) >= expected:
                    break
                await asyncio.sleep(0.01)
            else:
                raise RuntimeError("the history pane did not list every event")
            await pilot.pause()
            return time.perf_counter() - t

    took = asyncio.run(go())
    return {"app.s": took, "app.peak_mb": peak_mb(), "app.base_mb": base}


CASES = {"memory": case_memory, "open": case_open, "open_app": case_open_app}


def _subcase(name: str, folder: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--case", name, "--folder", str(folder), "--rewrites", str(args.rewrites),
           "--warmup", str(args.warmup), "--statements", str(args.statements), "--revisions", str(args.revisions),
           "--shapes", args.shapes]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"case {name} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rewrites", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--statements", type=int, default=600)
    parser.add_argument("--revisions", type=int, default=1000, help="rewrites in the long journal opened")
    parser.add_argument("--shapes", default="growing,steady", help="the memory case's run shapes")
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(CASES[args.case](args.folder, args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        figures = _subcase("memory", tmp_path / "memory", args)
        for layout in ("pack", "old"):
            folder = tmp_path / f"open-{layout}"
            run = write_long_journal(folder, args.revisions, args.statements, old_layout=layout == "old")
            (folder / "run.txt").write_text(str(run))
            headless = _subcase("open", folder, args)
            (folder / "events.txt").write_text(str(headless["open.events"]))
            app = _subcase("open_app", folder, args)
            figures.update({f"{layout}.{k}": v for k, v in {**headless, **app}.items()})
    rows = [
        (f"RSS per 1,000 rewrites, run growing to {args.statements} statements", "growing.mb_per_1000", "MB", 5),
        ("  of which while it grew to its size (MB, not per 1,000)", "growing.mb_while_growing", "MB", None),
        ("  per 1,000 rewrites once it had its size", "growing.mb_per_1000_at_full_size", "MB", 5),
        (f"RSS per 1,000 rewrites, {args.statements}-statement run re-saved", "steady.mb_per_1000", "MB", 5),
        ("Journal on disk / whole revisions (growing run)", "disk.percent", "%", 10),
        ("  journal on disk", "disk.journal_mb", "MB", None),
        ("  whole revisions", "disk.whole_mb", "MB", None),
        ("Record + read + history per rewrite (growing)", "growing.ms_per_rewrite", "ms", None),
        (f"Open a {args.revisions}-rewrite journal, headless: time", "pack.open.s", "s", None),
        ("  peak RSS", "pack.open.peak_mb", "MB", None),
        ("  same, journal in the old layout: time", "old.open.s", "s", None),
        ("  peak RSS", "old.open.peak_mb", "MB", None),
        ("Open it in the explorer, history pane listed: time", "pack.app.s", "s", None),
        ("  peak RSS", "pack.app.peak_mb", "MB", None),
        ("  same, journal in the old layout: time", "old.app.s", "s", None),
        ("  peak RSS", "old.app.peak_mb", "MB", None),
    ]
    print(f"{'figure':<64} {'value':>9}  target")
    for label, key, unit, target in rows:
        value = figures.get(key, float("nan"))
        verdict = "" if target is None else ("ok" if value <= target else "MISS")
        print(f"{label:<64} {value:>7.1f} {unit:<2} {'<= ' + str(target) + ' ' + unit if target else ''} {verdict}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
