"""Bindings written in one transaction share ``created_at`` (``NOW()`` is the transaction's
start): a PostgreSQL run lists them in the same order on every read, whatever order their
rows lie in on disk (an update moves a row)."""

from __future__ import annotations

import psycopg
from pg_server import VmWriter

RUN = "20260116-143052-a7b3c9"


def listed(sources, db) -> list[tuple[str, int | None]]:
    source = sources(db)
    [row] = source.list_runs()
    return [(b.name, b.execution_id) for b in source.open(row.path).bindings]


def test_bindings_with_the_same_created_at_keep_one_order(db, sources):
    vm = VmWriter(db, RUN)
    vm.start()
    eid = vm.statement("do review(topic)")
    vm.close()
    with psycopg.connect(db) as conn:  # one transaction: one created_at for every row
        for name, scope in (("zeta", None), ("mid", eid), ("alpha", eid), ("mid", None), ("alpha", None)):
            conn.execute("INSERT INTO openprose.bindings (name, run_id, execution_id, binding, value) "
                         "VALUES (%s, %s, %s, 'let', 'v')", (name, RUN, scope))
    expected = [("alpha", None), ("alpha", eid), ("mid", None), ("mid", eid), ("zeta", None)]
    assert listed(sources, db) == expected
    with psycopg.connect(db, autocommit=True) as conn:  # rewritten in place: the row moves on disk
        conn.execute("UPDATE openprose.bindings SET value = 'w' WHERE name = 'alpha' AND execution_id IS NULL")
    assert listed(sources, db) == expected
