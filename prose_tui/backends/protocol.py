"""The one protocol every backend implements, and what it hands back.

A backend turns one kind of persisted run state into the run model (``prose_tui.model``):
the filesystem generations (seeds/filesystem.md, FORMATS.md, openprose-0.15
state/filesystem.md), SQLite (seeds/sqlite.md), narration (seeds/in-context.md), Reactor
state dirs (openprose-0.15 reactor.md) and PostgreSQL (openprose-0.15 state/postgres.md).

A backend is a subclass of :class:`RunBackend` and declares what it does, as harlequin's
adapters declare theirs: four methods every backend has (``claims``, ``open``, ``apply``,
``read_value``), and capabilities whose defaults say "this backend does not": a run's events
are its own list, a changed path is classified by the run folder layout, nothing is polled,
paged or chain-checked, no table or source or CLI option is added. Code above ``backends/``
calls these methods and never probes for an attribute (``getattr``).

Adding a format is one subpackage whose ``backend.py`` subclasses :class:`RunBackend` (with a
``name``, a ``priority`` and a ``kind``: ``Backend("name")``, the model's enums are open), plus
one line: the built-in list in :mod:`prose_tui.backends.registry`, or an entry point in the
``prose_tui.backends`` group for a third-party package. Discovery asks it which folders are its
runs (``is_run_folder``); the live layer asks it to classify a changed path (``classify``) and
hands the result to its ``apply``. Layers above reach it through :mod:`.registry` and this
module only (import-linter contracts in ``.importlinter``).
:class:`RunSource` is the second half of the protocol, for databases: runs that live in no
folder a watcher can see, listed and polled through a source a backend makes from the
command line (``sources_for``).
"""

from __future__ import annotations

import argparse
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol

from prose_tui.backends.common.bindings import is_binding_path
from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.dburl import Target
from prose_tui.backends.common.encryption import looks_encrypted
from prose_tui.backends.common.errors import NotARunError
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.common.text import decode, open_regular
from prose_tui.model import (
    ActiveConstruct,
    Backend,
    Binding,
    ChainReport,
    Delta,
    Event,
    Frame,
    Part,
    Run,
    RunFormat,
    RunStatus,
    Section,
    StatementState,
    TraceLine,
)

__all__ = ["Changed", "HistorySource", "NotARunError", "Revision", "RunBackend", "RunSource", "TableRow", "Value",
           "classify_by_layout", "fallback_trace"]

Changed = Mapping[Path, Part]
"""The changed paths of one run and the part each belongs to, classified once by the live
layer (``RunBackend.classify``); ``apply`` and the journal read it instead of classifying again."""

# The run folder layout of seeds/filesystem.md: the files a state lives in, and a program.
STATE_NAMES = ("state.md", "vm.log.md")
PROGRAM_NAMES = ("program.md", "root.prose.md")
RAW_TRACE_BYTES = 2 * 1024 * 1024


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


