"""Nodes and receipts through a run's history (openprose-0.15 concepts/reactor.md, The receipt
and Failure and freshness; state/filesystem.md ``receipts/``, reactor.md).

A 0.15 skill run and a Reactor state dir report each receipt as one ``receipt_*`` event
(``Run.events``, named by the node). Here: which receipt each event reports, which failed
receipts are failures (the spec: "Retry needs no special machinery — the next upstream
receipt or the ``### Continuity`` self-tick re-attempts", so a failed receipt its node got
past with a later receipt is a retried attempt), and the nodes as they stood after one event
(:func:`nodes_as_of`). Imports only the model: :mod:`.stream` uses it.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque

from prose_tui.model import (
    Event,
    EventKind,
    Node,
    Receipt,
    Run,
    RunFormat,
    StatementState,
)

__all__ = [
    "RECEIPT_KINDS",
    "binding_node",
    "failure_words",
    "node_state",
    "nodes_as_of",
    "receipt_events",
    "with_receipt_failures",
]

K = EventKind
RECEIPT_KINDS = (K.RECEIPT_RENDERED, K.RECEIPT_SKIPPED, K.RECEIPT_FAILED)
_KNOWN = ("rendered", "skipped", "failed")
_STATE = {"rendered": StatementState.COMPLETE, "skipped": StatementState.SKIPPED, "failed": StatementState.FAILED}
_OUTCOMES = (K.STATEMENT_COMPLETED, K.STATEMENT_SKIPPED, K.STATEMENT_FAILED)


def node_state(status: str | None) -> StatementState:
    """The trace state a node's last receipt status means (``pending`` before any receipt)."""
    return _STATE.get(status or "", StatementState.PENDING)


def receipt_events(run: Run, events: list[Event]) -> list[Receipt | None]:
    """For each of ``events``, the receipt of ``run.receipts`` it reports, else ``None``.

    The k-th receipt event naming node X reports X's k-th receipt (its chain, ordered by
    ``Receipt.seq``). A receipt whose status is none of rendered/skipped/failed was written
    as a ``note`` event carrying that status; it is matched the same way.
    """
    queues: dict[str, deque[Receipt]] = {}
    for receipt in sorted(run.receipts, key=lambda r: r.seq):
        queues.setdefault(receipt.node, deque()).append(receipt)
    out: list[Receipt | None] = []
    for event in events:
        queue = queues.get(event.name or "")
        if queue and (event.kind in RECEIPT_KINDS or (
                event.kind is K.NOTE and queue[0].status not in _KNOWN and event.status == queue[0].status)):
            out.append(queue.popleft())
        else:
            out.append(None)
    return out


def failure_words(event: Event) -> str:
    """The failure text an event carries: the words after its ``✗`` (a log line, a skill
    receipt), after ``failed:`` (a Reactor receipt, up to its `` · tokens``), else its text."""
    text = event.text
    if "✗" in text:
        return text.split("✗", 1)[1].lstrip("\ufe0f").strip()
    if m := re.search(r"\bfailed:\s*(.*?)(?:\s+·\s+\d+ fresh\b.*)?$", text):
        return m.group(1).strip()
    return text.strip()


def with_receipt_failures(events: list[Event], failures: list[int]) -> list[int]:
    """``failures`` (indexes of statement failures and run errors) with the failed receipts
    that are failures: those whose node wrote no receipt after them. A receipt and a log
    line reporting one node failure (same node, the receipt placed at that log line) count
    once: the one whose failure text is longer (the receipt when equal, it also carries the
    cost). Sorted."""
    out = set(failures)
    last: dict[str | None, int] = {}  # each node's last receipt event
    for i, event in enumerate(events):
        if event.kind in RECEIPT_KINDS:
            last[event.name] = i
    for i, event in enumerate(events):
        if event.kind is not K.RECEIPT_FAILED or last.get(event.name) != i:
            continue
        twin = next((j for j in failures if events[j].kind is K.STATEMENT_FAILED and events[j].name == event.name
                     and events[j].line is not None and events[j].line == event.line
                     and events[j].step == event.step), None)
        if twin is None:
            out.add(i)
        elif len(failure_words(event)) >= len(failure_words(events[twin])):
            out.discard(twin)
            out.add(i)
    return sorted(out)


def binding_node(run: Run, binding) -> str | None:
    """The node whose world model a binding is (a skill run's ``world-model/{node}/`` file,
    a Reactor node's published version), else ``None`` (caller inputs, ``bindings/``)."""
    names = {n.name for n in run.nodes}
    node = (binding.fields or {}).get("node")
    if node in names:
        return str(node)
    if binding.service in names:
        return str(binding.service)
    if run.format is RunFormat.REACTOR and binding.name in names:
        return str(binding.name)
    return None


_REACTOR_BREAK = re.compile(r"receipt #(\d+) of ")
_SKILL_BREAK = re.compile(r"^receipt (\d+) ")


def _chain_as_of(node: Node, chain: list[Receipt], whole: int) -> tuple[bool, str | None]:
    """Whether the break ``node.chain_note`` names was among the receipts seen (``chain``)."""
    if node.chain_ok or not chain:
        return True, None
    if len(chain) >= whole:
        return node.chain_ok, node.chain_note
    note = node.chain_note or ""
    if m := _REACTOR_BREAK.search(note):
        seen = any(r.seq == int(m.group(1)) for r in chain)
    elif m := _SKILL_BREAK.match(note):
        seen = len(chain) >= int(m.group(1))
    else:
        seen = False
    return (False, node.chain_note) if seen else (True, None)


def nodes_as_of(run: Run, seen: list[Receipt], events: list[Event]) -> list[Node]:
    """``run.nodes`` as they stood once the receipts ``seen`` were written (new objects).

    Status, receipt count, fresh/reused tokens and the failure text come from each node's
    receipts so far; the version is the live one once every receipt of the node was seen,
    else the last non-failed receipt's. A node with no receipt in the whole run keeps its
    live status (a skill node failed through ``__error.md`` alone) only once an event so far
    (``events``) names it with an outcome. Producers and kind are kept.
    """
    chains: dict[str, list[Receipt]] = {}
    for receipt in seen:
        chains.setdefault(receipt.node, []).append(receipt)
    named = {e.name for e in events if e.kind in _OUTCOMES and e.name}
    out: list[Node] = []
    for node in run.nodes:
        chain = chains.get(node.name, [])
        copy = dataclasses.replace(node, producers=list(node.producers))
        if not chain:
            if node.receipts or node.name not in named:
                copy.status, copy.version, copy.failure_reason = None, None, None
            copy.receipts, copy.tokens_fresh, copy.tokens_reused = 0, 0, 0
            copy.chain_ok, copy.chain_note = True, None
            out.append(copy)
            continue
        last = chain[-1]
        whole = len(chain) >= node.receipts
        copy.status = last.status
        copy.receipts = len(chain)
        copy.tokens_fresh = sum(r.tokens_fresh for r in chain)
        copy.tokens_reused = sum(r.tokens_reused for r in chain)
        if not whole:
            copy.version = next((r.version for r in reversed(chain) if r.status != "failed" and r.version), None)
        if last.status == "failed":
            copy.failure_reason = (node.failure_reason if whole else None) or last.failure_reason or (
                f"failed receipt #{last.seq} records no failure_reason")
        else:
            copy.failure_reason = None
        copy.chain_ok, copy.chain_note = _chain_as_of(node, chain, node.receipts)
        out.append(copy)
    return out
