"""How fast a big Reactor state dir opens and takes an appended receipt (openprose-0.15
reactor.md): prints figures, asserts nothing.

The generator writes a state dir as the Reactor SDK does (concepts/reactor.md, The receipt):
``compile/topology.json`` (a layered DAG fed by one gateway and its phantom ingress),
``receipts.json`` (one compact JSON array of key-sorted receipts, each with its canonical
``content_hash`` and the ``prev`` chain per node), and ``world-models/<hex(node)>/``
(``published.json`` plus the published ``OPWM1`` version). Waves of surprise: the ingress
emits, the gateway renders, each node renders when one of its producers rendered (else
skips); a node may fail and recover.

Timed: ``open_run`` of the state dir (the first screen: run list row and explorer need
nothing more), then ``apply`` after one receipt is appended by an atomic whole-file rewrite.

Usage: ``python benchmarks/bench_reactor.py [--receipts N] [--nodes K] [--repeat R]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any


def canonical_hash(receipt: dict[str, Any]) -> str:
    body = {k: v for k, v in receipt.items() if k != "content_hash"}
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def frame(files: dict[str, bytes]) -> bytes:
    """An ``OPWM1`` frame: magic, u32 count, then (u32 name length, name, u32 length, data)."""
    out = [b"OPWM1", struct.pack("<I", len(files))]
    for name, data in files.items():
        raw = name.encode("utf-8")
        out += [struct.pack("<I", len(raw)), raw, struct.pack("<I", len(data)), data]
    return b"".join(out)


def fp(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class Writer:
    """Writes one state dir the way a Reactor host does. ``receipts`` keeps the ledger;
    ``emit`` appends one receipt (chained to the node's previous one) and, unless ``write``
    is false, rewrites ``receipts.json`` atomically."""

    def __init__(self, state_dir: Path, nodes: list[str], edges: list[tuple[str, str, str]],
                 entry: str, ingress: str, wake: dict[str, str] | None = None) -> None:
        self.dir = state_dir
        self.nodes, self.edges, self.entry, self.ingress = nodes, edges, entry, ingress
        self.receipts: list[dict[str, Any]] = []
        self.last: dict[str, str] = {}
        self.truth: dict[str, str] = {}
        self.pending: dict[str, tuple[str, bytes]] = {}  # node -> (version, frame) not yet written
        self.published: dict[str, str] = {}
        (state_dir / "compile").mkdir(parents=True, exist_ok=True)
        wake = wake or {}
        topology = {
            "nodes": [{"node": n, "contract_fingerprint": fp("contract " + n),
                       "wake_source": wake.get(n, "external" if n == entry else "input")} for n in nodes],
            "edges": [{"subscriber": s, "producer": p, "facet": f} for s, p, f in edges],
            "entry_points": [entry],
            "acyclic": True,
        }
        (state_dir / "compile" / "topology.json").write_text(json.dumps(topology, indent=2))

    def emit(self, node: str, status: str, *, cause: str = "input", fresh: int = 0, reused: int = 0,
             truth: str | dict[str, str] | None = None, reason: str | None = None,
             write: bool = True) -> dict[str, Any]:
        """Append one receipt. ``truth`` is what a render publishes (one ``truth.json`` text,
        or ``{file name: text}``); ``reason`` goes to ``semantic_diff.failure_reason``."""
        if status == "rendered" and truth is not None:
            self.truth[node] = truth
        current = self.truth.get(node, "")
        receipt: dict[str, Any] = {
            "contract_fingerprint": fp("contract " + node),
            "cost": {"model": "fixture-model" if fresh else "none", "provider": "fixture" if fresh else "none",
                     "surprise_cause": cause, "tokens": {"fresh": fresh, "reused": reused}},
            "fingerprints": {"@atomic": self.version_of(node, status, current)},
            "hash_algorithm": "sha256",
            "input_fingerprints": [],
            "node": node,
            "prev": self.last.get(node),
            "schema": "openprose.receipt",
            "semantic_diff": {"failure_reason": reason} if reason else {},
            "sig": {"null_reason": "no-signer-adapter-configured", "scheme": "none"},
            "status": status,
            "wake": {"refs": [], "source": "external" if cause == "external" else cause},
        }
        receipt["content_hash"] = canonical_hash(receipt)
        self.last[node] = receipt["content_hash"]
        self.receipts.append(receipt)
        if write:
            self.write_ledger()
        return receipt

    def version_of(self, node: str, status: str, truth: str | dict[str, str]) -> str:
        """The node's world-model version after this receipt: a new one when it rendered,
        else the last published one (a skip or failure publishes nothing)."""
        if status == "rendered" and truth:
            return self.publish(node, truth)
        return self.published.get(node) or fp("")

    def publish(self, node: str, truth: str | dict[str, str]) -> str:
        """``truth`` as the node's published version (written with the ledger); returns its
        id (``sha256:`` + the SHA-256 of the frame)."""
        files = {"truth.json": truth} if isinstance(truth, str) else truth
        data = frame({name: text.encode("utf-8") for name, text in files.items()})
        version = "sha256:" + hashlib.sha256(data).hexdigest()
        self.pending[node] = (version, data)
        self.published[node] = version
        return version

    def write_world_models(self) -> None:
        for node, (version, data) in self.pending.items():
            node_dir = self.dir / "world-models" / node.encode("utf-8").hex()
            (node_dir / "versions").mkdir(parents=True, exist_ok=True)
            target = node_dir / "versions" / (version.replace(":", "_") + ".bin")
            if not target.exists():
                target.write_bytes(data)
            tmp = node_dir / ".published.json.tmp"
            tmp.write_text(json.dumps({"version": version, "fingerprints": {"@atomic": version}}))
            os.replace(tmp, node_dir / "published.json")
        self.pending.clear()

    def write_ledger(self) -> None:
        """Write the world models published since the last write, then rewrite receipts.json
        whole, atomically (a temporary file renamed over it)."""
        self.write_world_models()
        tmp = self.dir / ".receipts.json.tmp"
        tmp.write_text("[" + ",".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                                      for r in self.receipts) + "]", encoding="utf-8")
        os.replace(tmp, self.dir / "receipts.json")


def layered(node_count: int) -> tuple[list[str], list[tuple[str, str, str]], str, str]:
    """A DAG: ``ingress.feed`` (phantom) -> ``gateway.inbox`` -> layers of four nodes, each
    subscribing to one or two nodes of the layer before."""
    ingress, gateway = "ingress.feed", "gateway.inbox"
    nodes = [gateway]
    edges = [(gateway, ingress, "inbox")]
    previous = [gateway]
    i = 0
    while len(nodes) < node_count:
        layer = []
        for k in range(min(4, node_count - len(nodes))):
            name = f"responsibility.n{i:03d}"
            i += 1
            edges.append((name, previous[k % len(previous)], "facet-a"))
            if len(previous) > 1:
                edges.append((name, previous[(k + 1) % len(previous)], "facet-b"))
            layer.append(name)
            nodes.append(name)
        previous = layer
    return nodes, edges, gateway, ingress


def build(state_dir: Path, receipts: int, node_count: int = 40) -> Writer:
    """A state dir with about ``receipts`` receipts over ``node_count`` nodes (a node of the
    third layer fails once mid-way and recovers)."""
    nodes, edges, gateway, ingress = layered(node_count)
    w = Writer(state_dir, nodes, edges, gateway, ingress)
    producers: dict[str, list[str]] = {}
    for s, p, _ in edges:
        producers.setdefault(s, []).append(p)
    wave = 0
    flaky = nodes[min(9, len(nodes) - 1)]
    while len(w.receipts) < receipts:
        wave += 1
        w.emit(ingress, "rendered", cause="external", truth=f'{{"items":{wave}}}', write=False)
        w.emit(gateway, "rendered", cause="external", fresh=120, reused=300, truth=f'{{"wave":{wave}}}', write=False)
        moved = {ingress, gateway}
        for n in nodes[1:]:
            if len(w.receipts) >= receipts:
                break
            hit = any(p in moved for p in producers.get(n, [])) and zlib.crc32(f"{n}/{wave}".encode()) % 3 != 0
            if n == flaky and wave == 3:
                w.emit(n, "failed", fresh=0, reused=0, reason="postcondition unmet: summary is empty", write=False)
            elif hit:
                moved.add(n)
                w.emit(n, "rendered", fresh=200 + len(n) * wave % 400, reused=280,
                       truth=json.dumps({"node": n, "wave": wave}), write=False)
            else:
                w.emit(n, "skipped", write=False)
    w.write_ledger()
    return w


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--receipts", type=int, default=5000)
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    from prose_tui.backends import open_run
    from prose_tui.backends.registry import backend_of

    with tempfile.TemporaryDirectory(prefix="bench-reactor-") as tmp:
        state_dir = Path(tmp) / "project" / ".reactor"
        t0 = time.perf_counter()
        w = build(state_dir, args.receipts, args.nodes)
        size = (state_dir / "receipts.json").stat().st_size
        print(f"generated {len(w.receipts)} receipts over {args.nodes} nodes "
              f"({size / 1e6:.1f} MB receipts.json) in {time.perf_counter() - t0:.2f} s")
        opens, cpu, parse = [], [], []
        run = None
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            run = open_run(state_dir)
            opens.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            t = time.perf_counter()
            json.loads((state_dir / "receipts.json").read_bytes())
            parse.append(time.perf_counter() - t)
        assert run is not None
        print(f"open {len(run.receipts)} receipts (first screen): median {statistics.median(opens) * 1000:.0f} ms, "
              f"best {min(opens) * 1000:.0f} ms, worst {max(opens) * 1000:.0f} ms; CPU median "
              f"{statistics.median(cpu) * 1000:.0f} ms (target <= 300 ms)")
        print(f"  yardstick: json.loads of receipts.json alone, median {statistics.median(parse) * 1000:.0f} ms "
              f"(open = {statistics.median(opens) / statistics.median(parse):.1f} x a bare parse)")
        backend = backend_of(run)
        applies, rewrites = [], []
        for k in range(args.repeat):
            t = time.perf_counter()
            w.emit(w.entry, "rendered", cause="external", fresh=100, reused=10, truth=f'{{"live":{k}}}')
            rewrites.append(time.perf_counter() - t)
            t = time.perf_counter()
            delta = backend.apply(run, {state_dir / "receipts.json"})
            applies.append(time.perf_counter() - t)
            assert len(delta.events) == 1 and delta.trace_lines is not None, "apply did not read only the tail"
        print(f"apply one appended receipt: median {statistics.median(applies) * 1000:.1f} ms, "
              f"worst {max(applies) * 1000:.1f} ms (the writer's whole-file rewrite took "
              f"{statistics.median(rewrites) * 1000:.1f} ms)")
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
