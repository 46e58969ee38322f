"""Nesting depth of execution rows: how many ``parent_id`` hops lead from a row to the top.

The same walk for every backend with an ``execution`` table whose rows name their parent
(seeds/sqlite.md and openprose-0.15 state/postgres.md, ``parent_id``): ancestors outside
the rows in hand are looked up in batches through a callback, so a window of a million-row
run costs a few queries, not one per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

MAX_BATCHES = 64  # levels of ancestor lookups (one query each)
MAX_DEPTH = 1000  # hops followed per row (a cycle in the data ends the walk too)


class HasParent(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def parent_id(self) -> int | None: ...


def depths(rows: Iterable[HasParent], parents: dict[int, int | None],
           lookup: Callable[[set[int]], dict[int, int | None]]) -> dict[int, int]:
    """``{row id: depth}`` for ``rows`` (0 for a row without a parent).

    ``parents`` (``{id: parent_id}``) is what is known already; it is extended in place with
    the rows and the ancestors ``lookup`` returns (``{id: parent_id}`` for the ids asked, a
    missing row mapping to ``None``), at most :data:`MAX_BATCHES` batches of lookups."""
    rows = list(rows)
    for r in rows:
        parents.setdefault(r.id, r.parent_id)
    for _ in range(MAX_BATCHES):
        unknown = {p for p in parents.values() if p is not None and p not in parents}
        if not unknown:
            break
        parents.update(lookup(unknown))
    out: dict[int, int] = {}
    for r in rows:
        d, cur, seen = 0, r.parent_id, set()
        while cur is not None and cur not in seen and d < MAX_DEPTH:
            seen.add(cur)
            d += 1
            cur = parents.get(cur)
        out[r.id] = d
    return out
