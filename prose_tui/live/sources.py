"""Runs off disk in the workspace: sources such as a PostgreSQL database (no file events).

Kept apart from the file-system routing of ``workspace.py``: a source lists its runs, reads
one in full, and is polled. Its runs share the workspace's ``runs``/``detailed`` with the
runs on disk. :class:`SourceRuns` is a part of :class:`~prose_tui.live.workspace.Workspace`
(its attributes are the workspace's); a source is a
:class:`~prose_tui.backends.protocol.RunSource`, made by a backend from the command line
(``RunBackend.sources_for``; PostgreSQL's). Textual-free.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from prose_tui.backends.protocol import RunSource
from prose_tui.live.changes import Applied, Part, RunChange
from prose_tui.model import Run


class SourceRuns:
    """The workspace's runs that come from sources: listed with the scan, read in full on
    demand, polled by :meth:`poll_sources`. Locking as in the workspace: ``lock`` guards the
    dictionaries and is never held while a source does I/O."""

    sources: list[RunSource]
    lock: threading.RLock
    runs: dict[Path, Run]
    detailed: set[Path]
    observed: dict[Path, datetime]
    clock: Callable[[], datetime]

    def source_of(self, path: Path) -> RunSource | None:
        """The source (a database) that holds the run at ``path``, or ``None`` for runs on disk."""
        for source in self.sources:
            if source.owns(path):
                return source
        return None

    def first_source_runs(self, limit: int) -> list[Run]:
        """The newest ``limit`` runs of every source (one short query each), known to the
        workspace from now on: the run list shows them before the whole list is read (10,000
        rows of a database take a few hundred ms to read and build). Blocking I/O, never under
        ``lock``; a source that cannot be reached gives none (its state says why)."""
        out: list[Run] = []
        for source in self.sources:
            try:
                runs = source.first_runs(limit)
            except OSError:
                continue
            with self.lock:
                for run in runs:
                    if run.path not in self.detailed:
                        self.runs.setdefault(run.path, run)
            out += runs
        return out

    def _scan_sources(self) -> None:
        """List every source's runs (one query each). They join the list with the scan's
        result, not one by one: a row-by-row update of 10,000 rows costs seconds."""
        for source in self.sources:
            try:
                runs = source.list_runs()
            except OSError:
                continue  # its state (shown in the status line) says why
            with self.lock:
                for run in runs:
                    if run.path not in self.detailed:
                        self.runs[run.path] = run

    def _read_source(self, source: RunSource, path: Path, *, summary: bool,
                     first_screen: Callable[[Run], None] | None = None) -> Run | None:
        if summary:
            return self.runs.get(path)
        try:
            run = source.open(path, first_screen=first_screen) if first_screen is not None else source.open(path)
        except (OSError, KeyError):
            return self.runs.get(path)
        with self.lock:
            self.runs[path] = run
            self.detailed.add(path)
        return run

    def source_states(self) -> list[str]:
        """One line per source for the status bar (connected, reconnecting and why)."""
        return [source.state for source in self.sources]

    def poll_sources(self, on_deltas: Callable[[Applied], None] | None = None) -> Applied:
        """Ask every source what changed: first the runs read in full (the run on screen: a
        committed row must not wait behind the run list), then the list (new, changed and
        removed runs; the source asks the database at most every few seconds). Blocking
        I/O, never under ``lock``: call it from a worker thread every ``poll_interval`` s.
        With ``on_deltas``, what the runs read in full gave is handed to it before the list
        is asked (a list that moved costs a query per changed run), and only the list's
        changes are returned."""
        out = Applied()
        now = self.clock()
        for source in self.sources:
            deltas = source.poll()
            with self.lock:
                for path, delta in deltas.items():
                    self.observed[path] = now
                    self.runs[path] = delta.run
                    # The run's own key says "more than bindings changed"; binding keys name those.
                    paths = set(delta.bindings) | ({path} if not delta.bindings or delta.events or delta.status else set())
                    out.changed[path] = RunChange(delta.run, {Part.STATE}, paths)
                    out.deltas[path] = delta  # what changed, line by line (the trace can repaint just those)
        if on_deltas is not None:
            on_deltas(out)
            out = Applied()
        for source in self.sources:
            try:
                listed = source.poll_runs()
            except OSError:
                continue
            with self.lock:
                for run in listed.added:
                    self.runs[run.path] = run
                    out.runs_added.append(run.path)
                for run in listed.changed:
                    self.runs[run.path] = run
                    if run.path not in out.changed:  # the poll's own change names its paths
                        out.changed[run.path] = RunChange(run, {Part.STATE}, {run.path})
                for path in listed.removed:
                    self.runs.pop(path, None)
                    self.detailed.discard(path)
                    out.changed.pop(path, None)
                    out.deltas.pop(path, None)
                    out.runs_removed.append(path)
        return out
