"""A failure report of one run as of one event: what ``prose-tui export`` writes (issue 14).

:func:`build_report` gathers, without Textual and without writing anything, what a teammate
needs to read a run they did not watch: the header and status reason, the annotated trace,
each failure (statement, error text, retries, context bindings; :func:`failure_context`),
the timeline with durations, binding values and agent memory (each cut at
``value_limit`` bytes with a note of the full size), warnings. The renderers
(:mod:`.report_html`, :mod:`.report_md`) only format a :class:`Report`; ``detail_json``
is the ``show --json`` shape plus the history.

All strings in a report are the run's text verbatim: renderers must escape them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prose_tui import __version__
from prose_tui.backends import backend_of
from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.text import read_window
from prose_tui.history.cursor import state_at
from prose_tui.history.failure import failure_context, failure_events
from prose_tui.history.stream import History, events_json
from prose_tui.model import (
    Agent,
    Backend,
    Binding,
    Event,
    EventKind,
    Run,
    StatementState,
    TraceLine,
)
from prose_tui.model.serialize import run_detail

__all__ = [
    "Cut",
    "agent_memory",
    "FailureItem",
    "Report",
    "TimelineRow",
    "build_report",
    "describe_seconds",
    "detail_json",
    "event_durations",
    "read_binding_text",
    "size_text",
]

VALUE_LIMIT = 32 * 1024  # bytes of one binding value or memory file a report carries

# The glyph shapes of tui/glyphs.py (shape, not colour, tells states apart).
STATE_MARK: dict[StatementState | None, str] = {
    StatementState.COMPLETE: "✓", StatementState.EXECUTING: "▶", StatementState.RETRYING: "↻",
    StatementState.FAILED: "✗", StatementState.SKIPPED: "⊘", StatementState.NEXT: "›",
    StatementState.PENDING: "·", None: " ",
}
KIND_MARK: dict[EventKind, str] = {
    EventKind.STATEMENT_STARTED: "▶", EventKind.STATEMENT_COMPLETED: "✓", EventKind.STATEMENT_FAILED: "✗",
    EventKind.STATEMENT_SKIPPED: "⊘", EventKind.RETRY: "↻", EventKind.BINDING_WRITTEN: "◆",
    EventKind.FRAME_PUSHED: "⤷", EventKind.FRAME_POPPED: "⤶", EventKind.PARALLEL_STARTED: "∥",
    EventKind.PARALLEL_JOINED: "⋈", EventKind.LOOP_ITERATION: "⟳", EventKind.AGENT_SEGMENT: "◇",
    EventKind.IMPORT_ENTERED: "⇲", EventKind.IMPORT_LEFT: "⇱", EventKind.RUN_ENDED: "■",
    EventKind.RUN_ERRORED: "■", EventKind.RUN_RESUMED: "▷", EventKind.NOTE: "…",
    EventKind.RECEIPT_RENDERED: "◉", EventKind.RECEIPT_SKIPPED: "∅", EventKind.RECEIPT_FAILED: "⨯",
}


def size_text(n: int) -> str:
    """``"812 B"``, ``"4.2 KiB"``, ``"1.3 MiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def describe_seconds(seconds: float | None) -> str:
    """``"4s"``, ``"2m05s"``, ``"1h03m"``; ``""`` when unknown."""
    if seconds is None or seconds < 0:
        return ""
    if seconds < 10:
        return f"{seconds:.1f}s".replace(".0s", "s")
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def event_durations(events: list[Event]) -> list[float | None]:
    """Seconds from each event to the next where both have comparable times (the timeline's
    rule: how long that step took); ``None`` for the last event, unknown or out-of-order times."""
    out: list[float | None] = []
    for i, here in enumerate(events):
        there = events[i + 1] if i + 1 < len(events) else None
        seconds: float | None = None
        if there is not None and isinstance(here.time, datetime) and isinstance(there.time, datetime):
            try:
                seconds = (there.time - here.time).total_seconds()
            except TypeError:  # one naive, one aware
                seconds = None
        out.append(seconds if seconds is not None and seconds >= 0 else None)
    return out


