"""Finding runs below a path: the one place that decides what is a run and which source reads it.

``prose-tui PATH`` accepts a project folder, a ``.prose`` folder, a ``runs`` folder, one run
folder, a Reactor state dir, or a state file. Where runs live:

* ``.prose/runs/*/`` (FORMATS.md generations 1-4), possibly nested below the project
  (``examples/x/.prose/``), and the flat layout with ``state.md`` directly in ``runs/``;
* the OpenProse root of today's skill (openprose-0.15 ``state/filesystem.md``): ``runs/*/``
  at a native repository's root, ``.agents/prose/runs/*/`` in an attached repository and
  ``~/.agents/prose/runs/*/`` for user scope. A ``runs`` folder outside ``.prose`` is a common
  name (ML experiments, CI), so its children count only when they are run folders
  (:func:`is_native_run`: a run file, and a run id or a file only OpenProse writes);
* user scope only when asked: ``find_runs(path, user=True)``, or process-wide through
  :func:`include_user_scope` (the CLI's ``--user``);
* Reactor state dirs (openprose-0.15 ``reactor.md``): a folder with ``receipts.json`` and
  ``compile/topology.json`` (``.reactor/`` by default), or the ``state.dir`` a
  ``reactor.yml`` names. One state dir is one run (``RunRef.kind == "state-dir"``), read by the
  Reactor backend;
* the 0.11-0.14 manifests (``manifest.run.md``, ``forme.manifest.json``, judge-era
  ``state/responsibilities/``) mark run folders; which files make a run folder is each
  backend's to say (``RunBackend.is_run_folder``, asked through :func:`is_run_folder`).

The walk is bounded in depth and folder count and skips VCS folders, dependencies and
virtualenvs; it never follows symlinks, so loops cannot trap it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from prose_tui.backends import registry

STATE_FILES = ("state.md", "vm.log.md")  # a run's state files (seeds/filesystem.md): the flat layout has them in runs/

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", ".env", "__pycache__", ".tox",
     ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", "dist", "build",
     ".cache", "target", ".next", ".idea", ".vscode", "deps"}
)
# Folders of a run that are never runs themselves (the flat layout keeps them in runs/).
RUN_PARTS = frozenset({"bindings", "agents", "imports", "attachments", "workspace", "services", "sources",
                       "receipts", "world-model"})
MAX_DEPTH = 8
MAX_DIRS = 20_000
RUN = "run"
STATE_DIR = "state-dir"
# openprose-0.15 state/filesystem.md, Run ID Format: {YYYYMMDD}-{HHMMSS}-{random6}; real runs
# also end in a slug ("-1-kill-gate") or nothing ("20260213-064959-").
RUN_ID_RE = re.compile(r"^\d{8}-\d{6}(?:-[\w.-]*)?$")
# Files only an OpenProse VM writes into a run folder: enough without a run-id name.
OPENPROSE_FILES = ("vm.log.md", "compiled-intent.json", "manifest.run.md", "forme.manifest.json")
# FORMATS.md generation 8: the statement-receipt ledger marks a native run folder, and opens as one
LEDGER_FILES = ("receipts.jsonl",)
REACTOR_DEFAULT_DIR = ".reactor"
REACTOR_CONFIGS = ("reactor.yml", "reactor.yaml")
_WALK_DOT_DIRS = (".prose", ".agents", ".libretto", REACTOR_DEFAULT_DIR)  # .libretto: FORMATS.md generation 8

_user_scope = False


def include_user_scope(enabled: bool = True) -> None:
    """Make :func:`find_runs` add ``~/.agents/prose/runs/`` when not told otherwise (``--user``)."""
    global _user_scope
    _user_scope = enabled


def user_runs_root(home: Path | None = None) -> Path:
    """``~/.agents/prose/runs`` (``home`` overrides ``~``; else ``$HOME``)."""
    return (home if home is not None else Path(os.path.expanduser("~"))) / ".agents" / "prose" / "runs"


@dataclass(frozen=True, slots=True)
class RunRef:
    """Where a run is, before it is read: its folder and the folder that holds it.

    ``kind`` is ``"run"`` for a run folder (or a state or narration file) and
    ``"state-dir"`` for a Reactor state dir, whose ``runs_root`` is the state dir itself
    (it is watched whole) but which is not the flat layout.
    """

    path: Path
    runs_root: Path
    kind: str = RUN

    @property
    def flat(self) -> bool:
        """The flat layout (the run *is* the ``runs`` folder) or a narration file."""
        return self.path == self.runs_root and self.kind != STATE_DIR


def is_prose_runs(folder: Path) -> bool:
    """``.prose/runs``, ``.agents/prose/runs`` or ``.libretto/runs`` (the receipt-ledger fork,
    FORMATS.md generation 8): every child is taken as a run."""
    parent = folder.parent
    return folder.name == "runs" and (parent.name in (".prose", ".libretto")
                                      or (parent.name == "prose" and parent.parent.name == ".agents"))


def is_run_folder(folder: Path) -> bool:
    """Whether some backend takes ``folder`` for one of its run folders
    (``RunBackend.is_run_folder``). Raises ``OSError`` when it cannot be looked into."""
    return registry.is_run_folder(folder)


def is_native_run(folder: Path) -> bool:
    """A run folder in a native ``runs/``: a run file, and a run-id name or an OpenProse-only file.
    A folder that cannot be looked into (permission denied) counts when named by a run id: it
    is listed, as unreadable, rather than left out."""
    try:
        if not is_run_folder(folder):
            return False
        return RUN_ID_RE.match(folder.name) is not None or any(
            (folder / name).exists() for name in (*OPENPROSE_FILES, *LEDGER_FILES))
    except OSError:
        return RUN_ID_RE.match(folder.name) is not None


def is_reactor_state_dir(folder: Path) -> bool:
    """``receipts.json`` and ``compile/topology.json`` (openprose-0.15 reactor.md)."""
    return (folder / "receipts.json").is_file() and (folder / "compile" / "topology.json").is_file()


def reactor_state_dir(config: Path) -> Path | None:
    """The state dir a ``reactor.yml`` names (``state.dir``, default ``./.reactor``), relative
    to the file's folder; ``None`` when it does not exist or the file is not YAML."""
    import yaml

    try:
        with open(config, "rb") as fh:
            data = yaml.safe_load(fh.read(256 * 1024))
    except (OSError, yaml.YAMLError, ValueError):
        return None
    state = data.get("state") if isinstance(data, dict) else None
    named = state.get("dir") if isinstance(state, dict) else None
    target = Path(os.path.expanduser(str(named))) if named else Path(REACTOR_DEFAULT_DIR)
    folder = target if target.is_absolute() else config.parent / target
    return folder if folder.is_dir() else None


