"""The one protocol every backend implements, and what it hands back.

A backend turns one kind of persisted run state into the run model (``prose_tui.model``):
the filesystem generations (seeds/filesystem.md, FORMATS.md, openprose-0.15
state/filesystem.md), SQLite (seeds/sqlite.md), narration (seeds/in-context.md), Reactor
state dirs (openprose-0.15 reactor.md) and PostgreSQL (openprose-0.15 state/postgres.md).
Everything above ``backends/`` reaches a format only through this protocol and
:mod:`prose_tui.backends.registry`: adding a format is one subpackage and one registry line.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from prose_tui.model import (
    ActiveConstruct,
    Backend,
    Binding,
    ChainReport,
    Delta,
    Event,
    Frame,
    Run,
    Section,
    StatementState,
    TraceLine,
)


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

    def history_source(self) -> HistorySource | None:
        """What this backend knows of its runs' past beyond ``events`` (see
        :class:`HistorySource`); ``None``, the default, when there is nothing more."""
        return None


# -- history: what a backend knows of its runs' past (issue 30) -------------------------------
# prose_tui.history shows a run as of any event (a cursor) and replays what it journaled of
# a snapshot run. What of that depends on a format is asked here, of the
# backend that read the run (``RunBackend.history_source``); history/ imports no backend.


@dataclass(frozen=True, slots=True)
class Revision:
    """One revision of a run's state file as its backend parses it: a snapshot ``state.md``
    (seeds/filesystem.md, generation 1) that the journal kept. The journal replay diffs two
    of them into events; the cursor shows one as the run at that moment.

    ``header`` keys are lower-cased; ``started``/``updated`` are its times parsed (``None``
    when absent or not ISO 8601). ``index`` are the rows of its bindings Index (columns
    ``name``, ``path``, ``kind``, ``execution id``), for the bindings it names before their
    files are written.
    The lists are the parse's own and its ``TraceLine`` objects are shared with the revision
    parsed before (a line unchanged is the same object): never change them in place.
    """

    header: dict[str, str] = field(default_factory=dict)
    trace: list[TraceLine] = field(default_factory=list)
    constructs: list[ActiveConstruct] = field(default_factory=list)
    call_stack: list[Frame] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    index: Sequence[TableRow] = ()
    started: datetime | None = None
    updated: datetime | None = None


class TableRow(Protocol):
    """One row of a table in a state file, by lower-cased column name."""

    def get(self, *names: str) -> str | None:
        """The first of the columns ``names`` with a value (an empty or "—" cell is none)."""
        ...


class HistorySource(Protocol):
    """The format knowledge :mod:`prose_tui.history` asks a backend for. Stateless (the
    caches are the backend's own), safe to call from any thread; nothing here writes."""

    def keeps_own_history(self, head: str) -> bool:
        """True when a state file whose text starts with ``head`` (its first 64 KiB,
        decoded) is its own history, a log the run's ``events`` come from: the journal
        keeps no revisions of it. Never raises."""
        ...

    def revision(self, text: str, key: Hashable | None = None) -> Revision:
        """``text``, one revision of a state file, parsed. ``key`` names a series (one
        run's journal): a revision parsed under the key of the one before shares its
        unchanged trace lines with it. Never raises: what cannot be parsed is left out."""
        ...

    def log_prefix(self, run: Run, lines: int) -> tuple[list[TraceLine], list[Frame]] | None:
        """The trace and call stack ``run`` had when its log held its first ``lines`` trace
        lines (the log read again up to there), or ``None`` when its format's trace is not
        a log (the cursor then folds the events instead)."""
        ...

    def nodes_at(self, out: Run, run: Run, states: dict[str, StatementState], rendered: set[str],
                 cursor: int, total: int) -> None:
        """Redraw ``out``, a copy of ``run`` as of event ``cursor`` of ``total`` whose
        ``nodes``, ``receipts`` and ``bindings`` are already those of that moment, the way
        the format shows nodes: the trace lines standing for nodes (in ``states``, the
        trace state of each node then), the versions its node bindings had published,
        cost and metrics, sections and status. ``rendered``: the nodes with a rendered
        receipt by then. A backend whose runs have no nodes leaves ``out`` as it is."""
        ...
