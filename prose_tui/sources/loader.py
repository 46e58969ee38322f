"""Which source reads a path: the single dispatch from a path to a ``Run``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..model import Run
from .filesystem import STATE_FILES, is_run_dir, load_run
from .status import DEFAULT_STALE_AFTER


class NotARunError(ValueError):
    """The path exists but holds no run; the message is one line a user can act on."""


def open_run(
    path: Path,
    *,
    now: datetime | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    observed: datetime | None = None,
) -> Run:
    """Read the run at ``path`` (a run folder or its state file).

    Raises ``FileNotFoundError`` when ``path`` does not exist and ``NotARunError`` when it
    is not a run.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    path = path.resolve()
    if path.is_file():
        if path.name in STATE_FILES:
            return load_run(path.parent, now=now, stale_after=stale_after, observed=observed)
        raise NotARunError(f"{path}: not a run state file (expected state.md or vm.log.md)")
    if not is_run_dir(path):
        raise NotARunError(f"{path}: not a run folder (no state.md, vm.log.md, state.db, program or bindings)")
    return load_run(path, now=now, stale_after=stale_after, observed=observed)
