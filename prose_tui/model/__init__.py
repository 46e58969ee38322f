"""The run model: plain dataclasses, no I/O, no Textual."""

from .agent import Agent, Segment
from .binding import Binding
from .event import Event, EventKind
from .frame import Frame
from .run import ActiveConstruct, Backend, Run, RunFormat, RunStatus, Section
from .statement import StatementState, TraceLine

__all__ = [
    "ActiveConstruct",
    "Agent",
    "Backend",
    "Binding",
    "Event",
    "EventKind",
    "Frame",
    "Run",
    "RunFormat",
    "RunStatus",
    "Section",
    "Segment",
    "StatementState",
    "TraceLine",
]
