"""What applying changes to a workspace produced: per run, the parts and paths that changed.

Shared by the file-system routing (``workspace.py``) and the runs off disk (``sources.py``).
Textual-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prose_tui.model import Delta, Part, Run

__all__ = ["Applied", "Part", "RunChange"]


@dataclass(slots=True)
class RunChange:
    """What ``Workspace.apply`` changed in one run: the parts and the paths behind them, and
    (``kinds``) the part each path belongs to, as classified once by the run's backend."""

    run: Run
    parts: set[Part] = field(default_factory=set)
    paths: set[Path] = field(default_factory=set)
    kinds: dict[Path, Part] = field(default_factory=dict)


@dataclass(slots=True)
class Applied:
    """The outcome of one batch of file events (or of one poll of the sources)."""

    changed: dict[Path, RunChange] = field(default_factory=dict)
    deltas: dict[Path, Delta] = field(default_factory=dict)  # what each changed run's backend applied
    runs_added: list[Path] = field(default_factory=list)
    runs_removed: list[Path] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.changed or self.runs_added or self.runs_removed)
