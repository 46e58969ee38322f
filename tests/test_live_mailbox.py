"""The coalescing mailbox between the live worker and the UI (prose_tui.live.mailbox).

A worker faster than the UI must not queue one message per delta: the UI is told once per
run while a delta waits, later deltas merge into it, and the merged delta says everything
the single ones said.
"""

from __future__ import annotations

import threading
from pathlib import Path

from prose_tui.live.mailbox import STREAMING, DeltaMailbox, Pace, merge
from prose_tui.model import Delta, Event, EventKind, Run


def _run(path: Path, n: int = 0) -> Run:
    return Run(id=path.name, path=path, events=[Event(i, EventKind.NOTE, f"e{i}") for i in range(n)])


def test_merge_unites_what_both_deltas_said(tmp_path):
    a, b = _run(tmp_path / "r", 1), _run(tmp_path / "r", 3)
    older = Delta(a, {tmp_path / "x"}, a.events[:1], {1}, {tmp_path / "b1"}, status=True)
    newer = Delta(b, {tmp_path / "y"}, b.events[1:], {2, 5}, {tmp_path / "b2"}, agents=True)
    m = merge(older, newer)
    assert m.run is b
    assert m.paths == {tmp_path / "x", tmp_path / "y"}
    assert [e.seq for e in m.events] == [0, 1, 2]
    assert m.trace_lines == {1, 2, 5}
    assert m.bindings == {tmp_path / "b1", tmp_path / "b2"}
    assert m.status and m.agents and not m.reread


def test_merge_redraws_the_trace_when_either_said_so_and_a_reread_keeps_its_events(tmp_path):
    a, b = _run(tmp_path / "r", 2), _run(tmp_path / "r", 2)
    assert merge(Delta(a, trace_lines=None), Delta(b, trace_lines={1})).trace_lines is None
    assert merge(Delta(a, trace_lines={1}), Delta(b, trace_lines=None)).trace_lines is None
    whole = Delta.whole(b)
    m = merge(Delta(a, events=a.events[1:]), whole)
    assert m.reread and [e.seq for e in m.events] == [0, 1]  # the run's list, not a doubled one


def test_merge_keeps_the_newer_delta_s_word_on_a_stream(tmp_path):
    a, b = _run(tmp_path / "r", 1), _run(tmp_path / "r", 2)
    assert merge(Delta(a, streaming=False), Delta(b, streaming=True)).streaming
    assert not merge(Delta(a, streaming=True), Delta(b, streaming=False)).streaming, "a stream that ended"


def test_the_consumer_is_told_once_per_run_while_a_delta_waits(tmp_path):
    told: list[Path] = []
    box = DeltaMailbox(told.append)
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    for i in range(5):
        box.put(Delta(_run(r1, i + 1), {r1 / f"f{i}"}))
    box.put(Delta(_run(r2), {r2 / "g"}))
    assert told == [r1, r2]
    assert box.merged == 4
    first = box.take(r1)
    assert first is not None and first.paths == {r1 / f"f{i}" for i in range(5)} and len(first.run.events) == 5
    assert box.take(r1) is None
    box.put(Delta(_run(r1, 6), {r1 / "later"}))  # taken: the next one tells again
    assert told == [r1, r2, r1]


def test_puts_from_many_threads_lose_nothing(tmp_path):
    told: list[Path] = []
    box = DeltaMailbox(told.append)
    path = tmp_path / "r"

    def writer(k: int) -> None:
        for i in range(200):
            box.put(Delta(_run(path), {path / f"{k}-{i}"}))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    delta = box.take(path)
    assert told == [path] and delta is not None and len(delta.paths) == 800


def test_pace_waits_as_long_as_the_last_change_took_within_a_bound():
    now = [0.0]
    pace = Pace(max_wait=0.5, interval=0.0, clock=lambda: now[0])
    assert pace.wait() == 0.0
    turn = pace.begin()
    now[0] = 0.1
    pace.end(turn)
    assert pace.wait() == 0.1  # as long again as the change took
    now[0] = 0.15
    assert abs(pace.wait() - 0.05) < 1e-9
    now[0] = 0.3
    assert pace.wait() == 0.0
    turn = pace.begin()
    now[0] = 2.3
    pace.end(turn)  # a 2 s change: the next waits at most max_wait
    assert pace.wait() == 0.5
    pace.end(turn - 1)  # an older turn's paint does not count
    assert pace.wait() == 0.5


