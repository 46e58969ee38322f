"""The watcher sleeps on a doorbell (inotify) between changes, and wakes for a change, a
subscription or ``close``: with ``poll_s`` at ten minutes, anything that still arrives within
the tests' bounds (``WAIT``) was woken by the doorbell, not by the watcher's own timer.

Linux only (the doorbell is inotify); waits on conditions, never sleeps."""

from __future__ import annotations

import sys
import threading
import pytest

from prose_tui.live.doorbell import Doorbell, open_doorbell
from prose_tui.live.watcher import Watcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the doorbell is Linux's inotify")

QUIET_S = 600.0  # the watcher's own timer: far past every wait below
WAIT = 120  # seconds: only ends a wait that would otherwise hang; a loaded machine may be slow


def test_a_change_in_a_folder_made_after_the_watch_rings(tmp_path):
    with Doorbell([tmp_path], recursive=True) as bell:
        assert bell.watched == 1
        (tmp_path / "bindings").mkdir()
        assert bell.wait(WAIT), "the new folder rang"
        assert bell.watched == 2, "and is watched from then on"
        assert not bell.wait(0)
        (tmp_path / "bindings" / "plan.md").write_text("x\n", encoding="utf-8")
        assert bell.wait(WAIT), "a file written in it rings"
        assert bell.rings == 2


def test_reading_a_run_does_not_ring(tmp_path):
    state = tmp_path / "state.md"
    state.write_text("1. run\n", encoding="utf-8")
    with Doorbell([tmp_path], recursive=True) as bell:
        assert state.read_text(encoding="utf-8") == "1. run\n"
        (tmp_path / "state.md").stat()
        assert not bell.wait(0), "the explorer's own reads never wake the watcher"
        with state.open("a", encoding="utf-8") as fh:
            fh.write("2. next\n")
        assert bell.wait(WAIT)


def test_interrupt_wakes_a_wait_and_is_harmless_once_closed(tmp_path):
    bell = Doorbell([tmp_path], recursive=False)
    woke = threading.Event()

    def sleeper() -> None:
        if bell.wait(QUIET_S):
            woke.set()

    thread = threading.Thread(target=sleeper)
    thread.start()
    bell.interrupt()
    assert woke.wait(WAIT), "interrupt ended the wait"
    thread.join(WAIT)
    assert bell.rings == 0, "an interrupt is not a change"
    bell.close()
    bell.interrupt()  # a subscription racing the watch's end: nothing happens
    bell.close()


def test_a_folder_that_cannot_be_watched_says_why(tmp_path):
    bell, why = open_doorbell([tmp_path / "missing"], recursive=True)
    assert bell is None
    assert why and "inotify" in why


def test_a_sleeping_watcher_wakes_for_a_change(tmp_path):
    watcher = Watcher(poll_s=QUIET_S, bell_after_s=0)
    arrived = threading.Event()
    ready = threading.Event()
    watcher.subscribe([tmp_path], lambda batch: arrived.set() if tmp_path / "state.md" in batch else None,
                      on_ready=ready.set)
    try:
        assert ready.wait(WAIT)
        assert watcher.bell_open.wait(WAIT), "the watcher sleeps on a doorbell"
        assert watcher.doorbell_off is None
        (tmp_path / "state.md").write_text("1. run\n", encoding="utf-8")
        assert arrived.wait(WAIT), "the change was handed over long before the watcher's own timer"
    finally:
        watcher.close()