@dataclass(slots=True)
class Cut:
    """A value as a report carries it: ``text`` (at most the limit), the full ``size`` in
    bytes, ``cut`` when text was left out, ``warning`` when it could not be read. A long
    value keeps its head and its tail (where build and test errors are), ``text`` saying
    in between how much was cut; ``head``/``tail`` are the bytes kept of each (``tail`` 0:
    the head only)."""

    text: str
    size: int
    cut: bool = False
    warning: str | None = None
    head: int = 0
    tail: int = 0

    @property
    def note(self) -> str:
        """``"first 16.0 KiB and last 16.0 KiB of 1.2 MiB shown"`` for a cut value (``"first
        32.0 KiB of 1.2 MiB shown"`` when only the head was kept), else ``""``."""
        if not self.cut:
            return ""
        if self.tail:
            return f"first {size_text(self.head)} and last {size_text(self.tail)} of {size_text(self.size)} shown"
        return f"first {size_text(len(self.text.encode('utf-8', 'replace')))} of {size_text(self.size)} shown"


def _joined(head: str, tail: str, size: int, warning: str | None) -> Cut:
    """A value's head and tail with the size of what was cut between them said in place."""
    head_bytes, tail_bytes = len(head.encode("utf-8", "replace")), len(tail.encode("utf-8", "replace"))
    gap = f"\n\n[… {size_text(max(0, size - head_bytes - tail_bytes))} of {size_text(size)} cut here …]\n\n"
    return Cut(head + gap + tail, size, True, warning, head=head_bytes, tail=tail_bytes)


