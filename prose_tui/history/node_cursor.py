"""A run with nodes as of a cursor: the part of :func:`~prose_tui.history.state_at` for
0.15 skill runs and Reactor state dirs (openprose-0.15 concepts/reactor.md, reactor.md).

The nodes are recomputed from the receipts written by then (:func:`.nodes.nodes_as_of`),
the trace lines that stand for nodes (a Reactor's node rows, a skill run's compiled-intent
program) redrawn to match, published world models kept only for nodes that had rendered,
the cost totals cut to those receipts, and a Reactor's status worded as its own rule says
(failed while the last receipt of some node failed, else receipts arriving).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from prose_tui.backends.reactor.assemble import node_note, set_cost
from prose_tui.backends.reactor.frames import version_file
from prose_tui.backends.reactor.layout import WORLD_MODELS, node_dir_name
from prose_tui.backends.reactor.ledger import short
from prose_tui.history.nodes import (
    binding_node,
    node_state,
    nodes_as_of,
    receipt_events,
)
from prose_tui.history.timeline import History
from prose_tui.model import (
    Binding,
    EventKind,
    Node,
    Run,
    RunFormat,
    RunStatus,
    Section,
    TraceLine,
)

__all__ = ["apply_nodes_at"]

K = EventKind


def apply_nodes_at(out: Run, run: Run, history: History, cursor: int) -> None:
    """Set ``out`` (a copy of ``run`` cut at event ``cursor``) to the nodes, receipts, node
    trace lines, world-model bindings, cost and (Reactor) status of that moment."""
    mapping = receipt_events(run, history.events)
    seen = [r for r in mapping[: cursor + 1] if r is not None]
    events = history.events[: cursor + 1]
    out.receipts = seen
    out.nodes = nodes_as_of(run, seen, events)
    by_name = {n.name: n for n in out.nodes}
    rendered = {r.node for r in seen if r.status == "rendered"}
    out.trace = [_node_line(run, t, by_name, rendered) for t in out.trace]
    live = {n.name: n.version for n in run.nodes}
    with_receipts = {r.node for r in run.receipts}
    completed = {e.name for e in events if e.kind is K.STATEMENT_COMPLETED and e.name}
    kept = {id(b) for b in out.bindings}

    def keep(b) -> bool:
        node = binding_node(run, b)
        if node is None:
            return id(b) in kept
        return node in rendered or (node not in with_receipts and node in completed)

    out.bindings = [b for b in run.bindings if keep(b)]
    if run.format is RunFormat.REACTOR:
        out.bindings = [_reactor_version(run, b, by_name, live) for b in out.bindings]
        set_cost(out)
        out.header["receipts"] = str(len(seen))
        _reactor_status(out, run, cursor, len(history.events))
    else:
        out.metrics = dict(out.metrics)  # copy_run shares it with the live run
        _skill_metrics(out)
        failing = [n for n in out.nodes if n.status == "failed"]
        # a node's __error.md (skill.py's "Error: {node} (…)" section) is shown once it failed
        later = tuple(f"Error: {n.name} (" for n in out.nodes if n.status != "failed")
        out.sections = [s for s in out.sections if not (later and s.title.startswith(later))]
        out.sections = [_program_section(s, by_name) for s in out.sections]
        if failing and out.status is RunStatus.RUNNING:
            out.status_reason += "; " + "; ".join(
                f"node {n.name} failed: {n.failure_reason or 'no failure text'}" for n in failing[:3])


def _node_name(run: Run, t: TraceLine, names: dict[str, Node]) -> str | None:
    """The node a trace line stands for: a Reactor row (``step`` is the node), or a skill
    run's compiled-intent line (``name ← producers``, no step)."""
    if run.format is RunFormat.REACTOR:
        return t.step if t.step in names else None
    if t.step is None and t.note is not None:
        name = t.text.split("←", 1)[0].strip()
        return name if name in names else None
    return None


