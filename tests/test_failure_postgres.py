"""PostgreSQL's ``error_message`` in the one failure model (issue 28), against a real server
(tests/pg_server.py; skipped with the reason when none can start): ``show --json`` gives the
failure that ended the run and the recovered retry before it, and the status names the error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
from pg_server import VmWriter

ROOT = Path(__file__).resolve().parent.parent
RUN = "20260410-080000-c4c4c4"


def test_postgres_error_message_is_the_failure_and_a_retry_that_completed_is_recovered(db):
    vm = VmWriter(db, RUN)
    vm.start(source='let site = session "Build the site"\nsession "Publish the site"\n')
    vm.finish(vm.statement('let site = session "Build the site"'))
    flaky = vm.statement('session "Fetch the credentials"', metadata={"retry_attempt": 1, "max_retries": 2})
    vm.finish(flaky, "failed", "vault timed out")
    with psycopg.connect(db, autocommit=True) as c:  # attempt 2 of the same statement completes
        c.execute("INSERT INTO openprose.execution (run_id, statement_index, statement_text, status, started_at, "
                  "completed_at, metadata) VALUES (%s, 2, 'session \"Fetch the credentials\"', 'completed', NOW(), NOW(), "
                  "'{\"retry_attempt\": 2, \"max_retries\": 2}'::jsonb)", (RUN,))
    vm.index = 2
    vm.finish(vm.statement('session "Publish the site"'), "failed", "403 Forbidden: credentials expired")
    vm.end("failed")
    vm.close()

    done = subprocess.run([sys.executable, "-m", "prose_tui", "show", "--json", f"{db}#{RUN}"], capture_output=True,
                          text=True, check=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    shown = json.loads(done.stdout)
    assert shown["status"] == "failed" and "403 Forbidden: credentials expired" in shown["status_reason"]
    fetch, publish = shown["failures"]
    assert (fetch["statement"], fetch["error"], fetch["recovered"]) == (
        'session "Fetch the credentials"', "vault timed out", True)
    assert publish == shown["failure"]
    assert (publish["statement"], publish["error"], publish["recovered"]) == (
        'session "Publish the site"', "403 Forbidden: credentials expired", False)
    assert shown["events"][publish["event"]]["kind"] == "statement_failed"
