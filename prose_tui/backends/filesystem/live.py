"""Applying a batch of changed paths to a filesystem run: what ``FilesystemBackend.apply`` does.

Each changed path is routed to the part of the run it belongs to (seeds/filesystem.md,
the run folder layout) and only that part is read again:

* the event-log state file (``state.md`` of generations 2-3, ``vm.log.md``) is *tailed*:
  the bytes appended since the last read are parsed on top of the parser's state
  (:mod:`~prose_tui.backends.filesystem.eventlog_tail`); a truncated, replaced or rewritten file is
  read again whole (``Delta.reread``);
* a snapshot ``state.md`` (generation 1) is read again and its trace diffed against the
  previous revision: only the trace lines that differ go into the delta;
* a binding file re-reads that binding (and links the event-log lines that name it), a
  segment re-reads that agent, an import re-reads that import;
* a program or an unknown file reads the run again whole.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.backends.common import agents as agent_files
from prose_tui.backends.common.bindings import read_binding
from prose_tui.backends.common.status import COPY_GAP, as_utc, infer_status
from prose_tui.backends.common.text import read_window, visible_name
from prose_tui.backends.common.contained import inside
from prose_tui.backends.common.state_files import STATE_FILES
from prose_tui.backends.filesystem.eventlog_tail import EventLogTail
from prose_tui.backends.filesystem.folder import (
    distrust_future_time,
    load_run,
    note_outside,
    outside_import,
    reload_state,
)
from prose_tui.backends.filesystem.skill import settle_status
from prose_tui.backends.filesystem.tail import Change
from prose_tui.backends.protocol import classify_by_layout
from prose_tui.model import VALUE_WINDOW, Binding, Delta, Run, RunFormat, ValueWindow

EVENT_LOG_FORMATS = (RunFormat.EVENT_LOG, RunFormat.VM_LOG, RunFormat.CONTRACT)
PREFETCH_VALUES = 8  # binding values read with a change (more in one batch: the viewer reads its own)
_WROTE = re.compile(r"^\s*\S+?(?:→|->)\s*(?:\[[^\]]*\]\s*)?([.\w-]+)")


def apply_paths(run: Run, paths: Collection[Path], tails: dict[Path, EventLogTail], *, now: datetime,
                stale_after: float, observed: datetime | None, summary: bool) -> Delta:
    """Bring ``run`` (changed in place where it can be) up to date with ``paths``.

    ``tails`` holds the event-log tail of each run (by folder), filled by ``load_run``.
    ``summary`` runs (a run list row) only follow their state file. ``paths`` classified
    by the live layer (a :data:`~prose_tui.backends.protocol.Changed` mapping) are not
    classified again. A state file read whole for the change goes with the delta
    (``Delta.state_data``/``state_stat``), for the journal. Raises ``OSError`` when the run
    folder is gone.
    """
    read: dict[Path, tuple[bytes, os.stat_result]] = {}
    delta = _apply_paths(run, paths, tails, read, now=now, stale_after=stale_after, observed=observed,
                         summary=summary)
    state = delta.run.state_file
    if state is not None and state in read:
        delta.state_data, delta.state_stat = read[state]
    return delta


def _apply_paths(run: Run, paths: Collection[Path], tails: dict[Path, EventLogTail],
                 read: dict[Path, tuple[bytes, os.stat_result]], *, now: datetime, stale_after: float,
                 observed: datetime | None, summary: bool) -> Delta:
    run_dir = run.path
    parts = dict(paths) if isinstance(paths, Mapping) else {p: classify_by_layout(run_dir, p) for p in paths}
    # A skill run's ledger files are appended to: tailed (skill_live.py), not read again.
    # (skill_live and snapshot_trace are imported for the runs that need them, issue 33.)
    ledgers: set[Path] = set()
    if run.format is RunFormat.SKILL:
        from prose_tui.backends.filesystem.skill_live import is_ledger_file

        ledgers = {p for p, part in parts.items() if part == "other" and is_ledger_file(run_dir, p)}
    kinds = {part for p, part in parts.items() if p not in ledgers}
    if "program" in kinds or ("other" in kinds and not summary) or run.format is RunFormat.ENCRYPTED:
        fresh = load_run(run_dir, now=now, stale_after=stale_after, observed=observed, summary=summary, tails=tails,
                         root=run.root, read=read)
        delta = Delta.whole(fresh, paths)
        delta.reread = True
        return delta
    delta = Delta(run, set(paths))
    before_status = (run.status, run.status_reason)
    if "state" in kinds:
        delta = _state_changed(run, paths, tails, delta, now=now, stale_after=stale_after, observed=observed,
                               summary=summary, read=read)
        run = delta.run
    if ledgers and not summary and delta.run is run:  # (a state change read the run again, ledgers too)
        from prose_tui.backends.filesystem.skill_live import apply_receipts

        events = apply_receipts(run, ledgers)
        if events is None:  # not a run whose ledger is followed: read it again
            fresh = load_run(run_dir, now=now, stale_after=stale_after, observed=observed, summary=summary, tails=tails,
                         root=run.root, read=read)
            whole = Delta.whole(fresh, paths)
            whole.reread = True
            return whole
        delta.events = [*delta.events, *(e for e in events if e not in delta.events)]
        delta.status = delta.status or bool(events)
    if not summary:
        agents_whole: set[Path] = set()
        few = sum(1 for part in parts.values() if part == "binding") <= PREFETCH_VALUES
        for path, part in parts.items():
            if part == "binding":
                _update_binding(run, run_dir, path, tails.get(run_dir), delta)
                if few:
                    _prefetch_value(run, path, delta)
            elif part == "agent":
                if not _update_segment(run, run_dir, path):
                    agents_whole.add(run_dir / "agents" / path.relative_to(run_dir / "agents").parts[0])
                delta.agents = True
            elif part == "import":
                _update_import(run, run_dir, path, now, stale_after)
                delta.imports = True
        for folder in sorted(agents_whole):  # once per agent, however many of its files changed
            _update_agent(run, run_dir, folder / "memory.md")
        note_outside(run)
    run.status, run.status_reason = run_status(run, tails.get(run.path), now=now, stale_after=stale_after,
                                               observed=observed)
    if run.format is RunFormat.SKILL:
        settle_status(run)  # receipts and front matter word a skill run's status
    delta.status = delta.status or (run.status, run.status_reason) != before_status
    return delta


def run_status(run: Run, tail: EventLogTail | None, *, now: datetime, stale_after: float,
               observed: datetime | None):
    """``infer_status(run)``; for a tailed event log, on a view of the run whose trace is only
    the lines the inference reads (the first failed line, the executing one), so a status
    costs the same at 100,000 events as at 10 (the inference scans the trace otherwise)."""
    if tail is None or tail.parser.log.trace is not run.trace or not run.events or not run.trace:
        return infer_status(run, now=now, stale_after=stale_after, observed=observed)
    view = copy.copy(run)
    view.trace = [run.trace[i] for i in tail.parser.status_lines()] or run.trace[-1:]
    return infer_status(view, now=now, stale_after=stale_after, observed=observed)


def _state_changed(run: Run, paths: Collection[Path], tails: dict[Path, EventLogTail], delta: Delta, *, now: datetime,
                   stale_after: float, observed: datetime | None, summary: bool,
                   read: dict[Path, tuple[bytes, os.stat_result]] | None = None) -> Delta:
    run_dir = run.path
    tail = tails.get(run_dir)
    if tail is not None and run.format in EVENT_LOG_FORMATS and run.state_file == tail.file.path:
        try:
            change, st, data = tail.file.look()  # one open, one read: the bytes since the committed offset
        except OSError:
            change, st, data = Change.RESET, None, b""
        if change is not Change.RESET and st is not None:
            # Grew, or a provisional last line (no newline yet) changed: parse from the
            # committed offset; nothing new when the bytes there are the provisional ones.
            if data != tail.pending_data:
                _grow(run, tail, data, st, delta, summary=summary, now=now)
            run.read_at = now
            return delta
    # A snapshot rewrite, a new/removed state file, or a reset event log: read the state again.
    tails.pop(run_dir, None)
    if summary:
        fresh = load_run(run_dir, now=now, stale_after=stale_after, observed=observed, summary=True, tails=tails,
                         root=run.root, read=read)
    else:
        fresh = reload_state(run, now=now, stale_after=stale_after, observed=observed, tails=tails, read=read)
    if fresh.read_problem is not None and fresh.state_file == run.state_file and run.read_at is not None:
        return kept_last_good(run, fresh.read_problem, paths)
    out = Delta(fresh, set(paths))
    if fresh.format is RunFormat.SNAPSHOT and run.format is RunFormat.SNAPSHOT:
        from prose_tui.backends.filesystem.snapshot_trace import changed_lines

        out.trace_lines = changed_lines(run.trace, fresh.trace)
        if out.trace_lines is not None:
            # Same shape: the run's trace list is re-stated in place (as an event log's
            # grows), so a view showing it repaints the lines the delta names, not the trace.
            kept = run.trace
            for i in out.trace_lines:
                if i < len(kept):
                    kept[i] = fresh.trace[i]
            kept.extend(fresh.trace[len(kept):])
            fresh.trace = kept
        out.stack = fresh.call_stack != run.call_stack
        out.bindings = {b.path for b in fresh.bindings} ^ {b.path for b in run.bindings}
        out.agents = fresh.agents is not run.agents
        out.program = fresh.program != run.program
        out.status = (fresh.status, fresh.status_reason) != (run.status, run.status_reason)
        out.bindings |= delta.bindings
        return out
    whole = Delta.whole(fresh, paths)
    whole.reread = True
    return whole


def kept_last_good(run: Run, problem: str, paths: Collection[Path]) -> Delta:
    """The state file exists but could not be read (``problem``: "Permission denied", a file
    gone mid-read): ``run``, the state last read whole, stays, marked with the reason and the
    time it was read (``read_problem``, and a warning the header shows first) until a read
    succeeds again. A delta that redraws the header, empty when it already said so."""
    name = run.state_file.name if run.state_file is not None else "the state file"
    when = run.read_at.astimezone().strftime("%H:%M:%S") if run.read_at is not None else "before"
    said = run.read_problem == problem
    run.read_problem = problem
    note = f"cannot read {name}: {problem}; showing the state last read at {when}"
    run.warnings = [note, *(w for w in run.warnings if not w.startswith(f"cannot read {name}: "))]
    return Delta(run, set(paths), status=not said)


def _grow(run: Run, tail: EventLogTail, data: bytes, st, delta: Delta, *, summary: bool, now: datetime) -> None:
    parser = tail.parser
    committed = tail.committed_events()
    old_stack = [(f.execution_id, f.block, f.status) for f in run.call_stack]
    old_program = run.program
    changed = tail.feed_bytes(data, st)
    log = parser.finish()
    run.header = dict(log.header)
    run.program = log.program
    run.events = log.events
    run.trace = log.trace
    run.call_stack = [] if tail.from_tail else log.call_stack  # a first screen: blocks opened before its tail are unknown
    if log.bullet_status:
        run.header.setdefault("status", log.bullet_status)
    run.end_marker = run.error_marker = None
    if log.status == "failed":
        when = log.errored.isoformat() if log.errored else ""
        run.error_marker = f"---error {when} {log.error_message or ''}".strip()
    elif log.status == "completed":
        run.end_marker = f"---end {log.ended.isoformat() if log.ended else ''}".strip()
    # The log's warnings sit after those read before it and before those added after it.
    prefix = run.warnings[:tail.warnings_at]
    suffix = run.warnings[tail.warnings_at + tail.shown_warnings:]
    run.warnings = prefix + log.warnings + suffix
    tail.shown_warnings = len(log.warnings)
    run.state_mtime = st.st_mtime
    run.updated = _last_time(run, tail)
    if run.updated is None:
        run.updated = _mtime_updated(run)
    distrust_future_time(run, now)
    delta.events = run.events[committed:]
    delta.trace_lines = changed
    delta.stack = old_stack != [(f.execution_id, f.block, f.status) for f in run.call_stack]
    delta.program = old_program != run.program
    if not summary:
        _link_lines(run, tail, changed)


def _last_time(run: Run, tail: EventLogTail) -> datetime | None:
    """The time of the last event that has one (as a whole parse sets ``updated``); only
    the events since the last call are scanned."""
    events = run.events
    committed = tail.committed_events()
    floor, at_floor = tail.last_time
    if floor > committed:
        floor, at_floor = 0, None
    for index in range(committed - 1, floor - 1, -1):
        if events[index].time is not None:
            at_floor = events[index].time
            break
    tail.last_time = (committed, at_floor)
    for index in range(len(events) - 1, committed - 1, -1):
        if events[index].time is not None:
            return events[index].time
    return at_floor


def _mtime_updated(run: Run) -> datetime | None:
    """As ``_read_state``: the state file's time unless it looks like a copy."""
    if not run.state_mtime:
        return None
    mtime = datetime.fromtimestamp(run.state_mtime, timezone.utc)
    started = as_utc(run.started)
    if started is None or (mtime - started).total_seconds() < COPY_GAP:
        return mtime
    return None


