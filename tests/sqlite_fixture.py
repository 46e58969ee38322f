"""Build a ``state.db`` the way a VM following seeds/sqlite.md would, for the SQLite source tests.

The program the database records (statement numbers are ``statement_index``)::

    1  let research = session: researcher
    2  parallel:                          # p1, strategy all, branches a, b
    3    a = session "Analyze risk A"
    4    b = session "Analyze risk B"
    5  loop until **analysis complete** (max: 3):   # l1, at iteration 2
    6    session "Synthesize"
    7  let flaky = session "Flaky API"  (retry: 3)  # attempt 1 failed, attempt 2 ok
    8  do process(data, 2)                # block, execution 10
    9    let parts = session "Split"      # inside execution 10
    10   do process(parts[0], 1)          # nested block, execution 12
    11     let result = session "Process chunk"     # executing now (execution 13)

The seed's ``CREATE TABLE bindings`` is rejected by SQLite, so this VM (like real ones)
drops the expression from the primary key and adds a unique index instead; it also
added a ``token_count`` column to ``bindings``, a ``model`` column to ``agents`` and an
``x_metrics`` table, as seeds/sqlite.md, Flexibility Encouragement invites.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

RUN_ID = "20260116-143052-a7b3c9"

SCHEMA = """
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
    attachment_path TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS bindings_scope ON bindings(name, IFNULL(execution_id, -1));
ALTER TABLE bindings ADD COLUMN token_count INTEGER;
CREATE TABLE IF NOT EXISTS agents (
    name TEXT PRIMARY KEY, scope TEXT, memory TEXT,
    created_at TEXT DEFAULT (datetime('now')), updated_at TEXT DEFAULT (datetime('now')));
ALTER TABLE agents ADD COLUMN model TEXT;
CREATE TABLE IF NOT EXISTS agent_segments (
    id INTEGER PRIMARY KEY AUTOINCREMENT, agent_name TEXT REFERENCES agents(name),
    segment_number INTEGER, timestamp TEXT DEFAULT (datetime('now')), prompt TEXT, summary TEXT,
    UNIQUE(agent_name, segment_number));
CREATE TABLE IF NOT EXISTS imports (
    alias TEXT PRIMARY KEY, source_url TEXT, fetched_at TEXT, inputs_schema TEXT, outputs_schema TEXT);
CREATE TABLE x_metrics (
    execution_id INTEGER REFERENCES execution(id), metric_name TEXT, metric_value REAL,
    recorded_at TEXT DEFAULT (datetime('now')));
CREATE INDEX idx_execution_status ON execution(status);
"""

PROGRAM = """agent researcher:
  model: sonnet
let research = session: researcher
parallel:
  a = session "Analyze risk A"
  b = session "Analyze risk B"