def _node_line(run: Run, t: TraceLine, names: dict[str, Node], rendered: set[str]) -> TraceLine:
    name = _node_name(run, t, names)
    if name is None:
        return t
    node = names[name]
    if run.format is RunFormat.REACTOR:
        binding = None
        if name in rendered and node.version:
            path = version_file(run.path / WORLD_MODELS / node_dir_name(name), node.version)
            binding = path.relative_to(run.path).as_posix() if path.is_file() else t.binding
        return dataclasses.replace(t, state=node_state(node.status), note=node_note(node), binding=binding)
    return dataclasses.replace(t, state=node_state(node.status), note=_skill_note(node))


def _reactor_version(run: Run, b: Binding, nodes: dict[str, Node], live: dict[str, str | None]) -> Binding:
    """A Reactor node's published binding as of then: the version it had published by the
    cursor, read from ``versions/`` where the state dir kept it (else the live one, with a
    warning saying so)."""
    node = nodes.get(b.name)
    if node is None or not node.version or node.version == live.get(b.name):
        return b
    path = version_file(run.path / WORLD_MODELS / node_dir_name(b.name), node.version)
    fields = {**(b.fields or {}), "version": node.version}
    try:
        st = path.stat()
    except OSError:
        return dataclasses.replace(b, warning=(
            f"version {short(node.version)} (published by then) was not kept; showing the live "
            f"version {short(live.get(b.name))}"))
    return dataclasses.replace(b, path=path, fields=fields, bytes=st.st_size, mtime=st.st_mtime, warning=None)




def _skill_note(node: Node) -> str:
    """A skill run's compiled-intent line note (backends/filesystem/skill.py), as of then."""
    bits = [node.status] if node.status else []
    if node.receipts:
        bits.append(f"{node.receipts} receipt{'s' if node.receipts != 1 else ''}")
    if node.version:
        bits.append(node.version)
    if node.failure_reason:
        bits.append(node.failure_reason)
    return " · ".join(bits) or "no receipt yet"


def _program_section(section: Section, nodes: dict[str, Node]) -> Section:
    """skill.py's "Program (nodes of compiled-intent.json)" section, one ``name ← producers
    # note`` line per node, with each note as of then; other sections as they are."""
    if not section.title.startswith("Program (nodes of "):
        return section
    lines = []
    for line in section.text.splitlines():
        head, sep, _note = line.partition("    # ")
        node = nodes.get(head.split("←", 1)[0].strip()) if sep else None
        lines.append(f"{head}    # {_skill_note(node)}" if node is not None else line)
    return dataclasses.replace(section, text="\n".join(lines))


def _skill_metrics(out: Run) -> None:
    """A skill run's receipt totals in ``Run.metrics`` (the keys skill.py writes), as of then."""
    for key in [k for k in out.metrics if k == "receipts" or k.startswith(("receipts_", "tokens_"))]:
        del out.metrics[key]
    if not out.receipts:
        return
    by_status: dict[str, int] = defaultdict(int)
    for r in out.receipts:
        by_status[r.status] += 1
    out.metrics["receipts"] = float(len(out.receipts))
    for status, count in by_status.items():
        out.metrics[f"receipts_{status}"] = float(count)
    out.metrics["tokens_fresh"] = float(sum(r.tokens_fresh for r in out.receipts))
    out.metrics["tokens_reused"] = float(sum(r.tokens_reused for r in out.receipts))


def _reactor_status(out: Run, run: Run, cursor: int, total: int) -> None:
    """The Reactor's rule (backends/reactor/assemble.py ``set_status``) as of the cursor:
    failed while the last receipt of some node failed, else running (receipts arriving)."""
    where = f"as of event {cursor + 1} of {total}"
    failing = [n for n in out.nodes if n.status == "failed"]
    if failing:
        first = failing[0]
        last = next((r for r in reversed(out.receipts) if r.node == first.name), None)
        at = f" (receipt #{last.seq})" if last else ""
        more = f"; {len(failing) - 1} more node{'s' if len(failing) > 2 else ''} failing" if len(failing) > 1 else ""
        out.status = RunStatus.FAILED
        out.status_reason = f"{where}: the last receipt of {first.name}{at} failed: {first.failure_reason}{more}"
        return
    active = sum(1 for n in out.nodes if n.receipts)
    out.status = RunStatus.RUNNING
    out.status_reason = (f"{where}: receipts arriving, {len(out.receipts)} of {len(run.receipts)} written "
                         f"from {active} nodes")
    out.end_marker = out.error_marker = None
