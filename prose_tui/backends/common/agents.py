"""Agent memory and segments (seeds/filesystem.md, Agent Memory Files and Memory Scoping).

Execution scope: ``{run}/agents/{name}/``; project scope: ``{project}/.prose/agents/{name}/``;
user scope: ``~/.prose/agents/{name}/``. Each holds ``memory.md`` and ``{name}-NNN.md``
segments (3 digits, 4 past 999). Only segment heads are read (``timestamp:``, ``prompt:``).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from prose_tui.backends.common.contained import inside
from prose_tui.backends.common.text import decode, open_regular, visible_name
from prose_tui.model import Agent, Segment

_SEGMENT = re.compile(r"^(?P<name>.+)-(?P<num>\d{3,})\.md$")
_FIELD = re.compile(r"^\s*(timestamp|prompt)\s*:\s*(.*)$", re.IGNORECASE)
_SEGMENT_HEAD = 2048


def read_segment(path: Path, number: int, root: Path | None = None) -> Segment:
    """A segment's number, timestamp and prompt from its first 2 KiB. Never raises. With
    ``root``, a segment file outside it is neither measured nor read (no timestamp, 0 bytes)."""
    seg = Segment(number=number, path=path)
    if root is not None and not inside(path, root):
        return seg
    try:
        with open_regular(path, root=root) as fh:
            st = os.fstat(fh.fileno())
            seg.bytes, seg.mtime = st.st_size, st.st_mtime
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


# Segment heads already read, per agent folder: file name -> ((size, mtime_ns), segment). A
# live run adds a segment at a time and the folder is read again for each; without this every
# read re-opened every earlier segment (quadratic as a run ages). Each read of a folder keeps
# only the files it still holds, so this grows with the segments on disk, nothing else.
_known_heads: dict[Path, dict[str, tuple[tuple[int, int], Segment]]] = {}


def read_agent_dir(folder: Path, scope: str, root: Path | None = None) -> Agent:
    """The agent whose memory lives in ``folder``; segments sorted by number.

    A segment whose size and modification time are unchanged since this folder was last read
    is not opened again (its head is reused). With ``root`` (``run_root`` of the run, or of
    the scope's ``agents/``), a folder, ``memory.md`` or segment that resolves outside it is
    listed in ``Agent.outside`` and not read (a folder outside: nothing in it is listed)."""
    agent = Agent(name=visible_name(folder.name), scope=scope, path=folder, root=root)
    if root is not None and not inside(folder, root):
        agent.outside.append(folder)
        return agent
    memory = folder / "memory.md"
    if root is not None and os.path.islink(memory) and not inside(memory, root):
        agent.memory = memory
        agent.outside.append(memory)
    else:
        agent.memory = memory if memory.is_file() else None
    known = _known_heads.get(folder, {})
    seen: dict[str, tuple[tuple[int, int], Segment]] = {}
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return agent
    for entry in entries:
        m = _SEGMENT.match(entry.name)
        if m is None:
            continue
        if root is not None and entry.is_symlink() and not inside(entry.path, root):
            agent.outside.append(folder / entry.name)
            agent.segments.append(Segment(number=int(m.group("num")), path=folder / entry.name))
            continue
        try:
            if not entry.is_file():
                continue
            st = entry.stat()
        except OSError:
            continue
        key = (st.st_size, st.st_mtime_ns)
        cached = known.get(entry.name)
        if cached is not None and cached[0] == key:
            seg = replace(cached[1])
        else:
            seg = read_segment(folder / entry.name, int(m.group("num")), root)
        seen[entry.name] = (key, replace(seg))
        agent.segments.append(seg)
    _known_heads[folder] = seen
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
