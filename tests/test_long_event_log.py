"""An event log longer than a snapshot's 8 MiB cap is read to its end, its newest events
shown first from its tail (issue 33).

A state file is read up to 8 MiB (``folder.MAX_STATE_BYTES``) so a huge snapshot cannot
take the memory; an event log's end is where the run is now, so it is read whole and
tailed: ``show --json`` and the explorer show its true last event, and an event a second
process appends after the open arrives live. Its first screen comes from its tail (header
plus the last 64 KiB), shown while the whole log is read, then replaced by the whole run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prose_tui.backends.filesystem.folder import MAX_STATE_BYTES, load_run, load_run_tail_first
from prose_tui.cli import main as cli
from prose_tui.tui.widgets.trace_view import TraceView
from tests.app_helpers import FIXED_NOW, held_run_reads, long_event_log, make_app, settled, wait_until

RUN_ID = "20260301-090000-c0ffee"
PAD = " note" * 80  # a long line: few events (a quick parse), many bytes


def _long_log(tmp_path: Path) -> tuple[Path, int]:
    """A run whose ``state.md`` is a compact event log just over 8 MiB; its event count."""
    return long_event_log(tmp_path, RUN_ID, MAX_STATE_BYTES + 64 * 1024, pad=PAD)


def test_show_json_gives_the_last_event_of_a_log_over_8_mib(tmp_path, capsys) -> None:
    run, n = _long_log(tmp_path)
    assert cli.main(["show", "--json", str(run)]) == 0
    detail = json.loads(capsys.readouterr().out)
    text = json.dumps(detail)
    assert f"step_{n}" in text and f"step_{n + 1}" not in text
    assert "only its start was read" not in text


async def test_the_explorer_shows_the_end_of_a_log_over_8_mib_and_follows_an_append(tmp_path) -> None:
    run, n = _long_log(tmp_path)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.lines and f"step_{n} " in trace.lines[-1].text, what="the last event shown")
        head = str(app.explorer.query_one("#run-head").render())
        assert "only its start was read" not in head
        line = f"{n + 1}\\u2192 step_{n + 1} \\u2713 [10:00:00]\\n"
        writer = f"open({str(run / 'state.md')!r}, 'a', encoding='utf-8').write('{line}')"
        subprocess.run([sys.executable, "-c", writer], check=True)  # the VM's side: another process
        await wait_until(pilot, lambda: f"step_{n + 1} " in trace.lines[-1].text, what="the appended event shown")


async def test_a_long_log_shows_its_newest_events_from_the_tail_while_the_whole_log_is_read(tmp_path, monkeypatch) -> None:
    run, n = _long_log(tmp_path)
    whole_read = held_run_reads(monkeypatch)  # the whole log is read only once the tail's first screen was seen
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)
        head = app.explorer.query_one("#run-head")
        try:
            await wait_until(pilot, lambda: trace.lines and f"step_{n} " in trace.lines[-1].text,
                             what="the newest event shown from the tail")
            assert "step_1 " not in "".join(line.text for line in trace.lines)  # the tail, not the log
            assert trace.lines[-1].line == n  # numbered as in the whole trace
            assert "still loading" in str(head.render())
        finally:
            whole_read.release()
        await settled(pilot)
        await wait_until(pilot, lambda: "step_1 " in trace.lines[0].text, what="the whole log shown")
        assert "still loading" not in str(head.render())
        assert f"step_{n} " in trace.lines[-1].text


def test_a_tail_first_screen_agrees_with_the_whole_log_on_its_lines_and_status(tmp_path) -> None:
    run, n = _long_log(tmp_path)
    with open(run / "state.md", "a", encoding="utf-8") as fh:
        fh.write(f"\n{n + 1}→ write\n---error 2026-03-01T10:00:00Z model refused\n")
    first = load_run_tail_first(run, now=FIXED_NOW)
    whole = load_run(run, now=FIXED_NOW)
    assert first is not None and whole.status == "failed"
    assert (first.status, first.error_marker, first.program) == (whole.status, whole.error_marker, whole.program)
    shown = [(t.line, t.text, t.state) for t in first.trace]
    assert shown == [(t.line, t.text, t.state) for t in whole.trace[-len(shown):]]
    assert [e.line for e in first.events] == [e.line for e in whole.events[-len(first.events):]]
    assert any("still loading" in w for w in first.warnings)
    assert not any("still loading" in w for w in whole.warnings)


def test_a_runs_start_is_never_after_its_first_stamped_event_whatever_its_stamps_zones():
    """The start a run id encodes is capped at the first stamped event (issue 28), compared
    in UTC: naive stamps (taken as UTC) alone, zoned ones at several offsets, and both mixed
    (the earliest then found by UTC instant, not by wall-clock digits)."""
    from datetime import datetime, timedelta, timezone

    from prose_tui.backends.filesystem.folder import _id_time_as_logged
    from prose_tui.model import Backend, Event, EventKind, Run

    def start(*stamps: datetime) -> datetime | None:
        run = Run(id="20260301-120000-abcdef", path=Path("/nowhere"), backend=Backend.FILESYSTEM)
        run.events = [Event(seq=i, kind=EventKind.NOTE, text="", time=t) for i, t in enumerate(stamps)]
        return _id_time_as_logged(run)

    east = timezone(timedelta(hours=5))
    west = timezone(timedelta(hours=-5))
    assert start(datetime(2026, 3, 1, 12, 30), datetime(2026, 3, 1, 11, 59)) == datetime(2026, 3, 1, 11, 59,
                                                                                       tzinfo=timezone.utc)
    # The id is read in the log's zone (12:00+05:00 = 07:00 UTC), before every stamp: kept.
    assert start(datetime(2026, 3, 1, 16, 59, tzinfo=east), datetime(2026, 3, 1, 7, 30, tzinfo=west)) \
        == datetime(2026, 3, 1, 12, 0, tzinfo=east)
    # Mixed: 11:00 naive (UTC) is the earliest instant (06:30 at -05:00 is 11:30 UTC), before
    # the id read at -05:00 (17:00 UTC).
    first = start(datetime(2026, 3, 1, 6, 30, tzinfo=west), datetime(2026, 3, 1, 11, 0))
    assert first == datetime(2026, 3, 1, 11, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("slice_size", [1, 2, 3, 4096])
def test_a_run_s_start_is_found_over_its_stamps_in_slices_as_in_one_go(monkeypatch, slice_size):
    """The stamps of a long log are gone over a slice at a time (a live change may go first
    between two): the start is the one a look at every stamp at once gives, mixed offsets,
    naive stamps and events without a time included."""
    import random
    from datetime import datetime, timedelta, timezone

    from prose_tui.backends.common import foreground
    from prose_tui.backends.filesystem import folder
    from prose_tui.model import Backend, Event, EventKind, Run

    monkeypatch.setattr(folder, "in_turns", lambda stop: foreground.in_turns(stop, slice_size))
    rng = random.Random(slice_size)
    zones = [None, timezone.utc, timezone(timedelta(hours=5)), timezone(timedelta(hours=-5))]

    def one_go(run: Run) -> datetime | None:  # the rule as one look at every stamp
        started = folder.run_id_time(run.id)
        stamps = [e.time for e in run.events if e.time is not None]
        zoned = next((t for t in stamps if t.tzinfo is not None), None)
        if zoned is not None and zoned.utcoffset():
            started = started.replace(tzinfo=zoned.tzinfo)
        first = min((folder.as_utc(t) for t in stamps), default=None)
        return first if first is not None and folder.as_utc(started) > first else started

    for _ in range(60):
        run = Run(id="20260301-120000-abcdef", path=Path("/nowhere"), backend=Backend.FILESYSTEM)
        kinds = rng.sample(zones, k=rng.randint(1, 3))
        times = [None if rng.random() < 0.2 else
                 datetime(2026, 3, 1, 6) + timedelta(minutes=rng.randint(0, 600)) for _ in range(rng.randint(0, 12))]
        times = [t if t is None else t.replace(tzinfo=rng.choice(kinds)) for t in times]
        run.events = [Event(seq=i, kind=EventKind.NOTE, text="", time=t) for i, t in enumerate(times)]
        got, want = folder._id_time_as_logged(run), one_go(run)
        assert got == want and (got is None or got.utcoffset() == want.utcoffset()), times
