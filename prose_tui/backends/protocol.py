"""The one protocol every backend implements, and what it hands back.

A backend turns one kind of persisted run state into the run model (``prose_tui.model``):
the filesystem generations (seeds/filesystem.md, FORMATS.md, openprose-0.15
state/filesystem.md), SQLite (seeds/sqlite.md), narration (seeds/in-context.md), Reactor
state dirs (openprose-0.15 reactor.md) and PostgreSQL (openprose-0.15 state/postgres.md).
Everything above ``backends/`` reaches a format only through this protocol and
:mod:`prose_tui.backends.registry`: adding a format is one subpackage and one registry line.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from prose_tui.model import Backend, Binding, ChainReport, Delta, Event, Run


@dataclass(frozen=True, slots=True)
class Value:
    """A binding's value as a view reads it: ``text`` when the backend holds it in memory or
    a database, else the file ``path`` from byte ``offset`` (read lazily in windows, so a
    100 MB value is never read whole). ``note`` is one line shown above the value
    (e.g. "content address sha256:…"); ``warning`` says what could not be read."""

    text: str | None = None
    path: Path | None = None
    offset: int = 0
    note: str = ""
    warning: str | None = None


@runtime_checkable
class RunBackend(Protocol):
    """One backend. Implementations are stateless; per-run reading state (tail offsets,
    parser state, database connections) lives in objects the backend keeps per run path.

    Every method but ``claims`` may raise ``OSError``; ``open`` raises
    ``backends.NotARunError`` for a path it claimed but that holds no run after all.
    None raises for malformed content: that becomes ``Run.warnings`` and raw text.

    Optional, for backends whose runs do not live in files a watcher can see (PostgreSQL):

    ``poll_interval: float``
        Seconds between two ``poll`` calls for one run (default 1.0 when absent).

    ``poll(run: Run) -> Delta | None``
        What changed in ``run`` since the last call (``None`` or an empty ``Delta`` when
        nothing did), costing what changed (e.g. rows past the last id seen). The live
        pipeline (``prose_tui.live.pipeline``) calls it on its worker thread, for every
        open run (read in full, not a run list summary) of a backend that has it, every
        ``poll_interval`` seconds, and hands the Delta to the same sinks as a file change
        (the UI, the journal). It never holds the workspace lock while ``poll`` runs, and
        polls one run at a time. May raise ``OSError`` (reported, polling goes on).

    ``forget(path: Path) -> None``
        Drop per-run reading state (tails, connections) for a run that disappeared.
    """

    kind: ClassVar[Backend]

    def claims(self, path: Path) -> bool:
        """True when ``path`` (a folder or file, resolved) is a run this backend reads."""
        ...

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = ...,
             observed: datetime | None = None, summary: bool = False) -> Run:
        """Read the run at ``path``. ``summary`` asks for what a run list row needs (the
        backend may read more). ``observed`` is when a watcher last saw it change."""
        ...

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None, stale_after: float = ...,
              observed: datetime | None = None) -> Delta:
        """Bring ``run`` up to date with the changed ``paths`` (absolute, inside the run) and
        say what changed. The cost follows the change: appended bytes are parsed, not the file."""
        ...

    def read_value(self, run: Run, binding: Binding) -> Value:
        """Where ``binding``'s value is, or the value itself."""
        ...

    def events(self, run: Run) -> list[Event]:
        """The run's own ordered events (its log, rows or receipts); ``[]`` when the state
        is a snapshot, whose history ``prose_tui.history`` journals or reconstructs."""
        ...

    def chain(self, run: Run) -> ChainReport | None:
        """The check of ``run``'s hash-chained receipt ledger as last read (every
        ``content_hash`` recomputed, every ``prev`` link followed, an anchor compared), or
        ``None`` for a run whose format chains nothing. Problems are reported, never raised."""
        ...
