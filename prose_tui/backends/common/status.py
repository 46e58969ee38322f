"""Run status and the sentence that says why it was inferred.

A VM writes ``status:`` in some dialects and nothing in others, so the status is
inferred from, in order: an explicit end (``---end``/``---error`` of event logs, a header
``status:``), the trace (a failed statement, an executing or retrying marker, every
statement complete), and the age of the last change. An executing marker on a run that
has not changed for ``stale_after`` seconds is *interrupted*.

"Last change" is, in order of trust: a change prose-tui saw happen while watching; the
VM's own ``updated:`` header; the state file's modification time. File times alone are
weak evidence (a clone or copy makes every file new), so a run whose id says it started
more than a day before its files were touched is judged by its id's time.

A clock is never trusted into the future: a time more than ``FUTURE_SKEW`` seconds ahead
of now (an LLM-written ``updated: 2099-...``, an event stamp, a file touched on a machine
whose clock runs ahead) would make a dead run look just changed for ever. Such a header
or event time is passed over for the state file's modification time (and said so in the
run's warnings, see :func:`distrust_future`); a file time in the future is passed over too.

Retries are not failures (issue 35): an event log fails only with ``---error`` or with a
failure nothing was written after (its status follows its last event); a snapshot's
failed line that a later line of the same statement retried or completed is recovered
(``model.failure.statement_failures`` lists them, ``recovered`` or not).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from operator import attrgetter
from typing import overload

from prose_tui.model import Run, RunStatus, StatementState, TraceLine, assigned_name
from prose_tui.model.failure import first_line, recorded_errors, statement_failures

_STATE = attrgetter("state")

DEFAULT_STALE_AFTER = 30 * 60.0
# Seconds a writer's clock may run ahead of ours (NTP drift, a VM's rounded "now") before a
# time it wrote is taken as wrong rather than early.
FUTURE_SKEW = 5 * 60.0
COPY_GAP = 24 * 3600.0  # file times this much newer than the run id's start mean a copy
_RUN_ID_TIME = re.compile(r"^(\d{8})-(\d{6})")
_DONE = re.compile(r"^(complete[d]?|done|success(ful)?|finished|succeeded|ok)\b", re.I)
_FAILED = re.compile(r"^(fail(ed|ure)?|error(ed)?|aborted|crashed)\b", re.I)
_RUNNING = re.compile(r"^(running|executing|in[ _-]?progress|active|started)\b", re.I)
_STOPPED = re.compile(r"^(interrupted|cancel+ed|stopped|paused|halted)\b", re.I)
_ISO_PREFIX = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")


def run_id_time(run_id: str) -> datetime | None:
    """The UTC start time a ``YYYYMMDD-HHMMSS-...`` run id encodes, else ``None``."""
    m = _RUN_ID_TIME.match(run_id)
    if not m:
        return None
    try:
        return datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


@overload
def as_utc(value: datetime) -> datetime: ...


@overload
def as_utc(value: None) -> None: ...


def as_utc(value: datetime | None) -> datetime | None:
    """Naive times are taken as UTC (the seed writes ``Z`` times)."""
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def human_age(seconds: float) -> str:
    """``42 s``, ``5 min``, ``3 h``, ``12 d``: an age for a status line."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


def ahead_of(value: datetime | None, now: datetime) -> float | None:
    """Seconds ``value`` lies beyond ``now`` plus ``FUTURE_SKEW`` (a time no clock could
    have written yet), else ``None``. Naive times are UTC."""
    if value is None:
        return None
    ahead = (as_utc(value) - as_utc(now)).total_seconds()
    return ahead if ahead > FUTURE_SKEW else None


def _written_time(value: str | None) -> datetime | None:
    """A header's ISO 8601 time as written (``Z``, offsets, backticks allowed), else ``None``."""
    m = _ISO_PREFIX.match((value or "").strip().strip("`*\"'"))
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(0))
    except ValueError:
        return None


