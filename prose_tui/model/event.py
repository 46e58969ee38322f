"""Events: the ordered history of a run, whatever backend wrote it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class EventKind(StrEnum):
    """What happened. One vocabulary for every source (event logs, journals, sqlite, narration)."""

    STATEMENT_STARTED = "statement_started"
    STATEMENT_COMPLETED = "statement_completed"
    STATEMENT_FAILED = "statement_failed"
    STATEMENT_SKIPPED = "statement_skipped"
    RETRY = "retry"
    BINDING_WRITTEN = "binding_written"
    FRAME_PUSHED = "frame_pushed"
    FRAME_POPPED = "frame_popped"
    PARALLEL_STARTED = "parallel_started"
    PARALLEL_JOINED = "parallel_joined"
    LOOP_ITERATION = "loop_iteration"
    AGENT_SEGMENT = "agent_segment"
    IMPORT_ENTERED = "import_entered"
    IMPORT_LEFT = "import_left"
    RUN_ENDED = "run_ended"
    RUN_ERRORED = "run_errored"
    RUN_RESUMED = "run_resumed"
    NOTE = "note"
    # openprose-0.15 (concepts/reactor.md): a node's receipt, named by its status
    RECEIPT_RENDERED = "receipt_rendered"
    RECEIPT_SKIPPED = "receipt_skipped"
    RECEIPT_FAILED = "receipt_failed"


@dataclass(slots=True)
class Event:
    """One event of a run's history.

    ``seq`` is 0-based and dense. ``time`` is when it happened where the source knows.
    ``step`` is the statement label as written (``"3"``, ``"3a"``); ``name`` the binding,
    statement, frame or branch it concerns; ``status`` the outcome word (``"✓"`` becomes
    ``"ok"``; ``"rejected"``, ``"deferred"``, ``"skip"`` are kept); ``text`` the source line
    verbatim (for a note, the whole note). ``line`` is the 1-based line in the source file.
    ``approximate`` says ``time`` was reconstructed (from file times, ``history.reconstruct``),
    not recorded when it happened; views mark such times (``≈14:02:11``).
    """

    seq: int
    kind: EventKind
    text: str
    time: datetime | None = None
    step: str | None = None
    name: str | None = None
    status: str | None = None
    line: int | None = None
    execution_id: int | None = None
    approximate: bool = False
