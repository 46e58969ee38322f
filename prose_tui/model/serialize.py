"""Runs as plain JSON-ready dicts: the shape of ``prose-tui runs --json``, ``show --json`` and exports.

Times are ISO 8601 strings (``null`` when unknown); paths are absolute strings, except a
trace line's ``binding``, which is the run-relative path its annotation names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .agent import Agent
from .binding import Binding
from .event import Event
from .failure import Failure, ending, run_failures
from .frame import Frame
from .node import Node, Receipt
from .run import Run
from .write_order import newest_binding, ordered_bindings
from .statement import TraceLine


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def run_row(run: Run) -> dict[str, Any]:
    """One row of ``prose-tui runs``: id, path, backend, format, program, status, times."""
    return {
        "id": run.id,
        "path": str(run.path),
        "backend": run.backend.value,
        "format": run.format.value,
        "location": run.location,
        "program": run.program,
        "status": run.status.value,
        "status_reason": run.status_reason,
        "started": _time(run.started),
        "updated": _time(run.updated),
    }


def trace_line(t: TraceLine) -> dict[str, Any]:
    return {
        "line": t.line,
        "text": t.text,
        "state": t.state.value if t.state else None,
        "note": t.note,
        "binding": t.binding,
        **({"step": t.step} if t.step else {}),
        **({"attempt": t.attempt, "max_attempts": t.max_attempts} if t.attempt else {}),
    }


def binding(b: Binding) -> dict[str, Any]:
    return {
        "name": b.name,
        "kind": b.kind,
        "execution_id": b.execution_id,
        "path": str(b.path),
        "bytes": b.bytes,
        "exists": b.exists,
        **({"service": b.service} if b.service else {}),
        **({"encrypted": True} if b.encrypted else {}),
        **({"warning": b.warning} if b.warning else {}),
        **({"outside": True} if b.outside else {}),
        **({"failure": b.failure} if b.failure else {}),
    }


def agent(a: Agent) -> dict[str, Any]:
    return {
        "name": a.name,
        "scope": a.scope,
        "path": str(a.path) if a.path else None,
        "memory": str(a.memory) if a.memory else None,
        "segments": [
            {"number": s.number, "path": str(s.path), "timestamp": s.timestamp, "prompt": s.prompt}
            for s in a.segments
        ],
    }


def frame(f: Frame) -> dict[str, Any]:
    return {"execution_id": f.execution_id, "block": f.block, "depth": f.depth, "status": f.status}


def failure(f: Failure) -> dict[str, Any]:
    """``show --json``'s ``failure`` and each of its ``failures`` (issue 28): the statement
    as the program writes it, the trace line the explorer shows it on (or ``None``), the
    error as recorded, the attempt (``"n/m"`` or ``None``), its event in the history (or
    ``None``) and whether a later attempt of the same statement completed."""
    return {"statement": f.statement, "line": f.line, "error": f.error or "", "attempt": f.attempt,
            "event": f.event, "recovered": f.recovered}


def event(e: Event) -> dict[str, Any]:
    """One event; ``time_approximate`` (only when true) marks a time reconstructed from file times."""
    out: dict[str, Any] = {
        "seq": e.seq,
        "time": _time(e.time),
        "kind": e.kind.value,
        "step": e.step,
        "name": e.name,
        "status": e.status,
        "text": e.text,
    }
    if e.approximate and e.time is not None:
        out["time_approximate"] = True
    return out


def node(n: Node) -> dict[str, Any]:
    """One node of ``show --json``'s ``nodes``: its ledger summarised (openprose-0.15)."""
    return {
        "name": n.name,
        "kind": n.kind,
        "status": n.status,
        "receipts": n.receipts,
        "version": n.version,
        "failure_reason": n.failure_reason,
        "tokens_fresh": n.tokens_fresh,
        "tokens_reused": n.tokens_reused,
        "producers": list(n.producers),
        "chain_ok": n.chain_ok,
        "chain_note": n.chain_note,
    }


