"""A long log's whole read gives way to a live change or a key on its way to the screen (issue 33).

The whole read of a 100,000-event log parses for seconds in a thread while its first screen
is followed live; Python runs one thread at a time, so a change written meanwhile took
60-160 ms to show instead of about 30. A background read now parks between pieces of work
while a change is in flight (``backends.common.foreground``); a live apply never parks.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from prose_tui.backends.common import foreground
from prose_tui.live.workspace import Workspace
from tests.app_helpers import FIXED_NOW, make_app, settled, wait_until

RUN_ID = "20260301-090000-9c0a11"
EVENTS = 3_000  # a dozen of the whole read's pieces (``FEED_LINES``)
BOUND = 60.0  # seconds: a guard against a hang, never reached when the code is right


class ParkingClear(threading.Event):
    """``foreground``'s "nothing in flight" flag, telling the test when a read parks on it."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.parked.set()
        return super().wait(timeout)


@pytest.fixture
def gate(monkeypatch) -> ParkingClear:
    clear = ParkingClear()
    clear.set()
    monkeypatch.setattr(foreground, "_clear", clear)
    yield clear
    clear.set()


def _event_log(root: Path) -> Path:
    """An event log as a VM appends it (FORMATS.md, Generations 2-4)."""
    run = root / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    lines = [f"# run:{RUN_ID} long.prose\n"]
    lines += [f"{n}→ step_{n} ✓ [09:{n // 60 % 60:02d}:{n % 60:02d}]\n" for n in range(1, EVENTS + 1)]
    (run / "state.md").write_text("".join(lines), encoding="utf-8")
    return run


def test_a_whole_read_parks_while_a_live_change_is_in_flight(tmp_path, gate) -> None:
    run_dir = _event_log(tmp_path)
    ws = Workspace(tmp_path, clock=lambda: FIXED_NOW)
    ws.discover()
    foreground.change_in_flight(hold=BOUND)  # the watcher heard a write
    read = threading.Thread(target=ws.detail, args=(run_dir,), daemon=True)
    read.start()
    assert gate.parked.wait(BOUND), "the whole read never gave way to the change in flight"
    assert read.is_alive() and run_dir not in ws.detailed  # parked, not finished
    foreground.change_shown()  # the UI painted the change
    read.join(BOUND)
    assert not read.is_alive()
    run = ws.runs[run_dir]
    assert len(run.trace) == EVENTS and run.trace[-1].text.startswith(f"{EVENTS}→")


def test_a_live_apply_never_parks(tmp_path, gate) -> None:
    run_dir = _event_log(tmp_path)
    ws = Workspace(tmp_path, clock=lambda: FIXED_NOW)
    ws.discover()
    ws.detail(run_dir)
    state = run_dir / "state.md"
    with state.open("a", encoding="utf-8") as fh:
        fh.write(f"{EVENTS + 1}→ verdict ✓ [10:00:00]\n")
    foreground.change_in_flight(hold=BOUND)
    applied = ws.apply({state})  # the live worker's apply of that very change
    assert not gate.parked.is_set()
    assert applied.deltas[run_dir].run.trace[-1].text == f"{EVENTS + 1}→ verdict ✓ [10:00:00]"


def test_a_change_nobody_marks_shown_holds_a_read_no_longer_than_its_hold(tmp_path, gate) -> None:
    run_dir = _event_log(tmp_path)
    ws = Workspace(tmp_path, clock=lambda: FIXED_NOW)
    ws.discover()
    foreground.change_in_flight(hold=0.0)  # already over: a change that altered nothing on screen
    ws.detail(run_dir)
    assert not gate.parked.is_set() and len(ws.runs[run_dir].trace) == EVENTS


async def test_a_key_holds_background_reads_until_its_frame_is_out(tmp_path, gate, monkeypatch) -> None:
    """A key pressed while a long log is read in full (j, k, a pane): its effect is painted
    before the read goes on, and the read goes on after that frame."""
    from prose_tui.tui import app as app_module

    _event_log(tmp_path)
    held: list[bool] = []

    def in_flight(hold: float = foreground.HOLD) -> None:
        held.append(True)
        foreground.change_in_flight(hold=BOUND)

    monkeypatch.setattr(app_module, "change_in_flight", in_flight)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        assert gate.is_set()
        await pilot.press("k")
        assert held  # the key marked in flight
        await wait_until(pilot, gate.is_set, what="the key's frame out: background reads go on")


