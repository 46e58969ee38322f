"""The narration backend: in-context state narrated into a conversation (seeds/in-context.md),
as a text file or a Claude Code ``.jsonl`` transcript, recognised by content."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.narration.parse import load_narration, sniff_narration
from prose_tui.backends.protocol import Value
from prose_tui.model import Backend, Binding, Delta, Event, Run


class NarrationBackend:
    """A narration text or transcript file (never a folder)."""

    kind: ClassVar[Backend] = Backend.NARRATION

    def claims(self, path: Path) -> bool:
        return path.is_file() and sniff_narration(path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run = load_narration(path)
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        return run

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        fresh = self.open(run.path, now=now, stale_after=stale_after, observed=observed)
        return Delta.whole(fresh, paths)

    def read_value(self, run: Run, binding: Binding) -> Value:
        # Narrated values live on the binding itself (seeds/in-context.md, Binding markers).
        return Value(text=(binding.fields or {}).get("value") or "", warning=binding.warning)

    def events(self, run: Run) -> list[Event]:
        return run.events
