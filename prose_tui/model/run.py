"""The run: what one OpenProse execution left behind, whatever its backend.

Plain dataclasses with no I/O. Sources (``prose_tui.backends``) build them from disk;
views only read them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from prose_tui.model.agent import Agent
from prose_tui.model.binding import Binding, natural_key, write_sorted
from prose_tui.model.event import Event, EventKind
from prose_tui.model.frame import Frame
from prose_tui.model.node import Node, Receipt
from prose_tui.model.statement import StatementState, TraceLine, executing_line


class RunStatus(StrEnum):
    """Where a run stands. ``interrupted`` is inferred, never written by a VM; ``unreadable``:
    its state file or folder could not be read at all (permission denied, an I/O error), so
    nothing is known of it (a live re-read that fails keeps the last good state instead)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    UNKNOWN = "unknown"
    UNREADABLE = "unreadable"


_KIND = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_KIND_LOCK = threading.Lock()


class OpenStrEnum(StrEnum):
    """A ``StrEnum`` a backend outside the package may add a value to: ``Backend("ledger")``
    gives the one member for ``"ledger"``, made on first use (a lowercase name of letters,
    digits, ``-`` and ``_``, at most 40 characters; anything else is a ``ValueError``), so
    ``run.backend is kind`` holds as for the built-in members. Not listed when iterating."""

    @classmethod
    def _missing_(cls, value: object) -> OpenStrEnum | None:
        if not isinstance(value, str) or not _KIND.fullmatch(value):
            return None
        with _KIND_LOCK:
            known = cls._value2member_map_.get(value)
            if known is not None:
                return known  # type: ignore[return-value]
            member = str.__new__(cls, value)
            member._name_ = value.upper().replace("-", "_")
            member._value_ = value
            cls._value2member_map_[value] = member
            return member


class Backend(OpenStrEnum):
    """Which state backend a run was written with: the seed backends and Reactor/PostgreSQL
    below; a third-party backend names its own (``Backend("name")``, see :class:`OpenStrEnum`)."""

    FILESYSTEM = "filesystem"
    SQLITE = "sqlite"
    NARRATION = "narration"
    REACTOR = "reactor"  # openprose-0.15 reactor.md: a Reactor state dir
    POSTGRES = "postgres"  # openprose-0.15 state/postgres.md
    RECEIPT_LEDGER = "receipt-ledger"  # FORMATS.md generation 8: receipts.jsonl + run.json


class RunFormat(OpenStrEnum):
    """The dialect family of a run's state, oldest first (FORMATS.md, Generations); a
    third-party backend names its own (``RunFormat("name")``)."""

    SNAPSHOT = "snapshot"  # seeds/filesystem.md annotated state.md
    EVENT_LOG = "event-log"  # compact "# run:" log in state.md
    CONTRACT = "contract"  # manifest.md/program.md/services/ runs with an event log
    VM_LOG = "vm-log"  # vm.log.md
    SKILL = "skill"  # openprose-0.15 state/filesystem.md: vm.log.md + world-model/ + receipts/
    SQLITE = "sqlite"  # seeds/sqlite.md state.db
    REACTOR = "reactor"  # openprose-0.15 reactor.md: receipts.json + compile/topology.json
    POSTGRES = "postgres"  # openprose-0.15 state/postgres.md, schema openprose
    NARRATION = "narration"  # seeds/in-context.md markers
    RECEIPT_LEDGER = "receipt-ledger"  # FORMATS.md generation 8: a per-statement receipts.jsonl
    ENCRYPTED = "encrypted"  # SOPS-encrypted state; nothing readable
    BARE = "bare"  # a run folder with no state file at all


@dataclass(slots=True)
class ActiveConstruct:
    """One ``### Title`` entry of state.md's ``## Active Constructs`` (seeds/filesystem.md)."""

    title: str
    items: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Section:
    """A state.md section the seed does not define, or one written as prose; kept verbatim."""

    title: str
    text: str


