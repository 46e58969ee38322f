"""Loading and live updates for the explorer: the first scan, the live pipeline, applying deltas.

A mixin for ``ExplorerScreen``: it expects ``self.workspace``, ``self.live``, ``self.journal``,
``self.current_run``, ``self._stop`` (an ``asyncio.Event``), ``show_run`` and ``activate``.
The scan runs in a thread worker with progress. Live changes come from the process's live
pipeline (``prose_tui.live.pipeline``): watching, routing and applying happen on its worker
thread; this screen receives deltas through a coalescing mailbox (``LiveInbox``: one message per
run while its merged delta waits) and updates the widgets from the delta (the trace repaints the lines it names). The UI thread reads no
disk for a live change and never waits on the workspace lock while the worker reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from prose_tui.live.pipeline import LivePipeline, journal_sink
from prose_tui.live.workspace import Applied, placeholder
from prose_tui.model import Delta, Run
from prose_tui.tui.live_inbox import DeltasWaiting, LiveInbox
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView


class RunsChanged(Message):
    """Runs appeared or disappeared (posted from the live worker)."""

    def __init__(self, applied: Applied) -> None:
        super().__init__()
        self.applied = applied


class LiveProblem(Message):
    """The live worker could not apply a change or journal it; watching goes on."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class _ScreenGone(Exception):
    """The explorer went away while a worker thread was still reading."""


PROGRESS_EVERY = 0.05  # seconds between progress reports and batches of rows while reading
PAGE_ROWS = 500  # older trace lines loaded when the reader reaches the first one (SQLite)


if TYPE_CHECKING:  # what the mixin expects of the screen it is mixed into
    import asyncio

    from textual.screen import Screen

    from prose_tui.history import Journal
    from prose_tui.live.workspace import Workspace
    from prose_tui.tui.navigator import HistoryNavigator

    class _Explorer(Screen):
        workspace: Workspace
        live: bool
        journal: Journal | None
        current_run: Run | None
        initial: Path | None
        @property
        def nav(self) -> HistoryNavigator: ...
        watcher_state: str
        pipeline: LivePipeline | None
        _activated: bool
        _auto_choice: Path | None
        _stop: asyncio.Event

        def show_run(self, run: Run | None, *, changed: set[Path] | None = None) -> None: ...
        def activate(self, index: int, *, focus: bool = True) -> None: ...
        def _show_head(self, run: Run | None) -> None: ...
        def refresh_view(self, *, only_bindings: bool = False) -> None: ...
        def _update_status(self) -> None: ...
else:
    _Explorer = object


