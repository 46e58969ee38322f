"""A delta: what one batch of changes did to one run. The contract between a backend's
``apply`` and every sink of the live pipeline (the UI, the journal)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prose_tui.model.event import Event
from prose_tui.model.run import Run


@dataclass(slots=True)
class Delta:
    """The change to ``run`` (the run after the change) from one batch of changed paths.

    ``events`` are new events appended to ``run.events``, in order (their ``seq`` continue
    the run's numbering). ``trace_lines`` holds the indexes into ``run.trace`` whose line
    changed, or ``None`` when the whole trace must be redrawn. ``bindings`` the binding
    files added, changed or removed (absolute paths); ``agents``/``imports``/``stack``
    say whether those parts changed; ``status`` whether the status or its reason did.
    ``reread`` is true when the backend had to read the run again whole (a truncated or
    replaced file, an unknown file): a sink then redraws everything.
    ``paths`` are the changed paths behind the delta.
    """

    run: Run
    paths: set[Path] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    trace_lines: set[int] | None = field(default_factory=set)
    bindings: set[Path] = field(default_factory=set)
    agents: bool = False
    imports: bool = False
    stack: bool = False
    status: bool = False
    program: bool = False
    reread: bool = False

    @property
    def empty(self) -> bool:
        """True when nothing a view shows changed."""
        return not (self.events or self.trace_lines is None or self.trace_lines or self.bindings
                    or self.agents or self.imports or self.stack or self.status or self.program
                    or self.reread)

    @classmethod
    def whole(cls, run: Run, paths: set[Path] | None = None) -> Delta:
        """A delta that says "read again, redraw everything"."""
        return cls(run, set(paths or ()), list(run.events), None, {b.path for b in run.bindings},
                   True, True, True, True, True, True)
