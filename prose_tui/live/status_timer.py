"""Statuses that change as time passes, re-inferred only for the runs that can change.

Nothing written, a run's status changes only while it is *running*: it turns interrupted
(or, for a Reactor ledger, quiescent) once nothing has changed for ``stale_after``
seconds. Every other status (completed, failed, interrupted, unknown) stays until a file
changes, and a file change re-infers the run's status anyway. So instead of re-inferring
every run on every tick (7.8 % of a core with 5,000 idle runs, issue 35), a tick re-infers:

* the runs read in full (the run on screen: its status reason says an age, "last change
  42 s ago", which moves on every second), and
* the running runs, once the earliest time one of them can turn (``due``: its last change
  plus ``stale_after``), and then again at the next such time.

``due`` is found with one pass over the runs, only when the workspace's runs changed
(``Workspace.runs.version``) or after it fired; an idle tick costs the runs read in full.
Textual-free; called from one thread (the live worker, or the UI's tick without one).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from prose_tui.backends.common.status import as_utc, last_change
from prose_tui.live.workspace import Workspace
from prose_tui.model import Backend, Run, RunStatus

RECHECK = 30.0  # seconds: at most this often for a run its backend keeps running past the usual deadline


class StatusTimer:
    """Re-infers the statuses of ``workspace``'s runs as time passes (see the module)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.due: datetime | None = None  # the workspace clock's time a running run may turn
        self._seen = -1  # the runs' version ``due`` was found for
        self.scans = 0  # passes over every run so far (tests and benchmarks read it)

    def tick(self) -> list[Run]:
        """Re-infer what may have changed by now; returns the runs whose status or reason changed."""
        ws = self.workspace
        now = ws.clock()
        fired = self.due is not None and now >= self.due
        with ws.lock:
            version = ws.runs.version
            paths = set(ws.detailed)
            if fired:
                paths.update(p for p, run in ws.runs.items() if run.status is RunStatus.RUNNING)
        changed = ws.refresh_statuses(paths) if paths else []
        if fired or version != self._seen:
            self._seen = version
            self.due = self._next_due(now)
        return changed

    def _next_due(self, now: datetime) -> datetime | None:
        """The earliest time a running run may turn, by the last change its status reads
        (``common.status.last_change``) plus ``stale_after``; a run still running after
        that (its backend reads another time) again ``RECHECK`` seconds on."""
        ws = self.workspace
        self.scans += 1
        with ws.lock:
            running = [(path, run) for path, run in ws.runs.items() if run.status is RunStatus.RUNNING]
            observed = {path: ws.observed.get(path) for path, _ in running}
        stale = timedelta(seconds=ws.stale_after)
        recheck = now + timedelta(seconds=min(RECHECK, max(1.0, ws.stale_after / 10)))
        due: datetime | None = None
        for path, run in running:
            if run.backend is Backend.FILESYSTEM:
                changed, _ = last_change(run, now, observed[path])
            else:  # (common.status.apply_staleness: a backend that records its own status)
                changed = observed[path] or as_utc(run.updated)
            at = changed + stale if changed is not None else recheck
            if at <= now:
                at = recheck
            if due is None or at < due:
                due = at
        return due
