"""A second process that writes a run's ``state.db`` the way seeds/sqlite.md tells the VM to.

The seed's VM runs the ``sqlite3`` CLI once per statement ("Initialize database",
"Update execution position": ``sqlite3 .prose/runs/{id}/state.db "..."``), so every
statement is its own connection: it opens the database, commits, and closes, and the last
connection to close a WAL database checkpoints it and removes ``-wal`` and ``-shm``.

Usage (the tests run it with ``sys.executable``)::

    python sqlite_vm_writer.py statements DB COUNT [cli|python] [wal|delete]
        Make DB a run database (seeds/sqlite.md, Core Schema; WAL mode unless ``delete``)
        and write COUNT execution rows, one statement (one connection) each, then N more
        for each line ``more N`` on stdin, as fast as it can, until stdin ends or says
        ``stop``. After each commit prints the number of rows committed so far, one per
        line, flushed: the reader waits on that.
    python sqlite_vm_writer.py hold DB
        Take an EXCLUSIVE lock on the rollback-mode database DB (a VM in the middle of a
        commit), print ``locked``, hold it until a line arrives on stdin, then commit one
        more execution row and print ``released``.

``cli`` (the default when ``sqlite3`` is on PATH) runs the CLI per statement; ``python``
opens one ``sqlite3`` connection per statement instead.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import threading

SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS run (
    id TEXT PRIMARY KEY, program_path TEXT, program_source TEXT,
    started_at TEXT DEFAULT (datetime('now')), updated_at TEXT DEFAULT (datetime('now')),
    status TEXT DEFAULT 'running', state_mode TEXT DEFAULT 'sqlite');
CREATE TABLE IF NOT EXISTS execution (
    id INTEGER PRIMARY KEY AUTOINCREMENT, statement_index INTEGER, statement_text TEXT,
    status TEXT, started_at TEXT, completed_at TEXT, error_message TEXT,
    parent_id INTEGER REFERENCES execution(id), metadata TEXT);
CREATE TABLE IF NOT EXISTS bindings (
    name TEXT, execution_id INTEGER, kind TEXT, value TEXT, source_statement TEXT,
    created_at TEXT DEFAULT (datetime('now')), updated_at TEXT DEFAULT (datetime('now')),
    attachment_path TEXT, PRIMARY KEY (name, execution_id));
INSERT OR IGNORE INTO run (id, program_path, status) VALUES ('writer-run', 'program.prose', 'running');
"""


def statement(i: int) -> str:
    """The i-th statement (1-based): an execution row; every third one also a binding.
    The metadata and values are a few KiB so each commit touches several pages."""
    pad = "x" * 6000
    sql = (f"INSERT INTO execution (statement_index, statement_text, status, started_at, completed_at, metadata) "
           f"VALUES ({i}, 'session \"step {i}\"', 'completed', datetime('now'), datetime('now'), '{{\"pad\": \"{pad}\"}}');")
    if i % 3 == 0:
        sql = (f"BEGIN; {sql} INSERT OR REPLACE INTO bindings (name, execution_id, kind, value, source_statement) "
               f"VALUES ('b{i % 30}', NULL, 'let', '{pad}{i}', 'let b = session'); COMMIT;")
    return sql


def run_sql(db: str, sql: str, how: str) -> None:
    if how == "cli":
        subprocess.run(["sqlite3", "-bail", db, sql], check=True, stdout=subprocess.DEVNULL)
        return
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        conn.executescript(sql)
    finally:
        conn.close()


def statements(db: str, count: int, how: str, journal: str) -> None:
    budget = threading.Condition()
    state = {"left": count, "stop": False}

    def listen() -> None:
        for line in sys.stdin:
            words = line.split()
            with budget:
                if words[:1] == ["more"]:
                    state["left"] += int(words[1])
                elif words[:1] == ["stop"]:
                    state["stop"] = True
                budget.notify_all()
        with budget:
            state["stop"] = True
            budget.notify_all()

    threading.Thread(target=listen, daemon=True).start()
    run_sql(db, SCHEMA if journal == "wal" else SCHEMA.replace("PRAGMA journal_mode=WAL;", ""), how)
    print(0, flush=True)
    i = 0
    while True:
        with budget:
            budget.wait_for(lambda: state["left"] > 0 or state["stop"])
            if state["left"] <= 0:
                return
            state["left"] -= 1
        i += 1
        run_sql(db, statement(i), how)
        print(i, flush=True)


def hold(db: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("INSERT INTO execution (statement_index, statement_text, status) VALUES (99, 'session \"late\"', 'completed')")
    print("locked", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
    conn.close()
    print("released", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "statements":
        how = sys.argv[4] if len(sys.argv) > 4 else ("cli" if shutil.which("sqlite3") else "python")
        statements(sys.argv[2], int(sys.argv[3]), how, sys.argv[5] if len(sys.argv) > 5 else "wal")
    elif sys.argv[1] == "hold":
        hold(sys.argv[2])
    else:
        raise SystemExit(__doc__)