def test_a_sleeping_watcher_wakes_for_a_new_subscription_and_for_close(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    watcher = Watcher(poll_s=QUIET_S, bell_after_s=0)
    installs = threading.Semaphore(0)
    sub = watcher.subscribe([one], lambda batch: None, on_ready=installs.release)
    assert installs.acquire(timeout=WAIT)
    assert watcher.bell_open.wait(WAIT)
    watcher.update(sub, [two])
    assert installs.acquire(timeout=WAIT), "the watch restarted on the new roots at once"
    assert watcher.bell_open.wait(WAIT)
    thread = watcher._thread
    assert thread is not None
    watcher.close()
    assert not thread.is_alive(), "close() woke the sleeping watcher and ended it"


def test_without_a_doorbell_the_watcher_still_hands_changes_over(tmp_path):
    watcher = Watcher(doorbell=False)
    arrived = threading.Event()
    ready = threading.Event()
    watcher.subscribe([tmp_path], lambda batch: arrived.set(), on_ready=ready.set)
    try:
        assert ready.wait(WAIT)
        (tmp_path / "state.md").write_text("1. run\n", encoding="utf-8")
        assert arrived.wait(WAIT)
        assert watcher._doorbell is None
    finally:
        watcher.close()



def test_a_run_nested_past_the_recursion_limit_is_watched_whole(tmp_path):
    from test_hostile import deep_folders, remove_deep_folders

    bottom = deep_folders(tmp_path, 1100)
    try:
        with Doorbell([tmp_path], recursive=True) as bell:
            assert bell.watched == 1101
            (bottom / "deep.md").write_text("changed\n", encoding="utf-8")
            assert bell.wait(WAIT), "a change at the bottom rings"
    finally:
        remove_deep_folders(tmp_path)


def test_a_new_watch_opens_its_doorbell_once_it_is_quiet(tmp_path):
    """Opening a doorbell costs the watcher thread a walk (and, the first time, an import):
    a watch just subscribed (a run just opened) looks on the quick step, and sleeps on a
    doorbell from ``bell_after_s`` after the subscription, between two changes."""
    from prose_tui.live.watcher import BELL_AFTER_S, BELL_GAP_S

    watcher = Watcher()
    t = 100.0
    watcher._changed_at = watcher._subscribed_at = t  # a subscription
    assert not watcher.quiet_for_bell(t + BELL_AFTER_S - 0.01)
    assert watcher.quiet_for_bell(t + BELL_AFTER_S)
    watcher.handed_over(t + BELL_AFTER_S + 1)  # a change: not in the middle of its burst
    assert not watcher.quiet_for_bell(t + BELL_AFTER_S + 1 + BELL_GAP_S / 2)
    assert watcher.quiet_for_bell(t + BELL_AFTER_S + 1 + BELL_GAP_S)
    for i in range(10):  # a stream: no doorbell while it lasts
        watcher.handed_over(t + i * 0.1)
    assert not watcher.quiet_for_bell(t + 0.95)
    ready = threading.Event()
    watcher.subscribe([tmp_path], lambda batch: None, on_ready=ready.set)
    try:
        assert ready.wait(WAIT)
        assert watcher.bell_open.wait(BELL_AFTER_S + WAIT), "the doorbell opened after the quiet"
    finally:
        watcher.close()
    assert not watcher.bell_open.is_set()


def test_a_run_that_keeps_changing_gets_its_doorbell(tmp_path):
    """A VM writing every fraction of a second (a statement, its binding, the next one) is
    never quiet for ``bell_after_s``: its watch opens the doorbell between two changes all
    the same, and hands each change over after the kernel's event rather than on the step
    (it kept looking every 5 ms, 5-11 ms after each write, for as long as the run went on)."""
    watcher = Watcher(bell_after_s=0.5)
    seen = threading.Event()
    ready = threading.Event()
    watcher.subscribe([tmp_path], lambda batch: seen.set(), on_ready=ready.set)
    try:
        assert ready.wait(10)
        for i in range(150):  # a change every 0.2 s or so, for up to 30 s
            (tmp_path / "state.md").write_text(f"change {i}\n", encoding="utf-8")
            assert seen.wait(10), "the change was handed over"
            seen.clear()
            if watcher.bell_open.wait(0.2):
                break
        assert watcher.bell_open.is_set(), "the doorbell opened while the run kept changing"
        (tmp_path / "state.md").write_text("after\n", encoding="utf-8")
        assert seen.wait(10), "a change is handed over with the doorbell open"
    finally:
        watcher.close()


def test_a_watch_whose_run_is_on_screen_opens_its_doorbell_at_once(tmp_path):
    """A long log's tail on screen, its whole read about to take the interpreter for seconds:
    the watch opens its doorbell at once (``bell_now``), and says it tried (``bell_tried``),
    rather than ``bell_after_s`` later, beside that read (where its start took 100-150 ms
    and a change written meanwhile waited for it)."""
    watcher = Watcher(bell_after_s=QUIET_S)
    try:
        watcher.subscribe([tmp_path], lambda batch: None, bell_now=True)
        assert watcher.bell_tried.wait(WAIT), "the watch tried its doorbell at once"
        assert watcher.bell_open.is_set()
    finally:
        watcher.close()


def test_a_watch_told_its_run_is_shown_opens_its_doorbell_then(tmp_path):
    """A run read whole before it is shown is watched first and shown after: once its frame
    is out (``bell_soon``), the doorbell opens, not ``bell_after_s`` after the watch began."""
    watcher = Watcher(bell_after_s=QUIET_S)
    ready = threading.Event()
    try:
        watcher.subscribe([tmp_path], lambda batch: None, on_ready=ready.set)
        assert ready.wait(WAIT)
        assert not watcher.bell_tried.is_set()
        watcher.bell_soon()
        assert watcher.bell_open.wait(WAIT), "the doorbell opened once the run was shown"
    finally:
        watcher.close()


def test_only_the_kernel_s_ring_marks_a_change_in_flight(tmp_path, monkeypatch):
    """Background reads give way from a ring on (``foreground.change_in_flight``); a wake-up
    by ``interrupt`` (the doorbell just opened, a subscription) is no change, and held the
    whole read of a long log 0.15 s for nothing."""
    from watchfiles._rust_notify import RustNotify

    from prose_tui.live import watcher as watcher_module

    marks: list[float] = []
    monkeypatch.setattr(watcher_module, "change_in_flight", lambda hold=0.0: marks.append(hold))
    watcher = Watcher()
    stop = threading.Event()
    with RustNotify([str(tmp_path)], False, False, 300, True, False) as notify, \
            Doorbell([tmp_path], recursive=True) as doorbell:
        doorbell.interrupt()
        assert watcher._look(notify, doorbell, stop) == "timeout"
        assert marks == []
        (tmp_path / "state.md").write_text("a change\n", encoding="utf-8")
        seen = watcher._look(notify, doorbell, stop)
        assert isinstance(seen, set) and seen
        assert len(marks) == 1
