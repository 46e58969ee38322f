"""The live pipeline: one watcher -> a router from path to run -> the run's backend -> sinks.

::

    Watcher (watcher.py, one per process) ──paths──▶ queue ──▶ worker thread
        worker: Workspace.apply (router: a walk up the path's parents in a dictionary;
                RunBackend.apply returns a Delta costing what changed)
              + RunBackend.poll for backends without files (PostgreSQL), on their interval
              + status ticks (a quiet run turns interrupted: live.status_timer re-infers
                only the runs read in full and, when one may turn, the running ones)
        ──Delta──▶ sinks, in order: the UI (one message per Delta), the journal (appends)

Everything but the sinks' own work runs on the worker thread: the UI thread never reads
disk and never waits for the workspace lock while the worker reads. Batches that queue
up while the worker is busy are merged into one apply. A full read of a big run (``open
in full``) happens in another thread and never holds the run while reading, so live
deltas keep flowing while it reads.

Runs folders that do not exist yet (``.prose/runs``, ``.agents/prose/runs`` below the
root) are followed too: when one appears the workspace rediscovers and the new runs
reach ``on_runs`` within a second. Textual-free.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from prose_tui.backends.common.foreground import change_in_flight, change_shown
from prose_tui.live.status_timer import StatusTimer
from prose_tui.live.watcher import STREAM_GAP_S, Subscription, Watcher, shared_watcher
from prose_tui.live.workspace import Applied, Workspace
from prose_tui.model import Delta

Sink = Callable[[Delta], None]
TICK = 1.0  # seconds between status re-inferences
# The journal records a snapshot change after the UI painted it, or this many seconds after
# the UI got it: both are Python on one GIL, and a run's first record takes in every file
# (500 bindings: 17-35 ms), which slowed the paint of the first change after opening.
PAINT_WAIT = 0.05
# And this long after the paint: the frame is handed to Textual's output thread, which needs
# the GIL to write it to the terminal; a record started at once (3-25 ms of Python: a path
# resolved, the pack written) held it, and the frame reached the screen up to 12 ms later.
OUTPUT_WAIT = 0.005
_STOP = object()


class LivePipeline:
    """Keeps ``workspace`` current and hands every change to ``sinks``.

    ``sinks`` get one ``Delta`` per changed run per batch (on the worker thread: post a
    message, append to a file; do not block). ``on_runs(applied)`` is called when runs
    appeared or disappeared. ``on_error(text)`` when a batch failed (watching goes on).
    ``on_installed()`` (watcher thread) each time the watches are in place, after the resync
    of what changed while they were not; ``installed`` is set from the first time.
    """

    def __init__(self, workspace: Workspace, sinks: list[Sink], *, on_runs: Callable[[Applied], None] | None = None,
                 on_error: Callable[[str], None] | None = None, watcher: Watcher | None = None,
                 tick: float = TICK, clock: Callable[[], float] = time.monotonic,
                 on_installed: Callable[[], None] | None = None) -> None:
        self.workspace = workspace
        self.clock = clock  # monotonic seconds (a test may give another)
        self.sinks = list(sinks)
        self.on_runs = on_runs
        self.on_error = on_error
        self.on_installed = on_installed
        self.installed = threading.Event()  # the watches were in place once: changes are seen
        self.watcher = watcher or shared_watcher()
        self.tick = tick
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._sub: Subscription | None = None
        self._roots: list[Path] = []
        self._next_poll: dict[Path, float] = {}
        self.applied_batches = 0  # batches applied so far (tests wait on it)
        self._emitted: dict[Path, float] = {}  # when each run's last delta from a batch went out
        self.statuses = StatusTimer(workspace)  # statuses that change as time passes
        self._unreadable: set[Path] = set()  # runs shown from their last good read: read again each tick
        self._unread: set[Path] = set()  # run folders found but not read (yet): read again each tick
        self._unread_key: tuple[int, int, int] | None = None  # what ``_unread`` was found for

    # -- life ------------------------------------------------------------------------------------
    def start(self, *, bell_now: bool = False) -> None:
        """Start watching (idempotent). ``bell_now``: the run is on screen already, so the
        watcher opens its doorbell at once (``Watcher.subscribe``)."""
        if self._thread is not None:
            return
        self._roots = self.follow_roots()
        self._sub = self.watcher.subscribe(self._roots, self.submit, on_ready=self._watches_installed,
                                           bell_now=bell_now)
        self._thread = threading.Thread(target=self._work, name="prose-tui-live", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._sub is not None:
            self.watcher.unsubscribe(self._sub)
            self._sub = None
        if self._thread is not None:
            self._queue.put(_STOP)
            if self._thread is not threading.current_thread():
                self._thread.join(timeout=5)
            self._thread = None

    def listen_now(self) -> None:
        """The run is on screen: the watcher may open its doorbell at once (``Watcher.bell_soon``)."""
        self.watcher.bell_soon()

    def wait_listening(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until the watches are installed and the watcher
        has tried its doorbell: from then on a change is heard from the kernel's event. True
        when so. A reader about to keep the interpreter busy for seconds (a long log's whole
        read behind its first screen) waits for it: done beside that read, the watcher's
        start (its imports, its walk of the folders) took 100-150 ms, and a change written
        meanwhile waited for it."""
        if not self.installed.wait(timeout):
            return False
        return self.watcher.bell_tried.wait(timeout)

    @property
    def watching(self) -> list[Path]:
        """The folders followed that exist now."""
        return [r for r in self._roots if r.exists()]

    def _watches_installed(self) -> None:
        """The watcher's ``on_ready``: resync, then say the watches are in place."""
        self._resync()
        self.installed.set()
        if self.on_installed is not None:
            self.on_installed()

    def _resync(self) -> None:
        """The watch (re)started: re-check every run's state file (a stat and a small read
        when unchanged), so a change made before the watches were installed is not lost;
        and look into the followed runs folders again (``_apply`` rediscovers when a batch
        names one), so a run folder made while the watch restarted is found too."""
        with self.workspace.lock:
            known = [(run.state_file, run.state_mtime) for run in self.workspace.runs.values()
                     if run.state_file is not None and run.state_mtime is not None]
            unread = {path for path in self.workspace.refs if path not in self.workspace.runs}
            # Runs read in full (the one shown): their binding files too, since a binding
            # written between the read and the watches is named by no state file change.
            bindings = [(b.path, b.mtime) for path in self.workspace.detailed
                        if (run := self.workspace.runs.get(path)) is not None for b in run.bindings
                        if b.path is not None and b.exists and not b.outside]
        changed = set(unread)  # found but not readable yet (a folder before its state file)
        # New run folders made while no watch was installed: look into the followed runs
        # folders again. A followed folder that is itself a run (a run or Reactor state dir
        # opened directly) is left out: naming it would count as seeing that run change
        # ("seen live" a second after opening a run nobody touched).
        changed.update(root for root in self.watching
                       if self.workspace.owner(root) is None and not self._holds_known_runs(root))
        for path, mtime in known:
            try:
                if path.stat().st_mtime != mtime:
                    changed.add(path)
            except OSError:
                changed.add(path)
        changed.update(_bindings_changed(bindings))
        if changed:
            self.submit(changed)

    def _holds_known_runs(self, root: Path) -> bool:
        """Whether the runs folder ``root`` holds exactly the runs the workspace knows there
        (one listing). Then the resync need not walk the project again: at a watch's start
        that walk ran beside the open's paint, each of its stat calls waiting for the GIL
        (110-130 ms, against 1 ms alone), and the first change waited for it."""
        try:
            names = {name for name in os.listdir(root) if not name.startswith(".")}
        except OSError:
            return False
        with self.workspace.lock:
            known = {path.name for path, ref in self.workspace.refs.items() if path.parent == root}
        return bool(known) and names == known

    def submit(self, paths: set[Path]) -> None:
        """Hand a batch of changed absolute paths to the worker (any thread). Background reads
        pause until it is shown (``backends.common.foreground``: the UI marks it shown)."""
        change_in_flight()
        self._queue.put(set(paths))

    def follow_roots(self) -> list[Path]:
        """What to follow: the workspace's runs folders, plus those that may appear."""
        ws = self.workspace
        if not ws.disk:
            return []
        roots = set(ws.watch_roots())
        root = ws.root
        if not root.is_file() and root.name not in ("runs",):
            if root.name == ".prose":
                roots.add(root / "runs")
            elif not (root / "state.md").exists() and not (root / "vm.log.md").exists():
                roots.update({root / ".prose" / "runs", root / ".agents" / "prose" / "runs"})
        elif root.name == "runs":
            roots.add(root)
        return sorted(roots)

    # -- the worker ----------------------------------------------------------------------------
    def _work(self) -> None:
        next_tick = time.monotonic() + self.tick
        while True:
            now = time.monotonic()
            due = min([next_tick, *self._next_poll.values()])
            try:
                item = self._queue.get(timeout=max(0.0, due - now))
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            batch: set[Path] = set(item) if isinstance(item, set) else set()
            while True:  # merge whatever queued up meanwhile
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    return
                batch |= more
            if batch:
                self._guard(self._apply, batch)
            self._guard(self._poll)
            if time.monotonic() >= next_tick:
                next_tick = time.monotonic() + self.tick
                self._guard(self._tick)

    def _guard(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as exc:  # one bad batch must not end watching: say so, go on
            if self.on_error is not None:
                self.on_error(f"could not apply a change: {type(exc).__name__}: {exc}"[:300])

    def _apply(self, batch: set[Path]) -> None:
        ws = self.workspace
        # A followed runs folder itself (not a run) in the batch: it appeared, look inside.
        appeared = {p for p in batch if p in self._roots and p not in ws.refs}
        rediscover = bool(appeared)
        applied = ws.rediscover() if rediscover else Applied()
        more = ws.apply(batch - appeared)
        applied.changed.update(more.changed)
        applied.deltas.update(more.deltas)
        applied.runs_added += [p for p in more.runs_added if p not in applied.runs_added]
        applied.runs_removed += more.runs_removed
        self.applied_batches += 1
        if (applied.runs_added or applied.runs_removed) and self.on_runs is not None:
            self.on_runs(applied)
        stream, now = self.watcher.stream_seen, self.clock()
        if all(delta.empty for delta in applied.deltas.values()) and self._queue.empty():
            change_shown()  # nothing to show: background reads go on
        for path, delta in applied.deltas.items():
            if delta.run.read_problem is not None:
                self._unreadable.add(path)
            else:
                self._unreadable.discard(path)
            if not delta.empty:
                # Within the watcher's stream and this run's own: another run's stream must not
                # pace a change of a run that was quiet.
                delta.streaming = stream and now - self._emitted.get(path, -STREAM_GAP_S - 1) <= STREAM_GAP_S
                self._emitted[path] = now
                self._emit(delta)
        if applied.runs_added or rediscover:
            self.refresh_roots()

    def refresh_roots(self) -> None:
        """Follow the runs folders the workspace knows now (after a rescan, a new run)."""
        roots = self.follow_roots()
        if roots != self._roots and self._sub is not None:
            self._roots = roots
            self.watcher.update(self._sub, roots)

    def _emit(self, delta: Delta) -> None:
        for sink in self.sinks:
            sink(delta)

    def _poll(self) -> None:
        """Backends without files (``RunBackend.polls``: ``poll`` every ``poll_interval``
        seconds): their open runs (a summary has nothing to poll)."""
        from prose_tui.backends import backend_of

        ws = self.workspace
        now = time.monotonic()
        with ws.lock:  # the open runs (read in full), not every summary in the list (10,000 database runs)
            runs = [(path, ws.runs[path]) for path in ws.detailed if path in ws.runs]
        for path, run in runs:
            if ws.source_of(path) is not None:
                continue  # a workspace source (PostgreSQL) polls its own runs, with LISTEN
            try:
                backend = backend_of(run)
            except LookupError:
                continue
            if not backend.polls:
                continue
            due = self._next_poll.get(path)
            if due is None or now >= due:
                self._next_poll[path] = now + float(backend.poll_interval)
                try:
                    with ws.run_lock(path):
                        delta = backend.poll(run)
                        if delta is None:
                            continue
                        with ws.lock:
                            if ws.runs.get(path) is run:
                                ws.runs[path] = delta.run
                except Exception as exc:  # one run's poll failing must not stop the others
                    if self.on_error is not None:
                        self.on_error(f"could not poll {run.id}: {type(exc).__name__}: {exc}"[:300])
                    continue
                if not delta.empty:
                    self._emit(delta)
        for path in [p for p in self._next_poll if p not in ws.runs]:
            del self._next_poll[path]

    def _tick(self) -> None:
        for run in self.statuses.tick():
            self._emit(Delta(run, status=True))
        ws = self.workspace
        # A run folder seen before its state file: inotify can miss a file created in a folder
        # made a moment earlier (its watch is added after), so such folders are re-read here.
        # A state file that could not be read (the run shows its last good read) is read again:
        # it may come back without an event (a parent folder's permissions, an I/O error).
        with ws.lock:
            # Looked for again only when the runs or the folders found changed: an idle tick
            # walks none of the 5,000 runs listed.
            key = (ws.runs.version, id(ws.refs), len(ws.refs))
            if key != self._unread_key:
                self._unread_key, self._unread = key, set(ws.refs.keys() - ws.runs.keys())
            unread = set(self._unread)
            if self._unreadable:
                self._unreadable = {path for path in self._unreadable if path in ws.runs}
                unread |= {state for path in self._unreadable
                           if (state := ws.runs[path].state_file) is not None}
        if unread:
            self._apply(unread)


def journal_sink(journal, clock, on_error: Callable[[str], None] | None = None, *,
                 after_paint: Callable[[float], object] | None = None,
                 recorded: Callable[[Path], object] | None = None) -> Sink:
    """A sink that journals what a watched snapshot run wrote (its history for replay).
    Event-log runs are their own history; the journal appends, never reads itself back.
    ``after_paint(seconds)`` blocks until the UI painted the change (at most ``PAINT_WAIT``),
    so the record does not compete with that paint; ``recorded(run_path)`` is called (on
    the live worker's thread) once the change is in the journal, and the UI's history is
    built from it then: built on a timer instead, it ran beside the next change's paint
    whenever the run wrote about every 0.3 s (issue 33)."""
    from prose_tui.history.sources import source_of
    from prose_tui.model import RunFormat

    state = {"journal": journal}

    def sink(delta: Delta) -> None:
        run = delta.run
        journal = state["journal"]
        if journal is None or run.format is not RunFormat.SNAPSHOT or not delta.paths or not run.path.is_dir():
            return
        if run.read_problem is not None:
            return  # the state file could not be read: nothing new to record (the run shows its last read)
        if after_paint is not None and after_paint(PAINT_WAIT):
            time.sleep(OUTPUT_WAIT)  # painted: its frame written out before the record's Python
        try:
            # The change's own classification and state.md bytes: nothing is classified or read twice.
            read = (delta.state_data, delta.state_stat) if delta.state_data is not None and delta.state_stat else None
            journal.record(run.path, delta.paths, clock(), parts=delta.parts, state=read, source=source_of(run))
        except (OSError, ValueError, RecursionError) as exc:
            state["journal"] = None  # a convenience: losing it must not stop the live view
            if on_error is not None:
                on_error(f"could not journal {run.id} (history replay is off): {type(exc).__name__}")
            return
        if recorded is not None:
            recorded(run.path)

    return sink


def _bindings_changed(bindings: list[tuple[Path, float | None]]) -> set[Path]:
    """Of ``bindings`` (each file's path and the modification time it was read at, ``None``
    when not known), those changed or gone since, and files new in their folders: one listing per folder and a
    stat per known file (a few milliseconds for a run of 2,000 bindings)."""
    changed: set[Path] = set()
    folders: dict[Path, set[str]] = {}
    for path, mtime in bindings:
        folders.setdefault(path.parent, set()).add(path.name)
        if mtime is None:
            continue
        try:
            if path.stat().st_mtime != mtime:
                changed.add(path)
        except OSError:
            changed.add(path)
    for folder, names in folders.items():
        try:
            with os.scandir(folder) as entries:
                changed.update(Path(entry.path) for entry in entries
                               if entry.name not in names and not entry.name.startswith(".") and entry.is_file())
        except OSError:
            changed.add(folder)
    return changed
