"""An approximate history for a snapshot run nobody watched (issue 3).

A snapshot ``state.md`` (seeds/filesystem.md) only says where the run is *now*. What is left
of the order: the trace order of the statements, and the modification times of the binding
files and agent segments the statements wrote. The reconstruction:

* one item per trace line with a state (complete, executing, retrying, failed, skipped), at
  the mtime of the binding its ``-->`` annotation names; a line with no binding takes the
  time of the line before it, and a block header (``parallel:``, ``loop``...) the time of
  the last line of its block, so it completes after its body;
* one item per binding file no trace line names (scoped ``x__N`` bindings, ``anon_NNN``),
  and per segment under the run's ``agents/``, at its mtime;
* items sorted by time, trace order breaking ties; a binding becomes ``binding_written``
  then the line's own event; execution ids of scoped bindings become ``frame_pushed``
  before their first binding and ``frame_popped`` after their last (unless still on the
  final call stack); the run's end or error closes the stream.

Times on events come only from files (binding/segment mtimes, the header's ``updated:``);
lines placed by their neighbours have ``time=None``. The History says it is reconstructed.
Times never run backwards: a file time more than ``COPY_GAP`` after the run's start came
from a copy or a checkout, not the run, and is dropped (the order it gives is kept); a time
earlier than one before it (the header's ``updated:`` written before the last binding) is
raised to it. Every time left is marked ``Event.approximate``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.backends.common.status import COPY_GAP, as_utc
from prose_tui.history.refs import EventRef
from prose_tui.history.timeline import History
from prose_tui.history.transitions import statement_name, transition
from prose_tui.model import (
    Binding,
    Event,
    EventKind,
    Run,
    RunStatus,
    StatementState,
    TraceLine,
)

__all__ = ["NOTE", "reconstruct"]

K = EventKind
S = StatementState
NOTE = "reconstructed from file times (never watched by prose-tui); the order is approximate"
_BLOCK_DEF = re.compile(r"^\s*block\s+([\w-]+)")


@dataclass(slots=True)
class _Item:
    key: float | None
    order: float
    line: TraceLine | None = None
    binding: Binding | None = None
    segment_path: Path | None = None
    agent: str | None = None
    segment_number: int | None = None
    timed: bool = False


def _when(mtime: float | None) -> datetime | None:
    return datetime.fromtimestamp(mtime, timezone.utc) if mtime is not None else None


def reconstruct(run: Run) -> History:
    """An approximate :class:`History` (origin ``"reconstructed"``) from ``run``'s trace
    order and file times; see the module doc. Reads no file (uses the mtimes ``load_run``
    recorded); never raises."""
    items: list[_Item] = []
    by_rel = {_rel(b.path, run.path): b for b in run.bindings if b.exists}
    linked: set[str] = set()
    for t in run.trace:
        if t.state is None or t.state in (S.NEXT, S.PENDING):
            continue
        binding = by_rel.get(t.binding.removeprefix("./")) if t.binding else None
        if binding is not None:
            linked.add(_rel(binding.path, run.path))
        key = binding.mtime if binding is not None else None
        items.append(_Item(key, len(items), line=t, binding=binding, timed=key is not None))
    _fill_keys(items, run)
    for rel, binding in sorted(by_rel.items()):
        if rel not in linked:
            items.append(_Item(binding.mtime, len(items), binding=binding, timed=binding.mtime is not None))
    for agent in run.agents:
        if agent.path is None or not _inside(agent.path, run.path):
            continue
        for seg in agent.segments:
            items.append(_Item(seg.mtime, len(items), segment_path=seg.path, agent=agent.name,
                               segment_number=seg.number, timed=seg.mtime is not None))
    floor = run.started.timestamp() if run.started else float("-inf")
    items.sort(key=lambda it: (it.key if it.key is not None else floor, it.order))

    events: list[Event] = []
    refs: list[EventRef] = []

    def add(event: Event, ref: EventRef) -> None:
        event.seq = len(events)
        events.append(event)
        refs.append(ref)

    last_of_frame: dict[int, int] = {}
    for i, it in enumerate(items):
        if it.binding is not None and it.binding.execution_id is not None:
            last_of_frame[it.binding.execution_id] = i
    open_at_end = {f.execution_id for f in run.call_stack}
    names = _block_names(run)
    pushed: set[int] = set()
    for i, it in enumerate(items):
        eid = it.binding.execution_id if it.binding is not None else None
        if eid is not None and eid not in pushed:
            pushed.add(eid)
            block = names.get(eid, names.get(None, "block"))
            add(Event(0, K.FRAME_PUSHED, f"#{eid} {block} (from bindings/*__{eid})", name=block, execution_id=eid),
                EventRef())
        when = _when(it.key) if it.timed else None
        if it.binding is not None:
            rel = _rel(it.binding.path, run.path)
            add(Event(0, K.BINDING_WRITTEN, f"wrote {rel}", time=when, name=it.binding.name, execution_id=eid),
                EventRef(trace_line=it.line.line if it.line else None, path=it.binding.path))
        if it.segment_path is not None:
            add(Event(0, K.AGENT_SEGMENT, f"wrote {_rel(it.segment_path, run.path)}", time=when, name=it.agent,
                      status=f"{it.segment_number:03d}" if it.segment_number is not None else None),
                EventRef(path=it.segment_path))
        if it.line is not None:
            change = transition(it.line, None, it.line.state)
            if change is not None:
                kind, status = change
                text = it.line.text.strip() + (f"  # {it.line.note}" if it.line.note else "")
                name = it.binding.name if it.binding is not None else statement_name(it.line)
                add(Event(0, kind, text, time=when, name=name, status=status, execution_id=eid),
                    EventRef(trace_line=it.line.line))
        if eid is not None and last_of_frame.get(eid) == i and eid not in open_at_end:
            block = names.get(eid, names.get(None, "block"))
            add(Event(0, K.FRAME_POPPED, f"#{eid} {block} returned", time=when, name=block, status="done",
                      execution_id=eid), EventRef())
    if run.status is RunStatus.COMPLETED:
        add(Event(0, K.RUN_ENDED, f"status: {run.header.get('status', 'completed')}", time=run.updated,
                  status="completed"), EventRef())
    elif run.status is RunStatus.FAILED:
        error = next((s.text.strip() for s in run.sections if s.title.strip().lower().startswith(("error", "failure"))),
                     None)
        add(Event(0, K.RUN_ERRORED, error or run.status_reason or "failed", time=run.updated, status="failed"),
            EventRef())
    _settle_times(events, run)
    return History(events, "reconstructed", NOTE, refs)


def _settle_times(events: list[Event], run: Run) -> None:
    """Drop file times a copy gave (more than ``COPY_GAP`` after ``run.started``, the run
    end's header time aside), raise a time earlier than one before it to that one, and mark
    every time left approximate: times are non-decreasing in event order."""
    started = as_utc(run.started)
    latest: datetime | None = None
    for event in events:
        if event.time is None:
            continue
        when = as_utc(event.time)
        ended = event.kind in (K.RUN_ENDED, K.RUN_ERRORED)
        if not ended and started is not None and (when - started).total_seconds() > COPY_GAP:
            event.time = None
            continue
        if latest is not None and when < latest:
            when = latest
        event.time, event.approximate, latest = when, True, when


def _fill_keys(items: list[_Item], run: Run) -> None:
    """Give untimed trace items a key: a block header the latest key of its body, any
    other line the key of the line before it."""
    lines = run.trace
    position = {t.line: i for i, t in enumerate(lines)}
    for index, it in enumerate(items):
        if it.key is not None or it.line is None:
            continue
        start = position[it.line.line]
        indent = it.line.indent
        body: list[_Item] = []
        for other in items[index + 1:]:
            assert other.line is not None
            j = position[other.line.line]
            if any(lines[k].text.strip() and lines[k].indent <= indent for k in range(start + 1, j + 1)):
                break
            body.append(other)
        timed = [other for other in body if other.key is not None]
        if timed:
            last = max(timed, key=lambda other: (other.key, other.order))
            it.key, it.order = last.key, last.order + 0.5  # closes right after its body
    previous: float | None = None
    for it in items:
        if it.key is None:
            it.key = previous
        previous = it.key


def _block_names(run: Run) -> dict[int | None, str]:
    """Execution id -> block name from the final call stack; ``None`` -> the only block defined."""
    names: dict[int | None, str] = {f.execution_id: f.block for f in run.call_stack if f.execution_id is not None}
    defined = {m.group(1) for t in run.trace if (m := _BLOCK_DEF.match(t.text))}
    if len(defined) == 1:
        names[None] = defined.pop()
    return names


def _rel(path: Path, run_dir: Path) -> str:
    try:
        return path.relative_to(run_dir).as_posix()
    except ValueError:
        return path.as_posix()


def _inside(path: Path, run_dir: Path) -> bool:
    return path == run_dir or run_dir in path.parents
