"""The live pipeline (issue 9): one watcher, a router, a worker applying deltas, sinks.

Every wait here is on a condition the pipeline signals (a sink receiving a delta), with a
generous bound so a loaded machine is slow but never flaky; nothing sleeps.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import FIXTURES

from prose_tui.backends import registry
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.live.pipeline import LivePipeline
from prose_tui.live.workspace import Workspace
from prose_tui.model import Backend, Delta, Event, EventKind, Run, RunFormat

WAIT = 60.0  # seconds: a bound for a loaded machine, not a speed target


class Collector:
    """A sink that keeps every delta and wakes the test when one matches."""

    def __init__(self) -> None:
        self.deltas: list[Delta] = []
        self.runs_added: list[Path] = []
        self.runs_removed: list[Path] = []
        self._cond = threading.Condition()

    def __call__(self, delta: Delta) -> None:
        with self._cond:
            self.deltas.append(delta)
            self._cond.notify_all()

    def on_runs(self, applied) -> None:
        with self._cond:
            self.runs_added.extend(applied.runs_added)
            self.runs_removed.extend(applied.runs_removed)
            self._cond.notify_all()

    def wait(self, predicate, what: str) -> None:
        with self._cond:
            if not self._cond.wait_for(predicate, timeout=WAIT):
                raise AssertionError(f"timed out waiting for {what}; got {self.deltas!r:.500}")


def _event_log(run_dir: Path, n: int) -> Path:
    run_dir.mkdir(parents=True)
    state = run_dir / "state.md"
    state.write_text(f"# run:{run_dir.name} demo.prose\n" + "".join(f"{i}→ step_{i} ✓\n" for i in range(1, n + 1)),
                     encoding="utf-8")
    return state


@pytest.fixture
def collector():
    return Collector()


def _pipeline(root: Path, collector: Collector) -> tuple[Workspace, LivePipeline]:
    ws = Workspace(root)
    ws.scan()
    pipeline = LivePipeline(ws, [collector], on_runs=collector.on_runs)
    pipeline.start()
    # The watches are installed once the watcher has called every subscriber's on_ready. The
    # watcher restarts its watch to take the update below, and a change made while it restarts
    # is not seen: wait for an on_ready after the update with no further restart pending, so
    # the test writes only into a steady watch.
    sub, watcher = pipeline._sub, pipeline.watcher
    assert sub is not None
    original = sub.on_ready
    lock, steady = threading.Lock(), threading.Event()
    updated = False

    def signalled() -> None:
        if original is not None:
            original()
        with lock:  # an install begun after the update, and no other restart pending
            if updated and not watcher._restart.is_set():
                steady.set()

    sub.on_ready = signalled
    if any(r.exists() for r in sub.roots):  # else nothing to install: missing roots are polled for
        with lock:
            watcher.update(sub, list(sub.roots))  # restart the watch so on_ready runs again
            updated = True
        assert steady.wait(WAIT), "the watcher never installed its watches"
    return ws, pipeline


def test_an_append_arrives_as_a_delta_with_only_the_new_events_and_lines(tmp_path, collector):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-c0ffee"
    state = _event_log(run_dir, 200)
    ws, pipeline = _pipeline(tmp_path, collector)
    try:
        before = ws.runs[run_dir]
        with open(state, "a", encoding="utf-8") as fh:
            fh.write("201→ fresh\n")
        collector.wait(lambda: any(d.events for d in collector.deltas), "the appended event")
        delta = next(d for d in collector.deltas if d.events)
        assert [e.text for e in delta.events] == ["201→ fresh"]
        assert delta.trace_lines == {200} and not delta.reread
        assert delta.run is before and len(before.trace) == 201  # grown in place, not re-read
        assert before.trace[200].state is not None and before.executing is before.trace[200]
    finally:
        pipeline.stop()


def test_a_run_appearing_when_no_runs_folder_existed_at_start_is_found(tmp_path, collector):
    ws, pipeline = _pipeline(tmp_path, collector)
    try:
        assert ws.runs == {}
        run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-beef00"
        _event_log(run_dir, 3)
        # Its folder may be seen before its state file is written whole: wait for all of it.
        collector.wait(lambda: run_dir in ws.runs and len(ws.runs[run_dir].trace) == 3, "the new run")
        assert ws.runs[run_dir].trace[-1].text == "3→ step_3 ✓"
    finally:
        pipeline.stop()


def test_a_second_run_in_a_watched_runs_folder_is_read_at_once(tmp_path, collector):
    _event_log(tmp_path / ".prose" / "runs" / "20260301-090000-aaaaaa", 2)
    ws, pipeline = _pipeline(tmp_path, collector)
    try:
        new = tmp_path / ".prose" / "runs" / "20260301-110000-bbbbbb"
        _event_log(new, 1)
        collector.wait(lambda: new in collector.runs_added or new in ws.runs, "the second run")
        collector.wait(lambda: new in ws.runs and ws.runs[new].trace, "the second run's trace")
    finally:
        pipeline.stop()


class _Counter(RunBackend):
    """A backend without files, as PostgreSQL is: its runs are read by ``poll``."""

    kind: ClassVar[Backend] = Backend.POSTGRES
    name: ClassVar[str] = "counter"
    priority: ClassVar[int] = 0  # before the real PostgreSQL backend, the first of its kind
    polls: ClassVar[bool] = True
    poll_interval = 0.05

    def __init__(self, collector: Collector) -> None:
        self.rows = 0
        self.poll_count = 0
        self.polled: set[Path] = set()
        self.collector = collector

    def claims(self, path: Path) -> bool:
        return False

    def open(self, path: Path, **kwargs) -> Run:  # type: ignore[override]
        raise FileNotFoundError(path)  # its runs are put in the workspace by the test

    def apply(self, run: Run, paths, **kwargs) -> Delta:  # type: ignore[override]
        return Delta(run, set(paths))

    def read_value(self, run: Run, binding) -> Value:
        return Value(text="")

    def poll(self, run: Run) -> Delta | None:
        self.poll_count += 1
        self.polled.add(run.path)
        with self.collector._cond:
            self.collector._cond.notify_all()
        if self.rows <= len(run.events):
            return None
        new = [Event(seq=i, kind=EventKind.NOTE, text=f"row {i}") for i in range(len(run.events), self.rows)]
        run.events.extend(new)
        return Delta(run, events=new)


def test_a_backend_with_poll_is_polled_and_its_deltas_reach_the_sinks(tmp_path, collector):
    backend = _Counter(collector)
    registry.register(backend)
    try:
        (tmp_path / ".prose" / "runs").mkdir(parents=True)
        ws, pipeline = _pipeline(tmp_path, collector)
        try:
            run = Run(id="pg", path=tmp_path / "pg", backend=Backend.POSTGRES, format=RunFormat.EVENT_LOG)
            listed = Run(id="listed", path=tmp_path / "listed", backend=Backend.POSTGRES, format=RunFormat.EVENT_LOG)
            with ws.lock:  # one run open (read in full), one only listed: a summary has nothing to poll
                ws.runs[run.path] = run
                ws.detailed.add(run.path)
                ws.runs[listed.path] = listed
            backend.rows = 3
            collector.wait(lambda: sum(len(d.events) for d in collector.deltas) >= 3, "the polled rows")
            assert [e.text for d in collector.deltas for e in d.events] == ["row 0", "row 1", "row 2"]
            polls = backend.poll_count
            collector.wait(lambda: backend.poll_count > polls, "a later poll")  # polling goes on, nothing new sent
            assert sum(len(d.events) for d in collector.deltas) == 3
            assert backend.polled == {run.path}
        finally:
            pipeline.stop()
    finally:
        registry.unregister(backend)


def test_a_run_folder_made_while_the_watch_restarts_is_found_when_it_is_installed(tmp_path, collector):
    """No file event reaches a watch that is being (re)installed: the resync that follows
    the install looks into the runs folders again, so the run is not missed until Ctrl+R."""
    runs = tmp_path / ".prose" / "runs"
    _event_log(runs / "20260301-100000-aaaaaa", 2)
    ws = Workspace(tmp_path)
    ws.scan()
    pipeline = LivePipeline(ws, [collector], on_runs=collector.on_runs)
    pipeline._roots = pipeline.follow_roots()  # as start() does, without a watch installed
    new = runs / "20260301-110000-bbbbbb"
    _event_log(new, 1)  # made while no watch is installed: no file event for it
    pipeline._resync()  # what the watcher calls once its watches are installed
    pipeline._apply(pipeline._queue.get_nowait())
    assert new in collector.runs_added
    assert new in ws.runs


def test_the_resync_does_not_walk_the_project_when_its_runs_folders_hold_only_known_runs(tmp_path, collector):
    """At a watch's start the resync looks into the runs folders with one listing each: when
    they hold the runs already known, nothing is submitted (a walk of the project ran beside
    the open's paint and the first change waited for it); a folder removed meanwhile still is."""
    runs = tmp_path / ".prose" / "runs"
    _event_log(runs / "20260301-100000-aaaaaa", 2)
    _event_log(runs / "20260301-110000-bbbbbb", 1)
    ws = Workspace(tmp_path)
    ws.scan()
    pipeline = LivePipeline(ws, [collector], on_runs=collector.on_runs)
    pipeline._roots = pipeline.follow_roots()  # as start() does
    pipeline._resync()
    assert pipeline._queue.empty(), "nothing new: nothing to apply"
    gone = runs / "20260301-110000-bbbbbb"
    shutil.rmtree(gone)  # removed while no watch was installed
    pipeline._resync()
    pipeline._apply(pipeline._queue.get_nowait())
    assert gone in collector.runs_removed and gone not in ws.runs


@pytest.mark.parametrize("opened", ["Reactor state dir", "runs folder"])
def test_the_resync_after_an_install_is_not_a_change_seen_live(tmp_path, collector, opened):
    """Opening a run nobody writes to: the resync that follows the watch's install finds
    nothing new, so the run's last change stays its own (it said "the last 1 s ago, seen
    live" right after opening a Reactor state dir, whose folder is the followed root)."""
    if opened == "Reactor state dir":
        shutil.copytree(FIXTURES / "reactor" / "newsroom", tmp_path / "newsroom")
        run_dir = root = tmp_path / "newsroom" / "state"  # the state dir itself opened
    else:
        run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-aaaaaa"
        _event_log(run_dir, 2)
        root = tmp_path
    ws = Workspace(root)
    ws.scan()
    pipeline = LivePipeline(ws, [collector], on_runs=collector.on_runs)
    pipeline._roots = pipeline.follow_roots()  # as start() does
    pipeline._resync()  # what the watcher calls once its watches are installed
    while not pipeline._queue.empty():
        pipeline._apply(pipeline._queue.get_nowait())
    assert run_dir in ws.runs and run_dir not in ws.observed


class _QuietWatcher:
    """A watcher that hands over nothing by itself: the test submits each batch, and says
    whether the watcher saw the changes stream in."""

    def __init__(self) -> None:
        self.stream_seen = False

    def subscribe(self, roots, callback, *, files=False, on_ready=None, bell_now=False):
        return object()

    def update(self, sub, roots) -> None:
        pass

    def unsubscribe(self, sub) -> None:
        pass


def test_a_delta_says_whether_it_came_within_its_run_s_stream(tmp_path, collector):
    """A delta is paced as a stream when the watcher sees changes stream in and its own run
    had a delta less than ``STREAM_GAP_S`` before: another run's stream does not slow the
    change of a run that was quiet."""
    from prose_tui.live.watcher import STREAM_GAP_S

    runs = tmp_path / ".prose" / "runs"
    busy = _event_log(runs / "20260301-090000-c0ffee", 3)
    quiet = _event_log(runs / "20260301-090000-decade", 3)
    ws = Workspace(tmp_path)
    ws.scan()
    watcher = _QuietWatcher()
    now = [100.0]
    pipeline = LivePipeline(ws, [collector], watcher=watcher, clock=lambda: now[0])  # type: ignore[arg-type]
    pipeline.start()
    steps = [(busy, 4, False, 0.0), (busy, 5, True, 0.3), (quiet, 4, True, 0.3), (busy, 6, True, 0.3),
             (busy, 7, True, STREAM_GAP_S + 0.1), (busy, 8, False, 0.3)]
    try:
        for state, n, streaming, later in steps:
            now[0] += later
            watcher.stream_seen = streaming
            with open(state, "a", encoding="utf-8") as fh:
                fh.write(f"{n}→ step_{n} ✓\n")
            pipeline.submit({state})
            collector.wait(lambda state=state, n=n: any(d.run.path == state.parent and e.text.startswith(f"{n}→")
                                                        for d in collector.deltas for e in d.events), f"event {n}")
        flags = [(d.run.path.name[-6:], d.events[-1].text.split("→")[0], d.streaming) for d in collector.deltas if d.events]
        assert flags == [("c0ffee", "4", False), ("c0ffee", "5", True), ("decade", "4", False),
                         ("c0ffee", "6", True), ("c0ffee", "7", False), ("c0ffee", "8", False)]
    finally:
        pipeline.stop()
