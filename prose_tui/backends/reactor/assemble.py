"""A Reactor state dir as a :class:`~prose_tui.model.Run` (openprose-0.15 reactor.md,
concepts/reactor.md): one node per topology node (and per phantom ingress), one event per
receipt, one trace line per node in topological order, one binding per published world
model, chain verification, cost by ``surprise_cause``, and a status with its reason.

:class:`ReactorState` is what a backend keeps per state dir so that :func:`add_receipts`
can apply appended receipts without reading the ledger again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.backends.common.bindings import outside_binding
from prose_tui.backends.common.contained import OUTSIDE_RUN, inside, run_root
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, human_age
from prose_tui.backends.common.text import open_regular
from prose_tui.backends.common.text import visible
from prose_tui.backends.reactor.frames import Published, read_frame, read_published
from prose_tui.backends.reactor.layout import (
    RECEIPTS,
    WORLD_MODELS,
    node_dir_name,
    node_of_dir,
)
from prose_tui.backends.reactor.ledger import Cursor, Parsed, short
from prose_tui.backends.reactor.topology import Topology, order
from prose_tui.model import (
    Backend,
    Binding,
    Event,
    EventKind,
    Node,
    Receipt,
    Run,
    RunFormat,
    RunStatus,
    Section,
    StatementState,
    TraceLine,
)

MAX_CHAIN_WARNINGS = 20
VALIDATE_FRAMES_UP_TO = 1024 * 1024  # published versions up to this size are decoded on open
_KIND = {"rendered": EventKind.RECEIPT_RENDERED, "skipped": EventKind.RECEIPT_SKIPPED,
         "failed": EventKind.RECEIPT_FAILED}
_STATE = {"rendered": StatementState.COMPLETE, "skipped": StatementState.SKIPPED,
          "failed": StatementState.FAILED}


@dataclass(slots=True)
class ReactorState:
    """Per state dir: the ledger cursor, the topology, each node's index in ``Run.nodes``
    (= its trace line index), depth, phantom set, published world models and how many chain
    warnings were given."""

    state_dir: Path
    cursor: Cursor
    topology: Topology
    index: dict[str, int] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)
    phantoms: set[str] = field(default_factory=set)
    published: dict[str, Published] = field(default_factory=dict)
    chain_warnings: int = 0
    owner: int = 0  # id() of the Run this state was built for and is applied to
    receipts: int = 0  # how many receipts that run holds
    chain_problems: list[str] = field(default_factory=list)  # every chain break found, in ledger order
    ledger_warnings: list[str] = field(default_factory=list)  # faults the ledger is read up to

    def belongs_to(self, run: Run) -> bool:
        """True when ``run`` is the run this state keeps current (not an older copy read
        before, say, a summary was re-read in full)."""
        return self.owner == id(run) and len(run.receipts) == self.receipts


def run_id(state_dir: Path, config: Path | None = None) -> str:
    """What the run list calls a state dir: ``project/.reactor`` for a hidden one or one a
    project's ``reactor.yml`` names inside the project (``project/state``), else its name."""
    if config is not None:
        try:
            rel = state_dir.relative_to(config.parent.resolve())
        except ValueError:
            rel = None
        if rel is not None and rel.parts:
            return f"{config.parent.name}/{rel.as_posix()}"
    return f"{state_dir.parent.name}/{state_dir.name}" if state_dir.name.startswith(".") else state_dir.name


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def build(state_dir: Path, config: Path | None, topology: Topology, cursor: Cursor, parsed: Parsed,
          warnings: list[str]) -> tuple[Run, ReactorState]:
    """The run of ``state_dir`` from its parts (status is set by :func:`set_status`)."""
    state = ReactorState(state_dir, cursor, topology)
    run = Run(id=run_id(state_dir, config), path=state_dir, backend=Backend.REACTOR, format=RunFormat.REACTOR,
              root=run_root(state_dir))
    run.state_file = state_dir / RECEIPTS
    run.program_path = config
    run.program = config.name if config else f"compile/topology.json ({len(topology.nodes)} nodes)"
    run.state_mtime = _mtime(run.state_file)  # to notice a change, never as the run's time
    run.warnings.extend(warnings)

    state.phantoms = set(topology.phantoms())
    names = list(topology.nodes) + [p for p in topology.phantoms()]
    seen = set(names)
    for r in parsed.receipts:
        if r.node not in seen:
            seen.add(r.node)
            names.append(r.node)
            if topology.found:
                state.phantoms.add(r.node)
    for name in _world_model_nodes(state_dir):
        if name not in seen:
            seen.add(name)
            names.append(name)
    producers = topology.producers()
    ordered, state.depth, acyclic = order(names, producers)
    if not acyclic:
        run.warnings.append("the topology has a cycle: nodes on it are listed after the others")
    for name in ordered:
        _new_node(run, state, name, producers.get(name, []))
    _read_world_models(run, state)
    add_receipts(run, state, parsed)
    for node in run.nodes:
        _set_version(node, state)
    redraw_trace(run, state)
    run.header = _header(run, state, config)
    if parsed.raw is not None:
        raw = visible(parsed.raw).replace("```", "`\u200b``")
        run.sections.append(Section("receipts.json (unparsed)", f"From the first fault on, as written:\n\n```\n{raw}\n```"))
    if topology.edges:
        run.sections.append(Section("Topology", _topology_text(topology)))
    set_registry_section(run, state_dir)
    set_cost(run)
    state.owner = id(run)
    return run, state


