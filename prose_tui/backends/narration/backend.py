"""The narration backend: in-context state narrated into a conversation (seeds/in-context.md),
as a text file or a Claude Code ``.jsonl`` transcript, recognised by content."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.narration.parse import (
    NarrationTail,
    load_narration,
    parse_narration_text,
    sniff_narration,
)
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.model import Backend, Binding, Delta, Run


class NarrationBackend(RunBackend):
    """A narration text or transcript file (never a folder).

    Narration files and transcripts only grow: ``apply`` tails them (a
    :class:`~prose_tui.backends.narration.parse.NarrationTail` per file, created once under
    a lock so two workers never read the same file twice) and parses the appended lines.
    """

    kind: ClassVar[Backend] = Backend.NARRATION
    name: ClassVar[str] = "narration"
    priority: ClassVar[int] = 40  # claims by content: asked after the backends that claim by name
    grows: ClassVar[bool] = True

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

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
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

    def open_growing(self, path: Path, progress: Callable[[int, int, Run], None] | None = None) -> Run:
        """The narration at ``path`` (claimed) read on from where the last read stopped (one
        tail per file, however many threads ask), ``progress(done, total, run_so_far)`` in
        bytes as it reads."""
        tail, _created = self.tail_for(path)
        tail.poll(progress=None if progress is None else lambda done, total: progress(done, total, tail.run))
        return tail.run

    def open_text(self, text: str) -> Run | None:
        """A narration read from standard input (``prose-tui show -``); always a run, with
        its warnings when the text narrates nothing."""
        return parse_narration_text(text)

    def read_value(self, run: Run, binding: Binding) -> Value:
        # Narrated values live on the binding itself (seeds/in-context.md, Binding markers).
        return Value(text=(binding.fields or {}).get("value") or "", warning=binding.warning)
