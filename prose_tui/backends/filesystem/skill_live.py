"""A watched 0.15 skill run's receipts, applied from the lines appended to the ledger.

``receipts/{node}.jsonl`` files are append-only chains (openprose-0.15 ``state/filesystem.md``,
The Commit-and-Sign Protocol). A full read of a skill run (``apply_skill``) keeps a
:class:`~prose_tui.backends.filesystem.receipts.LedgerTail` for the run; a change to a
ledger file then parses only the bytes appended since (a truncated, replaced or rewritten
file is read again whole), and the run's receipts, nodes, token metrics and receipt events
are derived again from the ledger in memory, as a fresh read derives them. Receipt events
equal to those already shown are kept as the same objects, so the history extends.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from prose_tui.backends.filesystem.receipts import LedgerTail
from prose_tui.backends.filesystem.skill_receipts import add_receipt_metrics, place_receipt_events, summarise_nodes
from prose_tui.backends.filesystem.world_model import CompiledIntent, ErrorFile
from prose_tui.model import Event, Run

KEEP = 16  # skill runs whose ledger tails are kept (the runs read in full lately)


@dataclass(slots=True)
class SkillState:
    """What a full read of a skill run saw, to apply a ledger append: the run object, the
    ledger tail, the compiled intent and error files (a change to those reads the run
    again), the log's events before receipts were merged in, the warnings shown, and the
    run's root (:func:`~prose_tui.backends.common.contained.run_root`): nothing outside it
    is read on an append either."""

    run: Run
    ledger: LedgerTail
    intent: CompiledIntent | None
    errors: dict[str, ErrorFile]
    base: list[Event]
    warned: list[str]  # the ledger's warnings as last put in ``run.warnings``
    root: Path


_STATES: OrderedDict[Path, list[SkillState]] = OrderedDict()  # per run folder, the last two full reads
_LOCK = threading.Lock()


def remember(state: SkillState) -> None:
    """Keep ``state`` for its run object (two full reads of one folder may be live at once:
    the workspace's, and another caller's)."""
    path = state.run.path
    with _LOCK:
        _STATES[path] = [*_STATES.get(path, []), state][-2:]
        _STATES.move_to_end(path)
        while len(_STATES) > KEEP:
            _STATES.popitem(last=False)


def _sync_warnings(run: Run, state: SkillState, now: list[str]) -> None:
    """``run.warnings`` follows the ledger's: new ones added, ones taken back (a half-written
    line that completed) removed; the run's other warnings stay as they are."""
    before = state.warned
    if now == before:
        return
    for text in before:
        if text not in now and text in run.warnings:
            run.warnings.remove(text)
    run.warnings.extend(text for text in now if text not in before)
    state.warned = list(now)


def is_ledger_file(run_dir: Path, path: Path) -> bool:
    """``path`` is ``run_dir/receipts/{node}.jsonl`` (or ``.json``)."""
    return path.parent == run_dir / "receipts" and path.name.endswith((".jsonl", ".json")) \
        and not path.name.startswith(".")


def apply_receipts(run: Run, paths: set[Path]) -> list[Event] | None:
    """Apply changed ledger files ``paths`` to ``run`` (in place): returns the events from
    the first one that changed on (``[]`` when nothing did), or ``None`` when ``run`` is not
    one this module kept (read it again instead)."""
    with _LOCK:
        state = next((s for s in _STATES.get(run.path, []) if s.run is run), None)
    if state is None:
        return None
    if not state.ledger.update({p.name for p in paths}):
        return []
    ledger = state.ledger.ledger
    _sync_warnings(run, state, ledger.warnings)
    run.receipts = ledger.receipts
    run.nodes = summarise_nodes(run.path, ledger, state.intent, state.errors, state.root)
    for key in [k for k in run.metrics if k.startswith(("receipts", "tokens_"))]:
        del run.metrics[key]
    add_receipt_metrics(run)
    view = copy.copy(run)
    view.events = list(state.base)
    place_receipt_events(view, ledger)
    previous = run.events
    merged = [old if i < len(previous) and (old := previous[i]) == new else new
              for i, new in enumerate(view.events)]
    first = next((i for i, (a, b) in enumerate(zip(merged, previous)) if a is not b), min(len(merged), len(previous)))
    run.events = merged
    return merged[first:]