def _world_model_nodes(state_dir: Path) -> list[str]:
    try:
        entries = sorted(os.listdir(state_dir / WORLD_MODELS))
    except OSError:
        return []
    return [n for n in (node_of_dir(e) for e in entries) if n]


def _new_node(run: Run, state: ReactorState, name: str, producers: list[str]) -> Node:
    topo = state.topology
    if name in state.phantoms:
        kind = "ingress"
    elif topo.wake_source.get(name) == "external" or name in topo.entry_points:
        kind = "gateway"
    else:
        kind = "responsibility"
    node = Node(name=name, producers=list(producers), kind=kind)
    state.index[name] = len(run.nodes)
    state.depth.setdefault(name, 0)
    run.nodes.append(node)
    return node


def _read_world_models(run: Run, state: ReactorState) -> None:
    """Published versions become bindings (one per node, value: the decoded frame)."""
    for node in run.nodes:
        binding = published_binding(run, state, node.name)
        if binding is not None:
            run.bindings.append(binding)


def published_binding(run: Run, state: ReactorState, name: str) -> Binding | None:
    """The binding for ``name``'s published world model (``None`` when it published none);
    reads ``published.json`` and checks the version's frame (files up to 1 MB)."""
    node_dir = state.state_dir / WORLD_MODELS / node_dir_name(name)
    root = run.root or run_root(state.state_dir)
    published, warning = read_published(node_dir, root)
    if warning:
        _warn(run, warning)
    if published is None:
        state.published.pop(name, None)
        return None
    state.published[name] = published
    path = published.file or (node_dir / "published.json")
    binding = Binding(name=name, path=path, kind="output", source=state.topology.labels.get(name),
                      fields={"version": published.version or "", **{f"fingerprint {k}": v for k, v in
                                                                     published.fingerprints.items()}})
    if not inside(path, root):  # a version file that links out of the state dir
        _warn(run, f"{name}: {OUTSIDE_RUN}")
        return outside_binding(binding)
    try:
        st = path.stat()
        binding.bytes, binding.mtime = st.st_size, st.st_mtime
    except OSError:
        binding.exists = False
        binding.warning = f"published version {short(published.version)} has no file {path.name}"
        _warn(run, f"{name}: {binding.warning}")
        return binding
    if published.file is None:
        binding.warning = "published.json names no version"
    elif binding.bytes <= VALIDATE_FRAMES_UP_TO:
        try:
            _, _, error = read_frame(path, root)
        except OSError as exc:
            error = f"could not be read ({exc.strerror or exc})"
        if error:
            binding.warning = f"version {short(published.version)}: {error}"
            _warn(run, f"{name}: {binding.warning}; its raw bytes are shown")
    return binding


def _event_text(r: Receipt) -> str:
    tokens = f"{r.tokens_fresh} fresh / {r.tokens_reused} reused tokens"
    cause = f" · {r.surprise_cause}" if r.surprise_cause else ""
    if r.status == "failed":
        return f"{r.node} failed: {r.failure_reason or 'no failure_reason recorded'} · {tokens}{cause}"
    return f"{r.node} {r.status} · {tokens}{cause}"


