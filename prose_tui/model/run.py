"""The run: what one OpenProse execution left behind, whatever its backend.

Plain dataclasses with no I/O. Sources (``prose_tui.backends``) build them from disk;
views only read them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from prose_tui.model.agent import Agent
from prose_tui.model.binding import Binding
from prose_tui.model.event import Event
from prose_tui.model.frame import Frame
from prose_tui.model.node import Node, Receipt
from prose_tui.model.statement import TraceLine, executing_line


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
