"""The history cursor the explorer moves: live at the end, or frozen at one event.

Textual-free. Holds the run's ``History`` and a cursor on it; ``view(run)`` is the run the
panes show (the run itself when live, ``state_at`` otherwise); the navigation methods
implement the keys (step, start, live, next/previous failure or retry, first failure).
"""

from __future__ import annotations

from pathlib import Path

from prose_tui.history import (
    CursorMemo,
    FailureContext,
    History,
    Journal,
    failure_context,
    history_of,
    state_at,
)
from prose_tui.model import EventKind, Run

FAILURES = (EventKind.STATEMENT_FAILED, EventKind.RUN_ERRORED, EventKind.RECEIPT_FAILED)  # a node's failed receipt
PROBLEMS = (*FAILURES, EventKind.RETRY)


class HistoryNavigator:
    """``cursor`` is an event index, or ``None`` when live (following the end)."""

    def __init__(self, journal: Journal | None = None) -> None:
        self.journal = journal
        # (the run, the history, what else it was made from, the run as of the cursor)
        self._view: tuple[Run, History, tuple[object, ...], Run] | None = None
        self._memo: CursorMemo | None = None  # the fold as of the last cursor shown, moved from there
        self.history: History | None = None
        self.cursor: int | None = None
        self._run_path: Path | None = None
        self._prepended = 0  # events the history had put before its start when adopted

    # -- loading ------------------------------------------------------------------------------
    def load(self, run: Run | None) -> None:
        """Recompute the history of ``run`` on this thread (``build`` then ``adopt``); a
        different run starts live."""
        if run is None:
            self.history, self.cursor, self._run_path = None, None, None
            return
        self.adopt(run, self.build(run))

    def build(self, run: Run) -> History:
        """The history of ``run`` (``history.history_of``), never raising: any thread. A
        snapshot run's reads the journal (disk, under its lock) or reconstructs it from file
        times, so the explorer builds it in a worker; a log's grows by its new events."""
        try:
            return history_of(run, journal=self.journal)
        except Exception as exc:  # a history that cannot be built must not take the views down
            return History(events=[], origin="log", note=f"history unavailable: {exc}")

    def switch(self, run: Run | None) -> None:
        """``run`` is shown while its history is built elsewhere (``build``): a different
        run starts live with no history until ``adopt``; the same run keeps its own."""
        if run is None or run.path != self._run_path:
            self.history, self.cursor = None, None
            self._run_path = run.path if run is not None else None

    def adopt(self, run: Run, history: History) -> None:
        """Take ``history``, built for ``run``: the cursor stays on its event when older
        events were put before it, and goes live when past the end."""
        if run.path != self._run_path:
            self.cursor = None
            self._run_path = run.path
        before = self.history
        self.history = history
        if self.cursor is not None and history is before:
            # Older events came before it (a history grows at its start in place): stay on it.
            self.cursor += history.prepended - self._prepended
        self._prepended = history.prepended
        if self.cursor is not None and self.cursor >= len(self.history.events):
            self.cursor = None

    @property
    def events(self):
        return self.history.events if self.history else []

    @property
    def live(self) -> bool:
        return self.cursor is None

    @property
    def position(self) -> int:
        """The index the cursor shows (the last event when live)."""
        return len(self.events) - 1 if self.cursor is None else self.cursor

    @property
    def pending(self) -> int:
        """Events that arrived after the cursor (0 when live)."""
        return 0 if self.cursor is None else max(0, len(self.events) - 1 - self.cursor)

    def view(self, run: Run) -> Run:
        """The run as the panes should show it: ``run`` when live, else the run as of the
        cursor (``history.state_at``), kept while neither the cursor, the history nor the run
        changed: one history step asks for it from several panes. A step costs what the events
        stepped over changed (``CursorMemo``: the fold moved from the last cursor, not redone
        from the first event), not the run's length."""
        if self.cursor is None or self.history is None or not self.events:
            return run
        key = (len(self.history.events), self.cursor, len(run.trace), len(run.events), len(run.bindings),
               run.updated, run.status)
        kept = self._view
        if kept is not None and kept[0] is run and kept[1] is self.history and kept[2] == key:
            return kept[3]
        memo = self._fitting_memo(run)
        if memo is None:
            memo = self._memo = CursorMemo(run, self.history)
        view = state_at(run, self.history, self.cursor, journal=self.journal, memo=memo)
        self._view = (run, self.history, key, view)  # the objects themselves: an id can be reused
        return view

    def _fitting_memo(self, run: Run) -> CursorMemo | None:
        """The memo kept, when it answers for ``run`` and the history now: as it is, or caught
        up with what a log followed live appended since (``CursorMemo.extend``)."""
        memo, history = self._memo, self.history
        return memo if memo is not None and history is not None and memo.answers(run, history) else None

    def take_memo(self, memo: CursorMemo) -> bool:
        """Use ``memo`` (built off the UI thread: by the run's reader, ``explorer_model.prepare_read``,
        or a worker, ``index_history``) for the steps through the history shown, when it was
        built for it (``CursorMemo.fits``, or caught up: ``CursorMemo.grew``). ``False``:
        not taken (another history is shown now)."""
        history = self.history
        if history is None or memo.history is not history or not memo.answers(memo.run, history):
            return False
        self._memo = memo
        return True

    def memo_wanted(self, run: Run, least: int) -> int:
        """The events a move of the cursor would index on this thread first (``0`` when
        none would): a log's history of ``least`` events or more without a memo that fits
        (or catches up). 0.6-1 s at 100,000 events: a caller builds it elsewhere first."""
        history = self.history
        if history is None or history.origin != "log" or run.nodes or run.receipts or len(history.events) < least:
            return 0
        return 0 if self._fitting_memo(run) is not None else len(history.events)

    # -- moving ---------------------------------------------------------------------------------
    def move_to(self, index: int) -> bool:
        """Put the cursor on ``index``; the last index means live. False when there are no events."""
        if not self.events:
            return False
        index = max(0, min(index, len(self.events) - 1))
        self.cursor = None if index == len(self.events) - 1 else index
        return True

    def step(self, delta: int) -> bool:
        return self.move_to(self.position + delta)

    def to_start(self) -> bool:
        return self.move_to(0)

    def go_live(self) -> None:
        self.cursor = None

    def problems(self) -> list[int]:
        return [i for i, e in enumerate(self.events) if e.kind in PROBLEMS]

    def next_problem(self, forward: bool = True) -> int | None:
        """Move to the next (or previous) failure or retry; returns its index or None."""
        here = self.position
        found = [i for i in self.problems() if (i > here if forward else i < here)]
        if not found:
            return None
        target = found[0] if forward else found[-1]
        self.move_to(target)
        return target

    def first_failure(self) -> int | None:
        index = self.history.first_failure() if self.history else None
        if index is not None:
            self.move_to(index)
        return index

    def failure_here(self, run: Run) -> FailureContext | None:
        """What the failure under the cursor had around it, if the cursor is on one."""
        if self.history is None or not self.events:
            return None
        index = self.position
        if self.events[index].kind not in FAILURES:
            return None
        return failure_context(run, self.history, index, memo=self._fitting_memo(run))