def add_receipts(run: Run, state: ReactorState, parsed: Parsed) -> tuple[list[Event], set[int], bool]:
    """Append ``parsed``'s receipts to ``run`` (receipts, events, node summaries, chain
    warnings). Returns the new events, the indexes of nodes (= trace lines) that changed,
    and whether a node was added (the trace must be redrawn whole)."""
    events: list[Event] = []
    changed: set[int] = set()
    last: dict[int, Receipt] = {}
    added = False
    for w in parsed.warnings:
        if w not in run.warnings:
            run.warnings.append(w)
        if w not in state.ledger_warnings:
            state.ledger_warnings.append(w)
    state.chain_problems.extend(parsed.notes)
    for r in parsed.receipts:
        if r.node not in state.index:
            _new_node(run, state, r.node, state.topology.producers().get(r.node, []))
            added = True
        i = state.index[r.node]
        node = run.nodes[i]
        node.status = r.status
        node.receipts += 1
        node.tokens_fresh += r.tokens_fresh
        node.tokens_reused += r.tokens_reused
        node.failure_reason = (r.failure_reason or f"failed receipt #{r.seq} records no failure_reason") \
            if r.status == "failed" else None
        if node.chain_ok and r.node in state.cursor.chain.broken:
            node.chain_ok, node.chain_note = False, state.cursor.chain.broken[r.node]
        last[i] = r
        changed.add(i)
        run.receipts.append(r)
        event = Event(seq=len(run.events), kind=_KIND.get(r.status, EventKind.NOTE), text=_event_text(r),
                      step=r.node, name=r.node, status=r.status)
        run.events.append(event)
        events.append(event)
    state.receipts = len(run.receipts)
    for i, r in last.items():
        _set_version(run.nodes[i], state, r)
    for note in parsed.notes:
        state.chain_warnings += 1
        if state.chain_warnings <= MAX_CHAIN_WARNINGS:
            run.warnings.append(f"chain broken: {note}")
        elif state.chain_warnings == MAX_CHAIN_WARNINGS + 1:
            run.warnings.append("chain broken in more places; see each node's chain note")
    return events, changed, added


def _set_version(node: Node, state: ReactorState, last: Receipt | None = None) -> None:
    published = state.published.get(node.name)
    if published is not None and published.version:
        node.version = published.version
    elif last is not None and last.status != "failed" and last.version:
        node.version = last.version


def redraw_trace(run: Run, state: ReactorState) -> None:
    """Every node's trace line again (after a node was added)."""
    run.trace = [_trace_line(run, state, n) for n in run.nodes]


def _warn(run: Run, text: str) -> None:
    if text not in run.warnings:
        run.warnings.append(text)


def node_line(run: Run, state: ReactorState, index: int) -> None:
    """Redraw the trace line of node ``index``."""
    run.trace[index] = _trace_line(run, state, run.nodes[index])


def _trace_line(run: Run, state: ReactorState, node: Node) -> TraceLine:
    i = state.index[node.name]
    label = state.topology.labels.get(node.name)
    text = "  " * state.depth.get(node.name, 0) + node.name + (f" — {label}" if label and label != node.name else "")
    if node.producers:
        text += "  ← " + ", ".join(node.producers)
    note = node_note(node)
    published = state.published.get(node.name)
    rel = None
    if published is not None and published.file is not None:
        try:
            rel = str(published.file.relative_to(state.state_dir))
        except ValueError:
            rel = None
    return TraceLine(line=i + 1, text=text, state=_STATE.get(node.status or "", StatementState.PENDING),
                     note=note, binding=rel, step=node.name)


def _header(run: Run, state: ReactorState, config: Path | None) -> dict[str, str]:
    topo = state.topology
    header = {"state dir": str(state.state_dir), "nodes": str(len(run.nodes)), "edges": str(len(topo.edges)),
              "entry points": ", ".join(topo.entry_points) or "—", "receipts": str(len(run.receipts))}
    if topo.acyclic is not None:
        header["acyclic"] = "yes" if topo.acyclic else "no"
    if config is not None:
        header["config"] = str(config)
    return header


REGISTRY_SECTION = "Gateway cursors (registry.json)"


def set_registry_section(run: Run, state_dir: Path) -> None:
    """The "Gateway cursors" section from ``registry.json`` (dropped when it holds nothing)."""
    text = _registry_text(state_dir)
    sections = [s for s in run.sections if s.title != REGISTRY_SECTION]
    run.sections = sections + [Section(REGISTRY_SECTION, text)] if text else sections


def _registry_text(state_dir: Path) -> str | None:
    """``registry.json`` (the durable per-source gateway cursors that dedup arrivals,
    reactor.md, Connectors + gateways) as JSON, when it holds anything."""
    try:
        with open_regular(state_dir / "registry.json", root=run_root(state_dir)) as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not data:
        return None
    text = visible(json.dumps(data, indent=2, ensure_ascii=False))
    return f"```json\n{text[:16384]}\n```"


def _topology_text(topo: Topology) -> str:
    lines = [f"Entry points: {', '.join(topo.entry_points) or '—'}", "", "| subscriber | producer | facet |",
             "|---|---|---|"]
    lines += [f"| {e.subscriber} | {e.producer} | {e.facet or '—'} |" for e in topo.edges]
    return "\n".join(lines)


