"""The narration backend: in-context state narrated into a conversation (seeds/in-context.md),
as a text file or a Claude Code ``.jsonl`` transcript, recognised by content."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.narration.parse import (
    NarrationTail,
    load_narration,
    sniff_narration,
)
from prose_tui.backends.protocol import Value
from prose_tui.model import Backend, Binding, Delta, Event, Run


class NarrationBackend:
    """A narration text or transcript file (never a folder).

    Narration files and transcripts only grow: ``apply`` tails them (a
    :class:`~prose_tui.backends.narration.parse.NarrationTail` per file, created once under
    a lock so two workers never read the same file twice) and parses the appended lines.
    """

    kind: ClassVar[Backend] = Backend.NARRATION

    def __init__(self) -> None:
        self._tails: dict[Path, NarrationTail] = {}
        self._lock = threading.Lock()

    def tail_for(self, path: Path) -> tuple[NarrationTail, bool]:
        """The tail of ``path`` and whether it was created now (nothing read yet)."""
        with self._lock:
            tail = self._tails.get(path)
            if tail is not None:
                return tail, False
            tail = self._tails[path] = NarrationTail(path)
            return tail, True

    def forget(self, path: Path) -> None:
        with self._lock:
            self._tails.pop(path, None)

    def claims(self, path: Path) -> bool:
        return path.is_file() and sniff_narration(path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run = load_narration(path)
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        return run

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        tail, created = self.tail_for(run.path)
        resets = tail.resets
        new = tail.poll()
        fresh = tail.run
        apply_staleness(fresh, now=now, stale_after=stale_after, observed=observed)
        if created or tail.resets != resets:
            delta = Delta.whole(fresh, paths)
            delta.reread = True
            return delta
        # The parser may re-state earlier trace lines (a statement completing): redraw the trace.
        return Delta(fresh, set(paths), events=new, trace_lines=None if new else set(),
                     bindings={b.path for b in fresh.bindings} if new else set(), agents=bool(new),
                     stack=bool(new), status=(fresh.status, fresh.status_reason) != (run.status, run.status_reason))

    def read_value(self, run: Run, binding: Binding) -> Value:
        # Narrated values live on the binding itself (seeds/in-context.md, Binding markers).
        return Value(text=(binding.fields or {}).get("value") or "", warning=binding.warning)

    def chain(self, run: Run) -> None:
        """None: this format keeps no hash-chained ledger."""
        return None

    def events(self, run: Run) -> list[Event]:
        return run.events

    def history_source(self) -> None:
        """None: the run's ``events`` are its whole history (``RunBackend.history_source``)."""
        return None