def _window(path: Path, offset: int, limit: int, warning: str | None, root: Path | None = None) -> Cut:
    """At most ``limit`` bytes of ``path`` from ``offset``: the whole value when it fits,
    else its first and last ``limit // 2`` bytes (never read whole). Only below ``root``
    (raises ``OutsideRun`` for a file outside it, see ``contained``)."""
    text, size, truncated = read_window(path, offset=offset, max_bytes=limit, root=root)
    if not truncated:
        return Cut(text, max(0, size - offset), False, warning)
    head, _size, _cut = read_window(path, offset=offset, max_bytes=limit // 2, root=root)
    tail, _size, _cut = read_window(path, max_bytes=limit // 2, tail=True, root=root)
    return _joined(head, tail, max(0, size - offset), warning)


def read_binding_text(run: Run, binding: Binding, limit: int = VALUE_LIMIT) -> Cut:
    """A binding's value, at most ``limit`` bytes (its head and tail when longer), through
    its backend (never read whole). A file outside the run (``Binding.outside``, or found so
    now: ``run.root``) is not read: its warning is "outside the run: not read"."""
    if binding.outside:
        return Cut("", 0, warning=OUTSIDE_RUN)
    if not binding.exists:
        return Cut("", 0, warning="the binding's file is missing")
    try:
        if run.backend is Backend.FILESYSTEM:
            return _window(binding.path, binding.value_offset, limit, binding.warning, root=run.root)
        value = backend_of(run).read_value(run, binding)
        if value.text is not None:
            return _cut_text(value.text, limit, value.warning or binding.warning)
        if value.path is not None:
            return _window(value.path, value.offset, limit, value.warning or binding.warning, root=run.root)
        return Cut("", 0, warning=value.warning or "no value")
    except OutsideRun:
        return Cut("", 0, warning=OUTSIDE_RUN)
    except (OSError, LookupError, ValueError) as exc:
        return Cut("", binding.bytes, warning=f"could not read the value: {exc}")


def _cut_text(text: str, limit: int, warning: str | None = None) -> Cut:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return Cut(text, len(data), False, warning)
    half = limit // 2
    return _joined(data[:half].decode("utf-8", "ignore"), data[-half:].decode("utf-8", "ignore"), len(data), warning)


def _read_file(path: Path | None, limit: int, root: Path | None = None) -> Cut | None:
    if path is None:
        return None
    try:
        text, size, truncated = read_window(path, max_bytes=limit, root=root)
    except OutsideRun:
        return Cut("", 0, warning=OUTSIDE_RUN)
    except OSError as exc:
        return Cut("", 0, warning=f"could not read {path.name}: {exc.strerror or exc}")
    return Cut(text, size, truncated)


def agent_memory(agent: Agent, limit: int = VALUE_LIMIT) -> Cut | None:
    """An agent's memory, at most ``limit`` bytes: its ``memory.md`` file (filesystem runs),
    else the text a database holds (``details["memory"]``, seeds/sqlite.md); ``None`` for a
    stateless agent. A memory file outside the agent's root (``Agent.root``: the run's, or
    its scope's ``agents/``) is not read: its warning is "outside the run: not read"."""
    if agent.memory is not None:
        if agent.memory in agent.outside:
            return Cut("", 0, warning=OUTSIDE_RUN)
        return _read_file(agent.memory, limit, agent.root)
    text = agent.details.get("memory")
    return _cut_text(text, limit) if text else None


@dataclass(slots=True)
class FailureItem:
    """One failure: the event, the failing statement's text, the error, retries, context."""

    seq: int
    event_text: str
    statement: str | None
    error: str | None
    retries: list[str]
    context: list[tuple[str, str, Cut]]  # (name, scope, value)


def _event_time(event: Event) -> str:
    """``event``'s time as the export shows it: ``≈`` marks a reconstructed (approximate) time."""
    if not isinstance(event.time, datetime):
        return ""
    return ("≈" if event.approximate else "") + event.time.isoformat(sep=" ", timespec="seconds")


@dataclass(slots=True)
class TimelineRow:
    """One event of the timeline: ``elapsed`` since the previous, ``took`` until the next;
    ``time`` is ISO (seconds, local offset kept), prefixed ``≈`` when reconstructed from file
    times (``Event.approximate``), empty when unknown."""

    seq: int
    time: str
    kind: str
    mark: str
    text: str
    took: float | None
    elapsed: float | None
    failure: bool = False


@dataclass(slots=True)
class BindingItem:
    name: str
    kind: str
    scope: str
    path: str
    value: Cut


@dataclass(slots=True)
class AgentItem:
    name: str
    scope: str
    memory: Cut | None
    segments: list[tuple[int, str, str]]  # (number, timestamp, prompt)


@dataclass
class Report:
    """Everything an export shows of a run as of event ``at`` (``None``: the whole run)."""

    run: Run
    history: History
    at: int | None
    generated: str
    header: list[tuple[str, str]]
    trace: list[tuple[int, str, str, str]]  # (line, mark, text, note)
    failures: list[FailureItem]
    timeline: list[TimelineRow]
    longest: float
    bindings: list[BindingItem]
    agents: list[AgentItem]
    warnings: list[str]
    version: str = __version__
    imports: list[tuple[str, str, str]] = field(default_factory=list)  # (handle, status, program)
    call_stack: list[tuple[str, str, int | None, str]] = field(default_factory=list)  # (execution id, block, depth, status)

    @property
    def title(self) -> str:
        suffix = f" as of event {self.at}" if self.at is not None else ""
        return f"prose-tui run {self.run.id} ({self.run.status.value}){suffix}"

    @property
    def at_text(self) -> str:
        """``"as of event 7/13: <event text>"``, or ``""`` for the whole run."""
        if self.at is None:
            return ""
        return f"as of event {self.at}/{len(self.history.events) - 1}: {self.history.events[self.at].text.strip()}"


def _when(value: datetime | None) -> str:
    return value.isoformat(sep=" ", timespec="seconds") if value else "—"


def build_report(run: Run, history: History, at: int | None = None, *, value_limit: int = VALUE_LIMIT,
                 now: datetime | None = None, trace: list[TraceLine] | None = None) -> Report:
    """The report of ``run`` as of event ``at`` (0-based; ``None`` for the run as it is).
    ``trace``: the trace as the explorer shows it at ``at`` (an event-log run's program
    annotated from its log, failure marks), so an export carries the same program text and
    marks; default the run's own trace lines.

    Raises ``IndexError`` for an ``at`` outside the history's events.
    """
    if at is not None and not 0 <= at < len(history.events):
        raise IndexError(f"event {at} outside 0..{len(history.events) - 1}")
    shown = state_at(run, history, at) if at is not None else run
    last = at if at is not None else len(history.events) - 1
    header = [
        ("status", shown.status.value),
        ("why", shown.status_reason or "—"),
        ("program", shown.program or "—"),
        ("started", _when(shown.started)),
        ("updated", _when(shown.updated)),
        ("format", f"{shown.format.value} ({shown.backend.value})"),
        ("path", shown.location or str(shown.path)),
        ("history", f"{len(history.events)} events, {history.note}"),
    ]
    header += [(k, v) for k, v in shown.header.items() if k not in ("run", "program", "started", "updated", "status")]
    lines = shown.trace if trace is None else trace
    rows = [(t.line, STATE_MARK.get(t.state, " "), t.text, t.note or "") for t in lines]
    failure_ids = [i for i in history.failures() if i <= last]
    failures: list[FailureItem] = []
    for i in failure_ids:
        ctx = failure_context(run, history, i)
        said = next((f for f in failures if ctx.event.kind is EventKind.RUN_ERRORED and ctx.statement is not None
                     and f.statement == ctx.statement.text.strip()), None)
        if said is not None:  # ---error after the statement it ended on: one failure, its error said once
            if ctx.error and (said.error or "") not in ctx.error and ctx.error not in (said.error or ""):
                said.error = f"{said.error} — {ctx.error}" if said.error else ctx.error
            elif ctx.error and said.error and said.error in ctx.error:
                said.error = ctx.error
            continue
        failures.append(FailureItem(
            seq=i, event_text=ctx.event.text.strip(),
            statement=ctx.statement.text.strip() if ctx.statement else None,
            error=ctx.error, retries=[r.text.strip() for r in ctx.retries],
            context=[(b.name, b.scope, read_binding_text(run, b, value_limit)) for b in ctx.context_bindings],
        ))
    events = history.events[: last + 1]
    durations = event_durations(history.events)[: last + 1]
    failing = set(failure_ids)
    timeline = [
        TimelineRow(seq=e.seq, time=_event_time(e),
                    kind=e.kind.value, mark=KIND_MARK.get(e.kind, "·"), text=e.text.strip(),
                    took=durations[i], elapsed=durations[i - 1] if i > 0 else None, failure=i in failing)
        for i, e in enumerate(events)
    ]
    longest = max((d for d in durations if d), default=0.0)
    bindings = [BindingItem(b.name, b.kind or "—", b.scope, _rel(b.path, run.path), read_binding_text(run, b, value_limit))
                for b in shown.bindings]
    agents = [AgentItem(a.name, a.scope or "—", agent_memory(a, value_limit),
                        [(s.number, s.timestamp or "", s.prompt or "") for s in a.segments])
              for a in shown.agents]
    imports = [(i.import_handle or i.id, i.status.value, i.program or (OUTSIDE_RUN if OUTSIDE_RUN in i.warnings else ""))
               for i in shown.imports]
    stack = [(str(f.execution_id), f.block, f.depth, f.status or "") for f in shown.call_stack]
    stamp = (now or datetime.now().astimezone()).isoformat(sep=" ", timespec="seconds")
    return Report(run=shown, history=history, at=at, generated=stamp, header=header, trace=rows,
                  failures=failures, timeline=timeline, longest=longest, bindings=bindings, agents=agents,
                  warnings=list(shown.warnings), imports=imports, call_stack=stack)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def detail_json(run: Run, history: History, at: int | None = None) -> dict[str, Any]:
    """``show --json`` of ``run`` as of event ``at``: :func:`run_detail` with the history's
    events and ``history: {origin, note, at, failures}`` (failure event indexes).
    Raises ``IndexError`` for an ``at`` outside the events."""
    if at is not None and not 0 <= at < len(history.events):
        raise IndexError(f"event {at} outside 0..{len(history.events) - 1}")
    shown = state_at(run, history, at) if at is not None else run
    detail = run_detail(shown, failure_events(run, history) if at is None else None)
    detail["events"] = events_json(history)
    detail["history"] = {"origin": history.origin, "note": history.note, "at": at,
                         "failures": [i for i in history.failures() if at is None or i <= at]}
    detail["chain"] = chain_json(run)
    return detail


def chain_json(run: Run) -> dict[str, Any] | None:
    """``show --json``'s ``chain``: the check of the run's hash-chained ledger as last read
    (``{"ok": bool, "checked": int, "problems": [str], "warnings": [str]}``;
    ``RunBackend.chain``), ``None`` for a format that chains nothing or a run no backend reads."""
    try:
        report = backend_of(run).chain(run)
    except (LookupError, OSError):
        return None
    return report.as_json() if report is not None else None