@dataclass(slots=True)
class _Found:
    roots: list[Path] = field(default_factory=list)  # runs folders
    state_dirs: list[Path] = field(default_factory=list)


NATIVE_SNIFF = 200  # children of a runs/ folder looked at to decide whether it holds runs


def _has_native_runs(folder: Path) -> bool:
    """Whether a ``runs`` folder outside ``.prose`` holds run folders (the first
    :data:`NATIVE_SNIFF` sub-folders decide, so a huge ML ``runs/`` costs little)."""
    try:
        children = [p for _, p in zip(range(NATIVE_SNIFF * 4), folder.iterdir())]
    except OSError:
        return False
    folders = [p for p in children if not p.is_symlink() and p.is_dir()][:NATIVE_SNIFF]
    return any(is_native_run(c) for c in folders)


def _walk(path: Path, max_depth: int, max_dirs: int) -> _Found:
    found = _Found()
    seen = 0
    base_depth = len(path.parts)
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        seen += 1
        current = Path(dirpath)
        depth = len(current.parts) - base_depth
        if current.name == "runs" and (is_prose_runs(current) or _has_native_runs(current)):
            found.roots.append(current)
            dirnames[:] = []
            continue
        if is_reactor_state_dir(current):
            found.state_dirs.append(current)
            dirnames[:] = []
            continue
        for config in REACTOR_CONFIGS:
            if config in filenames and (named := reactor_state_dir(current / config)) is not None:
                found.state_dirs.append(named)
        keep = []
        for d in dirnames:
            if d in SKIP_DIRS or (d.startswith(".") and d not in _WALK_DOT_DIRS):
                continue
            if current.name == ".prose" and d != "runs":
                continue
            keep.append(d)
        dirnames[:] = sorted(keep) if depth < max_depth and seen < max_dirs else []
    found.roots.sort()
    return found


