"""The shared watcher's engine is stopped by one Event: ``close``, ``unsubscribe`` of the
last subscriber and ``update`` all reach it (the watch loop asks it every step).
Waits on conditions (thread ends, a batch arrives), never sleeps."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from prose_tui.live.watcher import STEP_MS, Watcher

WAIT = 120  # seconds: only ends a wait that would otherwise hang; a loaded machine may be slow


def _delivered(watcher: Watcher, folder: Path, name: str) -> set[Path]:
    got: list[set[Path]] = []
    arrived = threading.Event()

    def callback(batch: set[Path]) -> None:
        got.append(batch)
        if any(p.name == name for p in batch):
            arrived.set()

    ready = threading.Event()
    sub = watcher.subscribe([folder], callback, on_ready=ready.set)
    assert ready.wait(WAIT), "the watch was installed"
    (folder / name).write_text("x\n", encoding="utf-8")
    assert arrived.wait(WAIT), f"{name} was reported"
    watcher.unsubscribe(sub)
    return set().union(*got)


def test_the_last_unsubscribe_and_close_end_the_watch_thread(tmp_path):
    watcher = Watcher()
    assert watcher.step_ms == STEP_MS
    assert tmp_path / "state.md" in _delivered(watcher, tmp_path, "state.md")
    thread = watcher._thread
    if thread is not None:  # the last subscriber left: the engine stops, the thread ends
        thread.join(WAIT)
        assert not thread.is_alive()
    # subscribing again starts a new thread, and close() stops it
    assert tmp_path / "b.md" in _delivered(watcher, tmp_path, "b.md")
    ready = threading.Event()
    watcher.subscribe([tmp_path], lambda batch: None, on_ready=ready.set)
    assert ready.wait(WAIT)
    thread = watcher._thread
    assert thread is not None and thread.is_alive()
    watcher.close()
    assert not thread.is_alive(), "close() stopped the engine within its join"


def test_update_restarts_the_watch_on_the_new_roots(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    watcher = Watcher()
    got: list[Path] = []
    arrived = threading.Event()
    installs = threading.Semaphore(0)

    def callback(batch: set[Path]) -> None:
        got.extend(batch)
        if second / "state.md" in batch:
            arrived.set()

    sub = watcher.subscribe([first], callback, on_ready=installs.release)
    assert installs.acquire(timeout=WAIT)
    watcher.update(sub, [second])
    assert installs.acquire(timeout=WAIT), "the watch restarted"
    (second / "state.md").write_text("x\n", encoding="utf-8")
    assert arrived.wait(WAIT)
    watcher.close()


def test_a_quiet_watch_looks_less_often_and_a_change_makes_it_quick_again(tmp_path):
    """The step backs off as a run stays quiet (fewer wake-ups: idle CPU): the fast step for
    ``BURST_S`` seconds after a subscription or a change, the steady one until ``ACTIVE_S``,
    then the idle one; the next change makes it fast again."""
    from prose_tui.live.watcher import ACTIVE_S, BURST_S, IDLE_STEP_MS, STEADY_STEP_MS

    watcher = Watcher()
    assert watcher.step(time.monotonic()) == IDLE_STEP_MS > STEADY_STEP_MS > STEP_MS  # nothing yet
    before = time.monotonic()
    seen = _delivered(watcher, tmp_path, "state.md")
    assert tmp_path / "state.md" in seen
    changed_at = watcher._changed_at  # when the batch was handed over
    assert changed_at >= before
    assert watcher.step(changed_at + BURST_S / 2) == STEP_MS
    assert watcher.step(changed_at + (BURST_S + ACTIVE_S) / 2) == STEADY_STEP_MS
    assert watcher.step(changed_at + ACTIVE_S + 0.001) == IDLE_STEP_MS
    watcher.handed_over(changed_at + ACTIVE_S + 1)
    assert watcher.step(changed_at + ACTIVE_S + 1.5) == STEP_MS
    watcher.close()


def test_a_stream_of_changes_is_looked_at_on_the_stream_step_until_it_pauses():
    """Five batches a second for two seconds make a stream: the engine looks less often (the
    explorer shows a stream once a second), so the stream comes in fewer, larger batches;
    the stream lasts while those keep coming, and a pause of ``STREAM_GAP_S`` ends it (the
    step is the quick one again)."""
    from prose_tui.live.watcher import STREAM_BATCHES, STREAM_GAP_S, STREAM_STEP_MS

    watcher = Watcher()
    t = 100.0
    for _ in range(STREAM_BATCHES):  # a change every 0.35 s: not a stream
        watcher.handed_over(t)
        t += 0.35
    assert not watcher.streaming(t) and watcher.step(t) == STEP_MS
    for _ in range(STREAM_BATCHES):  # ten a second
        watcher.handed_over(t)
        t += 0.1
    assert watcher.streaming(t) and watcher.step(t) == STREAM_STEP_MS
    for _ in range(STREAM_BATCHES):  # now handed over in batches 0.3 s apart: still the stream
        watcher.handed_over(t)
        t += 0.3
        assert watcher.step(t) == STREAM_STEP_MS
    last = t - 0.3
    assert watcher.step(last + STREAM_GAP_S - 0.01) == STREAM_STEP_MS
    assert watcher.step(last + STREAM_GAP_S + 0.01) == STEP_MS  # paused: quick again
    assert not watcher.streaming(last + STREAM_GAP_S + 0.02), "and it takes a new stream to slow it"
    watcher.close()
