"""Loading and live updates for the explorer: the first scan, the watcher, applying changes.

A mixin for ``ExplorerScreen``: it expects ``self.workspace``, ``self.live``, ``self.journal``,
``self.current_run``, ``self._stop`` (an ``asyncio.Event``), ``show_run`` and ``activate``.
The scan runs in a thread worker with progress; the watcher is an async worker over
``watch.watch_paths``; each batch of changed paths goes through ``Workspace.apply``.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual import work
from textual.widgets import Static
from textual.worker import get_current_worker

from prose_tui.live.watch import watch_paths
from prose_tui.live.workspace import Applied, placeholder
from prose_tui.model import Run, RunFormat
from prose_tui.tui.widgets.run_list import RunList


class _ScreenGone(Exception):
    """The explorer went away while a worker thread was still reading."""


PROGRESS_EVERY = 0.05  # seconds between progress reports and batches of rows while reading


class LiveUpdates:
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
            callback(*args, **kwargs)

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
        # One run: watch its trace. Several: start in the run list.
        self.activate(1 if len(runs) == 1 else 0)
        if self.live:
            self._watch()
            if self.workspace.sources:
                self._poll_sources()

    @work(exclusive=True, group="watch")
    async def _watch(self) -> None:
        roots = self.workspace.watch_roots()
        if not roots:
            self.watcher_state = ("no runs folder on disk" if self.workspace.sources
                                  else "no runs folder yet (rescanning every 5 s)")
            self._update_status()
            return
        self.watcher_state = f"watching {len(roots)} folder{'s' if len(roots) != 1 else ''}"
        self._update_status()
        try:
            async for batch in watch_paths(roots, self._stop):
                try:
                    self.apply_changes(batch)
                except Exception as exc:  # one bad batch must not end watching: say so, go on
                    self.notify(f"could not apply a change: {type(exc).__name__}: {exc}"[:300],
                                severity="warning", markup=False)
        except Exception as exc:  # a vanished root, inotify limits: say so, keep the last state
            self.watcher_state = f"watch stopped: {exc}"
            self._update_status()

    @work(thread=True, exclusive=True, group="poll")
    def _poll_sources(self) -> None:
        """Runs off disk (a PostgreSQL database) are polled, not watched: every
        ``poll_interval`` seconds (or at once on a LISTEN notification)."""
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

    def apply_changes(self, paths: set[Path]) -> Applied:
        """Route changed paths through the workspace and refresh what they touched."""
        return self._show_applied(self.workspace.apply(paths))

    def _polled(self, applied: Applied) -> None:
        self._update_status()  # a source's state (connected, reconnecting) may have changed
        self._show_applied(applied)

    def _show_applied(self, applied: Applied) -> Applied:
        if applied.empty:
            return applied
        run_list = self.query_one(RunList)
        if applied.runs_added or applied.runs_removed:
            run_list.set_runs(self.workspace.sorted_runs(), clock=self.workspace.clock)
            self.query_one("#runs-pane").border_title = f"Runs ({len(self.workspace.runs)})"
        for path, change in applied.changed.items():
            run_list.update_run(change.run, clock=self.workspace.clock)
            if self.current_run is not None and path == self.current_run.path:
                self.show_run(change.run, changed=change.paths)
            # After the screen is updated: the history that reads the journal catches up later.
            self._journal(change.run, change.paths)
        if self.current_run is not None and self.current_run.path in applied.runs_removed:
            self.notify(f"run {self.current_run.id} was removed from disk", severity="warning", markup=False)
            self.show_run(None)
        return applied

    def _journal(self, run: Run, paths: set[Path]) -> None:
        """Journal what a watched snapshot run wrote (its history for later replay)."""
        if self.journal is None or run.format is not RunFormat.SNAPSHOT or not run.path.is_dir():
            return
        try:
            self.journal.record(run.path, paths, self.workspace.clock())
        except (OSError, ValueError, RecursionError) as exc:
            # The journal is a convenience: losing it must not stop the live view.
            self.notify(f"could not journal {run.id} (history replay is off): {type(exc).__name__}", severity="warning",
                        markup=False)
            self.journal = None

    def _tick(self) -> None:
        if self.live and not self.workspace.watch_roots() and not self.workspace.sources:
            self.action_rescan()
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
