"""A delta: what one batch of changes did to one run. The contract between a backend's
``apply`` and every sink of the live pipeline (the UI, the journal)."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from prose_tui.model.event import Event
from prose_tui.model.run import Run


class Part(StrEnum):
    """Which part of a run a changed path belongs to (``RunBackend.classify``): its state
    (the state file, ``state.db``, rows), a binding, an agent's file, an import, the program,
    or anything else (the run is read again)."""

    STATE = "state"
    BINDING = "binding"
    AGENT = "agent"
    IMPORT = "import"
    PROGRAM = "program"
    OTHER = "other"


VALUE_WINDOW = 32 * 1024  # bytes of a binding's value read with a change (the viewer's first window)


@dataclass(frozen=True, slots=True)
class ValueWindow:
    """The start of a binding file's value as the live worker read it with a change, so a
    view shows it without reading: ``text`` (decoded, control characters made visible)
    from byte ``offset`` (the binding's value offset), at most ``max_bytes`` bytes of the
    file's ``size``; ``cut`` when the value goes on past them."""

    offset: int
    max_bytes: int
    text: str
    size: int
    cut: bool


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
    ``paths`` are the changed paths behind the delta. ``values`` holds, for binding files
    the change wrote (a few at most), the start of their value (``ValueWindow``).
    ``streaming`` is true when the change came while the run streamed changes (the watcher
    then hands them over in batches of a few tenths of a second): a view may pace it as a
    stream even when it carries one batch.
    ``parts`` says which part of the run each changed path belongs to, as the live layer
    classified it once (``RunBackend.classify``); ``state_data`` holds the bytes of the
    state file when the backend read it whole for this change (a snapshot ``state.md``
    rewritten), and ``state_stat`` the file's stat from that same open, so a sink (the
    journal) does not read it again; ``None`` otherwise.
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
    values: dict[Path, ValueWindow] = field(default_factory=dict)
    streaming: bool = False
    parts: dict[Path, Part] = field(default_factory=dict)
    state_data: bytes | None = field(default=None, repr=False)
    state_stat: os.stat_result | None = field(default=None, repr=False)

    @property
    def empty(self) -> bool:
        """True when nothing a view shows changed."""
        return not (self.events or self.trace_lines is None or self.trace_lines or self.bindings
                    or self.agents or self.imports or self.stack or self.status or self.program
                    or self.reread)

    @classmethod
    def whole(cls, run: Run, paths: Collection[Path] | None = None) -> Delta:
        """A delta that says "read again, redraw everything"."""
        return cls(run, set(paths or ()), list(run.events), None, {b.path for b in run.bindings},
                   True, True, True, True, True, True)