@dataclass(slots=True)
class Run:
    """One run of an OpenProse program.

    ``path`` is the run folder (or the state file for runs without one, such as
    narration transcripts). Times are timezone-aware where the source gave a zone and
    naive UTC otherwise. ``warnings`` holds one human sentence per thing that did not
    parse; the raw text stays reachable through ``state_file``.
    """

    id: str
    path: Path
    backend: Backend = Backend.FILESYSTEM
    format: RunFormat = RunFormat.BARE
    program: str | None = None
    program_path: Path | None = None
    status: RunStatus = RunStatus.UNKNOWN
    status_reason: str = ""
    started: datetime | None = None
    updated: datetime | None = None
    state_file: Path | None = None
    state_mtime: float | None = None
    trace: list[TraceLine] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    call_stack: list[Frame] = field(default_factory=list)
    constructs: list[ActiveConstruct] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    imports: list[Run] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    encrypted: bool = False
    import_handle: str | None = None
    tables: list[str] = field(default_factory=list)  # SQLite x_* extension tables, viewable as tables
    metrics: dict[str, float] = field(default_factory=dict)  # token/cost totals (SQLite x_metrics-style)
    end_marker: str | None = None  # an event log's closing "---end ts" line
    error_marker: str | None = None  # an event log's closing "---error ts message" line
    nodes: list[Node] = field(default_factory=list)  # openprose-0.15: one per compiled node
    receipts: list[Receipt] = field(default_factory=list)  # every node's receipts, in ledger order
    location: str | None = None  # where a run lives when not on local disk (e.g. "postgres host/db")
    # An event-log run's program file as read with the run (by the backend, off the UI thread):
    # what the explorer annotates from the log. ``None``: not read (no program file, a summary).
    program_text: str | None = None
    # The run folder resolved once (backends/common/contained.run_root): every file the run
    # names is read only below it ("outside the run: not read"). ``None``: not a folder run.
    root: Path | None = None
    # The state file's last read: when it last read whole (``read_at``, UTC), and why the
    # latest read failed while the run shows the state read then (``read_problem``:
    # "Permission denied"; ``None`` when the latest read succeeded).
    read_at: datetime | None = None
    read_problem: str | None = None

    @property
    def executing(self) -> TraceLine | None:
        """The statement the run is at: the last executing or retrying trace line."""
        return executing_line(self.trace)

    def binding_named(self, name: str, execution_id: int | None = None) -> Binding | None:
        """Resolve ``name`` as the VM would (seeds/filesystem.md, Scope resolution).

        Walks the call stack from the frame ``execution_id`` outwards, then root scope.
        """
        by_key = {(b.name, b.execution_id): b for b in self.bindings}
        chain: list[int | None] = []
        if execution_id is not None:
            parents = {f.execution_id: f.parent_id for f in self.call_stack}
            seen: set[int] = set()
            current: int | None = execution_id
            while current is not None and current not in seen:
                seen.add(current)
                chain.append(current)
                current = parents.get(current)
        chain.append(None)
        for eid in chain:
            if (name, eid) in by_key:
                return by_key[(name, eid)]
        return None


def program_name(program: str | None) -> str:
    """The program's file name; VMs sometimes write a full path (``~/.claude/.../bug.md``)."""
    if not program:
        return "—"
    return program.rstrip("/").rsplit("/", 1)[-1]


_STATEMENT_ENDS = (EventKind.STATEMENT_COMPLETED, EventKind.STATEMENT_FAILED)


def binding_of_event(event: Event, bindings: list[Binding]) -> Binding | None:
    """The existing binding a ``binding_written`` ``event`` wrote: the file its text names
    (``wrote bindings/parts__3.md``), then its name within the event's execution id, then its
    name in any scope (scoped bindings share a name: pass 1's ``parts`` is not pass 3's)."""
    written = [b for b in bindings if b.exists]
    for found in (next((b for b in written if f"/{b.path.name}" in event.text), None),
                  next((b for b in written if event.name in (b.name, b.path.stem)
                        and b.execution_id == event.execution_id), None),
                  next((b for b in written if event.name in (b.name, b.path.stem)
                        or (b.path.stem and b.path.stem in event.text)), None)):
        if found is not None:
            return found
    return None


