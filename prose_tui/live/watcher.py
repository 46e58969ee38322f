"""The one file watcher of a process: watchfiles over every folder someone follows.

The explorer's live pipeline, ``prose-tui record`` and Mission Control subscribe with the
folders (or files) they follow and a callback; one thread runs ``watchfiles.watch`` over
the union and hands each subscriber the batch of changed paths below its own roots.
Roots that do not exist yet are checked every ``poll_s`` seconds (0.25 s); when one
appears the watch restarts with it and its subscriber receives the root itself, so a
runs folder created after start-up is followed within a second.

Each time the watch (re)starts, every subscriber's ``on_ready`` is called once the
watches are installed: a change written before that moment was not seen, so the
subscriber re-checks what it follows (the live pipeline re-stats its runs' state files).
``RustNotify`` (watchfiles' own engine, which ``watchfiles.watch`` wraps) is used directly
for that moment.

Between changes the thread sleeps on a doorbell (:mod:`prose_tui.live.doorbell`, inotify on
Linux) and asks the engine only when it rings, so an idle explorer does not wake, and a
change after a quiet spell is handed over as fast as one in a burst (about 5 ms). Where
there is no doorbell the engine is asked every step, a step that backs off as the run stays
quiet (below).

Callbacks run on the watcher thread: they must be quick (put the batch in a queue).
Textual-free.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from prose_tui.backends.common.foreground import change_in_flight
from prose_tui.live.doorbell import Doorbell, open_doorbell
from prose_tui.live.watch import DEBOUNCE_MS, interesting

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

# How often the engine looks for news (ms), by how long ago the last change (or subscription)
# was. A change is handed over once a look finds no more changes than the look before: one
# to two steps after the write. Each look wakes the thread (about 50 us of CPU here), so the
# step backs off as a run stays quiet (docs/performance.md, third to fifth pass):
# - STEP_MS within BURST_S seconds: a VM writes in bursts (a statement's end, the next one's
#   start, its bindings), and the next change is likely soon; hand-over 5-11 ms;
# - STEADY_STEP_MS until ACTIVE_S seconds: hand-over 10-20 ms;
# - IDLE_STEP_MS after that (and while changes stream in, below): 30-60 ms. At 10 ms an idle
#   explorer's hundred wake-ups a second were 0.7 % of a core, most of its CPU against the
#   1 % target; a 5 ms step throughout put it at 1.0-1.1 %.
# A new subscription (a run just opened) starts on the fast step.
STEP_MS = 5
BURST_S = 3.0
STEADY_STEP_MS = 10
IDLE_STEP_MS = 30
ACTIVE_S = 10.0
# A run streaming changes (STREAM_BATCHES batches handed over within STREAM_WINDOW_S
# seconds: 5 a second) is looked at every STREAM_STEP_MS, so that its changes come in
# batches of about 0.3 s: the explorer shows a stream once a second (prose_tui.live.mailbox),
# so the wait is not seen, and each batch costs a wake-up here and an apply on the live
# worker (at 10 events a second: 10 of each a second at a 30 ms step, 3 at 150). The stream
# lasts while batches keep coming less than STREAM_GAP_S apart; after that the step (or the
# doorbell) is the quick one again.
STREAM_BATCHES = 10
STREAM_WINDOW_S = 2.0
STREAM_STEP_MS = 150
STREAM_GAP_S = 1.0
# With a doorbell (prose_tui.live.doorbell, Linux) the watcher sleeps until the kernel reports
# a change, and only then asks the engine, looking every RING_STEP_MS: a batch is handed over
# once a look finds no more changes than the one before, two to three looks after the ring
# (2-3 ms; at a 2 ms step the hand-over was 4-6 ms after the write, a sixth of a snapshot
# rewrite's latency). A VM's atomic write (a temporary file renamed) is one kernel event
# batch; writes a millisecond or more apart may come as two batches, each shown as it comes.
# The steps above then apply only while changes stream in and where there is no doorbell.
# A ring the engine has nothing for (a change it does not report) ends after RING_TIMEOUT_MS.
RING_STEP_MS = 1
RING_TIMEOUT_MS = 20
# A watch opens its doorbell BELL_AFTER_S (bell_after_s) after it was subscribed (the first
# screen of the run just opened is up by then; the walk of its folders and the first import of
# inotify_simple cost the watcher thread 10-20 ms here), at a moment BELL_GAP_S after the last
# change (not within a burst), and not while changes stream in. It waited for BURST_S without
# any change before: a run changing every second or faster (a VM at work, bench_e2e's cases)
# then never got one, and each of its changes was handed over on the 5 ms step (5-11 ms after
# the write) instead of 2-4 ms after the kernel's event. A subscriber whose run is on screen
# says so (``bell_now``, ``bell_soon``: the explorer, once the frame showing the run is out),
# and the doorbell opens then, within BELL_CHECK_S: a change in the 1.5 s before was handed over
# on the step, 10-15 ms after the write, and one written as the doorbell opened beside a long
# log's whole read waited 100-150 ms for it.
BELL_AFTER_S = 1.5
BELL_GAP_S = 0.05
BELL_CHECK_S = 0.05  # until its doorbell opens, a watch looks at least this often (s) whether it may

Callback = Callable[[set[Path]], None]
Look = set[tuple[int, str]] | Literal["signal", "stop", "timeout"]  # what the engine's watch returns


@dataclass(eq=False)
class Subscription:
    """What one subscriber follows: ``roots`` (absolute), notified through ``callback``."""

    roots: frozenset[Path]
    callback: Callback
    files: bool = False  # roots are files: their folder is watched, only they are reported
    on_ready: Callable[[], None] | None = None  # the watch (re)started: changes before it were missed
    present: set[Path] = field(default_factory=set)

    def wants(self, path: Path) -> bool:
        if self.files:
            return path in self.roots
        return any(path == r or r in path.parents for r in self.roots)


class Watcher:
    """Watch the union of every subscription's roots in one thread (started on first use)."""

    def __init__(self, *, debounce_ms: int = DEBOUNCE_MS, step_ms: int = STEP_MS, poll_s: float = 0.25,
                 recursive: bool = True, doorbell: bool = True, bell_after_s: float = BELL_AFTER_S) -> None:
        self.recursive = recursive
        self.use_doorbell = doorbell  # sleep on inotify between changes where the system has it
        self.bell_after_s = bell_after_s  # seconds after a subscription before a watch opens its doorbell
        self.doorbell_off: str | None = None  # why the last watch went without one, when it did
        self.bell_open = threading.Event()  # the current watch sleeps on a doorbell (tests wait on it)
        # The current watch is installed and has tried its doorbell (or has none to try): a
        # change is heard from the kernel's event on, not on the engine's step.
        self.bell_tried = threading.Event()
        self._doorbell: Doorbell | None = None
        self._bell_wanted = False  # the current watch has not tried its doorbell yet
        self._flat: Watcher | None = None  # files are followed in their folder, not below it
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.steady_step_ms = max(step_ms, STEADY_STEP_MS)
        self.idle_step_ms = max(step_ms, IDLE_STEP_MS)
        self._changed_at = -ACTIVE_S  # monotonic time (s) of the last change or subscription
        self._subscribed_at = -ACTIVE_S  # monotonic time (s) of the last subscription
        self._handed: deque[float] = deque(maxlen=STREAM_BATCHES)  # when the last batches were handed over
        self._streaming = False  # a stream was seen and has not paused for STREAM_GAP_S since
        self.poll_s = poll_s
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        self._restart = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None  # why watching stopped, when it did

    def subscribe(self, roots: list[Path], callback: Callback, *, files: bool = False,
                  on_ready: Callable[[], None] | None = None, bell_now: bool = False) -> Subscription:
        """Follow ``roots`` (folders, recursively; or files with ``files``: their folder is
        watched without its subfolders, by a second engine of this watcher). ``bell_now``:
        the subscriber's first screen is up already, so the doorbell opens at once rather
        than ``bell_after_s`` later (``bell_tried`` is set once it was tried)."""
        if files and self.recursive:
            with self._lock:
                if self._flat is None:
                    self._flat = Watcher(debounce_ms=self.debounce_ms, step_ms=self.step_ms, poll_s=self.poll_s,
                                         recursive=False, doorbell=self.use_doorbell, bell_after_s=self.bell_after_s)
            return self._flat.subscribe(roots, callback, files=True, on_ready=on_ready, bell_now=bell_now)
        sub = Subscription(frozenset(Path(r) for r in roots), callback, files, on_ready)
        sub.present = {r for r in sub.roots if r.exists()}  # only roots appearing later are news
        with self._lock:
            self._subs.append(sub)
            self._closed.clear()
            self._changed_at = self._subscribed_at = time.monotonic()  # just opened: its first changes quickly
            if bell_now:
                self._subscribed_at -= self.bell_after_s  # as ``bell_soon``
            if self._thread is None:  # the thread clears this, under the lock, as it ends
                self._thread = threading.Thread(target=self._run, name="prose-tui-watcher", daemon=True)
                self._thread.start()
        self._wake()
        return sub

    def update(self, sub: Subscription, roots: list[Path]) -> None:
        """Change what ``sub`` follows."""
        if sub.files and self._flat is not None and self._flat is not self:
            self._flat.update(sub, roots)
            return
        with self._lock:
            sub.roots = frozenset(Path(r) for r in roots)
            sub.present &= set(sub.roots)
            sub.present |= {r for r in sub.roots if r.exists()}
        self._wake()

    def unsubscribe(self, sub: Subscription) -> None:
        if sub.files and self._flat is not None and self._flat is not self:
            self._flat.unsubscribe(sub)
            return
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)
            if not self._subs:
                self._closed.set()
        self._wake()

    def close(self) -> None:
        """Stop the thread (subscriptions are dropped)."""
        if self._flat is not None:
            self._flat.close()
        with self._lock:
            self._subs.clear()
            self._closed.set()
        self._wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def bell_soon(self) -> None:
        """A subscriber's run is on screen now: the current watch may open its doorbell at
        once (within ``BELL_CHECK_S``), not ``bell_after_s`` after the subscription."""
        with self._lock:
            self._subscribed_at = min(self._subscribed_at, time.monotonic() - self.bell_after_s)

    def _wake(self) -> None:
        """Restart the watch (subscriptions changed, or closing): stop the engine's look and
        wake the doorbell's sleep."""
        self._restart.set()
        doorbell = self._doorbell
        if doorbell is not None:
            doorbell.interrupt()

    # -- the thread -----------------------------------------------------------------------------
    def _targets(self) -> tuple[list[Path], list[tuple[Subscription, set[Path]]]]:
        """Folders to watch now, and per subscription the roots that appeared since last time."""
        folders: set[Path] = set()
        appeared: list[tuple[Subscription, set[Path]]] = []
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            present = {r for r in sub.roots if r.exists()}
            new = present - sub.present
            sub.present = present
            if new:
                appeared.append((sub, new))
            for root in present:
                folders.add(root.parent if sub.files else root)
        roots = sorted(folders)
        if self.recursive:  # a folder inside another watched folder is covered by it
            roots = [r for r in roots if not any(o != r and o in r.parents for o in roots)]
        return roots, appeared

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed.is_set() or not self._subs:
                    self._thread = None
                    return
            self._restart.clear()
            folders, appeared = self._targets()
            for sub, new in appeared:
                self._deliver(sub, new)  # a root that appeared: its subscriber looks inside
            missing = any(sub.present != set(sub.roots) for sub in list(self._subs))
            if not folders:
                self._restart.wait(self.poll_s)
                continue
            # ``close`` and ``unsubscribe`` set ``_restart`` too: one Event stops the watch (the
            # engine asks it every step; one attribute read, not a Python call per event)
            stop = self._restart
            doorbell: Doorbell | None = None
            self._bell_wanted = self.use_doorbell
            self.bell_tried.clear()
            # Imported on this thread when watching starts: watchfiles (with anyio and
            # multiprocessing) is a seventh of Textual's import, not needed for a first screen.
            from watchfiles._rust_notify import RustNotify

            try:
                with RustNotify([str(f) for f in folders], False, False, 300, self.recursive, False) as notify:
                    for sub in list(self._subs):  # watches are installed: anything earlier was missed
                        if sub.on_ready is not None:
                            try:
                                sub.on_ready()
                            except Exception as exc:  # pragma: no cover - a subscriber's bug
                                self.error = f"a subscriber failed: {type(exc).__name__}: {exc}"
                    if not self._bell_wanted:
                        self.bell_tried.set()
                    while True:
                        if self._bell_wanted and self.quiet_for_bell(time.monotonic()):
                            self._bell_wanted = False  # one try per watch
                            doorbell = self._open_bell(folders)
                            self.bell_tried.set()
                        raw = self._look(notify, doorbell, stop)
                        if raw in ("stop", "signal"):
                            break
                        if not isinstance(raw, str):  # a set of (change, path): not "timeout"
                            batch = {Path(p) for _c, p in raw}
                            batch = {p for p in batch if interesting(p)}
                            if batch:
                                if doorbell is not None:
                                    # The rest of this write (an atomic replace's rename after its
                                    # temporary file) came with the batch: not a ring of its own,
                                    # whose look (RING_TIMEOUT_MS of steps, each taking the GIL)
                                    # ran beside the change's paint.
                                    doorbell.drain()
                                self.handed_over(time.monotonic())
                                self._dispatch(batch)
                        if stop.is_set():  # after the batch in hand went out: a restart loses nothing
                            break
                        if missing and any(r.exists() for sub in list(self._subs) for r in sub.roots - sub.present):
                            break  # a followed root appeared: watch it too
                        if self._vanished(folders):
                            break
            except Exception as exc:  # a vanished root, inotify limits: retry after a pause
                self.error = f"{type(exc).__name__}: {exc}"
                self._restart.wait(1.0)
            finally:
                self._doorbell = None
                self.bell_open.clear()
                if doorbell is not None:
                    doorbell.close()

    def quiet_for_bell(self, now: float) -> bool:
        """Whether a watch may open its doorbell at monotonic time ``now`` (seconds):
        ``bell_after_s`` after the last subscription, ``BELL_GAP_S`` after the last change,
        and no stream. Opening it costs the watcher thread a walk of the folders, and the
        first one in a process the import of ``inotify_simple`` (ctypes): 120 ms beside an
        open still reading a run, during which nothing is looked at. So a new watch (a run
        just opened) looks on the quick step meanwhile; a run that keeps changing after that
        gets its doorbell between two changes."""
        return self._bell_due() <= now and not self.streaming(now)

    def _bell_due(self) -> float:
        """The monotonic time (seconds) from which the doorbell may open, streams aside."""
        return max(self._subscribed_at + self.bell_after_s, self._changed_at + BELL_GAP_S)

    def _open_bell(self, folders: list[Path]) -> Doorbell | None:
        doorbell, self.doorbell_off = open_doorbell(folders, recursive=self.recursive)
        if doorbell is not None:
            self._doorbell = doorbell
            self.bell_open.set()
            doorbell.interrupt()  # a first look at once: what came while it opened is in the engine
        return doorbell

    def _look(self, notify: RustNotify, doorbell: Doorbell | None, stop: threading.Event) -> Look:
        """One look for changes: a set of (change, path), or "timeout", "stop", "signal".

        With a doorbell (and no stream): sleep until it rings or ``poll_s`` passes, then ask
        the engine, on ``RING_STEP_MS`` steps after a ring, or once, at once, after the wait
        (a change the doorbell did not hear: a folder made and written to before its watch
        was added). Without one, or while changes stream in: the engine's stepped look."""
        now = time.monotonic()
        if doorbell is None or self.streaming(now):
            timeout = self.poll_s
            if self._bell_wanted:  # back when the doorbell may open (``bell_soon`` may bring that closer)
                timeout = min(timeout, BELL_CHECK_S, max(0.001, self._bell_due() - now))
            raw = notify.watch(self.debounce_ms, self.step(now), max(1, int(timeout * 1000)), stop)
            if doorbell is not None:
                doorbell.drain()  # what the stepped look took: not a ring later; new folders watched
            return raw
        rings = doorbell.rings
        if doorbell.wait(self.poll_s):
            if stop.is_set():
                return "stop"
            if doorbell.rings != rings:  # the kernel's (not ``interrupt``'s: a subscription, a bell just opened)
                change_in_flight()  # background reads give way from the ring on (foreground.py)
            return notify.watch(self.debounce_ms, RING_STEP_MS, RING_TIMEOUT_MS, stop)
        return notify.watch(self.debounce_ms, 1, 1, stop)

    def handed_over(self, now: float) -> None:
        """A batch of changes was handed over at monotonic time ``now`` (seconds)."""
        self._changed_at = now
        self._handed.append(now)

    def streaming(self, now: float) -> bool:
        """Whether changes stream in at monotonic time ``now`` (seconds): the last
        ``STREAM_BATCHES`` batches were all handed over within ``STREAM_WINDOW_S`` seconds,
        or a stream seen so has had a batch within the last ``STREAM_GAP_S``."""
        handed = self._handed
        if self._streaming and handed and now - handed[-1] <= STREAM_GAP_S:
            return True
        self._streaming = len(handed) == STREAM_BATCHES and now - handed[0] <= STREAM_WINDOW_S
        return self._streaming

    @property
    def stream_seen(self) -> bool:
        """Whether changes streamed in at the watcher's last look (any thread may read it)."""
        return self._streaming

    def step(self, now: float) -> int:
        """The engine's step (ms) for the next watch call at monotonic time ``now``
        (seconds): ``STREAM_STEP_MS`` while changes stream in (``streaming``), ``step_ms``
        within ``BURST_S`` of the last change or subscription, ``steady_step_ms`` within
        ``ACTIVE_S``, else ``idle_step_ms``. A watch call returns at each batch and every
        ``poll_s`` seconds, so the step follows within that."""
        if self.streaming(now):
            return max(self.step_ms, STREAM_STEP_MS)
        quiet = now - self._changed_at
        if quiet >= ACTIVE_S:
            return self.idle_step_ms
        return self.step_ms if quiet < BURST_S else self.steady_step_ms

    def _vanished(self, folders: list[Path]) -> bool:
        return any(not f.exists() for f in folders)

    def _dispatch(self, batch: set[Path]) -> None:
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            mine = {p for p in batch if sub.wants(p)}
            if mine:
                self._deliver(sub, mine)

    def _deliver(self, sub: Subscription, paths: set[Path]) -> None:
        try:
            sub.callback(paths)
        except Exception as exc:  # one subscriber's bug must not stop the others
            self.error = f"a subscriber failed: {type(exc).__name__}: {exc}"


_SHARED: Watcher | None = None
_SHARED_LOCK = threading.Lock()


def shared_watcher() -> Watcher:
    """The process's one watcher."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Watcher()
        return _SHARED