class RunBackend(ABC):
    """One backend: subclass it, set ``kind``, ``name`` and ``priority``, implement the four
    required methods (abstract: a subclass without them cannot be made, and the registry names
    it) and override the capabilities the format has.

    Instances are made once (by the registry) and shared by threads; per-run reading state
    (tail offsets, parser state, database connections) lives in objects the backend keeps per
    run path, dropped by :meth:`forget`. Every method but ``claims`` may raise ``OSError``;
    ``open`` raises ``backends.NotARunError`` for a path it claimed that holds no run after
    all. None raises for malformed content: that becomes ``Run.warnings`` and raw text.
    """

    kind: ClassVar[Backend]
    """The ``Run.backend`` of the runs it reads (``backend_of(run)`` looks it up)."""
    name: ClassVar[str] = ""
    """Its name in the registry and in the ``prose_tui.backends`` entry point group."""
    priority: ClassVar[int] = 100
    """Lower is asked first when two backends could claim a path (``registry.backend_for``).
    Built-ins: SQLite 10, Reactor 20, filesystem 30, narration 40 (claims by content),
    PostgreSQL 50 (claims database keys only)."""
    polls: ClassVar[bool] = False
    """Its runs live where no watcher sees them: the live pipeline calls :meth:`poll` for
    every open run every :attr:`poll_interval` seconds."""
    grows: ClassVar[bool] = False
    """Its run files only grow and can be read progressively (:meth:`open_growing`)."""
    summary_parts: ClassVar[frozenset[Part] | None] = None
    """The parts a run list row (a run opened with ``summary=True``) follows: a change to any
    other part waits until the run is opened in full. ``None``: every change is applied."""

    # -- required ---------------------------------------------------------------------------
    @abstractmethod
    def claims(self, path: Path) -> bool:
        """True when ``path`` (a folder or file, resolved) is a run this backend reads.
        Cheap: a name, a stat or a small read. May raise ``OSError`` (taken as no)."""
        raise NotImplementedError

    @abstractmethod
    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        """Read the run at ``path``. ``summary`` asks for what a run list row needs (the
        backend may read more). ``observed`` is when a watcher last saw it change;
        ``stale_after`` (seconds) how long a running run may stay quiet."""
        raise NotImplementedError

    @abstractmethod
    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        """Bring ``run`` up to date with the changed ``paths`` (absolute, inside the run) and
        say what changed. ``paths`` is a set, or a :data:`Changed` mapping (path -> part, as the live
        layer classified them): read it rather than classifying again. The cost follows the
        change: appended bytes are parsed, not the file. A backend that read a changed state
        file whole puts its bytes in ``Delta.state_data`` so nobody reads it a second time."""
        raise NotImplementedError

    @abstractmethod
    def read_value(self, run: Run, binding: Binding) -> Value:
        """Where ``binding``'s value is, or the value itself (never raises for a missing one:
        ``Value.warning`` says why)."""
        raise NotImplementedError

    # -- finding runs ------------------------------------------------------------------------
    def is_run_folder(self, folder: Path) -> bool:
        """Whether ``folder`` (inside a ``runs`` folder, or pointed at) holds a run of this
        format, told by the files a VM writes there (discovery asks it for each child of a
        runs folder: cheap, a few stats). May raise ``OSError`` (a folder that cannot be
        looked into). Default: ``False``, the backend's runs are not run folders.
        See :mod:`prose_tui.backends.discover`."""
        return False

    # -- a changed path ----------------------------------------------------------------------
    def classify(self, run_path: Path, path: Path) -> Part:
        """The part of the run at ``run_path`` a changed ``path`` belongs to. Default: the run
        folder layout of seeds/filesystem.md (:func:`classify_by_layout`). Called once per
        changed path, by the live layer; the result travels with the change."""
        return classify_by_layout(run_path, path)

    # -- reading -----------------------------------------------------------------------------
    def events(self, run: Run) -> list[Event]:
        """The run's own ordered events (its log, rows or receipts); ``[]`` when the state
        is a snapshot, whose history ``prose_tui.history`` journals or reconstructs.
        Default: ``run.events``."""
        return run.events

    def read_table(self, run: Run, table: str, offset: int = 0, limit: int = 200) -> tuple[list[str], list[tuple]]:
        """One page of an extension table the run lists in ``Run.tables`` (SQLite and
        PostgreSQL ``x_*`` tables): ``(columns, rows)``, at most ``limit`` rows from row
        ``offset``. Default: ``([], [])``, no tables."""
        return [], []

    def raw_trace(self, run: Run) -> tuple[list[TraceLine], str | None]:
        """Lines to show when ``run`` has no parsed trace, and the banner that says why.
        Default: :func:`fallback_trace` (the state file raw, else the program)."""
        return fallback_trace(run)

    def status(self, run: Run, *, now: datetime, stale_after: float = DEFAULT_STALE_AFTER,
               observed: datetime | None = None) -> tuple[RunStatus, str]:
        """``(status, reason)`` of ``run`` at ``now``, as time passes (a quiet running run
        turns interrupted), without changing ``run``. Called by the status timer for many
        runs: cheap. Default: ``common.status.apply_staleness`` on a running run; any
        other run keeps its status."""
        if run.status is not RunStatus.RUNNING:
            return run.status, run.status_reason
        before = (run.status, run.status_reason)
        apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
        status = (run.status, run.status_reason)
        run.status, run.status_reason = before
        return status

    def older(self, run: Run, limit: int) -> int:
        """Page the trace back: put up to ``limit`` trace lines from before the first one
        shown at the start of ``run.trace`` (in place); returns how many. Default: 0, the
        whole trace is read."""
        return 0

    def open_growing(self, path: Path, progress: Callable[[int, int, Run], None] | None = None) -> Run:
        """For a backend that ``grows``, a path it claims: read the run at ``path`` on from
        where the last read stopped, calling ``progress(bytes_done, bytes_total, run_so_far)``
        as it reads. Default (a backend that does not grow): ``open(path)``."""
        return self.open(path)

    def open_first_screen(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
                          observed: datetime | None = None) -> Run | None:
        """A partial run for a first screen, read in far less time than :meth:`open` (the
        newest events and the run's status, e.g. from a long log's tail), shown while
        ``open(path)`` reads the whole run; its ``warnings`` say what is still loading. ``None``
        when ``open`` is quick anyway or there is no such shortcut. Default: ``None``."""
        return None

    # -- live --------------------------------------------------------------------------------
    @property
    def poll_interval(self) -> float:
        """Seconds between two :meth:`poll` calls for one run. Default 1.0."""
        return 1.0

    def poll(self, run: Run) -> Delta | None:
        """For a backend that ``polls``: what changed in ``run`` since the last call (``None``
        or an empty ``Delta`` when nothing did), costing what changed (e.g. rows past the
        last id seen). The live pipeline (``prose_tui.live.pipeline``) calls it on its worker
        thread for every open run (read in full) of the backend, every ``poll_interval``
        seconds, one run at a time and never under the workspace lock, and hands the Delta
        to the same sinks as a file change. May raise ``OSError`` (reported, polling goes
        on). Default: ``None``."""
        return None

    def forget(self, path: Path) -> None:
        """Drop per-run reading state (tails, connections) for the run at ``path``, which
        disappeared or is no longer shown. Default: nothing kept, nothing to drop."""

    # -- checks ------------------------------------------------------------------------------
    def chain(self, run: Run) -> ChainReport | None:
        """The check of ``run``'s hash-chained ledger (every hash recomputed, every link
        followed, the anchors compared), or ``None`` when the format keeps no such ledger.
        Never raises for a bad ledger: that is the report. Default: ``None``."""
        return None

    # -- history -----------------------------------------------------------------------------
    def history_source(self) -> HistorySource | None:
        """What this backend knows of its runs' past beyond :meth:`events`, for
        :mod:`prose_tui.history` (see :class:`HistorySource`: a state file's revisions
        parsed, a log cut at a line, nodes as of a cursor). Default: ``None``, the events
        are the whole history."""
        return None

    # -- the command line --------------------------------------------------------------------
    def add_options(self, parser: argparse.ArgumentParser, *, live: bool) -> None:
        """Add the options this backend reads to a command's ``parser`` (``live``: a command
        that follows runs as they change). Default: none."""

    def sources_for(self, target: Target, options: argparse.Namespace | None) -> list[RunSource]:
        """The sources of runs that live in no folder for a command pointed at ``target`` (a
        path, or a database URL: :class:`~prose_tui.backends.common.dburl.Target`), with the
        parsed ``options`` (those :meth:`add_options` added; ``None`` or a missing one: its
        default). No connection is made here. Default: ``[]``."""
        return []

    def open_text(self, text: str) -> Run | None:
        """The run ``text`` (read from standard input) holds, or ``None`` when this backend
        does not read runs from text. Default: ``None``."""
        return None


