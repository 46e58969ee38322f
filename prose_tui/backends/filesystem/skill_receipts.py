"""What a 0.15 skill run's receipts say about the run: its nodes, token totals and history.

Source: openprose-0.15 ``state/filesystem.md`` (receipts, error files) and
``concepts/reactor.md`` (the receipt); FORMATS.md generation 6. Shared by the full read of a
run (:func:`~prose_tui.backends.filesystem.skill.apply_skill`) and the live tail that
applies ledger appends (:mod:`~prose_tui.backends.filesystem.skill_live`), so both derive the
same nodes, metrics and receipt events from one :class:`~.receipts.Ledger`.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from prose_tui.backends.filesystem.receipts import Ledger, chain_break
from prose_tui.backends.filesystem.world_model import CALLER, CompiledIntent, ErrorFile, read_version
from prose_tui.model import Event, EventKind, Node, Receipt, Run

_RECEIPT_KINDS = {"rendered": EventKind.RECEIPT_RENDERED, "skipped": EventKind.RECEIPT_SKIPPED,
                  "failed": EventKind.RECEIPT_FAILED}
_RECEIPT_MARKS = {"rendered": "✓", "skipped": "∅", "failed": "✗"}


def _failure_text(receipt: Receipt | None, error: ErrorFile | None) -> str | None:
    """A failed node's text: the receipt's ``failure_reason`` and the error file's summary,
    neither repeated in the other; ``None`` when there is neither."""
    parts: list[str] = []
    if receipt is not None and receipt.failure_reason:
        parts.append(receipt.failure_reason.strip())
    if error is not None:
        text = error.summary  # "no-results: No relevant sources found", fuller than the reason
        parts = [p for p in parts if p not in text]
        if not any(text in p for p in parts):
            parts.append(text)
    return " — ".join(parts) or None


def summarise_nodes(run_dir: Path, ledger: Ledger, intent: CompiledIntent | None,
                    errors: dict[str, ErrorFile], root: Path | None = None) -> list[Node]:
    """One :class:`~prose_tui.model.Node` per node of the run: the compiled intent's in its
    order, then those only in the ledger, in ``world-model/`` or with an ``__error.md``.
    Each has its last receipt's status, receipt count, published version (``.version``,
    read inside ``root``), token totals, producers and wake source; a failed node its
    failure text (the receipt's ``failure_reason`` and ``workspace/{node}/__error.md``,
    also written onto that receipt) and a broken chain its note."""
    names: list[str] = [n.name for n in intent.nodes] if intent else []
    names += [n for n in ledger.order if n not in names]
    wm = run_dir / "world-model"
    try:
        published = sorted(p.name for p in wm.iterdir() if p.is_dir() and p.name != CALLER and not p.name.startswith("."))
    except OSError:
        published = []
    names += [n for n in published + list(errors) if n not in names]
    nodes: list[Node] = []
    for name in names:
        chain = ledger.by_node.get(name, [])
        last = chain[-1] if chain else None
        spec = intent.node(name) if intent else None
        last_failed = next((r for r in reversed(chain) if r.status == "failed"), None)
        node = Node(
            name=name,
            status=last.status if last else None,
            receipts=len(chain),
            version=(read_version(wm / name, root) if name in published else None)
            or next((r.version for r in reversed(chain) if r.status == "rendered" and r.version), None),
            tokens_fresh=sum(r.tokens_fresh for r in chain),
            tokens_reused=sum(r.tokens_reused for r in chain),
            producers=list(spec.producers) if spec else [],
            kind=spec.wake_source if spec else None,
        )
        if (last is not None and last.status == "failed") or (last is None and name in errors):
            node.failure_reason = _failure_text(last_failed, errors.get(name))
            if last_failed is not None:
                last_failed.failure_reason = node.failure_reason
            if last is None:
                node.status = "failed"
        elif last_failed is not None:  # failed once, rendered since: keep that failure's text
            last_failed.failure_reason = _failure_text(last_failed, errors.get(name))
        note = chain_break(chain)
        if note:
            node.chain_ok, node.chain_note = False, note
        nodes.append(node)
    return nodes


def add_receipt_metrics(run: Run) -> None:
    """Add the receipts' counts to ``run.metrics``: ``receipts``, ``receipts_{status}`` and
    ``tokens_fresh``/``tokens_reused`` summed over every receipt (floats). Nothing without
    receipts."""
    if not run.receipts:
        return
    by_status: dict[str, int] = defaultdict(int)
    for r in run.receipts:
        by_status[r.status] += 1
    run.metrics["receipts"] = float(len(run.receipts))
    for status, count in by_status.items():
        run.metrics[f"receipts_{status}"] = float(count)
    run.metrics["tokens_fresh"] = float(sum(r.tokens_fresh for r in run.receipts))
    run.metrics["tokens_reused"] = float(sum(r.tokens_reused for r in run.receipts))


def receipt_text(receipt: Receipt, of: int) -> str:
    """The event text of one receipt: ``researcher receipt 2/3 (1,200 fresh + 300 reused
    tokens) ✗ no-results: No relevant sources found``. The words after the mark are the
    failure text for a failed receipt (what jump-to-failure shows), the version for a
    rendered one."""
    cost = f"{receipt.tokens_fresh:,} fresh + {receipt.tokens_reused:,} reused tokens"
    if receipt.surprise_cause:
        cost += f", woken by {receipt.surprise_cause}"
    mark = _RECEIPT_MARKS.get(receipt.status, "·")
    if receipt.status == "failed":
        outcome = receipt.failure_reason or "failed (no failure_reason, no __error.md)"
    elif receipt.status == "rendered":
        outcome = f"rendered {receipt.version}" if receipt.version else "rendered"
    else:
        outcome = receipt.status
    return f"{receipt.node} receipt {receipt.seq + 1}/{of} ({cost}) {mark} {outcome}"


def place_receipt_events(run: Run, ledger: Ledger) -> None:
    """Put ``run.receipts`` into ``run.events`` as ``RECEIPT_*`` events, each after the log
    line that reports the same outcome of the same node (the k-th receipt of a node after
    the k-th such line), taking that line's number, step and time; the rest at the end.
    ``seq`` is renumbered."""
    if not run.receipts:
        return
    outcome_lines: dict[str, list[int]] = defaultdict(list)
    for index, event in enumerate(run.events):
        if event.name in ledger.by_node and event.kind in (
                EventKind.STATEMENT_COMPLETED, EventKind.STATEMENT_SKIPPED, EventKind.STATEMENT_FAILED):
            outcome_lines[event.name].append(index)
    after: dict[int, list[Event]] = defaultdict(list)
    tail: list[Event] = []
    for receipt in run.receipts:
        kind = _RECEIPT_KINDS.get(receipt.status, EventKind.NOTE)
        count = len(ledger.by_node.get(receipt.node, []))
        event = Event(seq=0, kind=kind, text=receipt_text(receipt, count), time=receipt.time,
                      name=receipt.node, status=receipt.status)
        slots = outcome_lines.get(receipt.node, [])
        if receipt.seq < len(slots):
            anchor = run.events[slots[receipt.seq]]
            event.line, event.step = anchor.line, anchor.step
            if event.time is None:
                event.time = anchor.time
            after[slots[receipt.seq]].append(event)
        else:
            tail.append(event)
    merged: list[Event] = []
    for index, event in enumerate(run.events):
        merged.append(event)
        merged.extend(after.get(index, []))
    merged.extend(tail)
    for seq, event in enumerate(merged):
        event.seq = seq
    run.events = merged