def _mtime_of(run: Run, now: datetime) -> tuple[datetime | None, str | None]:
    """The state file's modification time, unless it is in the future (then ``None`` and why)."""
    if not run.state_mtime:
        return None, None
    mtime = datetime.fromtimestamp(run.state_mtime, timezone.utc)
    if ahead_of(mtime, now) is not None:
        return None, f"the state file's time ({mtime:%Y-%m-%d %H:%M} UTC) is in the future"
    return mtime, None


def last_change(run: Run, now: datetime, observed: datetime | None = None) -> tuple[datetime | None, str]:
    """When the run last changed, and which evidence says so.

    A header ``updated:`` (or a state file time) more than ``FUTURE_SKEW`` seconds ahead of
    ``now`` is passed over, and the evidence says so."""
    if observed is not None:
        return observed, "seen live"
    distrusted = ""
    if "updated" in run.header:
        written = _written_time(run.header.get("updated"))
        updated = as_utc(run.updated)
        if written is not None and ahead_of(written, now) is not None:
            distrusted = f"; its updated: header ({as_utc(written):%Y-%m-%d %H:%M} UTC) is in the future"
        elif updated is not None and ahead_of(updated, now) is None:
            return min(updated, now), "per its updated: header"
    mtime, mtime_note = _mtime_of(run, now)
    started = run_id_time(run.id)
    if mtime and started and (mtime - started).total_seconds() > COPY_GAP:
        return started, f"per its run id; file times look like a copy{distrusted}"
    if mtime:
        return mtime, f"per the state file's time{distrusted}"
    note = "; ".join(n for n in (distrusted.removeprefix("; "), mtime_note) if n)
    return started, f"per its run id{'; ' + note if note else ''}"


def distrust_future(run: Run, now: datetime | None = None, *, source: str = "its updated: header") -> None:
    """When ``run.updated`` is more than ``FUTURE_SKEW`` seconds ahead of ``now`` (the VM
    wrote a time in the future), say so once in ``run.warnings`` and put the state file's
    modification time in its place (``None`` when that is in the future too or looks like
    a copy, see ``COPY_GAP``), so every age shown (run list, header, status line) and the
    stale check go by a clock that has happened. ``source`` names where the time was
    written (``its updated: header``, ``its last event``)."""
    now = now or datetime.now(timezone.utc)
    written = as_utc(run.updated)
    if ahead_of(written, now) is None:
        return
    warning = (f"{source} says {written:%Y-%m-%d %H:%M:%S} UTC, in the future: ages and staleness "
               "go by the state file's modification time")
    if warning not in run.warnings:
        run.warnings.append(warning)
    mtime, _note = _mtime_of(run, now)
    started = as_utc(run.started)
    if mtime is not None and started is not None and (mtime - started).total_seconds() > COPY_GAP:
        mtime = None
    run.updated = mtime


