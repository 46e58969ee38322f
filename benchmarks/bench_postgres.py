"""How fast runs kept in PostgreSQL list, open and go live (openprose-0.15 state/postgres.md).

Starts a private server (tests/pg_server.py: pgserver's PostgreSQL or the system's), creates
the VM's schema with its indexes, and fills it with ``--runs`` runs (default 10,000) and
``--rows`` execution rows (default 1,000,000): one big run holds ``--big`` of them (default
100,000), the others share the rest. Prints figures, asserts nothing:

* run list: ``PostgresSource.list_runs`` (one query, rows into Run models), and the explorer's
  run list painted in a headless app: from start to the first frame with rows listed (the
  database's first page, ``PostgresSource.first_runs``, where the app has it) and to the
  first frame with every run listed;
* a run's first screen: ``PostgresSource.open`` for a typical run and for the big one, and in
  the app, the big run chosen in the list to its trace painted;
* one poll with nothing new (the cost every 0.5 s), and ``EXPLAIN`` of the hot queries;
* commit to screen: a VM commits a row while the app watches at the default poll (0.5 s);
  time from just before the INSERT until the poll found it, the screen applied it, the row
  is in the trace view and the frame that painted it, over ``--trials`` commits.

Usage: ``python benchmarks/bench_postgres.py [--runs N] [--rows N] [--big N] [--trials N] [--url URL]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402
from pg_server import VM_SCHEMA, PgCluster, VmWriter  # noqa: E402

from prose_tui.backends.postgres import DatabaseUrl, PostgresSource  # noqa: E402
from prose_tui.backends.postgres.backend import attach, detach  # noqa: E402
from prose_tui.backends.postgres.rows import ExecutionReader  # noqa: E402

BIG = "20260101-000000-bigrun"


def fill(url: str, runs: int, rows: int, big: int) -> None:
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(VM_SCHEMA)
        c.execute("INSERT INTO openprose.run (id, root_path, status, started_at, updated_at) "
                  "SELECT '20260115-' || lpad(g::text, 6, '0') || '-abc', 'src/p' || (g %% 50) || '.prose.md', "
                  "CASE WHEN g %% 10 = 0 THEN 'failed' WHEN g %% 97 = 0 THEN 'running' ELSE 'completed' END, "
                  "now() - make_interval(mins => g), now() - make_interval(mins => g) FROM generate_series(1, %s) g", (runs - 1,))
        c.execute("INSERT INTO openprose.run (id, root_path, status, started_at) VALUES (%s, 'src/big.prose.md', 'running', now() - interval '2 days')",
                  (BIG,))
        c.execute("INSERT INTO openprose.execution (run_id, statement_index, statement_text, status, started_at, completed_at, metadata) "
                  "SELECT '20260115-' || lpad((g %% %s + 1)::text, 6, '0') || '-abc', g %% 40, 'let x' || g || ' = session', "
                  "'completed', now() - interval '1 day', now() - interval '1 day', '{}'::jsonb FROM generate_series(1, %s) g",
                  (runs - 1, rows - big))
        c.execute("INSERT INTO openprose.execution (run_id, statement_index, statement_text, status, started_at, completed_at, metadata) "
                  "SELECT %s, g %% 40, 'loop step ' || g, 'completed', now() - interval '1 hour', now() - interval '1 hour', "
                  "jsonb_build_object('loop_id', 'l1', 'current_iteration', g, 'max_iterations', %s) FROM generate_series(1, %s) g",
                  (BIG, big, big))
        c.execute("INSERT INTO openprose.bindings (name, run_id, binding, value) SELECT 'b' || g, %s, 'let', repeat('v', 200) "
                  "FROM generate_series(1, 200) g", (BIG,))
        c.execute("VACUUM ANALYZE")


def timed(fn, repeat: int = 5):
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000, result


class Phases:
    """When a commit went through each stage: the poll that found it returned (worker
    thread), the screen applied it (``_polled`` ended), the first frame after that."""

    def __init__(self, app, explorer) -> None:
        self.frames: list[float] = []
        self.polled: list[float] = []  # poll_sources returned something
        self.polls: list[tuple[float, float]] = []  # every poll_sources call: (start, end)
        self.applied: list[float] = []  # the screen's _polled finished
        display, poll = app._display, explorer.workspace.poll_sources
        feed = explorer.feed

        def timed_display(screen, renderable):
            self.frames.append(time.perf_counter())
            return display(screen, renderable)

        def timed_poll(on_deltas=None):
            # The runs read in full are handed over before the list is asked (``on_deltas``,
            # where the app has it): "found" is then, not when the list's check returns.
            def found(part):
                if not part.empty:
                    self.polled.append(time.perf_counter())
                on_deltas(part)

            started = time.perf_counter()
            out = poll(on_deltas=found) if on_deltas is not None else poll()
            self.polls.append((started, time.perf_counter()))
            if on_deltas is None and not out.empty:
                self.polled.append(time.perf_counter())
            return out

        def timed(method):
            def wrapper(*args):
                method(*args)
                self.applied.append(time.perf_counter())
            return wrapper

        app._display = timed_display
        explorer.workspace.poll_sources = timed_poll
        # What the screen does with a poll's result: ``_polled`` (all of it, before the third
        # pass) or ``delta`` (one run's delta, from the live inbox).
        for name in ("_polled", "delta"):
            if hasattr(feed, name):
                setattr(feed, name, timed(getattr(feed, name)))

    @staticmethod
    def first(times: list[float], t: float) -> float:
        return next((x for x in times if x >= t), float("nan"))


async def app_figures(url: str, runs: int, trials: int) -> tuple[float, list[tuple[float, ...]], list[float]]:
    """(ms from App start to the first frame with every run listed, per commit: ms from the
    commit to the poll that found it, to the screen applying it, to the row in the trace
    (``render_line``), to the frame that painted it; ms between the starts of two polls)."""
    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.widgets.run_list import RunList
    from prose_tui.tui.widgets.trace_view import TraceView

    source = attach(PostgresSource(DatabaseUrl(url)))
    empty = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    app = ProseTUI(empty, watch=True, sources=[source])
    frames: list[float] = []
    display = app._display

    def timed_display(screen, renderable):
        frames.append(time.perf_counter())
        return display(screen, renderable)

    app._display = timed_display
    handed: list[tuple[float, int]] = []  # (when, how many rows) for every run list fill
    set_runs = RunList.set_runs

    def timed_set_runs(self, rows, **kw):  # the class's: the first fill may come before the test sees the app
        handed.append((time.perf_counter(), len(rows)))
        return set_runs(self, rows, **kw)

    RunList.set_runs = timed_set_runs  # type: ignore[method-assign]
    start = time.perf_counter()
    latencies: list[tuple[float, ...]] = []
    async with app.run_test(size=(160, 45)) as pilot:
        explorer = app.explorer
        mounted = (time.perf_counter() - start) * 1000
        run_list = explorer.query_one(RunList)
        while len(run_list.runs) < runs:
            await asyncio.sleep(0.002)
        RunList.set_runs = set_runs  # type: ignore[method-assign]
        first_listed, first_rows = next((t, n) for t, n in handed if n)
        listed = next(t for t, n in handed if n >= runs)
        while not (frames and frames[-1] >= listed):
            await asyncio.sleep(0.001)
        painted = (Phases.first(frames, listed) - start) * 1000
        first_painted = (Phases.first(frames, first_listed) - start) * 1000
        print(f"app mounted (empty screen)                    {mounted:8.1f} ms")
        print(f"run list: first rows ({first_rows}) painted           {first_painted:8.1f} ms (from App start to the frame)")
        print(f"run list: rows handed to it -> painted        {painted - (listed - start) * 1000:8.1f} ms")
        big_path = source.path_of(BIG)
        trace = explorer.query_one(TraceView)
        chosen = time.perf_counter()
        explorer.query_one(RunList).select_path(big_path)
        explorer.open_run_at(big_path)
        while explorer.current_run is None or explorer.current_run.path != big_path or not explorer.current_run.trace \
                or trace.lines is not explorer.current_run.trace:
            await asyncio.sleep(0.001)
        shown = time.perf_counter()
        while not (frames and frames[-1] >= shown):
            await asyncio.sleep(0.001)
        first_rows = len(explorer.current_run.trace)
        print(f"big run chosen -> its trace painted           {(Phases.first(frames, shown) - chosen) * 1000:8.1f} ms "
              f"({first_rows} rows: the first screen where the app shows one before the full read)")
        # The commits below are measured against the run read in full (its read done).
        while explorer.loaded_run != big_path or trace.lines is not explorer.current_run.trace:
            await asyncio.sleep(0.001)
        loaded = time.perf_counter()
        while not (frames and frames[-1] >= loaded):
            await asyncio.sleep(0.001)
        print(f"big run chosen -> its full read painted      {(Phases.first(frames, loaded) - chosen) * 1000:8.1f} ms "
              f"(read in full in a worker: {len(explorer.current_run.trace)} rows)")
        phases = Phases(app, explorer)
        vm = VmWriter(url, BIG)

        def on_screen(text: str) -> bool:
            return any(text in "".join(seg.text for seg in trace.render_line(y)) for y in range(trace.size.height))

        markers: list[int] = []
        token = f"{time.time_ns():x}"  # markers of an earlier run on the same database do not count
        for n in range(trials):
            marker = f'"bench marker {token}-{n}"'
            committed = threading.Event()
            stamp = [0.0]

            def commit() -> None:
                # Stamped before the INSERT, not after: under load this thread may wait long
                # after its commit while the app has shown the row (the figures err high).
                stamp[0] = time.perf_counter()
                markers.append(vm.statement(f'session {marker}'))  # executing: the trace follows it
                committed.set()

            await asyncio.sleep(0.13 * (n % 4))  # commits land at different points of the poll cycle
            threading.Thread(target=commit).start()
            give_up = time.perf_counter() + 20
            while not (committed.is_set() and on_screen(marker)):
                if time.perf_counter() > give_up:
                    print(f"  commit {n}: not on screen after 20 s", file=sys.stderr)
                    break
                await asyncio.sleep(0.001)
            else:
                shown = time.perf_counter()
                while not (phases.frames and phases.frames[-1] >= shown):
                    await asyncio.sleep(0.001)
                t0 = stamp[0]
                latencies.append(tuple((x - t0) * 1000 for x in (  # type: ignore[misc]
                    phases.first(phases.polled, t0), phases.first(phases.applied, t0), shown,
                    phases.first(phases.frames, shown))))
        for eid in markers:  # left executing, they would be re-read by every later poll (and run of this script)
            vm.finish(eid)
        vm.close()
        starts = [start for start, _ in phases.polls]
        cycles = [(b - a) * 1000 for a, b in zip(starts, starts[1:])]
    detach(source)
    return painted, latencies, cycles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--url", help="a database this script filled before (same --runs): measure it, fill nothing")
    args = parser.parse_args()
    cluster = PgCluster() if args.url is None else None
    try:
        url = args.url or cluster.url()  # type: ignore[union-attr]
        t = time.perf_counter()
        if cluster is not None:
            fill(url, args.runs, args.rows, args.big)
            print(f"filled {args.runs} runs, {args.rows} execution rows (one run with {args.big}) in {time.perf_counter() - t:.1f} s")
        source = PostgresSource(DatabaseUrl(url))
        ms, listed = timed(source.list_runs)
        print(f"list_runs ({len(listed)} runs)                    {ms:8.1f} ms")
        typical = next(r for r in listed if r.id != BIG)

        def open_fresh(path):
            source.views.pop(path, None)
            return source.open(path)

        ms, run = timed(lambda: open_fresh(typical.path))
        print(f"first screen, typical run ({run.header.get('execution_rows')} rows)      {ms:8.1f} ms")
        big_path = source.path_of(BIG)
        ms, run = timed(lambda: open_fresh(big_path))
        print(f"first screen, big run ({run.header.get('execution_rows')} rows, window {len(run.trace)}) {ms:8.1f} ms")
        ms, _ = timed(lambda: source.poll(), repeat=20)
        print(f"poll, nothing new (1 run open)                {ms:8.2f} ms")
        ms, _ = timed(lambda: source.poll_runs(force=True), repeat=10)
        print(f"poll_runs, list unchanged                     {ms:8.2f} ms")
        execution = ExecutionReader(source.reader, BIG, source.reader.tables()["execution"])
        top = source.reader.rows("SELECT max(id) FROM openprose.execution")[0][0]
        for name, (sql, params) in execution.hot_queries(after=top).items():
            plan = source.reader.rows("EXPLAIN " + sql, params)
            print(f"  EXPLAIN {name:6}: {plan[0][0][:90]}")
        source.close()
        painted, latencies, cycles = asyncio.run(app_figures(url, args.runs, args.trials))
        print(f"run list painted in the app ({args.runs} runs)    {painted:8.1f} ms (from App start to the frame)")
        print(f"commit -> ... at 0.5 s poll, over {len(latencies)} commits (ms)   median    max")
        for i, name in enumerate(("poll found it (worker)", "screen applied it", "in the trace", "on screen (frame)")):
            column = [lat[i] for lat in latencies]
            print(f"  {name:40} {statistics.median(column):8.0f} {max(column):6.0f}")
        print("  each: " + ", ".join(f"{lat[3]:.0f}" for lat in latencies))
        print(f"poll cycle (start to start, {len(cycles)} polls): median {statistics.median(cycles):.0f} ms, "
              f"max {max(cycles):.0f} ms")
    finally:
        if cluster is not None:
            cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