def test_pace_shows_a_burst_at_once_then_a_stream_at_the_frame_rate():
    now = [0.0]
    pace = Pace(ratio=0.0, interval=0.3, busy_interval=0.3, burst=3, clock=lambda: now[0])
    shown = []
    for i in range(40):  # a change every 50 ms, shown as soon as the pace allows
        now[0] = i * 0.05
        if pace.wait() == 0.0:
            pace.end(pace.begin())
            shown.append(now[0])
    assert shown[:3] == [0.0, 0.05, 0.1]  # the burst
    gaps = [b - a for a, b in zip(shown[3:], shown[4:])]
    assert gaps and all(g >= 0.3 - 1e-9 for g in gaps)  # then one frame per interval
    now[0] = 100.0  # after a quiet moment: at once again
    assert pace.wait() == 0.0


def test_pace_slows_to_the_busy_then_the_stream_interval_only_under_sustained_pressure():
    now = [0.0]
    pace = Pace(ratio=0.0, interval=0.3, busy_interval=0.5, stream_interval=1.0, burst=3, clock=lambda: now[0])

    def frames(period: float, merged: int, until: float) -> tuple[list[float], int]:
        shown, arrived = [], 0
        while now[0] < until:
            arrived += 1
            if pace.wait() == 0.0:
                pace.end(pace.begin(merged))
                shown.append(now[0])
            now[0] = round(now[0] + period, 6)
        return shown, arrived

    # One change every 0.34 s, each alone: every one shown when it arrives, however long it goes on.
    lone, arrived = frames(0.34, 1, 20.0)
    assert len(lone) == arrived
    # A stream whose frames each carry several changes: two frames a second, then, once
    # it lasts (STREAMING frames), one a second.
    now[0] = 40.0
    stream, _ = frames(0.01, 5, 60.0)
    gaps = [round(b - a, 2) for a, b in zip(stream, stream[1:])]
    assert 0.5 in gaps[:STREAMING]
    assert gaps[STREAMING:] and all(abs(g - 1.0) < 0.02 for g in gaps[STREAMING:])
    # A frame with a single change ends the pressure: the next change after a quiet
    # moment is shown at once, and a steady trickle goes back to the plain interval.
    now[0] = 70.0
    trickle, _ = frames(0.34, 1, 75.0)
    assert trickle[0] == 70.0
    assert [round(b - a, 2) for a, b in zip(trickle, trickle[1:])][-3:] == [0.34, 0.34, 0.34]


class _Screen:
    """What ``LiveInbox`` asks of a screen: messages, timers, after-refresh calls (recorded)."""

    def __init__(self) -> None:
        self.posted: list = []
        self.timers: list[tuple[float, object]] = []

    def post_message(self, message) -> bool:
        self.posted.append(message)
        return True

    def set_timer(self, delay, callback) -> None:
        self.timers.append((delay, callback))

    def call_after_refresh(self, callback, *args) -> None:
        callback(*args)


def test_a_run_not_on_screen_is_shown_at_once_outside_the_pace(tmp_path):
    from prose_tui.tui.live_inbox import LiveInbox

    now = [0.0]
    shown_run = tmp_path / "shown"
    screen = _Screen()
    shown: list[Path] = []
    inbox = LiveInbox(screen, lambda d: shown.append(d.run.path),  # type: ignore[arg-type]
                      pace=Pace(ratio=0.0, interval=0.3, burst=1, clock=lambda: now[0]),
                      on_screen=lambda path: path == shown_run)
    inbox.put(Delta(_run(shown_run), {shown_run}))
    inbox.deliver(shown_run)  # the burst's one frame
    others = [tmp_path / f"other{i}" for i in range(100)]  # a tick turning 100 listed runs interrupted
    for path in others:
        inbox.put(Delta(_run(path), status=True))
        inbox.deliver(path)
    assert shown == [shown_run, *others] and not screen.timers  # each a list row, none waited
    inbox.put(Delta(_run(shown_run, 1), {shown_run}))
    inbox.deliver(shown_run)  # the shown run waits for the pace's next frame only, not behind the 100
    assert len(screen.timers) == 1 and screen.timers[0][0] <= 0.3


