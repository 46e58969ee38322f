"""Agent memory and segments (seeds/filesystem.md, Agent Memory Files and Memory Scoping).

Execution scope: ``{run}/agents/{name}/``; project scope: ``{project}/.prose/agents/{name}/``;
user scope: ``~/.prose/agents/{name}/``. Each holds ``memory.md`` and ``{name}-NNN.md``
segments (3 digits, 4 past 999). Only segment heads are read (``timestamp:``, ``prompt:``).
"""

from __future__ import annotations

import re
from pathlib import Path

from prose_tui.backends.common.text import decode, open_regular, visible_name
from prose_tui.model import Agent, Segment

_SEGMENT = re.compile(r"^(?P<name>.+)-(?P<num>\d{3,})\.md$")
_FIELD = re.compile(r"^\s*(timestamp|prompt)\s*:\s*(.*)$", re.IGNORECASE)
_SEGMENT_HEAD = 2048


def read_segment(path: Path, number: int) -> Segment:
    """A segment's number, timestamp and prompt from its first 2 KiB. Never raises."""
    seg = Segment(number=number, path=path)
    try:
        st = path.stat()
        seg.bytes, seg.mtime = st.st_size, st.st_mtime
        with open_regular(path) as fh:
            head = decode(fh.read(_SEGMENT_HEAD))
    except OSError:
        return seg
    for line in head.splitlines()[:20]:
        m = _FIELD.match(line)
        if m:
            value = m.group(2).strip().strip('"')
            if m.group(1).lower() == "timestamp":
                seg.timestamp = value
            else:
                seg.prompt = value
    return seg


def read_agent_dir(folder: Path, scope: str) -> Agent:
    """The agent whose memory lives in ``folder``; segments sorted by number."""
    agent = Agent(name=visible_name(folder.name), scope=scope, path=folder)
    memory = folder / "memory.md"
    agent.memory = memory if memory.is_file() else None
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return agent
    for entry in entries:
        m = _SEGMENT.match(entry.name)
        if m and entry.is_file():
            agent.segments.append(read_segment(entry, int(m.group("num"))))
    agent.segments.sort(key=lambda s: s.number)
    return agent


def agent_dirs(root: Path) -> list[Path]:
    """Sub-folders of an ``agents/`` folder, sorted; empty when it does not exist."""
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def segment_number(path: Path) -> int | None:
    """The segment number of ``{name}-NNN.md``, or ``None`` for memory.md and others."""
    m = _SEGMENT.match(path.name)
    return int(m.group("num")) if m else None
