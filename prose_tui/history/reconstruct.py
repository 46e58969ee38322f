"""An approximate history for a snapshot run nobody watched (issue 3).

A snapshot ``state.md`` (seeds/filesystem.md) only says where the run is *now*. What is left
of the order is what the run records: the trace (the program's statements in order, each
``-->`` naming the binding it wrote), the execution ids of scoped bindings, the Index, the
agents' numbered segments. File times only break ties the record leaves (the branches of a
``parallel:``, which run at once): a git clone or a copy gives every file the same time,
and the order must not then depend on the folder's listing. The reconstruction:

* one item per trace line with a state (complete, executing, retrying, failed, skipped), in
  trace order, carrying the binding its ``-->`` annotation names; the branches of a
  ``parallel:`` by the time of their files (untimed last), then their name; the body of a
  ``block`` definition moves to the first line that calls it (``do name``); a block header
  with no binding of its own (``parallel:``, ``loop``...) comes after its body;
* a binding file no trace line names: beside the one of the same name it names (scoped
  ``parts__41`` before ``parts__43``: execution ids grow), else after the trace in Index
  order, then by time and natural name; an agent's segments in number order, the k-th after
  the k-th statement that runs that agent (``session: captain``, ``resume: captain``), the
  others at the end;
* a binding becomes ``binding_written`` then the line's own event; execution ids of scoped
  bindings become ``frame_pushed`` before their first binding and ``frame_popped`` after
  their last (unless still on the final call stack); the run's end or error closes the stream.

Times on events come only from files (binding/segment mtimes, the header's ``updated:``);
lines with no file have ``time=None``. The History says it is reconstructed.
Times never run backwards: a file time more than ``COPY_GAP`` after the run's start came
from a copy or a checkout, not the run, and one before the start (beyond ``CLOCK_SLACK``)
cannot be the run's either: both are dropped; a time earlier than one before it
(the header's ``updated:`` written before the last binding, a file touched out of order) is
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
from prose_tui.model.binding import natural_key

__all__ = ["NOTE", "reconstruct"]

K = EventKind
S = StatementState
NOTE = "reconstructed from the trace and file times (never watched by prose-tui); approximate"
CLOCK_SLACK = 14 * 3600.0  # a file time this much before `started:` is not the run's (the widest time-zone slip a VM makes)
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
    """An approximate :class:`History` (origin ``"reconstructed"``) from what ``run``'s
    state records (trace, execution ids, Index, segment numbers), file times breaking ties;
    see the module doc. Reads no file (uses the mtimes ``load_run`` recorded); never raises."""
    by_rel = {_rel(b.path, run.path): b for b in run.bindings if b.exists}
    linked: set[str] = set()
    lines: list[_Item] = []
    for t in run.trace:
        if t.state is None or t.state in (S.NEXT, S.PENDING):
            continue
        binding = by_rel.get(t.binding.removeprefix("./")) if t.binding else None
        if binding is not None:
            linked.add(_rel(binding.path, run.path))
        lines.append(_Item(binding.mtime if binding is not None else None, len(lines), line=t, binding=binding,
                           timed=binding is not None and binding.mtime is not None))
    items = _with_bindings(_in_record_order(lines, run), [b for rel, b in by_rel.items() if rel not in linked])
    items = _with_segments(items, run)

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
    """Drop file times a copy gave (more than ``COPY_GAP`` after ``run.started``, or
    more than ``CLOCK_SLACK`` before it: the run had not begun; the run end's header time
    aside), raise a time earlier than one before it to that one, and mark every time left
    approximate: times are non-decreasing in event order."""
    started = as_utc(run.started)
    latest: datetime | None = None
    for event in events:
        if event.time is None:
            continue
        when = as_utc(event.time)
        ended = event.kind in (K.RUN_ENDED, K.RUN_ERRORED)
        if not ended and started is not None and not -CLOCK_SLACK <= (when - started).total_seconds() <= COPY_GAP:
            event.time = None
            continue
        if latest is not None and when < latest:
            when = latest
        event.time, event.approximate, latest = when, True, when


def _body(items: list[_Item], at: int, run: Run) -> int:
    """How many items after ``items[at]`` (a trace line) lie in its block: until a trace
    line indented no deeper than it."""
    lines = run.trace
    position = {t.line: i for i, t in enumerate(lines)}
    head = items[at].line
    assert head is not None
    start, count = position[head.line], 0
    for other in items[at + 1:]:
        assert other.line is not None
        j = position[other.line.line]
        if any(lines[k].text.strip() and lines[k].indent <= head.indent for k in range(start + 1, j + 1)):
            break
        count += 1
    return count


def _tie(unit: list[_Item]) -> tuple:
    """A parallel branch's place among its siblings: its files' latest time (untimed last),
    then its name (natural order), then trace order."""
    times = [it.key for it in unit if it.timed and it.key is not None]
    first = unit[0]
    name = first.binding.name if first.binding is not None else statement_name(first.line) if first.line else ""
    return (max(times) if times else float("inf"), natural_key(name or ""), first.order)


def _in_record_order(items: list[_Item], run: Run) -> list[_Item]:
    """Trace items in the order the run records: the body of a ``block`` definition moved
    to its first call (``do name``), the branches of each ``parallel:`` by :func:`_tie`, and
    a block header without a binding after its body."""
    items = list(items)
    for head in [it for it in items if it.line is not None and _BLOCK_DEF.match(it.line.text)]:
        at = items.index(head)
        body = items[at + 1: at + 1 + _body(items, at, run)]
        call = re.compile(rf"\bdo\s+{re.escape(_BLOCK_DEF.match(head.line.text).group(1))}\b")  # type: ignore[union-attr]
        target = next((it for it in items if it not in body and it is not head and it.line is not None
                       and call.search(it.line.text)), None)
        if body and target is not None:
            rest = [it for it in items if it not in body]
            where = rest.index(target)
            items = rest[:where] + body + rest[where:]
    for head in [it for it in items if it.line is not None and it.line.text.strip().startswith("parallel")]:
        at = items.index(head)
        body = items[at + 1: at + 1 + _body(items, at, run)]
        if not body:
            continue
        level = min(it.line.indent for it in body if it.line is not None)
        units: list[list[_Item]] = []
        for it in body:
            if not units or (it.line is not None and it.line.indent <= level):
                units.append([])
            units[-1].append(it)
        units.sort(key=_tie)
        items[at + 1: at + 1 + len(body)] = [it for unit in units for it in unit]
    for head in [it for it in items if it.binding is None]:
        at = items.index(head)
        n = _body(items, at, run)
        if n:  # closes right after its body
            items[at: at + n + 1] = items[at + 1: at + n + 1] + [head]
    return items


def _with_bindings(items: list[_Item], unlinked: list[Binding]) -> list[_Item]:
    """``items`` with a binding-written item for each of ``unlinked`` (files no trace line
    names): beside a trace item naming one of the same name and service, by execution id;
    the others after the trace, by Index row, time (untimed last), natural name, id."""
    out: list[_Item] = []
    namesakes: dict[tuple[str | None, str], list[Binding]] = {}
    linked_names = {(it.binding.service, it.binding.name) for it in items if it.binding is not None}
    rest: list[Binding] = []
    for b in unlinked:
        (namesakes.setdefault((b.service, b.name), []) if (b.service, b.name) in linked_names else rest).append(b)

    def scoped(b: Binding) -> tuple:
        return (b.execution_id if b.execution_id is not None else -1, b.mtime if b.mtime is not None else float("inf"),
                b.path.as_posix())

    def item(b: Binding) -> _Item:
        return _Item(b.mtime, 0, binding=b, timed=b.mtime is not None)

    for it in items:
        named = it.binding
        if named is not None and (named.service, named.name) in namesakes:
            siblings = sorted(namesakes.pop((named.service, named.name)), key=scoped)
            out.extend(item(x) for x in siblings if scoped(x) < scoped(named))
            out.append(it)
            out.extend(item(x) for x in siblings if not scoped(x) < scoped(named))
        else:
            out.append(it)
    rest.sort(key=lambda b: (b.listed if b.listed is not None else float("inf"),
                             b.mtime if b.mtime is not None else float("inf"), natural_key(b.name)) + scoped(b))
    return out + [item(b) for b in rest]


def _with_segments(items: list[_Item], run: Run) -> list[_Item]:
    """``items`` with an item per agent segment under the run's ``agents/``: segment k (in
    number order) after the k-th trace item that runs the agent (``session: name``,
    ``resume: name``), the others at the end in agent and number order."""
    after: dict[int, list[_Item]] = {}
    tail: list[_Item] = []
    for agent in run.agents:
        if agent.path is None or not _inside(agent.path, run.path):
            continue
        runs_it = re.compile(rf"\b(?:session|resume)\s*:\s*{re.escape(agent.name)}\b")
        calls = [n for n, it in enumerate(items) if it.line is not None and runs_it.search(it.line.text)]
        segments = sorted(agent.segments, key=lambda seg: (seg.number if seg.number is not None else 1 << 30,
                                                           seg.path.as_posix() if seg.path else ""))
        for k, seg in enumerate(segments):
            it = _Item(seg.mtime, 0, segment_path=seg.path, agent=agent.name, segment_number=seg.number,
                       timed=seg.mtime is not None)
            (after.setdefault(calls[k], []) if k < len(calls) else tail).append(it)
    out: list[_Item] = []
    for n, it in enumerate(items):
        out.append(it)
        out.extend(after.get(n, ()))
    return out + tail


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
