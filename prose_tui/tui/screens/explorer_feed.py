"""The explorer's runs: the first read, full reads, paging back, the tick; live changes
through ``LiveFeed`` (``explorer_live``), polled sources through ``SourcePoll``
(``explorer_poll``).

``RunFeed`` is a component the explorer screen owns (not a mixin): it reads the workspace
in thread workers it starts on the screen (groups ``scan``, ``detail``, ``poll``), fills the
run list, and hands every run to show to the painter (``Panes.show_run``). When the screen
watches, its ``live`` (a ``LiveFeed``) starts the process's live pipeline once the first
read has read every run (from the reader's thread) and shows the deltas it delivers; the UI
thread reads no disk for a live change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from textual.app import App
from textual.css.query import NoMatches
from textual.worker import get_current_worker

from prose_tui.backends.common.contained import OUTSIDE_RUN
from prose_tui.history import Journal
from prose_tui.live.status_timer import StatusTimer
from prose_tui.live.workspace import Applied, Workspace, placeholder
from prose_tui.model import Run, RunStatus
from prose_tui.remote import shown
from prose_tui.viewmodel.explorer_model import ExplorerModel
from prose_tui.tui.live_inbox import LiveInbox
from prose_tui.tui.screens.explorer_live import LiveFeed, LiveHost
from prose_tui.tui.screens.explorer_panes import TRACE, Panes
from prose_tui.tui.screens.explorer_poll import PollHost, SourcePoll
from prose_tui.tui.widgets.repaint import set_border
from prose_tui.tui.widgets.run_list import RunList



class FeedHost(LiveHost, PollHost, Protocol):
    """What the feed uses of the screen it reads runs for: what its live feed and poll use
    (``LiveHost``, ``PollHost``), the UI loop from its readers (``app.call_from_thread``),
    and the layout's ``activate_for_start`` (a pane, unless the user picked one), ``fit_widths`` and ``runs_read`` (after a read
    of the list); ``open_listed`` opens a run of the list the feed chose for the user."""

    @property
    def app(self) -> App[Any]: ...

    def activate_for_start(self, index: int) -> None: ...
    def open_listed(self, path: Path) -> None: ...
    def fit_widths(self, *, programs_known: bool = ...) -> None: ...
    def runs_read(self, *, first: bool) -> None: ...


class _ScreenGone(Exception):
    """The explorer went away while a worker thread was still reading."""


PROGRESS_EVERY = 0.05  # seconds between progress reports and batches of rows while reading
FIRST_PAGE = 200  # a database's newest runs, shown before its whole list is read (a screen or more)
FIRST_WAIT = 15.0  # seconds the scan waits for that page (a connection and a statement time out sooner)
PAGE_ROWS = 500  # older trace lines loaded when the reader reaches the first one (SQLite)
FIRST_WAIT_PAINT = 0.5  # seconds a run's full read waits for its first screen's paint (a frame or two)
# Seconds the whole read behind a first screen then leaves the GIL to Textual's writer thread,
# which sends the frame handed to it: read at once, a 20,000-event log's first screen reached
# tmux 100-140 ms later (medians of 6-8 opens, load 2; issue 33).
FIRST_WRITE_GRACE = 0.03
FIRST_LISTEN_WAIT = 1.0  # seconds the whole read behind a first screen waits for the watcher to listen
SUMMARY_AFTER = 0.3  # seconds a chosen database run's first screen may take before its summary is shown
TAIL_FIRST_LINES = 5_000  # trace lines of a summary on disk over which a run opens from its tail first


class RunFeed:
    """Reads and watches ``workspace`` for ``screen`` (a ``FeedHost``): the runs it reads go
    to the run list and, the run shown, to ``panes`` (what ``model`` says of them). ``live``: watch (``self.live`` is then
    a ``LiveFeed``; else the tick re-infers statuses); ``journal``: where live changes are
    journaled (``None`` after it fails); ``initial``: the run to open on. ``watcher_state``
    is the status line's watcher text."""

    def __init__(self, screen: FeedHost, workspace: Workspace, model: ExplorerModel, panes: Panes, *, live: bool,
                 journal: Journal | None, initial: Path | None) -> None:
        self.screen = screen
        self.workspace = workspace
        self.model = model
        self.panes = panes
        self.initial = initial
        self._journal = journal
        self.live: LiveFeed | None = LiveFeed(screen, workspace, model, panes, journal=journal,
                                              initial=initial) if live else None
        # A run read in full is prepared for showing on the thread that read it, before it is
        # handed over (its history, trace layout, timeline steps): the UI thread only takes it
        # when it swaps the run in (``_rows_read``, ``_detailed``, or a live delta), in
        # milliseconds where it took 0.3-0.4 s of one turn at 100,000 events (issue 33).
        workspace.on_full_read = panes.prepare
        self.stopped = threading.Event()  # the screen is going: polling ends
        self._activated = False  # the focus placed for the user (trace or run list)
        self._found_runs = False  # a read of the run list found runs
        self._found = -1  # runs found on disk by the read under way (its worker's)
        self._auto_choice: Path | None = None  # the run highlighted for the user, not by them
        self._opening: Path | None = None  # a database run chosen, its first screen not shown yet
        self._first_shown = False  # a database's first page is in the list, the whole list not yet
        self._first_lock = threading.Lock()
        self.poller = SourcePoll(screen, workspace, stopped=self.stopped, inbox=lambda: self.inbox, polled=self._polled)
        self.statuses = StatusTimer(workspace)  # without watching: statuses as time passes, on the tick
        self._first: list[Run] = []  # a database's first page, read while the app mounts
        self._scan_full: Path | None = None  # the run the read under way takes in full first
        self._scan_reading: Path | None = None  # that run while the read has not handed it over
        self._after_scan: Path | None = None  # a run opened while that read reads it: shown by it
        self._first_read = threading.Event()
        self._mounted = False
        self._first_painted = threading.Event()
        self.first_screens = 0  # runs opened from the list shown first from their tail (tests, benchmarks)
        self._reading: tuple[Path, Any] | None = None  # the run "open in full" reads, and its worker
        if workspace.sources:
            # The database's newest runs are read now, while the screen is composed and
            # mounted (a connection and one short query), not after: the list shows them
            # in the first frame the scan can give it.
            threading.Thread(target=self._read_first, name="prose-tui first runs", daemon=True).start()
        else:
            self._first_read.set()

    @property
    def journal(self) -> Journal | None:
        """Where live changes are journaled (``None`` without one, or after journaling failed)."""
        return self.live.journal if self.live is not None else self._journal

    @property
    def inbox(self) -> LiveInbox | None:
        return self.live.inbox if self.live is not None else None

    @property
    def watcher_state(self) -> str:
        """The status line's watcher text."""
        return self.live.watcher_state if self.live is not None else "watch off"

    # -- the first read ------------------------------------------------------------------------------
    def scan(self) -> None:
        """(Re)read every run in a thread worker (group ``scan``; a new scan replaces one running)."""
        self.screen.run_worker(self._scan, name="_scan", group="scan", exclusive=True, thread=True)

    def _scan(self) -> None:
        runs_pane = self.screen.runs_pane
        last = [0.0]

        def progress(done: int, total: int, unit: str) -> None:
            now = time.monotonic()
            if now - last[0] < PROGRESS_EVERY or done >= total:
                # A blocking hop to the UI per run would cost more than the reading; the last
                # one would say "reading N/N" just before the list's title gives the count,
                # and keep this thread waiting while the UI paints the last rows.
                return
            last[0] = now
            text = f"Runs · reading {done}/{total}" if unit == "runs" else f"Runs · reading {done * 100 // max(total, 1)}% of {total / 2**20:.0f} MiB"
            self._from_thread(setattr, runs_pane, "border_title", text)

        def partial_run(run: Run) -> None:
            painted = threading.Event()  # the whole read behind a first screen waits for its frame
            self._from_thread(self._partial, run, painted)
            painted.wait(FIRST_WAIT)
            time.sleep(FIRST_WRITE_GRACE)  # and for Textual's writer thread to send that frame
            self._follow_first_screen()

        read: list[Run] = []
        count = [0]

        def on_run(run: Run) -> None:
            if run.path == self._scan_reading:
                self._scan_reading = None  # handed over below: "open" reads it itself from now on
            read.append(run)
            count[0] += 1
            every = count[0] == self._found  # the last run found on disk
            if every and self.live is not None and not self.workspace.sources:
                # Every run on disk is read: watch now, before the UI shows the last rows, so
                # a change written the moment the run appears is already watched for. (A
                # database's runs are read after these: its polling starts after them.)
                self.live.watch()
            if len(read) == 1 or every or time.monotonic() - last[0] >= PROGRESS_EVERY:
                batch = read[:]
                read.clear()
                self._from_thread(self._rows_read, batch, last=every)

        try:
            self._read_all(progress, partial_run, on_run)
        except _ScreenGone:
            return
        finally:
            self._scan_reading = None

    def _follow_first_screen(self) -> None:
        """A first screen (a long log's tail, ``Workspace.first_screen``) is on screen: watch
        now (any thread), so it is followed live while the rest is read and the VM's next
        events show at once, not after the whole log is parsed (seconds at 100,000 events).
        The rest is read once the watcher listens (``FIRST_LISTEN_WAIT`` at most): its start
        beside the whole read took 100-150 ms, and a change written then waited for it.
        A database's runs are polled once every run is read, as before."""
        if self.live is not None and not self.workspace.sources:
            self.live.watch(shown=True)
            self.live.wait_listening(FIRST_LISTEN_WAIT)

    def mounted(self) -> None:
        """The screen is mounted (its first frame not painted yet): a database's first page
        read meanwhile goes into the run list now, so that frame shows it. Never waits: a
        page read later is shown as soon as it is read."""
        self._mounted = True
        self._show_first()

    def _show_first(self) -> None:
        first = self._take_first() if self._first_read.is_set() else []
        if first and self.screen.is_attached:
            self._first_page(first)

    def _take_first(self) -> list[Run]:
        with self._first_lock:
            first, self._first = self._first, []
        return first

    def _read_first(self) -> None:
        try:
            self._first = self.workspace.first_source_runs(FIRST_PAGE)
        finally:
            self._first_read.set()
        if self._mounted:  # read after the screen mounted: shown now, not when the scan starts
            try:
                self.screen.call_later(self._show_first)  # posts a message: thread-safe
            except RuntimeError:
                pass  # the app is gone (or going)

    def _read_all(self, progress, partial_run, on_run) -> None:
        if self._first_read.wait(FIRST_WAIT):
            # A database's newest runs first (read while the app mounted; shown already when
            # read in time): the list shows them before the runs on disk are read and the
            # whole list (10,000 rows) is built; that build waits for their frame (it would
            # hold the GIL the paint needs).
            first = self._take_first()
            if first:
                self._from_thread(self._first_page, first)
            if self._first_shown:
                self._first_painted.wait(FIRST_WAIT)
        try:
            refs = self.workspace.discover()
            self._found = len(refs)
            # The run this read takes in full first (``Workspace.scan``): opened meanwhile, it
            # is not read as a summary beside that read (see ``_open_in_full``).
            self._scan_full = self._scan_reading = self.workspace.read_in_full_first(refs, self.initial)
            # Every run is listed at once, newest first; rows fill in as runs are read.
            self._from_thread(self._listed, [placeholder(r) for r in refs])
            runs = self.workspace.scan(progress, partial=partial_run, first=self.initial, on_run=on_run, refs=refs)
            if self.live is not None and self.screen.is_attached:
                self.live.watch()  # when not started above: now, not after the UI showed the end of the read
        except OSError as exc:
            self._from_thread(self.screen.notify, f"cannot read {self.workspace.root}: {exc}", severity="error", markup=False)
            runs = []
        self._from_thread(self._scanned, runs)

    def _from_thread(self, callback, *args, **kwargs) -> None:
        """Run ``callback`` on the UI loop from a worker thread; stop the worker if the screen
        is gone (the user quit while runs were still being read)."""
        worker = get_current_worker()
        if worker.is_cancelled or not self.screen.is_attached:
            raise _ScreenGone
        try:
            self.screen.app.call_from_thread(self._if_attached, callback, *args, **kwargs)
        except RuntimeError as exc:  # the app stopped between the check and the call
            raise _ScreenGone from exc

    def _if_attached(self, callback, *args, **kwargs) -> None:
        if self.screen.is_attached:
            try:
                callback(*args, **kwargs)
            except NoMatches:  # the screen's widgets are already gone: it is closing
                pass
            except Exception as exc:  # a run that could not be shown must not end the app: say so, go on
                self.screen.notify(f"could not show what was read: {type(exc).__name__}: {exc}"[:300],
                                   severity="warning", markup=False)

    def _first_page(self, runs: list[Run]) -> None:
        """A database's newest runs, shown before the whole list is read (its rows then
        replace these)."""
        run_list = self.screen.run_list
        if run_list.runs:
            self._first_painted.set()
            return  # the list shown stays until the whole list is read
        self._auto_choice = runs[0].path
        self._first_shown = True
        before = run_list.chosen
        run_list.set_runs(runs, clock=self.workspace.clock, quiet=True)
        self.screen.runs_pane.border_title = f"Runs ({len(runs)}+) · reading"
        self.screen.call_after_refresh(self._first_painted.set)
        self._open_choice(before)

    def _listed(self, runs: list[Run]) -> None:
        run_list = self.screen.run_list
        before = run_list.chosen
        if runs and self._first_shown:
            # A database's first page is shown: the runs on disk join it, newest first.
            known = {r.path for r in runs}
            runs = sorted([*runs, *(r for r in run_list.runs if r.path not in known)], key=_newest_first, reverse=True)
            run_list.set_runs(runs, clock=self.workspace.clock, quiet=True)
        if runs:
            self._auto_choice = runs[0].path
        if runs and not run_list.runs:
            run_list.set_runs(runs, clock=self.workspace.clock, quiet=True)
            self.screen.runs_pane.border_title = f"Runs ({len(runs)}) · reading"
            # The list's width now, in the frame that lists the runs: not a layout of every
            # pane after the chosen run is on screen, when its programs are read.
            self.screen.fit_widths(programs_known=False)
        if len(runs) == 1 and not self._activated:
            # One run: its trace is where the first read ends, whatever it finds; going
            # there now puts the focus change (a layout, the footer's keys) in the frames
            # that fill the list, not in those after the run is on screen, when a first
            # live change may be waiting for the UI.
            self._activated = True
            self.screen.activate_for_start(TRACE)
        self._open_choice(before)

    def _open_choice(self, before: Path | None) -> bool:
        """Open the run the feed chose for the user (the list's ``chosen``, quietly: no
        ``RunChosen``) when it is not ``before``, the run chosen before this read's rows came:
        now, in this turn, not two frames later through the run list's message (40-60 ms of
        CPU at low load before the first run's read could be shown). True when it opened one."""
        chosen = self.screen.run_list.chosen
        if chosen is None or chosen == before:
            return False
        self.screen.open_listed(chosen)
        return True

    def _rows_read(self, runs: list[Run], *, last: bool = False) -> None:
        """Rows of runs just read; ``last``: every run found on disk is read now."""
        run_list = self.screen.run_list
        current = self.model.run
        for run in runs:
            run_list.update_run(run, clock=self.workspace.clock)
            if run.path in self.workspace.detailed and (current is None or run.path == current.path) \
                    and not self._full_read_shown(run):
                self.panes.show_run(run)
                current = self.model.run
        if last:
            # The last rows: the run list takes its width in the frame that shows them, not in
            # a layout of the whole screen after the read (one run: its trace on screen then).
            self.screen.fit_widths()

    def _partial(self, run: Run, painted: threading.Event) -> None:
        """A first screen of a large narration file or a long log's tail while the rest is
        still being read; ``painted`` is set once its frame is drawn."""
        self._when_painted(painted)
        run_list = self.screen.run_list
        before = run_list.chosen
        if not run_list.runs:
            run_list.set_runs([run], clock=self.workspace.clock, quiet=True)
            self.screen.activate_for_start(1)
        # The run chosen for the user is opened (it shows this run, from the list) and the
        # first screen painted once, not twice in this turn.
        if not self._open_choice(before) or self.model.run is not run:
            self.panes.show_run(run)

    def _when_painted(self, painted: threading.Event) -> None:
        """Set ``painted`` once the next frame is out (``ProseTUI.after_frame``; in another
        app after Textual's refresh): the reader waiting on it (the whole read, the watch
        behind a first screen) then takes no GIL from the paint of that frame. Textual's
        ``call_after_refresh`` could come before it: starting the watch then held the first
        screen's frame 40-50 ms of CPU."""
        self._after_paint(painted.set)

    def _after_paint(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the next frame is out (``_when_painted``), on whichever
        thread sends it: it must be thread-safe."""
        after_frame = self.screen.after_frame
        if after_frame is not None:
            after_frame(callback)
        else:
            self.screen.call_after_refresh(callback)

    def _scanned(self, runs: list[Run]) -> None:
        self._scan_reading = None  # the read is over: what it did not hand over, "open" reads
        if self.live is not None and self.live.runs_changes:
            # Watching began on the reader's thread: runs it found appearing or going since
            # the read may have reached the list before this; the list is the workspace's now.
            runs = self.workspace.sorted_runs()
        self._first_shown = False
        screen = self.screen
        run_list = screen.run_list
        # The title's row alone, and the rows again only when the read's order is not the
        # one shown: the frame after the read is then the list's title, which a change
        # written the moment the run appeared does not wait behind.
        set_border(screen.runs_pane, title=f"Runs ({len(runs)})")
        before = run_list.chosen
        if len(run_list.runs) != len(runs) or any(a is not b for a, b in zip(run_list.runs, runs)):
            run_list.set_runs(runs, clock=self.workspace.clock, quiet=True)
        if not runs:
            said = (no_runs_text(self.workspace.root, waiting=self.live is not None) if self.workspace.disk
                    else "No runs found in the database. Waiting for one to appear…")
            self.panes.no_runs(said)
            run_list.show_empty(said)
        elif self.initial is not None and self.initial in self.workspace.runs:
            run_list.select_path(self.initial, quiet=True)
        elif run_list.chosen == self._auto_choice:
            # Before runs were read their order came from run ids; now it is by what they
            # say. A choice made for the user follows the newest; one they made stays.
            run_list.select_path(runs[0].path, quiet=True)
        first = bool(runs) and not self._found_runs  # the first read to find runs: to the trace
        self._found_runs = self._found_runs or bool(runs)
        if not self._activated and not runs:
            screen.activate_for_start(0)  # nothing to show but the run list (waiting for a run)
        self._activated = True
        if self.live is not None:
            self.live.start()
            # The watcher's doorbell opens once this frame (the run on screen) is out, not
            # 1.5 s after the watch began: a change in between was heard on the engine's
            # 5 ms step, 10-15 ms after the write instead of 2-5 (issue 33).
            self._after_paint(self.live.listen_now)
            if self.workspace.sources:
                self.poller.start()
        if not runs:
            return
        if self.initial is None or self.initial not in self.workspace.runs:
            # Open on the running run (the newest running one) unless the user chose another.
            running = next((r for r in runs if r.status is RunStatus.RUNNING), None)
            if running is not None and run_list.chosen != running.path and run_list.chosen == self._auto_choice:
                run_list.select_path(running.path, quiet=True)
        screen.runs_read(first=first)
        self._open_choice(before)
        self._open_after_scan()

    def _open_after_scan(self) -> None:
        """The run opened while the read took it in full (``open``): read on its own now
        when that read did not read it (it went, or could not be read)."""
        path, self._after_scan = self._after_scan, None
        current = self.model.run
        if path is not None and (current is None or current.path == path) and path not in self.workspace.detailed:
            self.open(path)

    # -- opening a run, full reads --------------------------------------------------------------------
    def open(self, path: Path) -> None:
        """Show the run at ``path``: its summary at once, then all of it once read. A
        database run's summary only if its first screen (its last rows, a few round trips)
        is late: painted first, it held the screen for a frame of every pane (100-150 ms
        under load) while those rows waited to be shown. A long summary on disk (over
        ``TAIL_FIRST_LINES`` trace lines) is not painted either: its header alone, then
        its tail's first screen from the reader (a 100,000-line summary took the UI thread
        4-6 s under load, keys held, before the whole read painted it all again)."""
        if self.live is not None:
            self.live.chosen(path)
        current = self.model.run
        if (current is None or current.path == path) and (self._being_read(path) or path == self._after_scan):
            return  # chosen again while being read (Enter on it): what is shown of it stays
        ws = self.workspace
        run = ws.runs.get(path) or next((r for r in self.screen.run_list.runs if r.path == path), None)
        late = run is not None and path not in ws.detailed and ws.source_of(path) is not None
        self._opening = path if late else None
        long_summary = (run is not None and not late and path not in ws.detailed and path in ws.runs
                        and len(run.trace) > TAIL_FIRST_LINES)
        if run is not None and late:
            self.screen.set_timer(SUMMARY_AFTER, partial(self._summary_if_late, path, run))
        elif long_summary and run is not None:
            self.panes.show_run(_header_of(run))
        elif run is not None and current is None and path == self._scan_reading and path not in ws.runs:
            # Nothing shown yet, and the read under way is about to show this run: its row's
            # header (its id) alone meanwhile. The row shown as a run built a history (on a
            # worker) and painted every pane twice, in the frames before the first screen.
            self.panes.head(run)
        else:
            self.panes.show_run(run)
        self._after_scan = None
        if path == self._scan_reading:
            # The read under way takes this run in full first (its first screen too, from a
            # long log's tail): its rows show it (``_partial``, ``_rows_read``). A read of
            # its own begun now would race it for the run and, first, read it whole
            # without a first screen; it is begun after that read if it did not show it.
            self._after_scan = path
        elif path not in ws.detailed:
            self.open_in_full(path, tail_first=long_summary or path not in ws.runs)

    def _summary_if_late(self, path: Path, run: Run) -> None:
        if self._opening == path:
            self._opening = None
            self.panes.show_run(run)

    def open_import(self, parent: Path, handle: str) -> bool:
        """Show the import ``handle`` of the run at ``parent`` as a run of its own (read in
        full with its parent); False when the parent has no such import."""
        run = self.workspace.runs.get(parent)
        child = next((i for i in (run.imports if run else []) if (i.import_handle or i.id) == handle), None)
        if child is None or OUTSIDE_RUN in child.warnings:  # a folder outside the run is never read
            return False
        model = self.model
        model.loaded_run = None
        self.panes.show_run(child)
        model.loaded_run = child.path
        return True

    def open_in_full(self, path: Path, *, tail_first: bool = True) -> None:
        """Read a summarised run in full (bindings, agents, imports) in a thread worker and show it.

        A run opened before the start-up read reached it gets its first screen (a long log's
        tail) or its summary (the trace) first. The run being read already (chosen, then
        Enter on it) is not read again. ``tail_first``: the summary on screen (if any) is
        only its header (``open``): the reader shows a first screen before the whole read."""
        if self._being_read(path):
            return
        worker = self.screen.run_worker(partial(self._open_in_full, path, tail_first), name="open_in_full",
                                        group="detail", exclusive=True, thread=True)
        self._reading = (path, worker)

    def _being_read(self, path: Path) -> bool:
        """Whether "open in full" is reading the run at ``path`` now (its worker not cancelled)."""
        reading = self._reading
        return reading is not None and reading[0] == path and not reading[1].is_finished and not reading[1].is_cancelled

    def _open_in_full(self, path: Path, tail_first: bool = True) -> None:
        def first_screen(run: Run) -> None:
            # A database run's last rows, or a long log's tail, shown (``_detailed``: if it
            # is still the run chosen) even when a later choice cancelled this worker
            # (choosing the same run again waits for this read); the rest is read once they
            # are painted: read during the paint, it would hold the GIL the paint needs.
            painted = threading.Event()

            def show() -> None:
                self._detailed(run)
                self._when_painted(painted)

            if self.screen.is_attached:
                try:
                    self.screen.app.call_from_thread(self._if_attached, show)
                except RuntimeError:  # the app stopped
                    raise _ScreenGone from None
                painted.wait(FIRST_WAIT_PAINT)
                self._follow_first_screen()

        try:
            summarised = self.workspace.runs.get(path)
            if tail_first and path not in self.workspace.detailed and path != self._scan_full:
                # Not read yet, and the first read is not about to read it in full (a read asked
                # for beside that one would parse the run twice, a 100,000-event log 5.6 s
                # instead of 2.7, and the screen would show both; ``detail`` below takes that
                # read's run instead). A long log's first screen from its tail (milliseconds:
                # its newest events and status), else a summary (the trace before bindings
                # and agents); then the whole read behind it, unless another run was chosen
                # meanwhile (j j j: each run passed over costs its tail only).
                first = self.workspace.first_screen(path)
                if first is not None:
                    first_screen(first)
                    self.first_screens += 1
                    if get_current_worker().is_cancelled:
                        return
                elif summarised is not None:
                    self._from_thread(self._detailed, summarised)  # no shortcut: the summary after all
                else:
                    summary = self.workspace.summary(path)
                    if summary is not None:
                        self._from_thread(self._detailed, summary)
            run = self.workspace.detail(path, first_screen=first_screen)
            if run is not None:
                self._from_thread(self._detailed, run)
        except _ScreenGone:
            return

    def _detailed(self, run: Run) -> None:
        current = self.model.run
        if self._full_read_shown(run):
            return
        if self._opening is not None and self._opening != run.path:
            # Another run was chosen since this read began: what this read handed over before
            # its worker was cancelled is still on its way here, and must neither take the
            # chosen run's place nor end its wait (that left the chosen run never shown:
            # ``URL#RUN_ID`` opened on the newest run, which the first page had chosen).
            return
        if (current is not None and current.path == run.path) or self._opening == run.path:
            self._opening = None
            self.panes.show_run(run)
            self.screen.run_list.update_run(run, clock=self.workspace.clock)

    def _full_read_shown(self, run: Run) -> bool:
        """Whether the full read of ``run``'s path is on screen already and ``run`` adds
        nothing to it: the same object (the start-up read and "open in full" both hand it
        over), or a summary read beside the full read and arriving after it. Showing it again
        cost a history load and a layout of every pane (20-50 ms each, twice per open), and a
        late summary emptied the bindings and agents until the full read came back. Changes
        since reach the screen as live deltas, not through these reads."""
        model = self.model
        return model.loaded_run == run.path and (model.run is run or not model.is_full_read(run))

    # -- paging back (SQLite shows a window of a longer table) -----------------------------------------
    def page_back(self) -> None:
        """The reader went up to the first trace line: a run showing a window of a longer
        table (SQLite) loads the rows before it (``Workspace.page_back``), off the UI thread."""
        run = self.model.run
        if run is not None and run.trace and run.trace[0].line > 1:
            self.screen.run_worker(partial(self._page_back, run.path, run.trace[0].line),
                                   name="_page_back", group="page", exclusive=True, thread=True)

    def _page_back(self, path: Path, first_line: int) -> None:
        try:
            if self.workspace.page_back(path, PAGE_ROWS):
                self._from_thread(self._paged, path, first_line)
        except _ScreenGone:
            return

    def _paged(self, path: Path, first_line: int) -> None:
        """Older lines were put before trace line ``first_line``: redraw, cursor just above it."""
        run = self.model.run
        if run is None or run.path != path:
            return
        self.model.load_history()  # the older rows' events come before the others
        self.model.rows_prepended()
        self.panes.refresh()
        trace = self.panes.w.trace
        index = next((i for i, t in enumerate(trace.lines) if t.line == first_line), 0)
        trace.move_cursor(max(0, index - 1))

    # -- sources off disk (explorer_poll.SourcePoll), and the tick ------------------------------------
    @property
    def polls(self) -> int:
        """Polls of the sources so far (tests wait on it)."""
        return self.poller.polls

    def tick(self) -> None:
        """Every ``poll_interval``: the watcher's state when live, else statuses re-inferred."""
        if self.live is not None:
            self.live.update_watcher_state()  # statuses are re-inferred by the live worker
            return
        for run in self.statuses.tick():
            self.screen.run_list.update_run(run, clock=self.workspace.clock)
            current = self.model.run
            if current is not None and run.path == current.path:
                self.panes.head(run)
        self.panes.status()

    def _polled(self, applied: Applied) -> None:
        """What polls found besides the deltas (the inbox shows those): the source's state,
        runs added or removed, runs whose list row changed."""
        self.panes.status()  # a source's state (connected, reconnecting) may have changed
        if applied.runs_added or applied.runs_removed:
            if self.live is not None:
                self.live.runs_changed(applied)
        run_list = self.screen.run_list
        for path, change in applied.changed.items():
            run_list.update_run(change.run, clock=self.workspace.clock)
            current = self.model.run
            if current is not None and path == current.path:
                self.panes.show_run(change.run, changed=change.paths)

    def stop(self) -> None:
        """The screen is going: stop polling and watching."""
        self.stopped.set()
        self._first_painted.set()  # a scan waiting for the first page's frame waits no more
        if self.live is not None:
            self.live.stop()


def _header_of(run: Run) -> Run:
    """A long summary's header (id, program, status, times) without its trace, shown while
    its first screen is read (``RunFeed.open``)."""
    return Run(id=run.id, path=run.path, backend=run.backend, root=run.root, format=run.format, program=run.program,
               started=run.started, updated=run.updated, status=run.status, status_reason=run.status_reason,
               warnings=["reading the run: its newest events first"])


def no_runs_text(root: Path, *, waiting: bool) -> str:
    """What the explorer says when ``root`` holds no run: where it looked and what it looks
    for (the layouts of ``backends.discover``), and whether it waits for one to appear."""
    return (f"No runs found under {shown(str(root))}: looked below it for run folders (a state.md, vm.log.md or "
            "state.db) in .prose/runs/, .agents/prose/runs/ or runs/, and Reactor state dirs. "
            + ("Waiting for one to appear…" if waiting else "Live updates are off (--no-watch)."))


def _newest_first(run: Run) -> tuple[float, str]:
    """The workspace's order of the run list (``Workspace.sorted_runs``), as a sort key."""
    return (run.started.timestamp() if run.started else 0.0, run.id)
