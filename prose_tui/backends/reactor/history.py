"""What a Reactor state dir knows of its past (``RunBackend.history_source``, issue 30).

A Reactor's events are its receipts (openprose-0.15 reactor.md; :mod:`.ledger`), so
:mod:`prose_tui.history` needs only this: the run as of a cursor drawn as a Reactor draws
itself (:mod:`.assemble`): each node's row with its status and note then, the world-model
version it had published by then (read from ``versions/`` where the state dir kept it),
the cost of the receipts so far, and the status by the Reactor's own rule. No writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable

from prose_tui.backends.protocol import Revision
from prose_tui.backends.reactor.assemble import node_note, set_cost
from prose_tui.backends.reactor.frames import version_file
from prose_tui.backends.reactor.layout import WORLD_MODELS, node_dir_name
from prose_tui.backends.reactor.ledger import short
from prose_tui.model import Binding, Frame, Node, Run, RunStatus, StatementState, TraceLine

__all__ = ["ReactorHistory"]


class ReactorHistory:
    """The Reactor backend's :class:`~prose_tui.backends.protocol.HistorySource`: a state
    dir has no state file to journal nor a log to cut; its nodes are redrawn as of a cursor."""

    def keeps_own_history(self, head: str) -> bool:
        """Always true: the receipts are the history (nothing of a Reactor is journaled)."""
        return True

    def revision(self, text: str, key: Hashable | None = None) -> Revision:
        """A Reactor keeps no state-file revisions: an empty one."""
        return Revision()

    def log_prefix(self, run: Run, lines: int) -> tuple[list[TraceLine], list[Frame]] | None:
        """``None``: a Reactor's trace is its node rows, not a log."""
        return None

    def nodes_at(self, out: Run, run: Run, states: dict[str, StatementState], rendered: set[str],
                 cursor: int, total: int) -> None:
        """Node rows, published versions, cost, the ``receipts`` header and the status as of
        event ``cursor`` of ``total``."""
        by_name = {n.name: n for n in out.nodes}
        out.trace = [_node_line(run, t, by_name, states, rendered) for t in out.trace]
        live = {n.name: n.version for n in run.nodes}
        out.bindings = [_published_then(run, b, by_name, live) for b in out.bindings]
        set_cost(out)
        out.header["receipts"] = str(len(out.receipts))
        _status(out, run, cursor, total)


def _node_line(run: Run, t: TraceLine, nodes: dict[str, Node], states: dict[str, StatementState],
               rendered: set[str]) -> TraceLine:
    """A node's row (``step`` is the node) as of then; other lines as they are."""
    name = t.step
    if name is None or name not in nodes:
        return t
    node = nodes[name]
    binding = None
    if name in rendered and node.version:
        path = version_file(run.path / WORLD_MODELS / node_dir_name(name), node.version)
        binding = path.relative_to(run.path).as_posix() if path.is_file() else t.binding
    return dataclasses.replace(t, state=states[name], note=node_note(node), binding=binding)


def _published_then(run: Run, b: Binding, nodes: dict[str, Node], live: dict[str, str | None]) -> Binding:
    """A node's published binding as of then: the version it had published by the cursor,
    read from ``versions/`` where the state dir kept it (else the live one, with a warning
    saying so)."""
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


def _status(out: Run, run: Run, cursor: int, total: int) -> None:
    """The Reactor's rule (``assemble.set_status``) as of the cursor: failed while the last
    receipt of some node failed, else running (receipts arriving)."""
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
