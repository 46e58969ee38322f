"""A run with nodes as of a cursor: the part of :func:`~prose_tui.history.state_at` for
0.15 skill runs and Reactor state dirs (openprose-0.15 concepts/reactor.md, reactor.md).

The nodes are recomputed from the receipts written by then (:func:`.nodes.nodes_as_of`)
and the bindings cut to the world models of nodes that had rendered; the run's backend then
draws the rest as its format does (``HistorySource.nodes_at``): the trace lines that stand
for nodes, published versions, cost, metrics and status.
"""

from __future__ import annotations

from prose_tui.backends.protocol import HistorySource
from prose_tui.history.nodes import (
    binding_node,
    node_state,
    nodes_as_of,
    receipt_events,
)
from prose_tui.history.timeline import History
from prose_tui.model import EventKind, Run

__all__ = ["apply_nodes_at"]

K = EventKind


def apply_nodes_at(out: Run, run: Run, history: History, cursor: int, source: HistorySource | None) -> None:
    """Set ``out`` (a copy of ``run`` cut at event ``cursor``) to the nodes, receipts and
    world-model bindings of that moment; ``source`` (the run's backend's) redraws the rest."""
    mapping = receipt_events(run, history.events)
    seen = [r for r in mapping[: cursor + 1] if r is not None]
    events = history.events[: cursor + 1]
    out.receipts = seen
    out.nodes = nodes_as_of(run, seen, events)
    rendered = {r.node for r in seen if r.status == "rendered"}
    with_receipts = {r.node for r in run.receipts}
    completed = {e.name for e in events if e.kind is K.STATEMENT_COMPLETED and e.name}
    kept = {id(b) for b in out.bindings}

    def keep(b) -> bool:
        node = binding_node(run, b)
        if node is None:
            return id(b) in kept
        return node in rendered or (node not in with_receipts and node in completed)

    out.bindings = [b for b in run.bindings if keep(b)]
    if source is not None:
        states = {n.name: node_state(n.status) for n in out.nodes}
        source.nodes_at(out, run, states, rendered, cursor, len(history.events))