def infer_status(
    run: Run,
    *,
    now: datetime | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    observed: datetime | None = None,
) -> tuple[RunStatus, str]:
    """The status of ``run`` and a one-sentence reason a user can check.

    ``observed`` is when prose-tui last saw the run change, if it did. ``stale_after`` is in seconds; ``now`` defaults to the current UTC time.
    """
    now = now or datetime.now(timezone.utc)
    if run.encrypted:
        return RunStatus.UNKNOWN, "state is SOPS-encrypted; nothing to read without the key"
    if run.read_problem is not None and run.read_at is None:  # never read: nothing to infer from
        what = run.state_file.name if run.state_file is not None else "the run folder"
        return RunStatus.UNREADABLE, f"cannot read {what}: {run.read_problem}"
    if run.error_marker is not None:
        return RunStatus.FAILED, f"the log ends with {run.error_marker}"
    if run.end_marker is not None:
        return RunStatus.COMPLETED, f"the log ends with {run.end_marker}"
    if run.state_file is None:
        what = f"; {len(run.bindings)} binding files exist" if run.bindings else ""
        return RunStatus.UNKNOWN, f"no state file (state.md, vm.log.md or state.db){what}"
    written = (run.header.get("status") or "").strip().strip("*`")
    if written and _DONE.match(written):
        return RunStatus.COMPLETED, f"the header says status: {written}"
    if written and _FAILED.match(written):
        return RunStatus.FAILED, f"the header says status: {written}{_naming_error(run)}"
    if written and _STOPPED.match(written):
        return RunStatus.INTERRUPTED, f"the header says status: {written}"

    current = run.executing
    superseded = _superseded_failures(run) if not run.events else set()
    failed = _final_failure(run, superseded) if current is None else None
    if failed is not None:
        if run.events:
            return RunStatus.FAILED, f"line {failed.line} failed and nothing was written after it: {failed.text.strip()}"
        why = f" ({failed.note})" if failed.note else ""
        return RunStatus.FAILED, f"trace line {failed.line} is marked failed{why}"

    changed, evidence = last_change(run, now, observed)
    age = (now - changed).total_seconds() if changed else None
    stale = age is not None and age > stale_after
    age_text = f"{human_age(age)} ago, {evidence}" if age is not None else "at an unknown time"

    if current is not None:
        marker = "RETRYING" if current.state is StatementState.RETRYING else "EXECUTING"
        if stale:
            written_after = _bindings_written_after(run, current.line)
            extra = f"; bindings for later statements exist ({written_after})" if written_after else ""
            return (
                RunStatus.INTERRUPTED,
                f"line {current.line} is still {marker} but nothing changed for over "
                f"{human_age(stale_after)} (last change {age_text}){extra}",
            )
        return RunStatus.RUNNING, f"line {current.line} is {marker}; last change {age_text}"

    elsewhere = _executing_elsewhere(run)
    if elsewhere:
        if stale:
            return (
                RunStatus.INTERRUPTED,
                f"{elsewhere} but nothing changed for over {human_age(stale_after)} (last change {age_text})",
            )
        return RunStatus.RUNNING, f"{elsewhere}; last change {age_text}"

    # (a snapshot's rule: an event log's trace is not looked through, 100,000 lines of it)
    annotated = [t for t in run.trace if t.state is not None and t.line not in superseded] if not run.events else []
    if annotated and all(t.state in (StatementState.COMPLETE, StatementState.SKIPPED) for t in annotated):
        return RunStatus.COMPLETED, f"all {len(annotated)} annotated statements are complete"
    if written and _RUNNING.match(written):
        if stale:
            return RunStatus.INTERRUPTED, f"the header says status: {written} but nothing changed for over {human_age(stale_after)} (last change {age_text})"
        return RunStatus.RUNNING, f"the header says status: {written}; last change {age_text}"
    if run.events:
        if stale:
            return RunStatus.INTERRUPTED, f"no ---end or ---error, and nothing changed for over {human_age(stale_after)} (last change {age_text})"
        return RunStatus.RUNNING, f"no ---end yet; last change {age_text}"
    if not run.trace:
        if stale:
            return RunStatus.INTERRUPTED, f"the state file has no statements and nothing changed for over {human_age(stale_after)} (last change {age_text})"
        return RunStatus.RUNNING, f"the state file has no statements yet; last change {age_text}"
    if stale:
        return RunStatus.INTERRUPTED, f"no statement is executing and some are not complete; last change {age_text}"
    return RunStatus.RUNNING, f"between statements; last change {age_text}"


def _naming_error(run: Run) -> str:
    """``": {error}"`` for a run whose header says it failed: the errors it recorded (front
    matter ``error:``, ``## Error`` sections, ``__error.md``), else its last failed
    statement's words, each by its first line (issue 28); ``""`` when it recorded none."""
    errors = recorded_errors(run)
    if not errors:
        last = next((f for f in reversed(statement_failures(run)) if not f.recovered), None)
        errors = [last.error] if last is not None and last.error else []
    words = " — ".join(w for w in (first_line(e) for e in errors) if w)
    return f": {words}" if words else ""


