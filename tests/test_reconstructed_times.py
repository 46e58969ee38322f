"""Reconstructed history times (issue 11): never backwards in event order, marked approximate.

Runs are built in memory (``reconstruct`` reads no file: it uses the mtimes a load recorded),
so any order of binding times, header times and copies can be tried.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.history.reconstruct import reconstruct
from prose_tui.model import Binding, EventKind, Run, RunFormat, RunStatus, StatementState, TraceLine
from prose_tui.model.serialize import event as event_json

K = EventKind
START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
RUN_DIR = Path("/runs/20260301-090000-c0ffee")


def make_run(offsets: list[float | None], *, updated: float | None, status: RunStatus = RunStatus.COMPLETED,
             scoped: set[int] = frozenset()) -> Run:  # type: ignore[assignment]
    """A snapshot run of ``len(offsets)`` statements, each writing ``bN`` at START + offset
    seconds (``None``: no file time); ``updated`` the header's time as such an offset."""
    trace, bindings = [], []
    for i, offset in enumerate(offsets):
        trace.append(TraceLine(line=i + 1, text=f"let b{i} = session \"step {i}\"", state=StatementState.COMPLETE,
                               note=f"--> bindings/b{i}.md (complete)", binding=f"bindings/b{i}.md"))
        mtime = (START + timedelta(seconds=offset)).timestamp() if offset is not None else None
        bindings.append(Binding(f"b{i}", RUN_DIR / "bindings" / f"b{i}.md", kind="let", mtime=mtime,
                                execution_id=1 if i in scoped else None))
    return Run(id=RUN_DIR.name, path=RUN_DIR, format=RunFormat.SNAPSHOT, status=status, started=START,
               updated=START + timedelta(seconds=updated) if updated is not None else None,
               trace=trace, bindings=bindings)


def shown_times(run: Run) -> list[datetime]:
    return [e.time for e in reconstruct(run).events if e.time is not None]


# A day and a half either way: past COPY_GAP (a copy's file times), and before the start.
offsets = st.one_of(st.none(), st.floats(-36 * 3600, 36 * 3600, allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(times=st.lists(offsets, min_size=1, max_size=12), updated=offsets,
       status=st.sampled_from([RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.RUNNING]),
       scoped=st.sets(st.integers(0, 11), max_size=4))
def test_reconstructed_times_never_run_backwards_and_are_marked(times, updated, status, scoped):
    events = reconstruct(make_run(times, updated=updated, status=status, scoped=scoped)).events
    timed = [e for e in events if e.time is not None]
    assert all(a.time <= b.time for a, b in zip(timed, timed[1:])), [(e.seq, e.kind, e.time) for e in timed]
    assert all(e.approximate for e in timed)
    assert all(event_json(e).get("time_approximate") is True for e in timed)


def test_a_header_time_before_the_last_file_is_raised_to_it():
    # the VM wrote "updated:" a minute before its last binding landed: the end is not earlier
    run = make_run([0, 60, 180], updated=120)
    events = reconstruct(run).events
    assert events[-1].kind is K.RUN_ENDED
    assert events[-1].time == START + timedelta(seconds=180)
    assert shown_times(run) == sorted(shown_times(run))


def test_file_times_of_a_copy_are_dropped_and_the_header_time_kept():
    # the run was cloned 300 days after it ran: its binding times are the clone's
    run = make_run([300 * 86400, 300 * 86400 + 5], updated=600)
    events = reconstruct(run).events
    assert [e.time for e in events if e.kind is K.BINDING_WRITTEN] == [None, None]
    assert events[-1].time == START + timedelta(seconds=600) and events[-1].approximate
    assert [e.name for e in events if e.kind is K.BINDING_WRITTEN] == ["b0", "b1"]  # their order still counts


def test_the_export_marks_reconstructed_times_as_approximate():
    """A reader of the exported Markdown/HTML sees the same ``≈`` the timeline shows."""
    from prose_tui.history.report import build_report
    from prose_tui.history.report_md import render_markdown

    run = make_run([0, 60, 120], updated=180)
    report = build_report(run, reconstruct(run))
    timed = [row for row in report.timeline if row.time]
    assert timed and all(row.time.startswith("≈2026-03-01") for row in timed)
    assert "≈2026-03-01" in render_markdown(report)
