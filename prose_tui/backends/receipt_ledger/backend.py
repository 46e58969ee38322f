"""The receipt-ledger backend: FORMATS.md generation 8 behind the one protocol.

Claims a folder with ``receipts.jsonl`` (or with a ``run.json`` of the ledger's contract and
no receipt yet), and those files or its ``state.md``. ``apply`` parses only the receipts
appended since the last read (:class:`~.ledger.Ledger`), re-reads ``run.json`` (a few
hundred bytes, rewritten per append) and ``state.md`` when they changed, and rescans
``bindings/`` when a binding changed; a rewritten ledger is read again whole.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.bindings import is_binding_path, scan_bindings
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.protocol import NotARunError, RunBackend, Value, classify_by_layout
from prose_tui.backends.receipt_ledger.assemble import (
    LedgerRun,
    add_entries,
    build,
    read_anchor_of,
    read_state_md,
    set_cost,
    set_mtime,
    set_state_md,
    set_status,
    set_warnings,
    status_of,
    update_trace,
)
from prose_tui.backends.receipt_ledger.layout import ANCHOR, RECEIPTS, STATE, run_dir_of
from prose_tui.backends.receipt_ledger.state_md import Statement
from prose_tui.model import Backend, Binding, ChainReport, Delta, Event, Part, Run, RunStatus

MAX_KEPT = 64  # run folders whose reading state is kept for live updates


class ReceiptLedgerBackend(RunBackend):
    """Per-statement receipt ledgers. Keeps, per run folder, the ledger's reading state of the
    last ``open`` so that ``apply`` costs what was appended."""

    kind: ClassVar[Backend] = Backend.RECEIPT_LEDGER
    name: ClassVar[str] = "receipt-ledger"
    priority: ClassVar[int] = 25  # before the filesystem: its folders also hold a state.md
    grows: ClassVar[bool] = False

    def __init__(self) -> None:
        self._runs: OrderedDict[Path, LedgerRun] = OrderedDict()
        self._lock = threading.Lock()

    def claims(self, path: Path) -> bool:
        return run_dir_of(path) is not None

    def is_run_folder(self, folder: Path) -> bool:
        """A folder holding ``receipts.jsonl`` (FORMATS.md generation 8). Raises ``OSError``."""
        return (folder / RECEIPTS).is_file()

    def classify(self, run_path: Path, path: Path) -> Part:
        """The ledger and its anchor are the run's state; the rest as the run folder layout says."""
        if path.parent == run_path and path.name in (RECEIPTS, ANCHOR):
            return Part.STATE
        return classify_by_layout(run_path, path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        """The run at ``path`` (its folder or one of its files), read whole: ``summary`` reads
        the same (a run list row needs the ledger's end and status anyway)."""
        run_dir = run_dir_of(path)
        if run_dir is None:
            raise NotARunError(f"{path}: not a receipt-ledger run (no receipts.jsonl)")
        run, lrun = build(run_dir)
        set_status(run, lrun, now=now, stale_after=stale_after, observed=observed)
        with self._lock:
            self._runs[run_dir] = lrun
            self._runs.move_to_end(run_dir)
            while len(self._runs) > MAX_KEPT:
                self._runs.popitem(last=False)
        return run

    def _kept(self, run: Run) -> LedgerRun | None:
        with self._lock:
            lrun = self._runs.get(run.path)
        return lrun if lrun is not None and lrun.belongs_to(run) else None

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        lrun = self._kept(run)
        if lrun is None:
            return self._whole(run, paths, now, stale_after, observed)
        run_dir = lrun.run_dir
        delta = Delta(run, set(paths))
        before = (run.status, run.status_reason, list(run.warnings))
        if run_dir / RECEIPTS in paths:
            try:
                entries = lrun.ledger.read()
            except OSError:
                entries = None
            if entries is None:  # rewritten (or gone): read it whole again
                return self._whole(run, paths, now, stale_after, observed)
            events, changed = add_entries(run, lrun, entries)
            delta.events = events
            update_trace(run, lrun, changed)
            delta.trace_lines = changed
            run.header["receipts"] = str(len(run.receipts))
            if events:
                set_cost(run, lrun, changed)
            set_mtime(run)
        if run_dir / ANCHOR in paths:
            lrun.anchor = read_anchor_of(run_dir)
            set_state_md(run, lrun)
        if run_dir / STATE in paths:
            old_lines = lrun.state.statements
            lrun.state, warning = read_state_md(run_dir, run.root)
            if warning and warning not in lrun.other_warnings:
                lrun.other_warnings.append(warning)
            set_state_md(run, lrun)
            restated = {i for i, s in enumerate(lrun.statements)
                        if _said(old_lines, s.sid) != _said(lrun.state.statements, s.sid)}
            update_trace(run, lrun, restated)  # only the lines whose program line or binding changed
            if delta.trace_lines is not None:
                delta.trace_lines |= restated
        if any(is_binding_path(p, run_dir) or p == run_dir / "bindings" for p in paths):
            old = {b.path: (b.bytes, b.exists) for b in run.bindings}
            run.bindings = scan_bindings(run_dir, run.root)
            new = {b.path: (b.bytes, b.exists) for b in run.bindings}
            delta.bindings = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
        set_warnings(run, lrun)
        set_status(run, lrun, now=now, stale_after=stale_after, observed=observed)
        delta.status = (run.status, run.status_reason, run.warnings) != before
        return delta

    def _whole(self, run: Run, paths: Collection[Path], now: datetime | None, stale_after: float,
               observed: datetime | None) -> Delta:
        return Delta.whole(self.open(run.path, now=now, stale_after=stale_after, observed=observed), paths)

    def status(self, run: Run, *, now: datetime, stale_after: float = DEFAULT_STALE_AFTER,
               observed: datetime | None = None) -> tuple[RunStatus, str]:
        """``(status, reason)`` now, by the rule of ``open`` (``run`` is left as it was)."""
        lrun = self._kept(run)
        if lrun is None:
            return run.status, run.status_reason
        return status_of(run, lrun, now=now, stale_after=stale_after, observed=observed)

    def read_value(self, run: Run, binding: Binding) -> Value:
        return Value(path=binding.path, offset=binding.value_offset, warning=binding.warning)

    def chain(self, run: Run) -> ChainReport:
        """Every receipt's ``content_hash`` recomputed, every ``prev`` link followed, the end
        compared with ``run.json``'s anchor (:mod:`.ledger`), as of the last read."""
        lrun = self._kept(run)
        if lrun is None:
            self.open(run.path)
            with self._lock:
                lrun = self._runs.get(run.path)
        assert lrun is not None
        return lrun.report

    def forget(self, path: Path) -> None:
        """Drop the reading state of a run folder that disappeared."""
        with self._lock:
            self._runs.pop(path, None)



def _said(statements: dict[str, Statement], sid: str) -> tuple[str, str | None] | None:
    """What state.md says of statement ``sid`` (its program line and binding), as a trace line uses it."""
    said = statements.get(sid) or statements.get(sid.split(".", 1)[0])
    return (said.code, said.binding) if said is not None else None