def test_a_stream_the_watcher_batches_is_still_shown_as_a_stream(tmp_path):
    """While a run streams, the watcher hands its writes over in batches a few tenths of a
    second apart, so each frame may carry a single delta: the delta says it came within a
    stream, and the pace slows to one frame a second as for merged changes; the first
    delta after the stream is shown at once again."""
    from prose_tui.live.mailbox import STREAM_INTERVAL
    from prose_tui.tui.live_inbox import LiveInbox

    now = [0.0]
    path = tmp_path / "shown"
    screen = _Screen()
    shown: list[Delta] = []
    inbox = LiveInbox(screen, shown.append,  # type: ignore[arg-type]
                      pace=Pace(ratio=0.0, clock=lambda: now[0]), on_screen=lambda p: p == path)
    for i in range(STREAMING + 1):  # one delta per frame, each within the stream
        inbox.put(Delta(_run(path, i + 1), {path}, streaming=True))
        inbox.deliver(path)
        while screen.timers:
            wait, callback = screen.timers.pop(0)
            now[0] += wait
            callback()
        now[0] += 0.3  # the watcher's next batch
    assert len(shown) == STREAMING + 1
    assert inbox.pace.current_interval == STREAM_INTERVAL
    inbox.put(Delta(_run(path, 9), {path}))  # the stream paused: a change on its own
    inbox.deliver(path)
    assert screen.timers and screen.timers[0][0] > 0, "this one still waits for the stream's frame"
    wait, callback = screen.timers.pop(0)
    now[0] += wait
    callback()
    assert inbox.pace.current_interval < STREAM_INTERVAL, "and it ends the pressure"


def test_a_change_to_the_run_on_screen_is_painted_before_later_sinks_go_on(tmp_path):
    """``wait_painted`` blocks from a put for the run on screen until its show is painted;
    a list row (a run not on screen) and a stream being paced (shown once a second) make
    nobody wait."""
    from prose_tui.tui.live_inbox import LiveInbox

    now = [0.0]
    shown_run, other = tmp_path / "shown", tmp_path / "other"
    screen = _Screen()
    inbox = LiveInbox(screen, lambda d: None,  # type: ignore[arg-type]
                      pace=Pace(ratio=0.0, interval=0.3, burst=1, clock=lambda: now[0]),
                      on_screen=lambda path: path == shown_run)
    assert inbox.wait_painted(0)
    inbox.put(Delta(_run(other), status=True))
    assert inbox.wait_painted(0), "a list row is not waited for"
    inbox.put(Delta(_run(shown_run), {shown_run}))
    assert not inbox.wait_painted(0), "the change on screen is not painted yet"
    inbox.deliver(shown_run)  # shown; this screen runs the after-refresh call (the paint) at once
    assert inbox.wait_painted(0)
    for _ in range(STREAMING):  # frames that each carried merged changes: a stream
        inbox.pace.begin(merged=2)
    inbox.put(Delta(_run(shown_run, 1), {shown_run}))
    assert inbox.wait_painted(0), "a paced stream is shown within a second: nobody waits for it"


def test_the_journal_records_a_snapshot_change_after_its_paint(tmp_path):
    from prose_tui.live.pipeline import PAINT_WAIT, journal_sink
    from prose_tui.model import RunFormat

    calls: list[object] = []

    class _Journal:
        def record(self, run_dir, paths, when, **given) -> int:  # parts=, state=: what the change carries
            calls.append(("record", run_dir))
            return 1

    sink = journal_sink(_Journal(), lambda: None, after_paint=lambda seconds: calls.append(("wait", seconds)))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    snapshot = Run(id="run", path=run_dir, format=RunFormat.SNAPSHOT)
    sink(Delta(snapshot, {run_dir / "state.md"}))
    assert calls == [("wait", PAINT_WAIT), ("record", run_dir)]
    calls.clear()
    sink(Delta(Run(id="run", path=run_dir, format=RunFormat.EVENT_LOG), {run_dir / "state.md"}))
    assert calls == [], "an event log is its own history: neither journaled nor waited for"
