"""Which file holds a run folder's state, for every backend that claims run folders.

A filesystem VM keeps its run state in ``state.md`` (seeds/filesystem.md, ``state.md``;
FORMATS.md generations 1-3), later ones in ``vm.log.md`` (FORMATS.md, generation 4); a
SQLite VM in ``state.db`` (seeds/sqlite.md). A folder with a Markdown state file is the
filesystem backend's even when a ``state.db`` sits beside it, so the SQLite backend asks
here before claiming one.
"""

from __future__ import annotations

from pathlib import Path

STATE_FILES = ("state.md", "vm.log.md")
"""The names of a run folder's Markdown state file, in the order they are looked for."""


def state_file_of(run_dir: Path) -> Path | None:
    """The run's state file: ``state.md``, else ``vm.log.md``, else ``None``."""
    for name in STATE_FILES:
        candidate = run_dir / name
        if candidate.is_file():
            return candidate
    return None