def set_cost(run: Run) -> None:
    """Token totals by ``surprise_cause`` into ``Run.metrics`` and the "Cost" section."""
    by: dict[str, dict[str, int]] = {}
    for r in run.receipts:
        row = by.setdefault(r.surprise_cause or "unknown", {"receipts": 0, "rendered": 0, "skipped": 0,
                                                             "failed": 0, "fresh": 0, "reused": 0})
        row["receipts"] += 1
        if r.status in ("rendered", "skipped", "failed"):
            row[r.status] += 1
        row["fresh"] += r.tokens_fresh
        row["reused"] += r.tokens_reused
    fresh = sum(v["fresh"] for v in by.values())
    reused = sum(v["reused"] for v in by.values())
    run.metrics = {"receipts": float(len(run.receipts)), "tokens_fresh": float(fresh), "tokens_reused": float(reused)}
    for cause, v in by.items():
        run.metrics[f"{cause}.tokens_fresh"] = float(v["fresh"])
        run.metrics[f"{cause}.tokens_reused"] = float(v["reused"])
    lines = [f"Total: {fresh} fresh / {reused} reused tokens over {len(run.receipts)} receipts.", "",
             "| surprise cause | receipts | rendered | skipped | failed | fresh tokens | reused tokens |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for cause, v in sorted(by.items(), key=lambda kv: -kv[1]["fresh"]):
        lines.append(f"| {cause} | {v['receipts']} | {v['rendered']} | {v['skipped']} | {v['failed']} | "
                     f"{v['fresh']} | {v['reused']} |")
    top = sorted((n for n in run.nodes if n.tokens_fresh), key=lambda n: -n.tokens_fresh)[:10]
    if top:
        lines += ["", "| node | receipts | fresh tokens | reused tokens |", "|---|---:|---:|---:|"]
        lines += [f"| {n.name} | {n.receipts} | {n.tokens_fresh} | {n.tokens_reused} |" for n in top]
    section = Section("Cost", "\n".join(lines))
    run.sections = [s for s in run.sections if s.title != "Cost"] + [section]


def set_times(run: Run) -> None:
    """The run's start and last change from its receipts' own times (the first and the last
    receipt that carries one), else ``None`` (unknown): never the files' times, which a copy
    or a clone makes new (issue 28). reactor.md's receipts carry no time of their own."""
    times = [r.time for r in run.receipts if r.time is not None]
    run.started = min(times) if times else None
    run.updated = max(times) if times else None


def set_status(run: Run, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
               observed: datetime | None = None) -> None:
    """Failed when the last receipt of any node failed; running while receipts arrive (seen
    arriving live within ``stale_after`` seconds, ``observed``, or the last receipt's own
    time that recent); completed (quiescent) otherwise. Never by the ledger file's time:
    a ledger copied or cloned a minute ago is not receiving receipts (issue 28)."""
    now = now or datetime.now(timezone.utc)
    set_times(run)
    failing = [n for n in run.nodes if n.status == "failed"]
    earlier = sum(1 for r in run.receipts if r.status == "failed") - len(failing)
    if failing:
        first = failing[0]
        last = next((r for r in reversed(run.receipts) if r.node == first.name), None)
        where = f" (receipt #{last.seq})" if last else ""
        more = f"; {len(failing) - 1} more node{'s' if len(failing) > 2 else ''} failing" if len(failing) > 1 else ""
        run.status, run.status_reason = RunStatus.FAILED, (
            f"the last receipt of {first.name}{where} failed: {first.failure_reason}{more}")
        return
    changed, evidence = (observed, "seen live") if observed is not None else (
        (run.updated, "per the receipt's own time") if run.updated is not None else (None, ""))
    age = (now - changed).total_seconds() if changed else None
    age_text = f"{human_age(age)} ago, {evidence}" if age is not None else "at an unknown time (receipts carry no time)"
    count = len(run.receipts)
    if count == 0:
        if age is not None and age <= stale_after:
            run.status, run.status_reason = RunStatus.RUNNING, f"compiled, no receipts yet; last change {age_text}"
        else:
            run.status, run.status_reason = RunStatus.UNKNOWN, "compiled, but the ledger holds no receipts"
        return
    recovered = f"; {earlier} earlier failed render{'s' if earlier != 1 else ''} recovered" if earlier > 0 else ""
    active = sum(1 for n in run.nodes if n.receipts)
    if age is not None and age <= stale_after:
        run.status, run.status_reason = RunStatus.RUNNING, (
            f"receipts arriving: {count} from {active} nodes, the last {age_text}{recovered}")
        return
    run.status, run.status_reason = RunStatus.COMPLETED, (
        f"quiescent: {count} receipts from {active} nodes, no node's last receipt failed; "
        f"last receipt {age_text}{recovered}")


def node_note(node: Node) -> str:
    """A node's trace-line note: status, receipts, tokens, short version, failure, chain."""
    if node.status is None:
        note = f"{node.kind}: no receipts yet"
    else:
        note = (f"{node.status} · {node.receipts} receipt{'s' if node.receipts != 1 else ''} · "
                f"{node.tokens_fresh} fresh / {node.tokens_reused} reused tokens")
    if node.version:
        note += f" · {short(node.version)}"
    if node.failure_reason:
        note += f" · {node.failure_reason}"
    if not node.chain_ok:
        note += " · chain broken"
    return note
