"""Two runs side by side: what changed between them (issue 14, ``prose-tui diff`` and the
explorer's compare view). No Textual; reads both runs and their histories, writes nothing.

Statements come from each run's :class:`~prose_tui.history.stream.History`: the events of
one statement (started, completed, failed, skipped, retry; a node's receipts) are grouped by
its key, the step label and name where the source writes steps (event logs, SQLite,
narration), else the trace line's text. The two runs' statements are aligned by content
(the step label left out: an inserted statement shifts every step number after it) with
:class:`difflib.SequenceMatcher`; inside a replaced stretch, statements are paired only when
their texts are alike (issue 28). Durations are from the histories'
event times: from a statement's first ``started`` event (else the event before its first
one) to its last event; ``None`` where a source has no times.

Binding values (by name and scope) and agent memory are compared as text and shown as
unified line diffs (:func:`difflib.unified_diff`), at most ``COMPARE_LIMIT`` bytes of a
value and ``MAX_DIFF_LINES`` lines of a diff. Two runs of different programs still compare
(status, failures, bindings by name); ``Comparison.note`` says so.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prose_tui.history.failure import failure_context
from prose_tui.history.report import Cut, agent_memory, read_binding_text
from prose_tui.history.stream import History
from prose_tui.model import Binding, Event, EventKind, Run
from prose_tui.model.run import program_name

__all__ = ["AgentDiff", "Comparison", "StatementOutcome", "StatementPair", "ValueDiff", "compare_runs"]

K = EventKind
COMPARE_LIMIT = 256 * 1024
MAX_DIFF_LINES = 200
SLOWER_MIN_SECONDS = 1.0  # a change in duration smaller than this, or than 10 %, is noise

_OUTCOME = {
    K.STATEMENT_STARTED: "started", K.STATEMENT_COMPLETED: "completed", K.STATEMENT_FAILED: "failed",
    K.STATEMENT_SKIPPED: "skipped", K.RETRY: "retrying", K.RECEIPT_RENDERED: "rendered",
    K.RECEIPT_SKIPPED: "skipped", K.RECEIPT_FAILED: "failed",
}
_ANNOTATION = re.compile(r"\s+#\s.*$")


@dataclass(slots=True)
class StatementOutcome:
    """One statement in one run: ``outcome`` is its last event's (``completed``, ``failed``,
    ``skipped``, ``retrying``, ``started``, ``rendered``), ``attempts`` 1 + its retries,
    ``seconds`` how long it took (``None``: unknown), ``error`` the failure words."""

    key: str
    label: str
    step: str | None
    outcome: str
    attempts: int = 1
    seconds: float | None = None
    error: str | None = None
    first_event: int = 0

    @property
    def content(self) -> str:
        """What the statement is, without its step number (``draft``, ``gate:ship``, a
        line's text): what two runs are aligned by, as step numbers shift when a statement
        is inserted (issue 28)."""
        return _STEP_LABEL.sub("", self.label, count=1).strip() or self.label


_STEP_LABEL = re.compile(r"^\s*[\w.]+\s*(?:→|->)\s*")
SIMILAR = 0.6  # two statements of a replaced stretch this alike (difflib ratio) are one statement changed


@dataclass(slots=True)
class StatementPair:
    """Aligned statements; ``a`` or ``b`` is ``None`` when only one run has it. ``changes``
    names what differs: ``outcome``, ``retries``, ``slower``, ``faster``, ``text``,
    ``only_a``, ``only_b``. ``delta`` is B's seconds minus A's."""

    a: StatementOutcome | None
    b: StatementOutcome | None
    changes: list[str] = field(default_factory=list)
    delta: float | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes)


@dataclass(slots=True)
class ValueDiff:
    """A binding (or agent memory) in both runs: ``state`` is ``same``, ``changed``,
    ``only_a`` or ``only_b``; ``diff`` the unified diff lines; sizes in bytes."""

    name: str
    scope: str
    state: str
    size_a: int | None = None
    size_b: int | None = None
    diff: list[str] = field(default_factory=list)
    note: str = ""


@dataclass(slots=True)
class AgentDiff:
    """An agent in either run: memory compared as a :class:`ValueDiff`, segment counts."""

    name: str
    segments_a: int | None
    segments_b: int | None
    memory: ValueDiff | None


@dataclass
class Comparison:
    """What differs between run ``a`` and run ``b``."""

    a: Run
    b: Run
    same_program: bool
    note: str
    similarity: float
    failure_a: str | None
    failure_b: str | None
    statements: list[StatementPair]
    bindings: list[ValueDiff]
    agents: list[AgentDiff]

    @property
    def status_changed(self) -> bool:
        return self.a.status is not self.b.status

    def changed_statements(self) -> list[StatementPair]:
        return [p for p in self.statements if p.changed]

    def changed_bindings(self) -> list[ValueDiff]:
        return [d for d in self.bindings if d.state != "same"]

    def summary(self) -> str:
        """One line: ``"3 statements changed, 2 bindings differ, status failed → completed"``."""
        parts = [f"{len(self.changed_statements())} of {len(self.statements)} statements changed",
                 f"{len(self.changed_bindings())} of {len(self.bindings)} bindings differ"]
        agents = [d for d in self.agents if d.memory is not None and d.memory.state != "same"
                  or d.segments_a != d.segments_b]
        if agents:
            parts.append(f"{len(agents)} agents differ")
        status = (f"status {self.a.status.value} → {self.b.status.value}" if self.status_changed
                  else f"both {self.a.status.value}")
        return ", ".join(parts + [status])

    def to_json(self) -> dict[str, Any]:
        """The ``diff --json`` shape."""
        def run(r: Run, failure: str | None) -> dict[str, Any]:
            return {"id": r.id, "path": str(r.path), "program": r.program, "status": r.status.value,
                    "status_reason": r.status_reason, "failure": failure}

        def outcome(s: StatementOutcome | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {"step": s.step, "text": s.label, "outcome": s.outcome, "attempts": s.attempts,
                    "seconds": s.seconds, "error": s.error}

        def value(d: ValueDiff) -> dict[str, Any]:
            return {"name": d.name, "scope": d.scope, "state": d.state, "bytes_a": d.size_a,
                    "bytes_b": d.size_b, "diff": d.diff, **({"note": d.note} if d.note else {})}

        return {
            "a": run(self.a, self.failure_a), "b": run(self.b, self.failure_b),
            "same_program": self.same_program, "note": self.note, "similarity": round(self.similarity, 3),
            "summary": self.summary(),
            "statements": [{"a": outcome(p.a), "b": outcome(p.b), "changes": p.changes, "delta_seconds": p.delta}
                           for p in self.statements],
            "bindings": [value(d) for d in self.bindings],
            "agents": [{"name": d.name, "segments_a": d.segments_a, "segments_b": d.segments_b,
                        "memory": value(d.memory) if d.memory else None} for d in self.agents],
        }


def _seconds(a: datetime | None, b: datetime | None) -> float | None:
    if not isinstance(a, datetime) or not isinstance(b, datetime):
        return None
    try:
        seconds = (b - a).total_seconds()
    except TypeError:  # one naive, one aware
        return None
    return seconds if seconds >= 0 else None


def _label(run: Run, history: History, index: int) -> tuple[str, str]:
    """(key, label) of the statement event ``index``."""
    event = history.events[index]
    if event.step is not None:
        name = " ".join((event.name or "").split())
        return f"{event.step} {name}".strip(), f"{event.step}→ {name}".strip()
    line = history.refs[index].trace_line
    text = ""
    if line is not None and 0 < line <= len(run.trace):
        text = run.trace[line - 1].text
    text = " ".join(_ANNOTATION.sub("", text or event.name or event.text).split())
    return text, text


def statements_of(run: Run, history: History) -> list[StatementOutcome]:
    """Each statement of ``run`` once, in the order its first event came."""
    by_key: dict[str, StatementOutcome] = {}
    started: dict[str, datetime | None] = {}
    last_time: dict[str, datetime | None] = {}
    last_by_step: dict[str, str] = {}
    previous_time: datetime | None = None
    events: list[Event] = history.events
    for i, event in enumerate(events):
        outcome = _OUTCOME.get(event.kind)
        if outcome is None:
            if isinstance(event.time, datetime):
                previous_time = event.time
            continue
        key, label = _label(run, history, i)
        if event.step is not None and not event.name and event.step in last_by_step:
            key = last_by_step[event.step]  # "4→ retry:2/3" belongs to the statement at step 4
        if event.step is not None:
            last_by_step[event.step] = key
        s = by_key.get(key)
        if s is None:
            s = by_key[key] = StatementOutcome(key=key, label=label, step=event.step, outcome=outcome, first_event=i)
            started[key] = event.time if event.kind is K.STATEMENT_STARTED else previous_time
        if event.kind is K.RETRY:
            s.attempts += 1
        s.outcome = outcome  # the last event says where the statement ended up
        if event.kind in (K.STATEMENT_FAILED, K.RECEIPT_FAILED):
            s.error = _failure_words(event)
        elif event.kind in (K.STATEMENT_COMPLETED, K.RECEIPT_RENDERED):
            s.error = None
        if isinstance(event.time, datetime):
            last_time[key] = event.time
            previous_time = event.time
    for key, s in by_key.items():
        if s.outcome not in ("started", "retrying"):  # an unfinished statement has no duration yet
            s.seconds = _seconds(started.get(key), last_time.get(key))
    return list(by_key.values())


_STAMP = re.compile(r"\s*\[[^\]]*\d\d:\d\d[^\]]*\]")
_GENERIC = ("failed", "failure", "error", "ok", "")


def _failure_words(event: Event) -> str | None:
    """What a failure event says went wrong: its status word when it is one (``timeout``),
    else the words after the ✗ mark, without a bracketed timestamp."""
    if event.status and event.status.lower() not in _GENERIC:
        return event.status
    for mark in ("✗", "❌"):
        if mark in event.text:
            words = _STAMP.sub("", event.text.split(mark, 1)[1]).strip()
            return words or event.status
    return event.status


def _pair(a: StatementOutcome | None, b: StatementOutcome | None) -> StatementPair:
    pair = StatementPair(a, b)
    if a is None:
        pair.changes.append("only_b")
        return pair
    if b is None:
        pair.changes.append("only_a")
        return pair
    if a.content != b.content:  # the same statement at another step number is not a change
        pair.changes.append("text")
    if a.outcome != b.outcome:
        pair.changes.append("outcome")
    if a.attempts != b.attempts:
        pair.changes.append("retries")
    if a.seconds is not None and b.seconds is not None:
        pair.delta = b.seconds - a.seconds
        if abs(pair.delta) >= max(SLOWER_MIN_SECONDS, 0.1 * min(a.seconds, b.seconds)):
            pair.changes.append("slower" if pair.delta > 0 else "faster")
    return pair


def align(a: list[StatementOutcome], b: list[StatementOutcome]) -> tuple[list[StatementPair], float]:
    """Pairs of statements, in order, and the similarity (0..1) of the two runs' statement
    sequences. Aligned by content (:attr:`StatementOutcome.content`, not step numbers) with
    :class:`difflib.SequenceMatcher`, so an inserted statement is one insertion, not a
    cascade of changes; inside a replaced stretch a statement is paired with the next one
    of the other run whose text is at least ``SIMILAR`` alike (its text changed), the rest
    are in one run only (two different gates are two statements, not one changed)."""
    matcher = difflib.SequenceMatcher(None, [s.content for s in a], [s.content for s in b], autojunk=False)
    out: list[StatementPair] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [_pair(a[i1 + k], b[j1 + k]) for k in range(i2 - i1)]
            continue
        right, j = b[j1:j2], 0
        for s in a[i1:i2]:
            k = next((k for k in range(j, len(right)) if _alike(s.content, right[k].content)), None)
            if k is None:
                out.append(_pair(s, None))
                continue
            out += [_pair(None, r) for r in right[j:k]]
            out.append(_pair(s, right[k]))
            j = k + 1
        out += [_pair(None, r) for r in right[j:]]
    return out, matcher.ratio()


def _alike(x: str, y: str) -> bool:
    return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= SIMILAR


def diff_text(name_a: str, text_a: str, name_b: str, text_b: str) -> list[str]:
    """Unified diff lines of two values, at most ``MAX_DIFF_LINES`` (then one "… n more")."""
    lines = list(difflib.unified_diff(text_a.splitlines(), text_b.splitlines(), fromfile=name_a,
                                      tofile=name_b, lineterm="", n=2))
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"… {len(lines) - MAX_DIFF_LINES} more diff lines"]
    return lines


def _value_diff(name: str, scope: str, a: Cut | None, b: Cut | None, label_a: str, label_b: str) -> ValueDiff:
    if a is None or b is None:
        return ValueDiff(name, scope, "only_b" if a is None else "only_a",
                         size_a=a.size if a else None, size_b=b.size if b else None)
    note = "compared the first 256 KiB" if a.cut or b.cut else ""
    warnings = "; ".join(w for w in (a.warning, b.warning) if w)
    if warnings:
        note = f"{note}; {warnings}" if note else warnings
    if a.text == b.text and a.size == b.size:
        return ValueDiff(name, scope, "same", a.size, b.size, note=note)
    return ValueDiff(name, scope, "changed", a.size, b.size,
                     diff_text(f"{label_a}/{name}", a.text, f"{label_b}/{name}", b.text), note=note)


def _failure(run: Run, history: History) -> str | None:
    failures = history.failures()
    if not failures:
        return None
    ctx = failure_context(run, history, failures[-1])
    statement = ctx.statement.text.strip() if ctx.statement else ctx.event.text.strip()
    return f"{statement}: {ctx.error}" if ctx.error else statement


def pair_bindings(a: list[Binding], b: list[Binding]) -> list[tuple[Binding | None, Binding | None]]:
    """Bindings of two runs paired by name and scope; then the rest by name in execution-id
    order (a block's frames get new execution ids in each run); the others alone. Exact
    pairs first, then the pairs by name, then B's bindings left over."""
    by_key_b = {(x.name, x.execution_id): x for x in b}
    used: set[int] = set()
    pairs: list[tuple[Binding | None, Binding | None]] = []
    pending: list[Binding] = []
    for x in a:
        match = by_key_b.get((x.name, x.execution_id))
        if match is not None and id(match) not in used:
            used.add(id(match))
            pairs.append((x, match))
        else:
            pending.append(x)
    for x in pending:
        rest = sorted((y for y in b if y.name == x.name and id(y) not in used), key=lambda y: (y.execution_id or 0))
        if rest:
            used.add(id(rest[0]))
            pairs.append((x, rest[0]))
        else:
            pairs.append((x, None))
    pairs += [(None, y) for y in b if id(y) not in used]
    return pairs


def compare_runs(a: Run, history_a: History, b: Run, history_b: History) -> Comparison:
    """Compare run ``a`` (the reference, usually the run that worked) with run ``b``."""
    same_program = bool(a.program and b.program and program_name(a.program) == program_name(b.program))
    pairs, similarity = align(statements_of(a, history_a), statements_of(b, history_b))
    if same_program:
        note = f"two runs of {program_name(a.program)}"
    else:
        note = (f"different programs ({program_name(a.program)} and {program_name(b.program)}): statements "
                "are aligned by step and text only, so few are expected to match; bindings are matched by name")
    label_a, label_b = "a", "b"
    bindings = []
    for ba, bb in pair_bindings(a.bindings, b.bindings):
        scope = ba.scope if ba else bb.scope  # type: ignore[union-attr]
        if ba and bb and ba.scope != bb.scope:
            scope = f"{ba.scope} → {bb.scope}"
        bindings.append(_value_diff((ba or bb).name, scope,  # type: ignore[union-attr]
                                    read_binding_text(a, ba, COMPARE_LIMIT) if ba else None,
                                    read_binding_text(b, bb, COMPARE_LIMIT) if bb else None, label_a, label_b))
    agents_a = {x.name: x for x in a.agents}
    agents_b = {x.name: x for x in b.agents}
    agents = []
    for name in list(agents_a) + [n for n in agents_b if n not in agents_a]:
        xa, xb = agents_a.get(name), agents_b.get(name)
        ma = agent_memory(xa, COMPARE_LIMIT) if xa else None
        mb = agent_memory(xb, COMPARE_LIMIT) if xb else None
        memory = None
        if ma is not None or mb is not None:
            memory = _value_diff(f"{name}/memory.md", "memory", ma, mb, label_a, label_b)
        agents.append(AgentDiff(name, len(xa.segments) if xa else None, len(xb.segments) if xb else None, memory))
    return Comparison(a=a, b=b, same_program=same_program, note=note, similarity=similarity,
                      failure_a=_failure(a, history_a), failure_b=_failure(b, history_b),
                      statements=pairs, bindings=bindings, agents=agents)