def receipt(r: Receipt) -> dict[str, Any]:
    """One receipt of ``show --json``'s ``receipts``, without the writer's raw fields."""
    return {
        "seq": r.seq,
        "node": r.node,
        "status": r.status,
        "time": _time(r.time),
        "hash": r.hash,
        "prev": r.prev,
        "version": r.version,
        "wake": r.wake,
        "tokens_fresh": r.tokens_fresh,
        "tokens_reused": r.tokens_reused,
        "surprise_cause": r.surprise_cause,
        "failure_reason": r.failure_reason,
    }


def _tally(by: dict[str, dict[str, int]], key: str, r: Receipt) -> None:
    row = by.setdefault(key, {"tokens_fresh": 0, "tokens_reused": 0, "receipts": 0})
    row["tokens_fresh"] += r.tokens_fresh
    row["tokens_reused"] += r.tokens_reused
    row["receipts"] += 1


def cost(receipts: list[Receipt]) -> dict[str, Any]:
    """Token totals of ``receipts`` and the same by ``surprise_cause`` (``"unknown"`` when a
    receipt names none) and by node (a Reactor or skill node; a statement id in a statement
    receipt ledger), in ledger order: ``{tokens_fresh, tokens_reused, receipts,
    by_surprise_cause: {cause: {tokens_fresh, tokens_reused, receipts}}, by_node: {node:
    {...}}}``, plus ``by_basis`` (the same by ``Receipt.basis``) when any receipt says how its
    tokens were counted; ``{}`` for a run without receipts."""
    if not receipts:
        return {}
    by: dict[str, dict[str, int]] = {}
    nodes: dict[str, dict[str, int]] = {}
    basis: dict[str, dict[str, int]] = {}
    for r in receipts:
        _tally(by, r.surprise_cause or "unknown", r)
        _tally(nodes, r.node, r)
        if r.basis is not None:
            _tally(basis, r.basis, r)
    return {
        "tokens_fresh": sum(v["tokens_fresh"] for v in by.values()),
        "tokens_reused": sum(v["tokens_reused"] for v in by.values()),
        "receipts": len(receipts),
        "by_surprise_cause": dict(sorted(by.items())),
        "by_node": nodes,
        **({"by_basis": dict(sorted(basis.items()))} if basis else {}),
    }


def run_detail(run: Run, failures: list[Failure] | None = None) -> dict[str, Any]:
    """The whole parsed run (``prose-tui show --json``), imports nested the same way.
    ``failures``: the run's failures with their history events placed (default
    ``run_failures(run)``, where a snapshot's events are ``None``)."""
    failures = run_failures(run) if failures is None else failures
    return {
        **run_row(run),
        "state_file": str(run.state_file) if run.state_file else None,
        "program_path": str(run.program_path) if run.program_path else None,
        "encrypted": run.encrypted,
        "header": run.header,
        "trace": [trace_line(t) for t in run.trace],
        "bindings": [binding(b) for b in ordered_bindings(run)],  # the order the run wrote them, as the pane shows
        # the binding the run wrote last by its own record (trace, events, execution ids), not file times
        "newest_binding": binding(newest) if (newest := newest_binding(run)) is not None else None,
        "agents": [agent(a) for a in run.agents],
        "call_stack": [frame(f) for f in run.call_stack],
        "active_constructs": [{"title": c.title, "items": c.items} for c in run.constructs],
        "sections": [{"title": s.title, "text": s.text} for s in run.sections],
        "imports": [{"handle": i.import_handle, **run_detail(i)} for i in run.imports],
        "events": [event(e) for e in run.events],
        "failure": failure(end) if (end := ending(run, failures)) is not None else None,
        "failures": [failure(f) for f in failures],
        "nodes": [node(n) for n in run.nodes],
        "receipts": [receipt(r) for r in run.receipts],
        "cost": cost(run.receipts),
        "warnings": run.warnings,
    }