def runs_roots(path: Path, *, max_depth: int = MAX_DEPTH, max_dirs: int = MAX_DIRS) -> list[Path]:
    """Every ``runs`` folder below ``path`` that holds runs (``.prose/runs``,
    ``.agents/prose/runs``, a native ``runs/`` with run folders), sorted."""
    path = path.resolve()
    if path.name == "runs":
        return [path]
    if path.name == ".prose" or (path.name == "prose" and path.parent.name == ".agents"):
        return [path / "runs"] if (path / "runs").is_dir() else []
    return _walk(path, max_depth, max_dirs).roots


def _runs_in(runs_root: Path) -> list[RunRef]:
    refs: list[RunRef] = []
    prose = is_prose_runs(runs_root)
    if prose and any((runs_root / name).is_file() for name in STATE_FILES):
        refs.append(RunRef(runs_root, runs_root))
    try:
        children = sorted(p for p in runs_root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return refs
    for child in children:
        if child.name.startswith(".") or child.name in RUN_PARTS:
            continue
        if prose or is_native_run(child):
            refs.append(RunRef(child, runs_root))
    return refs


def _user_refs(home: Path | None) -> list[RunRef]:
    root = user_runs_root(home)
    return _runs_in(root) if root.is_dir() else []


def find_runs(path: Path, *, user: bool | None = None, home: Path | None = None) -> list[RunRef]:
    """The runs ``path`` points at (see module doc); with ``user`` (default: as set by
    :func:`include_user_scope`) also those in ``~/.agents/prose/runs`` (``home`` overrides
    ``~``). Raises ``FileNotFoundError`` if ``path`` does not exist."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    refs = _find(path.resolve())
    if _user_scope if user is None else user:
        known = {ref.path for ref in refs}
        refs += [ref for ref in _user_refs(home) if ref.path.resolve() not in known]
    return refs


def _find(path: Path) -> list[RunRef]:
    if path.is_file():
        if path.name in STATE_FILES or path.name == "state.db" or path.name in LEDGER_FILES:
            folder = path.parent
            return [RunRef(folder, folder if folder.name == "runs" else folder.parent)]
        if path.name in REACTOR_CONFIGS and (named := reactor_state_dir(path)) is not None:
            return [RunRef(named.resolve(), named.resolve(), STATE_DIR)]
        return [RunRef(path, path)]  # a narration file or transcript is a run of its own
    if is_reactor_state_dir(path):
        return [RunRef(path, path, STATE_DIR)]
    if path.name != "runs" and path.parent.name == "runs" and is_run_folder(path):
        return [RunRef(path, path.parent)]
    if (is_run_folder(path) and not (path / ".prose").exists() and path.name not in (".prose", "runs")
            and not ((path / "runs").is_dir() and _has_native_runs(path / "runs"))):
        return [RunRef(path, path.parent)]
    if path.name == "runs" or path.name == ".prose" or (path.name == "prose" and path.parent.name == ".agents"):
        roots, state_dirs = runs_roots(path), []
    else:
        found = _walk(path, MAX_DEPTH, MAX_DIRS)
        roots, state_dirs = found.roots, found.state_dirs
    refs: list[RunRef] = []
    for root in roots:
        refs.extend(_runs_in(root))
    seen: set[Path] = set()
    for state_dir in state_dirs:
        resolved = state_dir.resolve()
        if resolved not in seen:
            seen.add(resolved)
            refs.append(RunRef(resolved, resolved, STATE_DIR))
    return refs


def in_flat_run(name: str) -> bool:
    """Whether an entry ``name`` of a runs folder that is itself a run (the flat layout) is
    a part of that run: its state file, ``state.db*``, a program, or a run part folder
    (``bindings``, ``agents``…). Anything else there (another run's folder) is not."""
    return name in STATE_FILES or name in RUN_PARTS or name.endswith(".prose") or name.startswith("state.db")


def owning_run(changed: Path, runs: list[Path]) -> Path | None:
    """The run folder a changed path belongs to: the deepest run folder that contains it."""
    best: Path | None = None
    for run in runs:
        if changed == run or run in changed.parents:
            if best is None or len(run.parts) > len(best.parts):
                best = run
    return best
