"""A real, private PostgreSQL server for the tests and benchmarks, and a VM that writes to it.

:class:`PgCluster` runs ``initdb`` + ``pg_ctl`` from the binaries ``pg_binaries.find_binaries``
picks (the ``pgserver`` wheel's build, a copy of it where it can run, or the system's
PostgreSQL) in a temporary folder:
TCP on 127.0.0.1 at a port held for it until :meth:`PgCluster.close` (``ports.PortHold``: no
other test process can take it, not even between a ``stop`` and a ``start``), with password
(SCRAM) authentication, so wrong passwords and SELECT-only roles behave as on a team server.
As root it runs the server as the unprivileged ``pgserver`` user (PostgreSQL refuses root).
:func:`cluster_or_skip` gives a clear skip reason when no server can start.

``VM_SCHEMA`` is openprose-0.15 state/postgres.md's Core Schema as a VM really creates it:
PostgreSQL rejects the spec's ``PRIMARY KEY (name, run_id, COALESCE(execution_id, -1))``
(expressions are not allowed in a primary key), so a VM that reads the error does what the
``ON CONFLICT (... COALESCE(...))`` clauses need: no primary key, a unique expression index.
:class:`VmWriter` writes rows as the spec's VM and spawned sessions do.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
from pg_binaries import find_binaries, server_user
from ports import PortHold, startup_lost_port

SUPERUSER = "postgres"
STARTS = 5  # tries on a fresh port when a foreign program took the held one (see ports.py)


class PgCluster:
    """One private server. ``url(user, password, db)`` builds a TCP URL; ``admin()`` a
    superuser connection (autocommit). ``stop``/``start``/``restart`` keep the port."""

    def __init__(self, base: Path | None = None) -> None:
        self.user = server_user()
        bindir, tried = find_binaries(self.user)
        if bindir is None:
            raise RuntimeError(f"no PostgreSQL binaries that run here: {tried}")
        self.bindir = bindir
        self.base = Path(base or tempfile.mkdtemp(prefix="prose-tui-pg-"))
        self.data = self.base / "data"
        self.sock = self.base / "sock"
        self.password = secrets.token_urlsafe(12)
        self._init()
        self._hold = PortHold()
        self.port = self._hold.port
        for tries_left in reversed(range(STARTS)):
            logged = len(self._log())
            try:
                self.start()
                break
            except subprocess.CalledProcessError:
                if not tries_left or not startup_lost_port(self._log()[logged:]):
                    self._hold.release()
                    raise
                self._hold.release()
                self._hold = PortHold()
                self.port = self._hold.port
        self._watchdog = self._start_watchdog()

    def _start_watchdog(self) -> subprocess.Popen:
        """A process that stops the server and removes its folder once this process is gone.

        A test run killed by SIGKILL or SIGTERM (or a crashed xdist worker) skips every
        ``finally``; without this its server stayed up for good. The watchdog holds the read end
        of a pipe whose write end only this process has: the pipe reaches end-of-file when this
        process exits for any reason, and :meth:`close` closes it on purpose.
        """
        pg_ctl = [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", "-m", "immediate", "stop"]
        script = (
            "import shutil, subprocess, sys\n"
            "sys.stdin.buffer.read()\n"
            f"subprocess.run({pg_ctl!r}, capture_output=True, cwd={str(self.base)!r}, user={self.user!r})\n"
            f"shutil.rmtree({str(self.base)!r}, ignore_errors=True)\n"
        )
        return subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _run(self, *args: str, timeout: float = 60) -> None:
        kwargs: dict = {"user": self.user} if self.user else {}
        subprocess.run([str(self.bindir / args[0]), *args[1:]], check=True, capture_output=True, timeout=timeout,
                       cwd=self.base, **kwargs)

    def _init(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.sock.mkdir(exist_ok=True)
        pwfile = self.base / "pw"
        pwfile.write_text(self.password + "\n")
        if self.user:
            import pwd

            entry = pwd.getpwnam(self.user)
            os.chmod(self.base, 0o755)
            for p in (self.base, self.sock, pwfile):
                os.chown(p, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(pwfile), "-E", "UTF8",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync")

    def start(self) -> None:
        opts = f"-p {self.port} -h 127.0.0.1 -k {self.sock} -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-l", str(self.base / "log"), "-o", opts, "start")

    def _log(self) -> str:
        try:
            return (self.base / "log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-m", mode, "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def url(self, user: str = SUPERUSER, password: str | None = None, db: str = "postgres") -> str:
        return f"postgresql://{user}:{password if password is not None else self.password}@127.0.0.1:{self.port}/{db}"

    def admin(self, db: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.url(db=db), autocommit=True)

    def create_db(self, name: str) -> str:
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def close(self) -> None:
        try:
            self.stop("immediate")
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.base, ignore_errors=True)
        self._hold.release()
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None and watchdog.stdin is not None:
            watchdog.stdin.close()  # end-of-file: it finds the server stopped and the folder gone
            watchdog.wait(timeout=60)


def cluster_or_skip():
    """A started :class:`PgCluster`, or a pytest skip saying why none could start."""
    import pytest

    try:
        return PgCluster()
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        detail = exc.stderr.decode(errors="replace")[-300:] if isinstance(exc, subprocess.CalledProcessError) and exc.stderr else exc
        pytest.skip(f"no PostgreSQL server could start (pgserver, a copy of it, or system postgresql): {detail}")


VM_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS openprose;
CREATE TABLE IF NOT EXISTS openprose.run (
    id TEXT PRIMARY KEY,
    root_path TEXT,
    root_source TEXT,
    started_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
    state_mode TEXT NOT NULL DEFAULT 'postgres',
    metadata JSONB DEFAULT '{}'::jsonb
);
CREATE TABLE IF NOT EXISTS openprose.execution (
    id SERIAL PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES openprose.run(id) ON DELETE CASCADE,
    statement_index INTEGER NOT NULL,
    statement_text TEXT,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'executing', 'completed', 'failed', 'skipped')),
    started_at TIMESTAMPTZ,
    completed_at TIMESTAMPTZ,
    error_message TEXT,
    parent_id INTEGER REFERENCES openprose.execution(id) ON DELETE CASCADE,
    metadata JSONB DEFAULT '{}'::jsonb
);
CREATE TABLE IF NOT EXISTS openprose.world_model_version (
    version TEXT PRIMARY KEY,
    node TEXT NOT NULL,
    artifact BYTEA,
    attachment_path TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE TABLE IF NOT EXISTS openprose.world_model_published (
    node TEXT PRIMARY KEY,
    version TEXT NOT NULL REFERENCES openprose.world_model_version(version),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE TABLE IF NOT EXISTS openprose.receipt (
    id SERIAL PRIMARY KEY,
    run_id TEXT REFERENCES openprose.run(id) ON DELETE CASCADE,
    node TEXT NOT NULL,
    contract_fingerprint TEXT NOT NULL,
    wake JSONB NOT NULL,
    input_fingerprints JSONB NOT NULL,
    fingerprints JSONB NOT NULL,
    semantic_diff JSONB DEFAULT '{}'::jsonb,
    prev TEXT,
    status TEXT NOT NULL CHECK (status IN ('rendered', 'skipped', 'failed')),
    cost JSONB DEFAULT '{}'::jsonb,
    sig JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
-- The spec's PRIMARY KEY (name, run_id, COALESCE(execution_id, -1)) is a syntax error in
-- PostgreSQL; the unique expression index is what its ON CONFLICT clause needs.
CREATE TABLE IF NOT EXISTS openprose.bindings (
    name TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES openprose.run(id) ON DELETE CASCADE,
    execution_id INTEGER,
    binding TEXT NOT NULL CHECK (binding IN ('input', 'output', 'let', 'const')),
    value TEXT,
    source_statement TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    attachment_path TEXT,
    metadata JSONB DEFAULT '{}'::jsonb
);
CREATE UNIQUE INDEX IF NOT EXISTS bindings_scope_key ON openprose.bindings (name, run_id, COALESCE(execution_id, -1));
CREATE TABLE IF NOT EXISTS openprose.agents (
    name TEXT NOT NULL,
    run_id TEXT,
    scope TEXT NOT NULL CHECK (scope IN ('execution', 'project', 'user', 'custom')),
    memory TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    metadata JSONB DEFAULT '{}'::jsonb
);
CREATE UNIQUE INDEX IF NOT EXISTS agents_scope_key ON openprose.agents (name, COALESCE(run_id, '__project__'));
CREATE TABLE IF NOT EXISTS openprose.agent_segments (
    id SERIAL PRIMARY KEY,
    agent_name TEXT NOT NULL,
    run_id TEXT,
    segment_number INTEGER NOT NULL,
    timestamp TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    prompt TEXT,
    summary TEXT,
    metadata JSONB DEFAULT '{}'::jsonb
);
CREATE UNIQUE INDEX IF NOT EXISTS agent_segments_key ON openprose.agent_segments (agent_name, COALESCE(run_id, '__project__'), segment_number);
CREATE TABLE IF NOT EXISTS openprose.imports (
    alias TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES openprose.run(id) ON DELETE CASCADE,
    source_ref TEXT NOT NULL,
    resolved_at TIMESTAMPTZ,
    requires_schema JSONB,
    ensures_schema JSONB,
    content_hash TEXT,
    metadata JSONB DEFAULT '{}'::jsonb,
    PRIMARY KEY (alias, run_id)
);
CREATE TABLE IF NOT EXISTS openprose.x_metrics (
    id SERIAL PRIMARY KEY,
    run_id TEXT REFERENCES openprose.run(id) ON DELETE CASCADE,
    execution_id INTEGER REFERENCES openprose.execution(id) ON DELETE CASCADE,
    metric_name TEXT NOT NULL,
    metric_value NUMERIC,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    metadata JSONB DEFAULT '{}'::jsonb
);
CREATE INDEX IF NOT EXISTS idx_execution_run_id ON openprose.execution(run_id);
CREATE INDEX IF NOT EXISTS idx_execution_status ON openprose.execution(status);
CREATE INDEX IF NOT EXISTS idx_execution_parent_id ON openprose.execution(parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_execution_metadata_gin ON openprose.execution USING GIN (metadata jsonb_path_ops);
CREATE INDEX IF NOT EXISTS idx_bindings_run_id ON openprose.bindings(run_id);
CREATE INDEX IF NOT EXISTS idx_bindings_execution_id ON openprose.bindings(execution_id) WHERE execution_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_agents_run_id ON openprose.agents(run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_agents_project_scoped ON openprose.agents(name) WHERE run_id IS NULL;
CREATE INDEX IF NOT EXISTS idx_agent_segments_lookup ON openprose.agent_segments(agent_name, run_id);
"""