class RunSource:
    """A place runs live that is not a folder (a PostgreSQL database), made by a backend's
    ``sources_for``: it lists its runs, reads one in full and is polled. Its runs are also
    reached through that backend (``claims`` their keys).

    ``first_runs(n)`` the newest ``n`` runs of ``list_runs`` (one short query: the run list
    shows them while the whole list is read); ``open(path, first_screen=f)`` reads a run in
    full, calling ``f`` first with what a screen shows at once; ``poll`` returns a delta per
    run read in full that changed (cheap: what changed); ``poll_runs`` what happened to the
    list (an object with ``added``/``changed`` runs and ``removed`` paths), at most every
    few seconds and cheap when nothing did. They block on I/O and may raise ``OSError``
    while the source is unreachable (``state`` says so).
    """

    label: str = ""
    """Where it is, safe to show (``db@host:port``, never a password)."""
    poll_interval: float = 0.5
    """Seconds between two polls."""
    notifies: ClassVar[bool] = False
    """:meth:`wait` returns early when the source is told of a change (``LISTEN``)."""

    @property
    def state(self) -> str:
        """One line for the status bar: connected, reconnecting (and why)."""
        return self.label

    def owns(self, path: Path) -> bool:
        raise NotImplementedError

    def list_runs(self) -> list[Run]:
        raise NotImplementedError

    def first_runs(self, limit: int) -> list[Run]:
        return self.list_runs()[:limit]

    def open(self, path: Path, *, first_screen: Callable[[Run], None] | None = None) -> Run:
        raise NotImplementedError

    def poll(self, path: Path | None = None) -> dict[Path, Delta]:
        return {}

    def open_id(self, run_id: str) -> Run:
        """The run ``run_id`` (as the source names it) read in full. Raises ``KeyError`` when
        the source has no such run."""
        raise KeyError(run_id)

    def poll_runs(self) -> Any:
        raise NotImplementedError

    def forget(self, path: Path) -> None:
        """Stop keeping ``path`` current. Default: nothing kept."""

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep ``timeout`` seconds (default ``poll_interval``) or until notified of a change
        (only when ``notifies``); ``True`` when notified. Default: sleeps, never notified."""
        threading.Event().wait(self.poll_interval if timeout is None else timeout)
        return False

    def close(self) -> None:
        """Release connections and threads. Default: nothing held."""


def classify_by_layout(run_path: Path, path: Path) -> Part:
    """The part of a run folder ``path`` belongs to (seeds/filesystem.md, the run folder
    layout): its state file (``state.md``, ``vm.log.md``, ``state.db*``), a binding file, an
    agent's file (``agents/<name>/<file>``), an import, the program, else ``OTHER`` (read the
    run again). A path outside ``run_path``, or the run itself, is ``OTHER``."""
    try:
        rel = path.relative_to(run_path)
    except ValueError:
        return Part.OTHER
    if not rel.parts:
        return Part.OTHER
    head = rel.parts[0]
    if len(rel.parts) == 1 and (head in STATE_NAMES or head.startswith("state.db")):
        return Part.STATE
    if head == "bindings" and is_binding_path(path, run_path):
        return Part.BINDING
    if head == "agents" and len(rel.parts) >= 3:
        return Part.AGENT
    if head == "imports" and len(rel.parts) >= 2:
        return Part.IMPORT
    if len(rel.parts) == 1 and (head.endswith(".prose") or head in PROGRAM_NAMES):
        return Part.PROGRAM
    return Part.OTHER


def fallback_trace(run: Run) -> tuple[list[TraceLine], str | None]:
    """Lines to show when a run has no parsed trace, and the warning that says why.

    The state file is shown raw (never hidden; its first 2 MiB); without one, the program
    text; an encrypted run, or an SQLite run (a ``state.db`` is not text), shows nothing but
    the reason. Never raises: an unreadable file is the warning.
    """
    if run.encrypted:
        return [], f"{run.state_file.name if run.state_file else 'state'} is SOPS-encrypted; nothing to show without the key"
    if run.read_problem is not None and run.read_at is None:
        return [], None  # never read (status "unreadable"): the run's warning says why, once
    if run.format is RunFormat.SQLITE:  # a database's bytes are never a trace; its rows are
        return [], f"no execution rows read from {run.state_file.name if run.state_file else 'state.db'}"
    for path, why in ((run.state_file, "no statements parsed from {name}; shown raw"),
                      (run.program_path, "no state file; showing the program {name}")):
        if path is None:
            continue
        try:
            with open_regular(path, root=run.root) as fh:
                data = fh.read(RAW_TRACE_BYTES + 1)
        except OutsideRun:
            return [], f"{path.name}: {OUTSIDE_RUN}"
        except OSError as exc:
            return [], f"cannot read {path.name}: {exc.strerror or exc}"
        text, cut = decode(data[:RAW_TRACE_BYTES]), len(data) > RAW_TRACE_BYTES
        if looks_encrypted(text[:4096]):
            return [], f"{path.name} is SOPS-encrypted; nothing to show without the key"
        lines = [TraceLine(line=i, text=t) for i, t in enumerate(text.splitlines(), start=1)]
        return lines, why.format(name=path.name) + (" (first 2 MiB)" if cut else "")
    return [], "this run folder has no state file and no program"


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
