"""The PostgreSQL fixtures the database tests share: a private server per test module
(``pg_server.cluster_or_skip``: skips with the reason when none can start), a fresh database
with the VM's schema per test, and sources attached to the backend and detached after."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from pg_server import VM_SCHEMA, cluster_or_skip

from prose_tui.backends.postgres import DatabaseUrl, PostgresSource
from prose_tui.backends.postgres.backend import attach, detach


@pytest.fixture(scope="module")
def cluster():
    c = cluster_or_skip()
    yield c
    c.close()


@pytest.fixture
def db(cluster):
    """A fresh database with the VM's schema; yields its superuser URL."""
    name = "t_" + secrets.token_hex(4)
    cluster.create_db(name)
    url = cluster.url(db=name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(VM_SCHEMA)
    return url


@pytest.fixture
def sources():
    made: list[PostgresSource] = []

    def make(url: str, **kw) -> PostgresSource:
        source = attach(PostgresSource(DatabaseUrl(url), **kw))
        made.append(source)
        return source

    yield make
    for s in made:
        detach(s)
