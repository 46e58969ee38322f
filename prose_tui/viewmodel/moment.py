"""The moment under a frozen history cursor, as the panes show it: where the trace cursor and
the value pane go (``MomentFocus``), the live view kept to restore (``LivePlace``), one event
as Markdown (``event_details``) and times as the screen writes them (``when_text``). No
Textual; ``ExplorerModel.moment_focus`` decides which event and binding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prose_tui.model import Binding, Event, TraceLine
from prose_tui.model.statement import assigned_name

__all__ = ["LivePlace", "MomentFocus", "event_details", "when_text"]


@dataclass(frozen=True, slots=True)
class MomentFocus:
    """Where the panes go at a frozen moment. ``line``: the trace line (``TraceLine.line`` of
    the run's own trace; ``ExplorerModel.trace_index`` finds it as shown) of the statement the
    event concerns, else of the nearest earlier event that has one (``None``: none has);
    ``binding``: the binding the event wrote, when its file still holds that write (no later
    event wrote it again); else ``title`` and ``details`` (Markdown): the event itself."""

    line: int | None
    binding: Binding | None
    title: str
    details: str


@dataclass(frozen=True, slots=True)
class LivePlace:
    """The live view left when the history cursor froze: the trace's ``following`` and
    ``cursor`` (an index into the lines shown then), and the value pane's ``value`` (a
    ``tui.targets.Target``, opaque here; ``None``: it showed nothing)."""

    following: bool
    cursor: int
    value: Any = None


def when_text(time: datetime, today: datetime | None = None, *, approximate: bool = False) -> str:
    """``14:02:11`` for today (UTC), ``2026-11-21 14:02:11`` for another day; ``≈`` before
    it when ``approximate`` (an ``Event.approximate`` time, reconstructed from file times)."""
    t = time.astimezone(timezone.utc) if time.tzinfo else time
    today = today or datetime.now(timezone.utc)
    mark = "≈" if approximate else ""
    if t.date() == today.date():
        return f"{mark}{t:%H:%M:%S}"
    return f"{mark}{t:%Y-%m-%d %H:%M:%S}"


def event_details(event: Event, line: int | None, rewritten: int | None, today: datetime | None = None) -> str:
    """One event as Markdown: what it was, when (``today``: the clock, for the date where
    not today), the line it logged and its statement (``line``: as the trace numbers it);
    ``rewritten``: the later event that wrote its binding again (why its value is not shown)."""
    when = when_text(event.time, today, approximate=event.approximate) if event.time is not None else "time unknown"
    out = [f"# Event {event.seq}: {event.kind.value.replace('_', ' ')}", "", when, "", f"    {event.text.strip()}", ""]
    facts = [(k, v) for k, v in (("step", event.step), ("name", event.name), ("outcome", event.status)) if v]
    out += [f"- {k}: `{v}`" for k, v in facts]
    if line is not None:
        out.append(f"- statement: trace line {line}")
    if rewritten is not None:
        out += ["", f"`{event.name}` was written again at event {rewritten}: its file holds that later "
                f"value, so it is not shown as of event {event.seq}."]
    return "\n".join(out)


def statement_writing(trace: list[TraceLine], name: str) -> int | None:
    """The trace line (``TraceLine.line``) of the statement that writes binding ``name``:
    the one whose ``-->`` annotation names that file, else the one that assigns the name (a
    scoped ``result__3``, a loop's third write, is written by the statement assigning
    ``result``; seeds/filesystem.md names scoped bindings ``name__id``). ``None`` when no
    statement does."""
    base = name.split("__", 1)[0]
    for t in trace:
        if t.binding and Path(t.binding).stem == name:
            return t.line
    for t in trace:
        if assigned_name(t.text) in (name, base):
            return t.line
    return None