def test_the_preparation_of_a_whole_read_is_a_background_read_too(tmp_path, gate) -> None:
    """What the reader works out over every event before handing the run over (the history,
    the trace's layout: ``Workspace.on_full_read``) gives way to a change in flight as the
    parse does."""
    run_dir = _event_log(tmp_path)
    ws = Workspace(tmp_path, clock=lambda: FIXED_NOW)
    ws.discover()
    prepared = threading.Event()

    def prepare(run) -> None:
        foreground.change_in_flight(hold=BOUND)  # a change written as the parse ended
        foreground.wait_turn()  # between two pieces of the preparation
        prepared.set()

    ws.on_full_read = prepare
    read = threading.Thread(target=ws.detail, args=(run_dir,), daemon=True)
    read.start()
    assert gate.parked.wait(BOUND), "the preparation never gave way to the change in flight"
    assert not prepared.is_set()
    foreground.change_shown()
    read.join(BOUND)
    assert prepared.is_set() and run_dir in ws.detailed


def test_work_in_slices_waits_its_turn_before_each_slice(gate) -> None:
    """O(n) work done a C call per slice (``in_turns``) covers every item once, in order,
    and in a background read gives way to a change in flight between two slices."""
    assert list(foreground.in_turns(10, size=4)) == [(0, 4), (4, 8), (8, 10)]
    assert list(foreground.in_turns(0)) == []
    done: list[tuple[int, int]] = []

    def work() -> None:
        with foreground.background_read():
            done.extend(foreground.in_turns(10, size=4))

    foreground.change_in_flight(hold=BOUND)
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    assert gate.parked.wait(BOUND), "the slices never gave way to the change in flight"
    assert done == []
    foreground.change_shown()
    worker.join(BOUND)
    assert done == [(0, 4), (4, 8), (8, 10)]


def test_a_background_read_shares_the_interpreter_in_short_turns() -> None:
    """While a background read runs, a thread woken for a live change gets the interpreter
    within ``BACKGROUND_SWITCH_S``, not Python's 5 ms; the interval is restored after the
    last background read ends (reads may nest)."""
    import sys

    before = sys.getswitchinterval()
    with foreground.background_read():
        assert sys.getswitchinterval() == pytest.approx(min(before, foreground.BACKGROUND_SWITCH_S))
        with foreground.background_read():
            assert sys.getswitchinterval() == pytest.approx(min(before, foreground.BACKGROUND_SWITCH_S))
        assert sys.getswitchinterval() == pytest.approx(min(before, foreground.BACKGROUND_SWITCH_S))
    assert sys.getswitchinterval() == before


def test_a_long_log_s_history_is_built_in_turns(tmp_path, gate, monkeypatch) -> None:
    """The history the reader builds for a long log (``prepare_history``: a map over every
    event, 10-25 ms per C call at 100,000 events) gives way to a change in flight between
    slices, and is the history built in one go."""
    from prose_tui.history import stream

    run_dir = _event_log(tmp_path)
    ws = Workspace(tmp_path, clock=lambda: FIXED_NOW)
    ws.discover()
    ws.detail(run_dir)
    run = ws.runs[run_dir]
    whole = stream.prepare_history(run)
    monkeypatch.setattr(stream, "in_turns", lambda total: foreground.in_turns(total, 256))
    built: list[stream.PreparedHistory | None] = []

    def build() -> None:
        with foreground.background_read():
            built.append(stream.prepare_history(run))

    foreground.change_in_flight(hold=BOUND)
    worker = threading.Thread(target=build, daemon=True)
    worker.start()
    assert gate.parked.wait(BOUND), "building the history never gave way to the change in flight"
    assert not built
    foreground.change_shown()
    worker.join(BOUND)
    assert whole is not None and built and built[0] is not None
    history, one_go = built[0].history, whole.history
    assert history.events == one_go.events and history.refs == one_go.refs
    assert [r.trace_line for r in history.refs] == [t.line for t in run.trace]