def _link_lines(run: Run, tail: EventLogTail, changed: set[int], *, keep: bool = False) -> None:
    """Link changed event-log lines to the binding file they name (as ``load_run`` does),
    and remember unlinked ones by name for a binding file that arrives later. ``keep``
    leaves lines already linked as they are."""
    if not changed:
        return
    by_name: dict[str, Binding] = {}
    for b in run.bindings:
        if b.exists and (b.name not in by_name or b.execution_id is None):
            by_name[b.name] = b
    for index in sorted(changed):
        line = run.trace[index]
        if keep and line.binding is not None:
            continue
        line.binding = None
        if line.step is None or line.state is None:
            continue
        m = _WROTE.match(line.text)
        if not m:
            continue
        binding = by_name.get(m.group(1))
        if binding is not None:
            line.binding = binding.path.relative_to(run.path).as_posix()
        elif tail.unlinked_ready or keep:  # else the index is built when a binding file first arrives
            tail.unlinked.setdefault(m.group(1), set()).add(index)


def _update_binding(run: Run, run_dir: Path, path: Path, tail: EventLogTail | None, delta: Delta) -> None:
    delta.bindings.add(path)
    index = next((i for i, b in enumerate(run.bindings) if b.path == path), None)
    if not path.exists():
        if index is not None:
            run.bindings.pop(index)
            rel = path.relative_to(run_dir).as_posix()
            for i, line in enumerate(run.trace):  # a removed binding: rare, so a scan is fine
                if line.binding == rel:
                    # a new object: a snapshot's trace lines are shared with other revisions
                    run.trace[i] = replace(line, binding=None)
                    if tail is not None:
                        tail.unlinked.setdefault(path.stem, set()).add(i)
                    if isinstance(delta.trace_lines, set):
                        delta.trace_lines.add(i)
        return
    binding = read_binding(path, run_dir / "bindings", run.root)
    if index is None:
        run.bindings.append(binding)
    else:
        old = run.bindings[index]
        if binding.kind is None:
            binding.kind = old.kind
        if binding.listed is None:  # its Index row's place: the pane's order, kept until state.md says otherwise
            binding.listed = old.listed
        run.bindings[index] = binding
    if tail is not None and binding.exists:
        if not tail.unlinked_ready:
            tail.unlinked_ready = True
            _link_lines(run, tail, set(range(len(run.trace))), keep=True)
        waiting = tail.unlinked.pop(binding.name, set())
        if waiting and isinstance(delta.trace_lines, set):
            rel = path.relative_to(run_dir).as_posix()
            for i in waiting:
                waiting_line = run.trace[i] if i < len(run.trace) else None
                if waiting_line is not None and waiting_line.binding is None and waiting_line.step is not None \
                        and waiting_line.state is not None:
                    waiting_line.binding = rel
                    delta.trace_lines.add(i)


