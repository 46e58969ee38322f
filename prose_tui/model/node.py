"""Nodes and receipts: the reactive half of today's OpenProse (openprose-0.15
concepts/reactor.md, reactor.md, state/filesystem.md ``receipts/{node}.jsonl``).

A node is one compiled component of a program; every time it wakes it appends a receipt to
its own ledger. Plain dataclasses, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True)
class Receipt:
    """One receipt of a node's ledger (concepts/reactor.md, The receipt).

    ``status`` is ``rendered``, ``skipped`` or ``failed`` as written (kept verbatim when a VM
    wrote something else). ``hash`` is this receipt's content hash as the writer recorded it
    (or as computed), ``prev`` the hash of the node's previous receipt. ``version`` the
    world-model version it published (a content address such as ``sha256:…``).
    ``tokens_fresh``/``tokens_reused`` come from ``cost``; ``surprise_cause`` names why it
    woke where the writer recorded one. ``failure_reason`` is ``semantic_diff.failure_reason``
    or the failure text. ``basis`` says how the tokens were counted where the writer says
    (FORMATS.md generation 8 ``usage.basis``: ``exact``, ``estimated`` (not a measurement) or
    ``unavailable`` (its zeros are not data)). ``fields`` keeps the whole receipt as parsed.
    """

    node: str
    status: str
    seq: int = 0
    time: datetime | None = None
    hash: str | None = None
    prev: str | None = None
    version: str | None = None
    wake: str | None = None
    tokens_fresh: int = 0
    tokens_reused: int = 0
    surprise_cause: str | None = None
    failure_reason: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    basis: str | None = None


@dataclass(slots=True)
class Node:
    """One node of a run or Reactor state dir, summarised from its ledger.

    ``status`` is the last receipt's status (``None`` before any). ``receipts`` counts the
    ledger; ``version`` the last published version; ``producers`` the nodes whose output it
    consumes (the topology's edges, or the compiled intent's inputs). ``chain_ok`` is false
    where a receipt's ``prev`` is not the hash of the receipt before it (``chain_note`` says
    where).
    """

    name: str
    status: str | None = None
    receipts: int = 0
    version: str | None = None
    failure_reason: str | None = None
    tokens_fresh: int = 0
    tokens_reused: int = 0
    producers: list[str] = field(default_factory=list)
    chain_ok: bool = True
    chain_note: str | None = None
    kind: str | None = None
