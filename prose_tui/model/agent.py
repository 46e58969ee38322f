"""Agents and their memory (seeds/filesystem.md, Agent Memory Files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
class Segment:
    """One ``{name}-NNN.md`` segment: the record of one invocation of a persistent agent."""

    number: int
    path: Path
    timestamp: str | None = None
    prompt: str | None = None
    bytes: int = 0
    mtime: float | None = None


@dataclass(slots=True)
class Agent:
    """An agent a run declared or whose memory it holds.

    ``scope`` is execution, project or user for persistent agents (the folder the memory
    was found in), or what the Index says for others (``stateless``, ``session``...).
    ``path`` is the memory folder, ``None`` for a stateless agent. ``details`` keeps extra
    Index columns (``Model``, ``Prompt``...) as written.

    ``root`` is the folder its memory and segments are read below (the run's root for
    execution scope, the scope's ``agents/`` folder for project and user scope);
    ``outside`` the files of it (or its folder) that lie outside that root: listed, never
    read ("outside the run: not read", backends/common/contained.py).
    """

    name: str
    scope: str | None = None
    path: Path | None = None
    memory: Path | None = None
    segments: list[Segment] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)
    root: Path | None = None
    outside: list[Path] = field(default_factory=list)
