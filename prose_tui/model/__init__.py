"""The run model: plain dataclasses, no I/O, no Textual."""

from prose_tui.model.agent import Agent, Segment
from prose_tui.model.binding import Binding
from prose_tui.model.chain import ChainReport
from prose_tui.model.delta import VALUE_WINDOW, Delta, Part, ValueWindow
from prose_tui.model.event import Event, EventKind
from prose_tui.model.failure import Failure, ending, run_failure, run_failures, statement_failures
from prose_tui.model.frame import Frame
from prose_tui.model.node import Node, Receipt
from prose_tui.model.run import (
    ActiveConstruct,
    Backend,
    Run,
    RunFormat,
    RunStatus,
    Section,
)
from prose_tui.model.statement import StatementState, TraceLine, assigned_name

__all__ = [
    "ActiveConstruct",
    "Agent",
    "Backend",
    "Binding",
    "ChainReport",
    "Delta",
    "VALUE_WINDOW",
    "ValueWindow",
    "Event",
    "EventKind",
    "Failure",
    "Frame",
    "Node",
    "Part",
    "Receipt",
    "Run",
    "RunFormat",
    "RunStatus",
    "Section",
    "Segment",
    "StatementState",
    "TraceLine",
    "assigned_name",
    "statement_failures",
    "ending",
    "run_failure",
    "run_failures",
]
