"""Which source reads a path: the single dispatch from a path to a ``Run``.

A folder with ``state.md``/``vm.log.md`` is a filesystem run (seeds/filesystem.md), one with
only ``state.db`` an SQLite run (seeds/sqlite.md); a file is a state file of either, or a
narration text or transcript recognised by content (seeds/in-context.md).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness
from prose_tui.backends.filesystem.folder import (
    STATE_FILES,
    is_run_dir,
    load_run,
    state_file_of,
)
from prose_tui.backends.narration.parse import load_narration, sniff_narration
from prose_tui.backends.sqlite.connect import is_sqlite_file
from prose_tui.backends.sqlite.run import is_sqlite_run, load_sqlite_run
from prose_tui.backends.sqlite.tables import list_extension_tables, metrics_summary
from prose_tui.model import Run, Section


class NotARunError(ValueError):
    """The path exists but holds no run; the message is one line a user can act on."""


def run_path_of(path: Path) -> Path:
    """The path that identifies the run ``path`` belongs to: its folder, or a narration file."""
    if path.is_file() and (path.name in STATE_FILES or is_sqlite_file(path)):
        return path.parent
    return path


def open_run(
    path: Path,
    *,
    now: datetime | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    observed: datetime | None = None,
    summary: bool = False,
) -> Run:
    """Read the run at ``path`` (a run folder, its state file, a state.db or a narration file).

    ``summary`` asks a filesystem run for its state file only (``load_run(summary=True)``);
    other backends read their run whole (SQLite pages its rows itself).

    Raises ``FileNotFoundError`` when ``path`` does not exist and ``NotARunError`` when it
    is not a run.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    path = path.resolve()
    if path.is_file():
        if path.name in STATE_FILES:
            return load_run(path.parent, now=now, stale_after=stale_after, observed=observed)
        if is_sqlite_file(path):
            return _sqlite(path.parent, now, stale_after, observed)
        if sniff_narration(path):
            return _stale_checked(load_narration(path), now, stale_after, observed)
        raise NotARunError(f"{path}: not a run state file, state.db or OpenProse narration")
    if state_file_of(path) is None and is_sqlite_run(path):
        return _sqlite(path, now, stale_after, observed)
    if not is_run_dir(path):
        raise NotARunError(f"{path}: not a run folder (no state.md, vm.log.md, state.db, program or bindings)")
    return load_run(path, now=now, stale_after=stale_after, observed=observed, summary=summary)


def _stale_checked(run: Run, now: datetime | None, stale_after: float, observed: datetime | None) -> Run:
    apply_staleness(run, now=now, stale_after=stale_after, observed=observed)
    return run


def _sqlite(run_dir: Path, now: datetime | None, stale_after: float, observed: datetime | None) -> Run:
    """An SQLite run with its x_* tables listed and token/cost metrics summed (seeds/sqlite.md,
    Flexibility Encouragement)."""
    run = _stale_checked(load_sqlite_run(run_dir, now=now), now, stale_after, observed)
    run.tables = list_extension_tables(run_dir)
    summary = metrics_summary(run_dir)
    run.metrics = dict(summary["run"])
    rows = [(eid, figures) for eid, figures in summary["by_execution"].items() if eid is not None]
    if rows:
        names = sorted({name for _, figures in rows for name in figures})
        lines = ["| execution | statement | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
        for eid, figures in sorted(rows):
            statement = summary["statements"].get(eid, "").replace("|", "\\|").replace("\n", " ")[:60]
            cells = " | ".join(f"{figures.get(n, 0):g}" for n in names)
            lines.append(f"| {eid} | {statement} | {cells} |")
        totals = ", ".join(f"{k} {v:g}" for k, v in sorted(run.metrics.items()))
        run.sections.append(Section("Metrics", f"Run totals: {totals}\n\n" + "\n".join(lines)))
    return run