def _final_failure(run: Run, superseded: set[int]) -> TraceLine | None:
    """The failed statement the run stopped at, if any.

    An event log (``run.events``): its last statement line, when that is a failure: the
    status follows the last event, so a failure followed by a retry, a completion or any
    other statement is not the run's failure (only ``---error`` ends a log as failed; a
    failure nothing followed is a run that stopped there). A snapshot: its first failed
    line that no later line of the same statement superseded (``superseded``)."""
    if run.events:
        last = next((t for t in reversed(run.trace) if t.step is not None), None)
        return last if last is not None and last.state is StatementState.FAILED else None
    return next((t for t in run.trace if t.state is StatementState.FAILED and t.line not in superseded), None)


def _superseded_failures(run: Run) -> set[int]:
    """Trace line numbers of a snapshot's failed lines that a later line with the same
    program text (the retry, written as its own line) carries on: retrying, executing,
    failed again or complete. O(trace lines); a trace without a failed line costs one
    pass over the states in C (each live rewrite of a 2,000-statement run asks twice:
    0.05 ms, against 0.5 ms for a generator)."""
    out: set[int] = set()
    if StatementState.FAILED not in map(_STATE, run.trace):
        return out
    later: set[str] = set()
    for t in reversed(run.trace):
        if t.state is None or t.state in (StatementState.PENDING, StatementState.NEXT):
            continue
        key = t.text.strip()
        if t.state is StatementState.FAILED and key in later:
            out.add(t.line)
        later.add(key)
    return out


def _executing_elsewhere(run: Run) -> str | None:
    """An executing frame or active construct when the trace itself marks none."""
    for frame in run.call_stack:
        if (frame.status or "").lower().startswith(("executing", "running", "retrying")):
            where = f"block {frame.block}" if frame.block.strip("-— ") else "the root frame"
            return f"the call stack has {where} (execution {frame.execution_id or 'root'}) {frame.status}"
    for construct in run.constructs:
        for item in construct.items:
            if re.search(r"\b(executing|running|retrying|in progress)\b", item, re.I):
                return f"Active Constructs say {construct.title}: {item}"
    return None


def _bindings_written_after(run: Run, line: int) -> str:
    names = {b.name for b in run.bindings if b.exists}
    later = []
    for t in run.trace:
        # Only statements the trace says have not run yet are evidence of a stale snapshot.
        if t.line <= line or t.state not in (StatementState.NEXT, StatementState.PENDING):
            continue
        name = assigned_name(t.text)
        if name and name in names:
            later.append(name)
    return ", ".join(later[:4]) + (" ..." if len(later) > 4 else "")


def apply_staleness(run: Run, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
                    observed: datetime | None = None) -> None:
    """For backends that record their own status (SQLite ``run.status``, narration): a run
    still said to be running whose last change is older than ``stale_after`` is interrupted.
    A recorded time more than ``FUTURE_SKEW`` seconds ahead of ``now`` is passed over for
    the state file's modification time (none: the age is unknown, the run stays running)."""
    if run.status is not RunStatus.RUNNING:
        return
    now = now or datetime.now(timezone.utc)
    changed = observed or as_utc(run.updated)
    future = ""
    if observed is None and ahead_of(changed, now) is not None:
        changed, _note = _mtime_of(run, now)
        future = "; its recorded time is in the future, the file's time decides"
    if changed is None:
        return
    age = (now - changed).total_seconds()
    if age > stale_after:
        run.status = RunStatus.INTERRUPTED
        run.status_reason = (f"recorded as running but nothing changed for over {human_age(stale_after)} "
                             f"(last change {human_age(age)} ago{future}); {run.status_reason}").rstrip("; ")


def age(value: datetime | None, now: datetime | None = None) -> str:
    """``5 min``-style age of a time, ``—`` when unknown."""
    if value is None:
        return "—"
    now = now or datetime.now(timezone.utc)
    return human_age((now - as_utc(value)).total_seconds())
