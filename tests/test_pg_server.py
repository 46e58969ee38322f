"""The test PostgreSQL server never outlives the process that started it.

A test run killed with SIGKILL (a CI timeout, an impatient Ctrl-\\) runs no ``finally``; its
servers used to stay up, holding ports and memory, until the machine was restarted.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent

KILLED_RUN = """
import os, sys
sys.path.insert(0, {tests!r})
from pg_server import PgCluster
cluster = PgCluster()
print(cluster.base, cluster.port, flush=True)
os.kill(os.getpid(), 9)
"""


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_a_killed_test_run_leaves_no_server_behind():
    pytest.importorskip("psycopg")
    run = subprocess.run([sys.executable, "-c", KILLED_RUN.format(tests=str(HERE))], capture_output=True, text=True,
                         timeout=300)
    if not run.stdout.strip():
        pytest.skip(f"no PostgreSQL server could start: {run.stderr[-300:]}")
    base, port = run.stdout.split()
    assert run.returncode == -9
    deadline = time.monotonic() + 120  # a bound on waiting for the condition, not a timing assertion
    while (Path(base).exists() or _accepts(int(port))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _accepts(int(port)), "the killed run's server still accepts connections"
    assert not Path(base).exists(), "the killed run's server folder is still there"


def test_the_servers_port_stays_its_own_while_it_is_stopped():
    """Between a ``stop`` and a ``start`` (a test of a lost connection) the port stays held:
    another xdist worker's server or a connection's source port cannot take it, so the
    server comes back at the URL the code under test already has."""
    pytest.importorskip("psycopg")
    from pg_server import cluster_or_skip
    from ports import PortHold

    cluster = cluster_or_skip()
    try:
        cluster.stop()
        with pytest.raises(OSError), socket.socket() as other:  # what a port picker elsewhere tries
            other.bind(("127.0.0.1", cluster.port))
        others = [PortHold() for _ in range(50)]  # what another worker's servers get
        try:
            assert cluster.port not in {hold.port for hold in others}
        finally:
            for hold in others:
                hold.release()
        cluster.start()
        with cluster.admin() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        cluster.close()