class VmWriter:
    """Writes a run as the spec's VM and spawned sessions do (state/postgres.md, Database
    Interaction, Parallel Execution, Loop Tracking, Error Handling), one commit per call."""

    def __init__(self, url: str, run_id: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.run_id = run_id
        self.index = 0

    def start(self, root_path: str = "src/system/index.prose.md", source: str = "session \"hello\"") -> None:
        self.conn.execute("INSERT INTO openprose.run (id, root_path, root_source, status) VALUES (%s, %s, %s, 'running')",
                          (self.run_id, root_path, source))

    def statement(self, text: str, *, status: str = "executing", parent: int | None = None,
                  metadata: dict | None = None) -> int:
        import json

        self.index += 1
        row = self.conn.execute(
            "INSERT INTO openprose.execution (run_id, statement_index, statement_text, status, started_at, parent_id, metadata) "
            "VALUES (%s, %s, %s, %s, NOW(), %s, %s::jsonb) RETURNING id",
            (self.run_id, self.index, text, status, parent, json.dumps(metadata or {}))).fetchone()
        assert row is not None
        return int(row[0])

    def finish(self, eid: int, status: str = "completed", error: str | None = None) -> None:
        self.conn.execute("UPDATE openprose.execution SET status = %s, error_message = %s, completed_at = NOW() WHERE id = %s",
                          (status, error, eid))

    def bind(self, name: str, value: str, *, execution_id: int | None = None, kind: str = "let",
             source: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO openprose.bindings (name, run_id, execution_id, binding, value, source_statement) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name, run_id, COALESCE(execution_id, -1)) DO UPDATE "
            "SET value = EXCLUDED.value, updated_at = NOW()", (name, self.run_id, execution_id, kind, value, source))

    def end(self, status: str = "completed") -> None:
        self.conn.execute("UPDATE openprose.run SET status = %s, updated_at = NOW() WHERE id = %s", (status, self.run_id))

    def close(self) -> None:
        self.conn.close()