"""


def _t(minute: int, second: int = 0) -> str:
    return f"2026-01-16 14:{minute:02d}:{second:02d}"


def build_sqlite_run(root: Path, *, journal_mode: str = "delete", failed: bool = False) -> Path:
    """Create ``root/.prose/runs/{RUN_ID}/state.db`` (+ attachments, project agents.db); return the run folder.

    ``failed=True`` records the run as failed at execution 13 ("Context window exceeded").
    """
    run_dir = root / ".prose" / "runs" / RUN_ID
    (run_dir / "attachments").mkdir(parents=True, exist_ok=True)
    (run_dir / "program.prose").write_text(PROGRAM, encoding="utf-8")
    (run_dir / "attachments" / "full_report.md").write_text("# Full report\n\nEvery finding, at length.\n", encoding="utf-8")
    conn = sqlite3.connect(run_dir / "state.db")
    conn.execute(f"PRAGMA journal_mode={journal_mode}")
    conn.executescript(SCHEMA)
    cur = conn.cursor()
    cur.execute(
        "INSERT INTO run (id, program_path, program_source, started_at, updated_at, status) VALUES (?,?,?,?,?,?)",
        (RUN_ID, "program.prose", PROGRAM, _t(30, 52), _t(41), "failed" if failed else "running"),
    )
    ex = [
        # id, index, text, status, start, end, error, parent, metadata
        (1, 1, "let research = session: researcher", "completed", _t(31), _t(32), None, None, None),
        (2, 2, "parallel:", "completed", _t(32), _t(34), None, None,
         '{"parallel_id": "p1", "strategy": "all", "branches": ["a", "b"]}'),
        (3, 3, 'a = session "Analyze risk A"', "completed", _t(32, 1), _t(33), None, 2, '{"parallel_id": "p1", "branch": "a"}'),
        (4, 4, 'b = session "Analyze risk B"', "completed", _t(32, 1), _t(34), None, 2, '{"parallel_id": "p1", "branch": "b"}'),
        (5, 5, "loop until **analysis complete** (max: 3):", "completed", _t(34), _t(36), None, None,
         '{"loop_id": "l1", "max_iterations": 3, "current_iteration": 2, "condition": "**analysis complete**"}'),
        (6, 6, 'session "Synthesize"', "completed", _t(34, 1), _t(35), None, 5, '{"loop_id": "l1", "iteration": 1}'),
        (7, 6, 'session "Synthesize"', "completed", _t(35, 1), _t(36), None, 5, '{"loop_id": "l1", "iteration": 2}'),
        (8, 7, 'let flaky = session "Flaky API"', "failed", _t(36, 1), _t(37), "Connection timeout after 30s", None,
         '{"retry_attempt": 1, "max_retries": 3}'),
        (9, 7, 'let flaky = session "Flaky API"', "completed", _t(37, 1), _t(38), None, None,
         '{"retry_attempt": 2, "max_retries": 3}'),
        (10, 8, "do process(data, 2)", "executing", _t(38, 1), None, None, None, '{"block": "process", "depth": 1}'),
        (11, 9, 'let parts = session "Split"', "completed", _t(38, 2), _t(39), None, 10, None),
        (12, 10, "do process(parts[0], 1)", "executing", _t(39, 1), None, None, 10, '{"block": "process", "depth": 2}'),
        (13, 11, 'let result = session "Process chunk"', "failed" if failed else "executing", _t(39, 2),
         _t(41) if failed else None, "Context window exceeded" if failed else None, 12, None),
    ]
    cur.executemany("INSERT INTO execution VALUES (?,?,?,?,?,?,?,?,?)", ex)
    binds = [
        ("data", None, "input", "three chunks of text", "input data", None, None),
        ("research", None, "let", "AI safety research covers alignment, robustness...", "let research = session: researcher", None, 412),
        ("a", None, "let", "Risk A: potential misalignment", 'a = session "Analyze risk A"', None, 120),
        ("b", None, "let", "Risk B: robustness concerns", 'b = session "Analyze risk B"', None, 130),
        ("flaky", None, "let", "API answered on attempt 2", 'let flaky = session "Flaky API"', None, None),
        ("parts", 10, "let", "outer parts: [p0, p1, p2]", 'let parts = session "Split"', None, None),
        ("parts", 12, "let", "inner parts: [q0, q1]", 'let parts = session "Split"', None, None),
        ("full_report", None, "let", "Full analysis report (847KB) - see attachment", 'let full_report = session "Report"',
         "attachments/full_report.md", None),
        ("research.findings", None, "output", "Quantum computing uses qubits", "import research", None, None),
    ]
    cur.executemany(
        "INSERT INTO bindings (name, execution_id, kind, value, source_statement, attachment_path, token_count) VALUES (?,?,?,?,?,?,?)",
        binds,
    )
    cur.execute("INSERT INTO agents (name, scope, memory, model) VALUES ('captain', 'execution', 'Remembers: prefer primary sources.', 'opus')")
    cur.executemany(
        "INSERT INTO agent_segments (agent_name, segment_number, timestamp, prompt, summary) VALUES (?,?,?,?,?)",
        [
            ("captain", 1, _t(31), "Plan the research", "Planned three tracks."),
            ("captain", 2, _t(35), "Review the synthesis", "Asked for one more iteration."),
        ],
    )
    cur.execute(
        "INSERT INTO imports VALUES ('research', '@alice/research', ?, '[\"topic\", \"depth\"]', '[\"findings\", \"sources\"]')",
        (_t(30, 55),),
    )
    cur.executemany(
        "INSERT INTO x_metrics (execution_id, metric_name, metric_value) VALUES (?,?,?)",
        [
            (1, "input_tokens", 1200), (1, "output_tokens", 300), (1, "cost_usd", 0.012),
            (3, "input_tokens", 800), (3, "cost_usd", 0.008),
            (4, "input_tokens", 700), (4, "cost_usd", 0.007),
            (8, "input_tokens", 50), (9, "input_tokens", 60),
        ],
    )
    conn.commit()
    conn.close()
    project_agents = root / ".prose" / "agents.db"
    pconn = sqlite3.connect(project_agents)
    pconn.executescript(
        """CREATE TABLE agents (name TEXT PRIMARY KEY, scope TEXT, memory TEXT, created_at TEXT, updated_at TEXT);
        CREATE TABLE agent_segments (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_name TEXT, segment_number INTEGER,
            timestamp TEXT, prompt TEXT, summary TEXT);
        INSERT INTO agents (name, scope, memory) VALUES ('librarian', 'project', 'Knows the repo layout.');
        INSERT INTO agent_segments (agent_name, segment_number, prompt, summary) VALUES ('librarian', 1, 'Index', 'Indexed 40 files.');"""
    )
    pconn.commit()
    pconn.close()
    return run_dir
