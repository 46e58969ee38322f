"""Which backend reads a path: ``open_run`` asks the registry (:mod:`.registry`), which asks
each backend whether it claims the path (``RunBackend.claims``), in priority order.

A folder with ``state.md``/``vm.log.md`` is a filesystem run (seeds/filesystem.md), one with
only ``state.db`` an SQLite run (seeds/sqlite.md); a file is a state file of either, or a
narration text or transcript recognised by content (seeds/in-context.md); a Reactor state dir
(openprose-0.15 reactor.md); or a format a third-party backend claims.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.protocol import NotARunError
from prose_tui.backends.registry import backend_for
from prose_tui.model import Run

__all__ = ["NotARunError", "open_run", "unclaimed"]


def unclaimed(path: Path) -> NotARunError:
    """The error for ``path`` (resolved) that no backend claims: one line naming it and what a
    run is (the message ``show`` and the explorer print before exiting 1)."""
    if path.is_file():
        return NotARunError(f"{path}: not a run state file, state.db or OpenProse narration")
    return NotARunError(f"{path}: not a run folder (no state.md, vm.log.md, state.db, program or bindings)")


def open_run(
    path: Path,
    *,
    now: datetime | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    observed: datetime | None = None,
    summary: bool = False,
) -> Run:
    """Read the run at ``path`` (a run folder, its state file, a state.db or a narration file)
    with the backend that claims it.

    ``summary`` asks for what a run list row needs (a filesystem run reads its state file only);
    other backends may read their run whole.

    Raises ``FileNotFoundError`` when ``path`` does not exist and ``NotARunError`` when no
    backend claims it.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    path = path.resolve()
    backend = backend_for(path)
    if backend is None:
        raise unclaimed(path)
    return backend.open(path, now=now, stale_after=stale_after, observed=observed, summary=summary)
