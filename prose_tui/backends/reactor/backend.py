"""The Reactor backend: a state dir (openprose-0.15 reactor.md) behind the one protocol.

Claims a state dir (``compile/topology.json``, with or without ``receipts.json`` yet), a
project folder whose ``reactor.yml`` names an existing state dir, or a ``receipts.json``.
``apply`` reads only the receipts appended since the last read (see :mod:`.ledger`); a
changed world model re-reads that node's ``published.json``; a changed topology reads the
state dir again.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.protocol import NotARunError, RunBackend, Value
from prose_tui.backends.reactor.assemble import (
    ReactorState,
    add_receipts,
    build,
    node_line,
    published_binding,
    redraw_trace,
    set_cost,
    set_registry_section,
    set_status,
)
from prose_tui.backends.reactor.frames import (
    read_frame,
    render_world_model,
    version_file,
)
from prose_tui.backends.reactor.history import ReactorHistory
from prose_tui.backends.reactor.layout import (
    RECEIPTS,
    WORLD_MODELS,
    node_dir_name,
    node_of_dir,
    state_dir_of,
)
from prose_tui.backends.reactor.ledger import (
    Cursor,
    Parsed,
    read_ledger,
    read_tail,
    short,
)
from prose_tui.backends.reactor.topology import read_topology
from prose_tui.model import Backend, Binding, ChainReport, Delta, Run, RunStatus

MAX_KEPT = 64  # state dirs whose reading state is kept for live updates


class ReactorBackend(RunBackend):
    """Reactor state dirs. Keeps, per state dir, the ledger cursor and node index of the last
    ``open`` so that ``apply`` parses only appended receipts."""

    kind: ClassVar[Backend] = Backend.REACTOR
    name: ClassVar[str] = "reactor"
    priority: ClassVar[int] = 20

    def __init__(self) -> None:
        self._states: OrderedDict[Path, ReactorState] = OrderedDict()
        self._lock = threading.Lock()

    def claims(self, path: Path) -> bool:
        return state_dir_of(path)[0] is not None

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        state_dir, config, warning = state_dir_of(path)
        if state_dir is None:
            raise NotARunError(f"{path}: not a Reactor state dir (no compile/topology.json or receipts.json)")
        topology, warnings = read_topology(state_dir)
        if warning:
            warnings.insert(0, warning)
        ledger = state_dir / RECEIPTS
        try:
            cursor, parsed = read_ledger(ledger)
        except FileNotFoundError:
            cursor, parsed = Cursor(ledger), Parsed()
            cursor.end = -1  # nothing to tail yet: the first write is read whole (the status says so)
        except OSError as exc:
            cursor, parsed = Cursor(ledger), Parsed()
            warnings.append(f"receipts.json could not be read: {exc.strerror or exc}")
        run, state = build(state_dir, config, topology, cursor, parsed, warnings)
        set_status(run, now=now, stale_after=stale_after, observed=observed)
        with self._lock:
            self._states[state_dir] = state
            self._states.move_to_end(state_dir)
            while len(self._states) > MAX_KEPT:
                self._states.popitem(last=False)
        return run

    def _state(self, run: Run) -> ReactorState | None:
        with self._lock:
            return self._states.get(run.path)

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        state = self._state(run)
        if state is None or not state.belongs_to(run) or any(_needs_reopen(state.state_dir, p) for p in paths):
            return Delta.whole(self.open(run.path, now=now, stale_after=stale_after, observed=observed), paths)
        delta = Delta(run, set(paths))
        before = (run.status, run.status_reason)
        if state.state_dir / RECEIPTS in paths:
            parsed = read_tail(state.cursor) if state.cursor.end >= 0 else None
            if parsed is None:
                return Delta.whole(self.open(run.path, now=now, stale_after=stale_after, observed=observed), paths)
            events, changed, added = add_receipts(run, state, parsed)
            delta.events = events
            if added:
                redraw_trace(run, state)
                delta.trace_lines = None
            else:
                for i in changed:
                    node_line(run, state, i)
                delta.trace_lines = changed
            if events:
                run.header["receipts"] = str(len(run.receipts))
                sec, nsec = divmod(state.cursor.mtime_ns, 10**9)
                run.state_mtime = sec + nsec * 1e-9  # as os.stat's st_mtime: the same float open() gives
                set_cost(run)
        if state.state_dir / "registry.json" in paths:
            set_registry_section(run, state.state_dir)
        for node in sorted({n for p in paths if (n := _world_model_node(state.state_dir, p))}):
            self._refresh_world_model(run, state, node, delta)
        set_status(run, now=now, stale_after=stale_after, observed=observed)
        delta.status = (run.status, run.status_reason) != before
        return delta

    def _refresh_world_model(self, run: Run, state: ReactorState, node: str, delta: Delta) -> None:
        old = next((b for b in run.bindings if b.name == node), None)
        fresh = published_binding(run, state, node)
        run.bindings = [b for b in run.bindings if b.name != node]
        if fresh is not None:
            run.bindings.append(fresh)
            delta.bindings.add(fresh.path)
        if old is not None:
            delta.bindings.add(old.path)
        i = state.index.get(node)
        if i is not None:
            published = state.published.get(node)
            if published is not None and published.version:
                run.nodes[i].version = published.version
            node_line(run, state, i)
            if delta.trace_lines is not None:
                delta.trace_lines.add(i)

    def status(self, run: Run, *, now: datetime, stale_after: float = DEFAULT_STALE_AFTER,
               observed: datetime | None = None) -> tuple[RunStatus, str]:
        """``(status, reason)`` of the state dir now, by the same rule as ``open`` (a quiet
        ledger is quiescent, not interrupted); ``run`` is left as it was."""
        before = (run.status, run.status_reason)
        set_status(run, now=now, stale_after=stale_after, observed=observed)
        status = (run.status, run.status_reason)
        run.status, run.status_reason = before
        return status

    def read_value(self, run: Run, binding: Binding) -> Value:
        """The published world model ``binding`` names, decoded from its ``OPWM1`` frame
        (Markdown; a bad frame gives a warning and a hex dump of the raw bytes)."""
        version = (binding.fields or {}).get("version") or None
        if binding.outside:
            return Value(text="", note=f"world model of {binding.name}", warning=OUTSIDE_RUN)
        return _frame_value(binding.path, binding.name, version, run.root)

    def read_version(self, run: Run, node: str, version: str) -> Value:
        """Any kept version of ``node``'s world model (e.g. the one a receipt's ``@atomic``
        fingerprint names): ``world-models/<hex(node)>/versions/<version>.bin`` decoded; a
        warning when the state dir did not keep it."""
        path = version_file(run.path / WORLD_MODELS / node_dir_name(node), version)
        if not path.is_file():
            return Value(text="", note=f"world model of {node} · version {short(version)}",
                         warning=f"version {short(version)} of {node} is not kept in the state dir")
        return _frame_value(path, node, version, run.root)

    def chain(self, run: Run) -> ChainReport:
        """The check :mod:`.ledger` made while reading ``receipts.json``: each receipt's hash
        recomputed and its ``prev`` compared with its node's previous receipt (reactor.md
        chains per node). ``warnings`` are the ledger's read faults (a truncated array, an
        element that names no node). A run this backend no longer keeps state for is read again."""
        state = self._state(run)
        if state is None or not state.belongs_to(run):
            self.open(run.path)
            state = self._state(run)
        if state is None:  # pragma: no cover - open() always keeps the state it built
            return ChainReport(ok=True, checked=0)
        problems = tuple(state.chain_problems)
        return ChainReport(ok=not problems, checked=state.cursor.count, problems=problems,
                           warnings=tuple(state.ledger_warnings))

    def history_source(self) -> ReactorHistory:
        """Nodes redrawn as of a cursor (:mod:`.history`)."""
        return _HISTORY


_HISTORY = ReactorHistory()


def _frame_value(path: Path, node: str, version: str | None, root: Path | None) -> Value:
    note = f"world model of {node} · version {short(version)}" if version else f"world model of {node}"
    try:
        files, raw, error = read_frame(path, root)
    except OutsideRun:
        return Value(text="", note=note, warning=OUTSIDE_RUN)
    except OSError as exc:
        return Value(text="", note=note, warning=f"{path.name} could not be read: {exc.strerror or exc}")
    names = ", ".join(f.name for f in files)
    return Value(text=render_world_model(files, raw, error), note=f"{note} · {names}" if names else note,
                 warning=f"bad OPWM1 frame: {error}; raw bytes shown" if error else None)


def _needs_reopen(state_dir: Path, path: Path) -> bool:
    """A changed topology or labels file changes every node: read the state dir again."""
    try:
        rel = path.relative_to(state_dir).parts
    except ValueError:
        return False
    return len(rel) >= 2 and rel[0] == "compile"


def _world_model_node(state_dir: Path, path: Path) -> str | None:
    try:
        rel = path.relative_to(state_dir).parts
    except ValueError:
        return None
    if len(rel) >= 3 and rel[0] == WORLD_MODELS and (rel[2] == "published.json" or rel[2] == "versions"):
        return node_of_dir(rel[1])
    return None