class LiveUpdates(_Explorer):
    """First read, live watching and the periodic status tick."""

    @work(thread=True, exclusive=True, group="scan")
    def _scan(self) -> None:
        runs_pane = self.query_one("#runs-pane")
        last = [0.0]

        def progress(done: int, total: int, unit: str) -> None:
            now = time.monotonic()
            if now - last[0] < PROGRESS_EVERY and done < total:
                return  # a blocking hop to the UI per run would cost more than the reading
            last[0] = now
            text = f"Runs · reading {done}/{total}" if unit == "runs" else f"Runs · reading {done * 100 // max(total, 1)}% of {total / 2**20:.0f} MiB"
            self._from_thread(setattr, runs_pane, "border_title", text)

        def partial(run: Run) -> None:
            self._from_thread(self._partial, run)

        read: list[Run] = []

        def on_run(run: Run) -> None:
            read.append(run)
            if len(read) == 1 or time.monotonic() - last[0] >= PROGRESS_EVERY:
                batch = read[:]
                read.clear()
                self._from_thread(self._rows_read, batch)

        try:
            self._read_all(progress, partial, on_run)
        except _ScreenGone:
            return

    def _read_all(self, progress, partial, on_run) -> None:
        try:
            refs = self.workspace.discover()
            # Every run is listed at once, newest first; rows fill in as runs are read.
            self._from_thread(self._listed, [placeholder(r) for r in refs])
            runs = self.workspace.scan(progress, partial=partial, first=self.initial, on_run=on_run, refs=refs)
        except OSError as exc:
            self._from_thread(self.notify, f"cannot read {self.workspace.root}: {exc}", severity="error", markup=False)
            runs = []
        self._from_thread(self._scanned, runs)

    def _from_thread(self, callback, *args, **kwargs) -> None:
        """Run ``callback`` on the UI loop from a worker thread; stop the worker if the screen
        is gone (the user quit while runs were still being read)."""
        worker = get_current_worker()
        if worker.is_cancelled or not self.is_attached:
            raise _ScreenGone
        try:
            self.app.call_from_thread(self._if_attached, callback, *args, **kwargs)
        except RuntimeError as exc:  # the app stopped between the check and the call
            raise _ScreenGone from exc

    def _if_attached(self, callback, *args, **kwargs) -> None:
        if self.is_attached:
            try:
                callback(*args, **kwargs)
            except NoMatches:  # the screen's widgets are already gone: it is closing
                pass

    def _listed(self, runs: list[Run]) -> None:
        if runs:
            self._auto_choice = runs[0].path  # highlighted for the user, not by them
        if runs and not self.query_one(RunList).runs:
            self.query_one(RunList).set_runs(runs, clock=self.workspace.clock)
            self.query_one("#runs-pane").border_title = f"Runs ({len(runs)}) · reading"

    def _rows_read(self, runs: list[Run]) -> None:
        run_list = self.query_one(RunList)
        for run in runs:
            run_list.update_run(run, clock=self.workspace.clock)
            if run.path in self.workspace.detailed and (self.current_run is None or run.path == self.current_run.path):
                self.show_run(run)

    @work(thread=True, exclusive=True, group="detail")
    def open_in_full(self, path: Path) -> None:
        """Read a summarised run in full (bindings, agents, imports) and show it.

        A run opened before the start-up read reached it gets its summary (the trace) first."""
        try:
            self._read_in_full(path)
        except _ScreenGone:
            return

    def _read_in_full(self, path: Path) -> None:
        if path not in self.workspace.runs:
            summary = self.workspace.summary(path)
            if summary is not None:
                self._from_thread(self._detailed, summary)
        run = self.workspace.detail(path)
        if run is not None:
            self._from_thread(self._detailed, run)

    def _detailed(self, run: Run) -> None:
        if self.current_run is not None and self.current_run.path == run.path:
            self.show_run(run)
            self.query_one(RunList).update_run(run, clock=self.workspace.clock)

    def _partial(self, run: Run) -> None:
        """A first screen of a large narration file while the rest is still being read."""
        run_list = self.query_one(RunList)
        if not run_list.runs:
            run_list.set_runs([run], clock=self.workspace.clock)
            self.activate(1)
        self.show_run(run)

    def _scanned(self, runs: list[Run]) -> None:
        run_list = self.query_one(RunList)
        self.query_one("#runs-pane").border_title = f"Runs ({len(runs)})"
        run_list.set_runs(runs, clock=self.workspace.clock)
        if not runs:
            self.query_one("#run-head", Static).update(Text(f"No runs found under {self.workspace.root}. Waiting for one to appear…", "yellow"))
        elif self.initial is not None and self.initial in self.workspace.runs:
            run_list.select_path(self.initial)
        elif run_list.chosen == getattr(self, "_auto_choice", None):
            # Before runs were read their order came from run ids; now it is by what they
            # say. A choice made for the user follows the newest; one they made stays.
            run_list.select_path(runs[0].path)
        if not getattr(self, "_activated", False):
            # One run: watch its trace. Several: start in the run list. A rescan keeps the focus.
            self._activated = True
            self.activate(1 if len(runs) == 1 else 0)
        if self.live:
            self._start_live()
            if self.workspace.sources:
                self._poll_sources()

    def _start_live(self) -> None:
        """Start the live pipeline once (after the first scan)."""
        pipeline = getattr(self, "pipeline", None)
        if pipeline is None:
            # Deltas reach the UI through a coalescing mailbox (at most one message per run
            # waiting; later deltas merge into it), shown paced (prose_tui.tui.live_inbox).
            inbox = self.live_inbox = LiveInbox(self, self._show_delta)
            def problem(text: str) -> None:
                self.post_message(LiveProblem(text))

            def runs(applied: Applied) -> None:
                self.post_message(RunsChanged(applied))

            sinks: list[Callable[[Delta], None]] = [inbox.put]
            if self.journal is not None:
                sinks.append(journal_sink(self.journal, self.workspace.clock, problem))
            pipeline = self.pipeline = LivePipeline(self.workspace, sinks, on_runs=runs, on_error=problem)
            pipeline.start()
        else:
            pipeline.refresh_roots()  # a rescan may have found runs folders
        self._update_watcher_state()

    def _update_watcher_state(self) -> None:
        pipeline = getattr(self, "pipeline", None)
        if pipeline is None:
            return
        roots = pipeline.watching
        if roots:
            self.watcher_state = f"watching {len(roots)} folder{'s' if len(roots) != 1 else ''}"
        elif self.workspace.sources:
            self.watcher_state = "no runs folder on disk"
        else:
            self.watcher_state = "no runs folder yet (waiting for one)"
        self._update_status()

    def on_deltas_waiting(self, message: DeltasWaiting) -> None:
        inbox = getattr(self, "live_inbox", None)
        if inbox is not None:
            inbox.deliver(message.path)

    def _show_delta(self, delta: Delta) -> None:
        try:
            self.apply_delta(delta)
        except NoMatches:
            pass  # the screen is closing
        except Exception as exc:  # one bad delta must not end watching: say so, go on
            self.notify(f"could not show a change: {type(exc).__name__}: {exc}"[:300], severity="warning", markup=False)

    def on_trace_view_at_start(self, event: TraceView.AtStart) -> None:
        """The reader went up to the first trace line: a run showing a window of a longer
        table (SQLite) loads the rows before it (``Workspace.page_back``), off the UI thread."""
        run = self.current_run
        if run is not None and run.trace and run.trace[0].line > 1:
            self._page_back(run.path, run.trace[0].line)

    @work(thread=True, exclusive=True, group="page")
    def _page_back(self, path: Path, first_line: int) -> None:
        try:
            if self.workspace.page_back(path, PAGE_ROWS):
                self._from_thread(self._paged, path, first_line)
        except _ScreenGone:
            return

    def _paged(self, path: Path, first_line: int) -> None:
        """Older lines were put before trace line ``first_line``: redraw, cursor just above it."""
        run = self.current_run
        if run is None or run.path != path:
            return
        trace = self.query_one(TraceView)
        if trace.lines is run.trace:
            trace.lines_changed(None)
        else:
            self.refresh_view()
        index = next((i for i, t in enumerate(trace.lines) if t.line == first_line), 0)
        trace.move_cursor(max(0, index - 1))

    def on_runs_changed(self, message: RunsChanged) -> None:
        applied = message.applied
        run_list = self.query_one(RunList)
        run_list.set_runs(self.workspace.sorted_runs(), clock=self.workspace.clock)
        self.query_one("#runs-pane").border_title = f"Runs ({len(self.workspace.runs)})"
        if self.current_run is not None and self.current_run.path in applied.runs_removed:
            self.notify(f"run {self.current_run.id} was removed from disk", severity="warning", markup=False)
            self.show_run(None)
        elif self.current_run is None and applied.runs_added:
            run_list.select_path(self.workspace.sorted_runs()[0].path)  # selects; the focus stays where it is
        self._update_watcher_state()

    def on_live_problem(self, message: LiveProblem) -> None:
        if message.text.startswith("could not journal"):
            self.journal = None
        self.notify(message.text, severity="warning", markup=False)

    def apply_delta(self, delta: Delta) -> None:
        """Show what one delta changed: the run's row, and the panes when it is the run shown."""
        run = delta.run
        self.query_one(RunList).update_run(run, clock=self.workspace.clock)
        current = self.current_run
        if current is None or run.path != current.path:
            return
        if delta.paths or run is not current:
            self.show_run(run, changed=set(delta.paths))
        else:
            self._show_head(run)  # a status tick: nothing on disk changed
        trace = self.query_one(TraceView)
        if self.nav.live and trace.lines is run.trace and (delta.trace_lines is None or delta.trace_lines):
            trace.lines_changed(delta.trace_lines)  # the same list grew or was re-stated in place
        # The history (timeline) catches up just after: show_run schedules it, and it is
        # extended by the delta's events, not rebuilt (prose_tui.history.stream).

    def apply_changes(self, paths: set[Path]) -> Applied:
        """Apply changed paths now, on the calling thread (tests, a manual refresh)."""
        applied = self.workspace.apply(paths)
        if applied.runs_added or applied.runs_removed:
            self.on_runs_changed(RunsChanged(applied))
        for delta in applied.deltas.values():
            self.apply_delta(delta)
            if self.journal is not None:
                journal_sink(self.journal, self.workspace.clock)(delta)
        return applied

    @work(thread=True, exclusive=True, group="poll")
    def _poll_sources(self) -> None:
        """Runs off disk (a PostgreSQL database) are polled, not watched: every
        ``poll_interval`` seconds (or at once on a LISTEN notification). The source lists new
        and removed runs and polls the runs read in full (the pipeline leaves them to it)."""
        worker = get_current_worker()
        sources = self.workspace.sources
        interval = min(s.poll_interval for s in sources)
        wait = getattr(sources[0], "wait", None) if len(sources) == 1 else None
        shown: list[str] | None = None
        while not worker.is_cancelled and not self._stop.is_set():
            started = time.monotonic()
            applied = self.workspace.poll_sources()
            states = self.workspace.source_states()
            if not applied.empty or states != shown:  # no hop to the UI for a quiet poll
                shown = states
                try:
                    self._from_thread(self._polled, applied)
                except _ScreenGone:
                    return
            pause = max(0.0, interval - (time.monotonic() - started))
            if wait is not None:
                wait(pause)
            else:
                time.sleep(pause)

    def _polled(self, applied: Applied) -> None:
        self._update_status()  # a source's state (connected, reconnecting) may have changed
        if applied.runs_added or applied.runs_removed:
            self.on_runs_changed(RunsChanged(applied))
        for path, change in applied.changed.items():
            self.query_one(RunList).update_run(change.run, clock=self.workspace.clock)
            if self.current_run is not None and path == self.current_run.path:
                self.show_run(change.run, changed=change.paths)

    def _tick(self) -> None:
        if self.live:
            self._update_watcher_state()  # statuses are re-inferred by the live worker
            return
        for run in self.workspace.refresh_statuses():
            self.query_one(RunList).update_run(run, clock=self.workspace.clock)
            if self.current_run is not None and run.path == self.current_run.path:
                self._show_head(run)
        self._update_status()


    def action_rescan(self) -> None:
        self._scan()

    def on_unmount(self) -> None:
        self._stop.set()
        pipeline = getattr(self, "pipeline", None)
        if pipeline is not None:
            pipeline.stop()
            self.pipeline = None
