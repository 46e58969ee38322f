"""The compiled DAG of a Reactor (openprose-0.15 reactor.md; devtools fixtures' README:
``compile/topology.json`` is the flat TopologyWorldModel ``{nodes, edges, entry_points,
acyclic}``).

Two shapes are read: the flat one, and the CLI's wrapped one ``{contract_fingerprints,
topology: {nodes, edges, entry_points, acyclic}}``. A node is ``{node, contract_fingerprint,
wake_source}``; an edge ``{subscriber, producer, facet}``. Producers that are no topology node
(the *phantom* ingress of a gateway) are nodes too. ``compile/labels.json`` maps a node to a
display label where present.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun, run_root
from prose_tui.backends.common.text import open_regular
from prose_tui.backends.reactor.layout import LABELS, topology_path


@dataclass(slots=True)
class Edge:
    subscriber: str
    producer: str
    facet: str | None = None


@dataclass(slots=True)
class Topology:
    """``nodes`` in the order the file lists them; ``wake_source``/``contract`` per node;
    ``edges`` as written; ``entry_points``; ``acyclic`` as written (``None`` when absent);
    ``labels`` from labels.json. ``found`` is false when there was no topology file."""

    nodes: list[str] = field(default_factory=list)
    wake_source: dict[str, str] = field(default_factory=dict)
    contract: dict[str, str] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)
    acyclic: bool | None = None
    labels: dict[str, str] = field(default_factory=dict)
    found: bool = False

    def producers(self) -> dict[str, list[str]]:
        """Each subscriber's distinct producers, in edge order."""
        out: dict[str, list[str]] = {}
        for e in self.edges:
            lst = out.setdefault(e.subscriber, [])
            if e.producer not in lst:
                lst.append(e.producer)
        return out

    def phantoms(self) -> list[str]:
        """Edge producers that are no topology node (external ingress), in edge order."""
        known = set(self.nodes)
        out: list[str] = []
        for e in self.edges:
            if e.producer not in known and e.producer not in out:
                out.append(e.producer)
        return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_topology(state_dir: Path) -> tuple[Topology, list[str]]:
    """The topology of ``state_dir`` and warnings for what could not be read. Never raises."""
    topo = Topology()
    warnings: list[str] = []
    path = topology_path(state_dir)
    try:
        with open_regular(path, root=run_root(state_dir)) as fh:  # never a file outside the state dir
            raw = fh.read()
    except FileNotFoundError:
        return topo, ["no compile/topology.json: nodes are taken from the receipts only"]
    except OutsideRun:
        return topo, [f"compile/topology.json: {OUTSIDE_RUN}"]
    except OSError as exc:
        return topo, [f"compile/topology.json could not be read: {exc.strerror or exc}"]
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return topo, [f"compile/topology.json is not valid JSON ({exc}); nodes are taken from the receipts only"]
    if isinstance(data, dict) and isinstance(data.get("topology"), dict):
        fingerprints = data.get("contract_fingerprints")
        data = data["topology"]
        if isinstance(fingerprints, dict):
            topo.contract.update({k: v for k, v in fingerprints.items() if isinstance(v, str)})
    if not isinstance(data, dict):
        return topo, ["compile/topology.json holds no {nodes, edges} object; nodes are taken from the receipts only"]
    topo.found = True
    bad = 0
    for item in data.get("nodes") or []:
        name = _str(item.get("node") or item.get("name") or item.get("id")) if isinstance(item, dict) else _str(item)
        if name is None:
            bad += 1
            continue
        if name not in topo.wake_source and name not in topo.nodes:
            topo.nodes.append(name)
        if isinstance(item, dict):
            if _str(item.get("wake_source")):
                topo.wake_source[name] = item["wake_source"]
            if _str(item.get("contract_fingerprint")):
                topo.contract[name] = item["contract_fingerprint"]
    for item in data.get("edges") or []:
        sub = _str(item.get("subscriber")) if isinstance(item, dict) else None
        prod = _str(item.get("producer")) if isinstance(item, dict) else None
        if sub is None or prod is None:
            bad += 1
            continue
        topo.edges.append(Edge(sub, prod, _str(item.get("facet"))))
    topo.entry_points = [e for e in data.get("entry_points") or [] if isinstance(e, str)]
    if isinstance(data.get("acyclic"), bool):
        topo.acyclic = data["acyclic"]
    if bad:
        warnings.append(f"compile/topology.json: {bad} node or edge entries without a name were skipped")
    topo.labels = _labels(state_dir)
    return topo, warnings


def _labels(state_dir: Path) -> dict[str, str]:
    try:
        with open_regular(state_dir.joinpath(*LABELS), root=run_root(state_dir)) as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}


def order(names: list[str], producers: dict[str, list[str]]) -> tuple[list[str], dict[str, int], bool]:
    """``names`` in topological order (producers first; ties keep the given order), each
    node's depth (0 for a node with no known producer), and whether the graph was acyclic.
    Nodes on a cycle follow the others in the given order."""
    index = {n: i for i, n in enumerate(names)}
    pending = {n: [p for p in producers.get(n, []) if p in index and p != n] for n in names}
    subscribers: dict[str, list[str]] = {}
    for n, ps in pending.items():
        for p in ps:
            subscribers.setdefault(p, []).append(n)
    remaining = {n: len(ps) for n, ps in pending.items()}
    depth: dict[str, int] = {}
    ready = [n for n in names if remaining[n] == 0]
    out: list[str] = []
    heap = [(index[n], n) for n in ready]
    heapq.heapify(heap)
    while heap:
        _, n = heapq.heappop(heap)
        out.append(n)
        depth[n] = max((depth[p] + 1 for p in pending[n] if p in depth), default=0)
        for s in subscribers.get(n, []):
            remaining[s] -= 1
            if remaining[s] == 0:
                heapq.heappush(heap, (index[s], s))
    acyclic = len(out) == len(names)
    for n in names:
        if n not in depth:
            out.append(n)
            depth[n] = max((depth[p] + 1 for p in pending[n] if p in depth), default=0)
    return out, depth, acyclic
