"""A 0.15 skill run's published world model, compiled intent and error files.

Source: openprose-0.15 ``state/filesystem.md``: ``world-model/caller/{name}.md`` (caller
inputs, a ``binding: input`` / ``source: caller`` header, ``---``, the value; run-typed
inputs carry ``type: run``), ``world-model/{node}/…`` (what a node published: plain Markdown,
possibly in ``published/<facet>/`` subtrees) with ``.version`` (the content address of the
committed version), ``workspace/{node}/__error.md`` (``# Error: {name}`` then the text);
``compiler/ir-v0.md`` for ``compiled-intent.json`` (``topology.nodes[].node``,
``topology.edges[] {subscriber, producer, facet}``, ``entry_points``). Never raises for a
readable folder: what does not parse becomes a warning.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prose_tui.backends.common.bindings import read_binding
from prose_tui.backends.common.contained import OUTSIDE_RUN, inside, run_root
from prose_tui.backends.common.text import decode, open_regular, visible
from prose_tui.model import Binding

__all__ = ["CompiledIntent", "ErrorFile", "read_compiled_intent", "read_error", "world_model_bindings"]

CALLER = "caller"
MAX_WORLD_MODEL_DEPTH = 8
MAX_WORLD_MODEL_FILES = 5000
MAX_INTENT_BYTES = 8 * 1024 * 1024
_ERROR_TITLE = re.compile(r"^#\s*Error\s*:?\s*(?P<name>.*)$", re.IGNORECASE)


@dataclass(slots=True)
class IntentNode:
    """One node of the compiled topology: its name, wake source and the nodes it reads."""

    name: str
    wake_source: str | None = None
    producers: list[str] = field(default_factory=list)
    facets: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CompiledIntent:
    """``compiled-intent.json`` as far as a viewer needs it; ``nodes`` in file order."""

    nodes: list[IntentNode] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def node(self, name: str) -> IntentNode | None:
        return next((n for n in self.nodes if n.name == name), None)


def read_compiled_intent(path: Path, root: Path | None = None) -> CompiledIntent | None:
    """The compiled intent at ``path``; ``None`` when the file does not exist.

    Accepts the IR envelope (``{"topology": {...}}``) and a bare topology (``{"nodes",
    "edges"}``), node entries as objects (``node``/``name``/``id``) or strings. A file
    outside ``root`` (the run's root; default the file's folder resolved) is not read.
    """
    try:
        with open_regular(path, root=root or run_root(path.parent)) as fh:
            raw = fh.read(MAX_INTENT_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return CompiledIntent(warnings=[f"cannot read {path.name}: {exc.strerror or exc}"])
    intent = CompiledIntent()
    try:
        data = json.loads(decode(raw))
    except ValueError as exc:
        intent.warnings.append(f"{path.name} is not JSON ({exc.__class__.__name__}); shown raw")
        return intent
    if not isinstance(data, dict):
        intent.warnings.append(f"{path.name} is not a JSON object; shown raw")
        return intent
    raw_topology = data.get("topology")
    topology: dict[str, Any] = raw_topology if isinstance(raw_topology, dict) else data
    by_name: dict[str, IntentNode] = {}
    for entry in _list(topology.get("nodes")):
        name = _node_name(entry)
        if name and name not in by_name:
            wake = entry.get("wake_source") if isinstance(entry, dict) else None
            by_name[name] = IntentNode(name, wake_source=str(wake) if wake else None)
    for edge in _list(topology.get("edges")):
        if not isinstance(edge, dict):
            continue
        sub, prod = edge.get("subscriber"), edge.get("producer")
        if not sub or not prod:
            continue
        node = by_name.setdefault(str(sub), IntentNode(str(sub)))
        if str(prod) not in node.producers:
            node.producers.append(str(prod))
    for canon in _list(data.get("canonicalizers")):
        if isinstance(canon, dict) and canon.get("node") in by_name and isinstance(canon.get("facets"), list):
            by_name[canon["node"]].facets = [str(f) for f in canon["facets"]]
    intent.nodes = list(by_name.values())
    intent.entry_points = [str(e) for e in _list(topology.get("entry_points")) if e]
    if not intent.nodes:
        intent.warnings.append(f"{path.name} names no topology nodes")
    return intent


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _node_name(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry or None
    if isinstance(entry, dict):
        for key in ("node", "name", "id"):
            if entry.get(key):
                return str(entry[key])
    return None


def read_version(node_dir: Path, root: Path | None = None) -> str | None:
    """The content address in ``{node_dir}/.version`` (first non-blank line), or ``None``
    (also for a file outside ``root``, default ``node_dir`` resolved)."""
    try:
        with open_regular(node_dir / ".version", root=root or run_root(node_dir)) as fh:
            text = decode(fh.read(4096))
    except OSError:
        return None
    for line in text.splitlines():
        if line.strip():
            return visible(line.strip())
    return None


def world_model_bindings(run_dir: Path, warnings: list[str], root: Path | None = None) -> list[Binding]:
    """Caller inputs and published outputs under ``world-model/`` as bindings.

    Inputs: ``service="caller"``, kind ``input``. Outputs: ``service`` the node, kind
    ``output``, ``name`` the file's path inside the node folder without its suffix
    (``findings``, ``published/funding/events``); ``fields["version"]`` the node's content
    address from ``.version`` (``fields["node"]`` the node). A node folder without
    ``.version`` gets a warning on its bindings: published files with no committed version.
    A file (or ``world-model/`` itself) outside ``root`` (default ``run_dir`` resolved) is
    listed ``outside`` and not read.
    """
    top = root or run_root(run_dir)
    root = run_dir / "world-model"
    if not root.is_dir():
        return []
    if not inside(root, top):
        warnings.append(f"world-model/: {OUTSIDE_RUN}")
        return []
    out: list[Binding] = []
    try:
        nodes = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    except OSError as exc:
        warnings.append(f"cannot list world-model/: {exc.strerror or exc}")
        return []
    for node_dir in nodes:
        version = None if node_dir.name == CALLER else read_version(node_dir, top)
        for path in _files(node_dir):
            binding = read_binding(path, root, top)
            rel = path.relative_to(node_dir)
            binding.service = node_dir.name
            if node_dir.name == CALLER:
                binding.kind = binding.kind or "input"
                binding.source = binding.source or CALLER
            else:
                binding.name = rel.with_suffix("").as_posix() if len(rel.parts) > 1 else binding.name
                binding.kind = binding.kind or "output"
                fields = dict(binding.fields or {})
                fields["node"] = node_dir.name
                if version:
                    fields["version"] = version
                binding.fields = fields
                if binding.warning and binding.warning.startswith("no binding header"):
                    binding.warning = None  # published artifacts are plain Markdown by spec
                if version is None and binding.warning is None and not binding.outside:
                    binding.warning = f"world-model/{node_dir.name}/ has no .version: not a committed version"
            out.append(binding)
            if len(out) >= MAX_WORLD_MODEL_FILES:
                warnings.append(f"world-model/ has over {MAX_WORLD_MODEL_FILES} files; the rest are not listed")
                return out
    return out


def _files(node_dir: Path) -> list[Path]:
    found: list[Path] = []
    base = len(node_dir.parts)
    for dirpath, dirnames, filenames in os.walk(node_dir, followlinks=False):
        depth = len(Path(dirpath).parts) - base
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if depth < MAX_WORLD_MODEL_DEPTH else []
        for name in sorted(filenames):
            if not name.startswith("."):
                found.append(Path(dirpath) / name)
    return found


@dataclass(slots=True)
class ErrorFile:
    """``workspace/{node}/__error.md``: the error's name and its whole text."""

    node: str
    name: str | None
    text: str
    path: Path

    @property
    def summary(self) -> str:
        """``name: first line of the description`` (or whichever of the two exists)."""
        body = [ln.strip() for ln in self.text.splitlines() if ln.strip() and not _ERROR_TITLE.match(ln.strip())]
        first = body[0] if body else ""
        if self.name and first:
            return f"{self.name}: {first}"
        return self.name or first or "(empty __error.md)"


def read_error(run_dir: Path, node: str, root: Path | None = None) -> ErrorFile | None:
    """The node's ``workspace/{node}/__error.md``, or ``None`` when it has none (or it lies
    outside ``root``, default ``run_dir`` resolved)."""
    path = run_dir / "workspace" / node / "__error.md"
    try:
        with open_regular(path, root=root or run_root(run_dir)) as fh:
            text = visible(decode(fh.read(64 * 1024)))
    except OSError:
        return None
    name = None
    for line in text.splitlines():
        if m := _ERROR_TITLE.match(line.strip()):
            name = m.group("name").strip() or None
            break
    return ErrorFile(node=node, name=name, text=text, path=path)


def error_nodes(run_dir: Path) -> list[str]:
    """Nodes whose workspace holds an ``__error.md``, sorted."""
    try:
        return sorted(p.name for p in (run_dir / "workspace").iterdir()
                      if p.is_dir() and (p / "__error.md").is_file())
    except OSError:
        return []