def _prefetch_value(run: Run, path: Path, delta: Delta) -> None:
    """The start of a binding's value, read here (the live worker) so the value pane shows
    a binding just written without reading it on the UI thread."""
    binding = next((b for b in run.bindings if b.path == path), None)
    if binding is None or not binding.exists or binding.encrypted or binding.outside:
        return
    try:
        text, size, cut = read_window(path, offset=binding.value_offset, max_bytes=VALUE_WINDOW, root=run.root)
    except (OSError, ValueError):
        return  # the viewer reads it (and says why it cannot)
    delta.values[path] = ValueWindow(binding.value_offset, VALUE_WINDOW, text, size, cut)


def _update_segment(run: Run, run_dir: Path, path: Path) -> bool:
    """A segment file ``agents/{name}/{name}-NNN.md`` written or removed: that segment alone
    is read (segments only grow in number). False when the agent must be read whole (a
    memory file, an agent not seen yet, a folder)."""
    number = agent_files.segment_number(path)
    folder = path.parent
    agent = next((a for a in run.agents if a.path == folder), None)
    if number is None or agent is None or folder.parent != run_dir / "agents":
        return False
    at = next((i for i, s in enumerate(agent.segments) if s.number == number), None)
    if agent.root is not None and not inside(path, agent.root):
        return False  # a segment that is a link elsewhere: the agent is read whole (and lists it outside)
    if not path.is_file():
        if at is not None:
            agent.segments.pop(at)
        return True
    segment = agent_files.read_segment(path, number, agent.root)
    if at is not None:
        agent.segments[at] = segment
    elif not agent.segments or agent.segments[-1].number < number:
        agent.segments.append(segment)
    else:
        agent.segments.append(segment)
        agent.segments.sort(key=lambda s: s.number)
    return True


def _update_agent(run: Run, run_dir: Path, path: Path) -> None:
    folder = run_dir / "agents" / path.relative_to(run_dir / "agents").parts[0]
    fresh = agent_files.read_agent_dir(folder, "execution", run.root) if folder.is_dir() else None
    run.agents = [a for a in run.agents if a.path != folder]
    if fresh is not None:
        run.agents.append(fresh)
        run.agents.sort(key=lambda a: a.name)


def _update_import(run: Run, run_dir: Path, path: Path, now: datetime, stale_after: float) -> None:
    handle = path.relative_to(run_dir / "imports").parts[0]
    folder = run_dir / "imports" / handle
    handle = visible_name(handle)  # as load_run names imports
    run.imports = [i for i in run.imports if i.import_handle != handle]
    if folder.is_dir() and run.root is not None and not inside(folder, run.root):
        run.imports.append(outside_import(folder, run.root))
        run.imports.sort(key=lambda i: i.import_handle or "")
    elif folder.is_dir():
        child = load_run(folder, now=now, stale_after=stale_after, root=run.root)
        child.import_handle = handle
        run.imports.append(child)
        run.imports.sort(key=lambda i: i.import_handle or "")
