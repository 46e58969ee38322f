"""The explorer's live changes: the process's live pipeline, started for the screen.

``LiveFeed`` is a component ``RunFeed`` owns when the screen watches. It starts the live
pipeline (``prose_tui.live.pipeline``: watching, routing and applying on its worker thread)
with two sinks: the coalescing inbox (``LiveInbox``: one ``DeltasWaiting`` message per run
while its merged delta waits, shown paced) and the journal, which records a change once
its frame is out. ``delta`` shows one merged delta: the run's row, and the panes when it is
the run shown (the trace repaints the lines the delta names). Runs appearing or going and
problems reach the screen as messages (``RunsChanged``, ``LiveProblem``) posted from the
worker. The UI thread reads no disk for a live change and never waits on the workspace lock
while the worker reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from textual.css.query import NoMatches
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget

from prose_tui.history import Journal
from prose_tui.live.pipeline import LivePipeline, journal_sink
from prose_tui.live.workspace import Applied, Workspace
from prose_tui.model import Delta
from prose_tui.tui.live_inbox import LiveInbox
from prose_tui.tui.screens.explorer_panes import Panes
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.viewmodel.explorer_model import ExplorerModel


class LiveHost(Protocol):
    """What the live feed uses of the screen: messages to it (the inbox's, ``RunsChanged``,
    ``LiveProblem``), timers, ``notify``, the app's ``after_frame``, the run list and its
    pane, and ``open_run_at`` (a run shown again when its folder returns)."""

    @property
    def run_list(self) -> RunList: ...
    @property
    def runs_pane(self) -> Widget: ...
    @property
    def after_frame(self) -> Callable[[Callable[[], None]], None] | None: ...

    def post_message(self, message: Message) -> bool: ...
    def set_timer(self, delay: float, callback: Any = ...) -> Timer: ...
    def call_after_refresh(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...
    def notify(self, message: str, *, severity: Any = ..., markup: bool = ...) -> None: ...
    def open_run_at(self, path: Path) -> None: ...


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


@dataclass(frozen=True)
class GoneRun:
    """The run shown when its folder went from disk (deleted, or moved away): kept chosen by
    ``path`` and ``id`` so the view returns to it when a run folder of that path (else that
    id) appears again. ``since``: when the explorer saw it go (the workspace's clock, UTC)."""

    path: Path
    id: str
    since: datetime

    def text(self) -> str:
        """What the panes say instead of a run while it is gone."""
        return (f"run {self.id} is gone from disk (since {self.since.astimezone().strftime('%H:%M:%S')}); "
                "it is shown again when its folder returns")

    def returned(self, added: list[Path]) -> Path | None:
        """The run folder among ``added`` that is this run again: its path, else its id."""
        if self.path in added:
            return self.path
        return next((p for p in added if p.name == self.path.name), None)


class LiveFeed:
    """Live changes of ``workspace`` for ``screen`` (a ``LiveHost``), shown on ``panes`` as
    ``model`` says; ``journal``: where they are recorded
    (``None`` without one, or after recording failed). ``watcher_state`` is the status
    line's watcher text; ``pipeline`` and ``inbox`` exist once ``start`` ran."""

    def __init__(self, screen: LiveHost, workspace: Workspace, model: ExplorerModel, panes: Panes, *,
                 journal: Journal | None, initial: Path | None = None) -> None:
        self.screen = screen
        self.workspace = workspace
        self.model = model
        self.panes = panes
        self.journal = journal
        self.initial = initial  # the run the command line named (URL#RUN_ID)
        self.pipeline: LivePipeline | None = None
        self.inbox: LiveInbox | None = None
        self.watcher_state = "starting watcher"
        self.runs_changes = 0  # times the pipeline found runs appearing or going (any thread)
        self.gone: GoneRun | None = None  # the run shown when its folder went, until it returns or another is opened
        self._lock = threading.Lock()
        self._stopped = False

    def watch(self, *, shown: bool = False) -> None:
        """Start the live pipeline once, from any thread. The first read's worker calls it
        as soon as every run is read, before the UI has shown the last rows: a change the VM
        writes the moment the run appears on screen is then already being watched for
        (started from the UI after that frame, the watch began 10-40 ms later and the
        change waited for its resync). ``shown``: the run's first screen is up already (a
        long log's tail), so the watcher opens its doorbell at once. Does nothing once the
        screen stopped watching."""
        with self._lock:
            if self._stopped:
                return
            if self.pipeline is not None:
                if shown:
                    self.pipeline.listen_now()
                return
            screen = self.screen

            # Deltas reach the UI through a coalescing mailbox (at most one message per run
            # waiting; later deltas merge into it), shown paced (prose_tui.tui.live_inbox).
            model = self.model

            def on_screen(path: Path) -> bool:
                current = model.run
                return current is not None and current.path == path

            inbox = LiveInbox(screen, self.delta_applied, on_screen=on_screen,
                              after_frame=screen.after_frame)

            def problem(text: str) -> None:
                screen.post_message(LiveProblem(text))

            def runs(applied: Applied) -> None:
                self.runs_changes += 1
                screen.post_message(RunsChanged(applied))

            sinks: list[Callable[[Delta], None]] = [inbox.put]
            if self.journal is not None:
                def recorded(path: Path) -> None:  # the live worker: the UI's history may be built from it
                    screen.call_after_refresh(self.recorded, path)  # posts a message: thread-safe

                sinks.append(journal_sink(self.journal, self.workspace.clock, problem, after_paint=inbox.wait_painted,
                                          recorded=recorded))
                self.panes.history_on_record = True
            def installed() -> None:  # the watcher thread: the UI says "watching" now
                screen.call_after_refresh(self.update_watcher_state)  # posts a message: thread-safe

            # The status line says "watching" once the watches are in place: a change made
            # before that would not be seen (a test waiting for it changed files unwatched).
            pipeline = LivePipeline(self.workspace, sinks, on_runs=runs, on_error=problem, on_installed=installed)
            self.inbox, self.pipeline = inbox, pipeline
            pipeline.start(bell_now=shown)

    def listen_now(self) -> None:
        """The run is on screen: the watcher may open its doorbell at once (any thread;
        ``LivePipeline.listen_now``). Nothing when no pipeline was started."""
        pipeline = self.pipeline
        if pipeline is not None:
            pipeline.listen_now()

    def wait_listening(self, timeout: float) -> bool:
        """``LivePipeline.wait_listening`` of the pipeline started (any thread); False when
        none is."""
        pipeline = self.pipeline
        return pipeline is not None and pipeline.wait_listening(timeout)

    def start(self) -> None:
        """After a read of the run list (UI thread): watching started (``watch``) or, after
        a rescan, following the runs folders it found; the status line says so."""
        pipeline = self.pipeline
        if pipeline is None:
            self.watch()
        else:
            pipeline.refresh_roots()  # a rescan may have found runs folders
        self.update_watcher_state()

    def update_watcher_state(self) -> None:
        """``watcher_state`` again from the folders followed now; the status line shows it."""
        pipeline = self.pipeline
        if pipeline is None:
            return
        roots = pipeline.watching
        if roots and not pipeline.installed.is_set():
            self.watcher_state = "starting watcher"
        elif roots:
            self.watcher_state = f"watching {len(roots)} folder{'s' if len(roots) != 1 else ''}"
        elif self.workspace.sources:
            self.watcher_state = "no runs folder on disk"
        else:
            self.watcher_state = "no runs folder yet (waiting for one)"
        self.panes.status()

    def deliver(self, path: Path) -> None:
        """A ``DeltasWaiting`` message: the inbox shows the merged delta for ``path`` (paced)."""
        if self.inbox is not None:
            self.inbox.deliver(path)

    def delta_applied(self, delta: Delta) -> None:
        """Show one (merged) delta from the inbox; one bad delta must not end watching."""
        try:
            self.delta(delta)
        except NoMatches:
            pass  # the screen is closing
        except Exception as exc:  # say so, go on
            self.screen.notify(f"could not show a change: {type(exc).__name__}: {exc}"[:300], severity="warning", markup=False)

    def runs_changed(self, applied: Applied) -> None:
        """Runs appeared or disappeared: the run list again. The shown run may be gone: it
        stays chosen (``gone``; the panes say so, no other run is opened for the user) and is
        shown again, followed, when its folder returns (deleted and made again, moved away and
        back)."""
        screen = self.screen
        run_list = screen.run_list
        current = self.model.run
        removed = current is not None and current.path in applied.runs_removed
        if current is not None and removed:
            self.gone = GoneRun(current.path, current.id, self.workspace.clock())
            run_list.hold(current.path)  # before the list loses its row: no other run is chosen
        runs = self.workspace.sorted_runs()
        run_list.set_runs(runs, clock=self.workspace.clock)
        screen.runs_pane.border_title = f"Runs ({len(self.workspace.runs)})"
        back = self.gone.returned(applied.runs_added) if self.gone is not None and not removed else None
        if current is not None and removed:
            screen.notify(f"run {current.id} was removed from disk", severity="warning", markup=False)
            self.panes.show_run(None)
        elif back is not None and back in self.workspace.runs:
            self.gone = None
            run_list.hold(None)
            was = run_list.chosen
            run_list.select_path(back)  # highlighted again; chosen already when at the same path
            if was == back:  # (no RunChosen then): shown and followed as when it was chosen
                screen.open_run_at(back)
        elif current is None and self.gone is None and applied.runs_added and runs:
            # The run the command line named (``URL#RUN_ID``) when it is among them: a
            # database's runs arrive with its first poll, which may come after the first read.
            initial = self.initial
            named = initial if initial is not None and initial in self.workspace.runs else None
            run_list.select_path(named or runs[0].path)  # selects; the focus stays where it is
        self.update_watcher_state()

    def chosen(self, path: Path) -> None:
        """The user opened the run at ``path``: a gone run it is not is no longer waited for."""
        if self.gone is not None and self.gone.path != path:
            self.gone = None

    def recorded(self, path: Path) -> None:
        """The journal recorded a change of the run at ``path`` (after its paint): the run
        shown has its history built from the record now (``Panes.journal_recorded``)."""
        current = self.model.run
        if current is not None and current.path == path:
            self.panes.journal_recorded()

    def problem(self, text: str) -> None:
        """A ``LiveProblem`` message: said once; journaling stops after it failed."""
        if text.startswith("could not journal"):
            self.journal = None
            self.panes.history_on_record = False  # no record will come: the history is built on a timer
        self.screen.notify(text, severity="warning", markup=False)

    def delta(self, delta: Delta) -> None:
        """Show what one delta changed: the run's row, and the panes when it is the run shown
        (the model says what to repaint: ``ExplorerModel.apply``). The history (timeline)
        catches up by the delta's events, not rebuilt (prose_tui.history.stream).

        A change of a run that a full read replaced since (its summary, a first screen),
        reaching the screen after that read, is not shown: the read has it
        (``Workspace._caught_up``), and showing the replaced run emptied its bindings."""
        kept = self.workspace.runs.get(delta.run.path)  # one dict read: the UI thread never waits
        if kept is not None and kept is not delta.run and kept is self.model.run and self.model.is_full_read(kept):
            return
        self.screen.run_list.update_run(delta.run, clock=self.workspace.clock)
        self.panes.show_delta(delta)

    def stop(self) -> None:
        """The screen is going: stop watching (and never start)."""
        with self._lock:
            self._stopped = True
            pipeline, self.pipeline = self.pipeline, None
        if pipeline is not None:
            pipeline.stop()