def write_order(run: Run, *, first: bool = False) -> dict[int, int]:
    """Where each binding (by its index in ``run.bindings``) comes in the order the run wrote
    them, as the run records it: its latest ``binding_written`` event in ``run.events``
    (narration, journals) or the latest completed or failed statement named like it
    or its contract service (event logs), else the last entered trace line whose ``-->``
    annotation names its file (``state.md`` is written in execution order). With ``first``,
    the earliest such event or line instead (where a binding first appeared: a loop that
    rewrites it does not move it). A scoped binding the record does not name (``parts__41``
    when only ``parts__43`` is annotated) takes the place of its namesake: the same statement
    wrote it. Bindings the run does not place are absent. File times are no evidence: a copy
    or clone scrambles them."""
    order: dict[int, int] = {}

    def place(i: int, n: int) -> None:
        if not first or i not in order:
            order[i] = n

    if run.events:
        _place_by_events(run, place)
    if not order:
        by_rel: dict[str, int] = {}
        prefix = f"{run.path.as_posix().rstrip('/')}/"  # not Path.relative_to: 0.1 s per 10,000 bindings
        for i, b in enumerate(run.bindings):
            if (text := b.path.as_posix()).startswith(prefix):
                by_rel[text[len(prefix):]] = i
        for n, line in enumerate(run.trace):
            if line.binding and line.state not in (None, StatementState.NEXT, StatementState.PENDING):
                i = by_rel.get(line.binding.removeprefix("./"), -1)
                if i >= 0:
                    place(i, n)
    return _namesakes(run.bindings, order) if 0 < len(order) < len(run.bindings) else order


def _place_by_events(run: Run, place: Callable[[int, int], None]) -> None:
    """``place(i, n)`` for each binding ``run.bindings[i]`` event ``n`` of ``run.events``
    wrote (:func:`write_order`)."""
    index = {id(b): i for i, b in enumerate(run.bindings)}
    named: dict[str, list[int]] = {}  # a binding's name and its contract service -> its indexes
    for i, b in enumerate(run.bindings):
        for key in {b.name, b.service or b.name}:
            named.setdefault(key, []).append(i)
    for n, event in enumerate(run.events):
        if event.kind is EventKind.BINDING_WRITTEN:
            found = binding_of_event(event, run.bindings)
            if found is not None:
                place(index[id(found)], n)
        elif event.kind in _STATEMENT_ENDS and event.name:
            # an event log's "5-> linus ✓" wrote bindings/linus/*.md (a contract's service) or `linus`
            for i in named.get(event.name, ()):
                b = run.bindings[i]
                if b.service == event.name or event.execution_id in (None, b.execution_id):
                    place(i, n)


def _namesakes(bindings: list[Binding], order: dict[int, int]) -> dict[int, int]:
    """``order`` with each unplaced binding at the earliest place of a placed one of the same
    name and service in another scope (``parts__41`` where ``parts__43`` was written)."""
    at: dict[tuple[str | None, str], int] = {}
    for i, n in order.items():
        key = (bindings[i].service, bindings[i].name)
        at[key] = min(n, at.get(key, n))
    for i, b in enumerate(bindings):
        if i not in order and (b.service, b.name) in at:
            order[i] = at[(b.service, b.name)]
    return order


def ordered_bindings(run: Run) -> list[Binding]:
    """``run.bindings`` as a user reads them (the bindings pane, ``show``, ``show --json``):
    in the order the run first wrote them by its own record (:func:`write_order` with
    ``first``; the program's order for a snapshot's trace), the rest in the order the backend
    lists them (Index rows, table rows, receipts; natural order of the files otherwise). See
    :func:`prose_tui.model.binding.write_sorted`; file times play no part."""
    return write_sorted(run.bindings, write_order(run, first=True))


def newest_binding(run: Run, changed: set[Path] | None = None,
                   where: Callable[[Binding], bool] | None = None) -> Binding | None:
    """The readable binding ``run`` wrote last (among files in ``changed`` and bindings
    ``where`` accepts, when given): the one
    the latest write the run records places last (:func:`write_order`), then the highest
    execution id (ids grow as the run goes: pass 3's ``parts`` is newer than pass 1's), and
    only then the file's mtime and the name (natural order) to break ties. ``None`` when no
    binding is readable."""
    order = write_order(run)
    candidates = [(i, b) for i, b in enumerate(run.bindings)
                  if b.exists and not b.encrypted and (b.mtime is not None or i in order)
                  and (changed is None or b.path in changed) and (where is None or where(b))]
    if not candidates:
        return None
    _i, newest = max(candidates, key=lambda ib: (order.get(ib[0], -1),
                                                 ib[1].execution_id if ib[1].execution_id is not None else -1,
                                                 ib[1].mtime or 0.0, natural_key(ib[1].name)))
    return newest
