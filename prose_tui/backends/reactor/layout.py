"""Where a Reactor state dir is (openprose-0.15 reactor.md, Configuration — ``reactor.yml``).

A state dir holds ``receipts.json`` (the ledger) and ``compile/topology.json`` (the compiled
DAG), plus ``world-models/<hex(node)>/published.json`` and ``versions/sha256_*.bin``. A
project folder holding ``reactor.yml`` names its state dir under ``state.dir`` (default
``./.reactor``, relative to the file). Nothing here raises for bad input.
"""

from __future__ import annotations

from pathlib import Path

RECEIPTS = "receipts.json"
TOPOLOGY = ("compile", "topology.json")
LABELS = ("compile", "labels.json")
WORLD_MODELS = "world-models"
CONFIG_NAMES = ("reactor.yml", "reactor.yaml")
DEFAULT_STATE_DIR = ".reactor"
SNIFF_BYTES = 4096


def node_dir_name(node: str) -> str:
    """The folder of ``node``'s world model: the hex of its UTF-8 name (``a.b`` -> ``612e62``)."""
    return node.encode("utf-8").hex()


def node_of_dir(name: str) -> str | None:
    """The node a ``world-models/`` folder belongs to, or ``None`` when the name is not hex UTF-8."""
    try:
        return bytes.fromhex(name).decode("utf-8")
    except ValueError:
        return None


def topology_path(state_dir: Path) -> Path:
    return state_dir.joinpath(*TOPOLOGY)


def is_state_dir(path: Path) -> bool:
    """True for a folder holding ``compile/topology.json`` (a compiled Reactor, with or
    without receipts yet). Never raises."""
    try:
        return path.is_dir() and topology_path(path).is_file()
    except OSError:
        return False


def config_file(folder: Path) -> Path | None:
    """``folder/reactor.yml`` (or ``.yaml``) when it exists."""
    for name in CONFIG_NAMES:
        candidate = folder / name
        try:
            if candidate.is_file():
                return candidate
        except OSError:
            continue
    return None


def configured_state_dir(config: Path) -> tuple[Path, str | None]:
    """The state dir ``config`` (a ``reactor.yml``) names, and a warning when the file could
    not be read or ``state.dir`` is not a string (the default ``.reactor`` is used then)."""
    import yaml  # PyYAML: only for a reactor.yml (start-up, issue 33)

    folder = config.parent
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return folder / DEFAULT_STATE_DIR, f"{config.name} could not be read ({first}); using {DEFAULT_STATE_DIR}/"
    state = data.get("state") if isinstance(data, dict) else None
    raw = state.get("dir") if isinstance(state, dict) else None
    if raw is None:
        return folder / DEFAULT_STATE_DIR, None
    if not isinstance(raw, str) or not raw.strip():
        return folder / DEFAULT_STATE_DIR, f"{config.name}: state.dir is not a path ({raw!r}); using {DEFAULT_STATE_DIR}/"
    target = Path(raw.strip()).expanduser()
    return (target if target.is_absolute() else folder / target), None


def looks_like_ledger(path: Path) -> bool:
    """True when ``path`` is a ``receipts.json`` whose first bytes open a JSON array of
    OpenProse receipts (or that sits in a state dir). Reads at most 4 KB."""
    if path.name != RECEIPTS:
        return False
    if is_state_dir(path.parent):
        return True
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    text = head.lstrip().decode("utf-8", errors="replace")
    return text.startswith("[") and ("openprose.receipt" in text or '"content_hash"' in text or text.rstrip() == "[]")


def state_dir_of(path: Path) -> tuple[Path | None, Path | None, str | None]:
    """``(state dir, reactor.yml, warning)`` for ``path``: a state dir, a project folder with
    ``reactor.yml``, or a ``receipts.json``. The state dir is ``None`` when ``path`` is none
    of these (or its configured state dir does not exist)."""
    try:
        if path.is_file():
            return (path.parent, config_file(path.parent.parent), None) if looks_like_ledger(path) else (None, None, None)
        if not path.is_dir():
            return None, None, None
        if is_state_dir(path):
            return path, config_file(path.parent), None
        config = config_file(path)
        if config is None:
            return None, None, None
        state, warning = configured_state_dir(config)
        if state.is_dir() and (is_state_dir(state) or (state / RECEIPTS).is_file()):
            return state.resolve(), config, warning
    except OSError:
        pass
    return None, None, None
