"""Finding runs below a path: the one place that decides what is a run and which source reads it.

``prose-tui PATH`` accepts a project folder, a ``.prose`` folder, a ``runs`` folder, one run
folder, or a state file. Runs live in ``.prose/runs/*/`` and ``.agents/prose/runs/*/``
(FORMATS.md, generation 4), possibly nested below the project (``examples/x/.prose/``), and
in the flat layout with ``state.md`` directly in ``runs/`` (FORMATS.md, Dialects).
The walk is bounded in depth and folder count and skips VCS folders, dependencies and
virtualenvs; it never follows symlinks, so loops cannot trap it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from prose_tui.backends.filesystem.folder import STATE_FILES, is_run_dir

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", ".env", "__pycache__", ".tox",
     ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", "dist", "build",
     ".cache", "target", ".next", ".idea", ".vscode"}
)
# Folders of a run that are never runs themselves (the flat layout keeps them in runs/).
RUN_PARTS = frozenset({"bindings", "agents", "imports", "attachments", "workspace", "services", "sources", "receipts"})
MAX_DEPTH = 8
MAX_DIRS = 20_000


@dataclass(frozen=True, slots=True)
class RunRef:
    """Where a run is, before it is read: its folder and the ``runs`` folder that holds it."""

    path: Path
    runs_root: Path

    @property
    def flat(self) -> bool:
        """The flat layout (the run *is* the ``runs`` folder) or a narration file."""
        return self.path == self.runs_root


def _runs_in(runs_root: Path) -> list[RunRef]:
    refs: list[RunRef] = []
    if any((runs_root / name).is_file() for name in STATE_FILES):
        refs.append(RunRef(runs_root, runs_root))
    try:
        children = sorted(p for p in runs_root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return refs
    for child in children:
        if child.name.startswith(".") or child.name in RUN_PARTS:
            continue
        refs.append(RunRef(child, runs_root))
    return refs


def runs_roots(path: Path, *, max_depth: int = MAX_DEPTH, max_dirs: int = MAX_DIRS) -> list[Path]:
    """Every ``runs`` folder of a ``.prose``/``.agents/prose`` folder below ``path``, sorted."""
    path = path.resolve()
    if path.name == "runs":
        return [path]
    if path.name == ".prose" or (path.name == "prose" and path.parent.name == ".agents"):
        return [path / "runs"] if (path / "runs").is_dir() else []
    roots: list[Path] = []
    seen = 0
    base_depth = len(path.parts)
    for dirpath, dirnames, _files in os.walk(path, followlinks=False):
        seen += 1
        current = Path(dirpath)
        depth = len(current.parts) - base_depth
        if current.name == "runs" and (current.parent.name == ".prose" or (current.parent.name == "prose" and current.parent.parent.name == ".agents")):
            roots.append(current)
            dirnames[:] = []
            continue
        keep = []
        for d in dirnames:
            if d in SKIP_DIRS or (d.startswith(".") and d not in (".prose", ".agents")):
                continue
            if current.name == ".prose" and d != "runs":
                continue
            keep.append(d)
        dirnames[:] = sorted(keep) if depth < max_depth and seen < max_dirs else []
    return sorted(roots)


def find_runs(path: Path) -> list[RunRef]:
    """The runs ``path`` points at (see module doc). Raises ``FileNotFoundError`` if it does not exist."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    path = path.resolve()
    if path.is_file():
        if path.name in STATE_FILES or path.name == "state.db":
            folder = path.parent
            return [RunRef(folder, folder if folder.name == "runs" else folder.parent)]
        return [RunRef(path, path)]  # a narration file or transcript is a run of its own
    if path.name != "runs" and path.parent.name == "runs" and is_run_dir(path):
        return [RunRef(path, path.parent)]
    if is_run_dir(path) and not (path / ".prose").exists() and path.name not in (".prose", "runs"):
        return [RunRef(path, path.parent)]
    refs: list[RunRef] = []
    for root in runs_roots(path):
        refs.extend(_runs_in(root))
    return refs


def owning_run(changed: Path, runs: list[Path]) -> Path | None:
    """The run folder a changed path belongs to: the deepest run folder that contains it."""
    best: Path | None = None
    for run in runs:
        if changed == run or run in changed.parents:
            if best is None or len(run.parts) > len(best.parts):
                best = run
    return best
