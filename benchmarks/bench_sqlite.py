"""How fast a big SQLite run opens (seeds/sqlite.md): prints figures, asserts nothing.

Builds ``state.db`` with N ``execution`` rows (default 1,000,000; ``--rows``) in a temporary
folder, in WAL mode with the writer gone (the usual state after a run), then times:

* ``load_sqlite_run`` (run row, counts, the last window of rows, call stack, bindings, agents)
* ``execution_page`` for the first page and a page deep in the table
* ``SqliteWatch.data_version`` (the per-tick cost of live watching)

Usage: ``python benchmarks/bench_sqlite.py [--rows N] [--window W]``
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from prose_tui.backends.sqlite.run import SqliteWatch, execution_page, load_sqlite_run


def build(run_dir: Path, rows: int) -> None:
    run_dir.mkdir(parents=True)
    conn = sqlite3.connect(run_dir / "state.db")
    conn.execute("PRAGMA journal_mode=wal")
    conn.executescript(
        """
        CREATE TABLE run (id TEXT PRIMARY KEY, program_path TEXT, program_source TEXT, started_at TEXT,
            updated_at TEXT, status TEXT, state_mode TEXT);
        CREATE TABLE execution (id INTEGER PRIMARY KEY AUTOINCREMENT, statement_index INTEGER,
            statement_text TEXT, status TEXT, started_at TEXT, completed_at TEXT, error_message TEXT,
            parent_id INTEGER, metadata TEXT);
        CREATE TABLE bindings (name TEXT, execution_id INTEGER, kind TEXT, value TEXT, source_statement TEXT,
            created_at TEXT, updated_at TEXT, attachment_path TEXT);
        CREATE TABLE x_metrics (execution_id INTEGER, metric_name TEXT, metric_value REAL);
        INSERT INTO run VALUES ('bench', 'program.prose', 'loop:', '2026-01-16 00:00:00', '2026-01-17 00:00:00',
            'running', 'sqlite');
        """
    )
    conn.execute(
        """
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
        INSERT INTO execution
        SELECT i, i % 40, 'session "Step ' || i || '"',
               CASE WHEN i >= ? - 2 THEN 'executing' WHEN i % 997 = 0 THEN 'failed' ELSE 'completed' END,
               datetime('2026-01-16', '+' || (i / 10) || ' seconds'),
               CASE WHEN i >= ? - 2 THEN NULL ELSE datetime('2026-01-16', '+' || (i / 10 + 1) || ' seconds') END,
               CASE WHEN i % 997 = 0 THEN 'timeout' END,
               CASE WHEN i % 10 = 0 THEN NULL ELSE i - (i % 10) END,
               CASE WHEN i % 10 = 0 THEN '{"block": "step", "loop_id": "l1", "current_iteration": ' || (i / 10) || '}' END
        FROM c
        """,
        (rows, rows, rows),
    )
    conn.execute(
        """
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
        INSERT INTO bindings SELECT 'b' || i, i * 10, 'let', printf('%.200c', 'v'), 'let b = session', NULL, NULL, NULL FROM c
        """,
        (min(rows // 10, 5000),),
    )
    conn.execute(
        "INSERT INTO x_metrics SELECT id, 'input_tokens', 100 FROM execution WHERE id % 100 = 0"
    )
    conn.commit()
    conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--window", type=int, default=500)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as tmp:
        run_dir = Path(tmp) / ".prose" / "runs" / "20260116-000000-bench1"
        t0 = time.perf_counter()
        build(run_dir, args.rows)
        size = (run_dir / "state.db").stat().st_size
        print(f"built {args.rows:,} execution rows, state.db {size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s")
        for attempt in ("cold", "warm"):
            t0 = time.perf_counter()
            run = load_sqlite_run(run_dir, window=args.window)
            t1 = time.perf_counter()
            page = execution_page(run_dir, 0, 100)
            t2 = time.perf_counter()
            print(
                f"[{attempt}] load_sqlite_run: {(t1 - t0) * 1000:.0f} ms "
                f"({len(run.trace)} trace lines, {len(run.events)} events, {len(run.bindings)} bindings, "
                f"stack depth {len(run.call_stack)}); first page of 100: {(t2 - t1) * 1000:.0f} ms; "
                f"first screen total: {(t2 - t0) * 1000:.0f} ms"
            )
        t0 = time.perf_counter()
        deep = execution_page(run_dir, args.rows // 2, 100)
        print(f"page at offset {args.rows // 2:,}: {(time.perf_counter() - t0) * 1000:.0f} ms ({len(deep)} rows)")
        with SqliteWatch(run_dir) as watch:
            watch.data_version()
            t0 = time.perf_counter()
            for _ in range(100):
                watch.data_version()
            print(f"SqliteWatch.data_version: {(time.perf_counter() - t0) * 10:.2f} ms per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
