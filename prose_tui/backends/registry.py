"""The registry: which backend reads a path, and which one a run came from.

Three kinds of backend are registered, and the order they were registered in never matters:

* the built-ins (:data:`BUILTIN`, one line per format), always present;
* third-party backends, found once through the ``prose_tui.backends`` entry point group
  (``importlib.metadata``, as harlequin finds its adapters): each entry point names a
  :class:`~prose_tui.backends.protocol.RunBackend` subclass, made with no arguments; one that
  cannot be loaded is left out and named in :func:`load_errors`;
* backends given to :func:`register` (tests, an embedding program).

Backends are asked in order of their declared ``priority`` (lower first; then by name) and
the first that claims a path reads it. Priority matters where two could: a folder with a
``state.md`` is a filesystem run even with a ``state.db`` beside it (seeds/sqlite.md keeps
``state.db`` only for SQLite runs), and narration, which claims text by content, is asked
after every backend that claims by name.

A built-in backend's module is imported when it is first needed, not when the registry is
(issue 33: a run's first screen imports the one backend that reads it). :data:`BUILTIN`
declares, per backend, what the registry needs before that: its name, ``priority`` and
``kind``, and which paths it may claim (:class:`Claim`: names, the files a folder of its
holds, a file's first bytes). A path none of a backend's declared claim covers is never
shown to it; a path it may claim imports it and asks its ``claims``. The declaration is a
superset of ``claims``, never narrower (``tests/test_startup_imports.py`` checks both).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib.machinery import PathFinder
from pathlib import Path

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.protocol import NotARunError, RunBackend, Value
from prose_tui.model import Backend, Binding, Delta, Run

ENTRY_POINT_GROUP = "prose_tui.backends"

ANY = "*"
"""In :attr:`Claim.names` or :attr:`Claim.holds`: any file, any folder."""


@dataclass(frozen=True, slots=True)
class Claim:
    """What the registry knows of a built-in backend before importing it: ``name``,
    ``priority`` and ``kind`` (its ``Backend`` value) as its class declares them, and the
    paths it may claim, a superset of its ``claims``:

    * a file named one of ``names`` (``ANY``: any file), or starting with the bytes
      ``magic``; with ``beside``, only in a folder ``holds`` covers;
    * a folder holding one of ``holds`` (paths relative to it; ``ANY``: any path that is not a
      file, a folder that cannot be listed or a path that does not exist included);
    * a path whose first part is ``key`` (a database key such as ``postgres:``).

    ``finds``: it tells run folders apart (overrides ``is_run_folder``); discovery asks it
    about the folders it may claim. ``options``: it adds command-line options or run
    sources (``add_options``, ``sources_for``): the command line imports it."""

    name: str
    priority: int
    kind: str
    names: tuple[str, ...] = ()
    magic: bytes = b""
    beside: bool = False
    holds: tuple[str, ...] = ()
    key: str = ""
    finds: bool = False
    options: bool = False

    def may_claim(self, path: Path) -> bool:
        """Whether ``path`` (resolved) is one this backend may claim: a few stats, at most
        one read of ``len(magic)`` bytes. Never raises: a path that cannot be looked at may
        be claimed (the backend's own ``claims`` then says)."""
        if self.key and path.parts[:1] == (self.key,):
            return True
        try:
            if path.is_file():
                named = ANY in self.names or path.name in self.names or (bool(self.magic) and _starts(path, self.magic))
                return named and (not self.beside or self._holds(path.parent))
            return ANY in self.holds or (path.is_dir() and self._holds(path))
        except OSError:
            return True

    def _holds(self, folder: Path) -> bool:
        return ANY in self.holds or any(os.path.lexists(folder / name) for name in self.holds)


def _starts(path: Path, magic: bytes) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(magic)) == magic


BUILTIN: dict[str, Claim] = {
    # seeds/sqlite.md: a state.db (a folder with no state file), or a database file itself.
    "prose_tui.backends.sqlite.backend:SqliteBackend":
        Claim("sqlite", 10, "sqlite", magic=b"SQLite format 3\x00", holds=("state.db",)),
    # openprose-0.15 reactor.md: a state dir, a project with reactor.yml, a receipts.json.
    "prose_tui.backends.reactor.backend:ReactorBackend":
        Claim("reactor", 20, "reactor", names=("receipts.json",),
              holds=("compile/topology.json", "reactor.yml", "reactor.yaml")),
    # FORMATS.md generation 8: a folder with receipts.jsonl or run.json, or one of its files.
    "prose_tui.backends.receipt_ledger.backend:ReceiptLedgerBackend":
        Claim("receipt-ledger", 25, "receipt-ledger", names=("receipts.jsonl", "run.json", "state.md"), beside=True,
              holds=("receipts.jsonl", "run.json"), finds=True),
    # seeds/filesystem.md: any folder (a run folder, or one that cannot be listed), a state file.
    "prose_tui.backends.filesystem.backend:FilesystemBackend":
        Claim("filesystem", 30, "filesystem", names=("state.md", "vm.log.md"), holds=(ANY,), finds=True),
    # seeds/in-context.md: any file, told by its content.
    "prose_tui.backends.narration.backend:NarrationBackend":
        Claim("narration", 40, "narration", names=(ANY,)),
    # openprose-0.15 state/postgres.md: database keys; --postgres and the URL beside a project.
    "prose_tui.backends.postgres.backend:PostgresBackend":
        Claim("postgres", 50, "postgres", key="postgres:", options=True),
}
"""The built-in backends (``module:Class``) and what each may claim; their ``priority``
orders them, not this table."""
_KEYS = frozenset(claim.key for claim in BUILTIN.values() if claim.key)  # the first part of a database key

_lock = threading.RLock()
_builtin: dict[str, RunBackend] = {}  # the built-ins imported so far, by BUILTIN target
_plugins: list[RunBackend] | None = None
_registered: list[RunBackend] = []
_ordered: list[RunBackend | Claim] | None = None
_errors: list[str] = []


def register(backend: RunBackend) -> None:
    """Add ``backend`` (an instance of a :class:`RunBackend` subclass) to the registry, beside
    the built-ins and the entry points, at the place its ``priority`` gives it. A second
    backend of the same class is ignored. Raises ``TypeError`` for anything else."""
    if not isinstance(backend, RunBackend):
        raise TypeError(f"{backend!r} is not a RunBackend")
    global _ordered
    with _lock:
        if all(type(b) is not type(backend) for b in _registered):
            _registered.append(backend)
        _ordered = None


def unregister(backend: RunBackend) -> None:
    """Take a backend given to :func:`register` out again (the built-ins stay)."""
    global _ordered
    with _lock:
        _registered[:] = [b for b in _registered if b is not backend]
        _ordered = None


def backends() -> list[RunBackend]:
    """Every backend, in the order they are asked: by ``priority``, then ``name``. Imports
    every built-in (the functions below import only those a path or run needs)."""
    return [_loaded(slot) for slot in _slots()]


def backend_for(path: Path) -> RunBackend | None:
    """The backend that claims ``path`` (resolved), or ``None``. A backend whose ``claims``
    raises ``OSError`` is taken not to claim it. A built-in is imported only for a path its
    declared :class:`Claim` covers."""
    for backend in _asked(path):
        try:
            if backend.claims(path):
                return backend
        except OSError:
            continue
    return None


def is_run_folder(folder: Path) -> bool:
    """Whether some backend takes ``folder`` for one of its run folders
    (``RunBackend.is_run_folder``), asked in order; a built-in only when it tells run folders
    apart and may claim ``folder``. Raises ``OSError`` when it cannot be looked into."""
    return any(backend.is_run_folder(folder) for backend in _asked(folder, finding=True))


def option_backends() -> list[RunBackend]:
    """The backends that add command-line options or run sources (``add_options``,
    ``sources_for``), in order: the built-ins that declare so, and every other one."""
    return [_loaded(slot) for slot in _slots() if not isinstance(slot, Claim) or slot.options]


def backend_of(run: Run) -> RunBackend:
    """The backend that read ``run`` (the first of its ``kind``). Raises ``LookupError`` for
    an unregistered kind."""
    for slot in _slots():
        if isinstance(slot, Claim):
            if slot.kind != run.backend.value:
                continue
            slot = _loaded(slot)
        if slot.kind is run.backend:
            return slot
    raise LookupError(f"no backend registered for {run.backend.value}")


class _Unregistered(RunBackend):
    """What a run of an unregistered kind gets: every capability's declared default; it
    claims nothing, opens nothing and changes nothing."""

    name = "unregistered"

    def claims(self, path: Path) -> bool:
        return False

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        raise NotARunError(f"{path}: no backend registered for it")

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        return Delta(run, set(paths))

    def read_value(self, run: Run, binding: Binding) -> Value:
        return Value(text="", warning=f"no backend registered for {run.backend.value} runs")


_DEFAULTS = _Unregistered()


def backend_or_default(run: Run | None) -> RunBackend:
    """The backend of ``run``; for ``None`` (a run not read yet) or an unregistered kind, a
    backend with every capability's declared default (the run folder layout classifies paths,
    the state file is the raw trace, nothing is polled) that opens and changes nothing."""
    if run is None:
        return _DEFAULTS
    try:
        return backend_of(run)
    except LookupError:
        return _DEFAULTS


def open_text(text: str) -> Run | None:
    """The run ``text`` (standard input) holds, read by the first backend that reads runs
    from text (``RunBackend.open_text``), or ``None``."""
    for backend in backends():
        run = backend.open_text(text)
        if run is not None:
            return run
    return None


def load_errors() -> list[str]:
    """One line per ``prose_tui.backends`` entry point that could not be loaded."""
    backends()
    with _lock:
        return list(_errors)


def _instance(cls: object, where: str) -> RunBackend:
    if not (isinstance(cls, type) and issubclass(cls, RunBackend)):
        raise TypeError(f"{where} is not a RunBackend subclass")
    return cls()


_targets = {claim: target for target, claim in BUILTIN.items()}


def _slots() -> list[RunBackend | Claim]:
    """Every backend in the order they are asked: a built-in not imported yet as its
    :class:`Claim`. The entry points are looked up (not the built-ins imported) the first time."""
    global _ordered
    with _lock:
        if _ordered is None:
            every: list[RunBackend | Claim] = list(BUILTIN.values())
            classes = set(BUILTIN)  # a second backend of a class already here is ignored
            for backend in (*_entry_point_backends(), *_registered):
                cls = type(backend)
                if f"{cls.__module__}:{cls.__qualname__}" not in classes:
                    classes.add(f"{cls.__module__}:{cls.__qualname__}")
                    every.append(backend)
            _ordered = sorted(every, key=lambda b: (b.priority, b.name))
        return [_builtin.get(_targets[slot], slot) if isinstance(slot, Claim) else slot for slot in _ordered]


def _loaded(slot: RunBackend | Claim) -> RunBackend:
    """The backend of ``slot``, importing a built-in the first time."""
    if not isinstance(slot, Claim):
        return slot
    target = _targets[slot]
    with _lock:
        backend = _builtin.get(target)
        if backend is None:
            module, _, name = target.partition(":")
            backend = _builtin[target] = _instance(getattr(importlib.import_module(module), name), target)
        return backend


def _asked(path: Path, *, finding: bool = False) -> Iterator[RunBackend]:
    """The backends to ask about ``path``, in order, importing a built-in only when its
    claim covers ``path`` (``finding``: and it tells run folders apart). A path under a
    built-in's key (``postgres:/…``) is that backend's alone."""
    if path.parts and path.parts[0] in _KEYS:
        yield from (_loaded(c) for c in BUILTIN.values() if c.key == path.parts[0] and (c.finds or not finding))
        return
    for slot in _slots():
        if isinstance(slot, Claim):
            if (finding and not slot.finds) or not slot.may_claim(path):
                continue
            slot = _loaded(slot)
        yield slot


def _entry_point_backends() -> list[RunBackend]:
    global _plugins
    if _plugins is None:
        found: list[RunBackend] = []
        if not _may_declare_plugins():
            _plugins = found
            return _plugins
        from importlib.metadata import entry_points

        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            try:
                found.append(_instance(ep.load(), f"entry point {ep.name} ({ep.value})"))
            except Exception as exc:  # a broken plugin must not take the explorer down
                _errors.append(f"backend {ep.name} ({ep.value}) could not be loaded: {type(exc).__name__}: {exc}")
        _plugins = found
    return _plugins


def _may_declare_plugins() -> bool:
    """Whether an installed distribution may declare a ``prose_tui.backends`` entry point:
    one on ``sys.path`` (a ``*.dist-info``, ``*.egg-info`` or ``*.egg``) whose
    ``entry_points.txt`` names the group. A look at folder names and those few files instead
    of ``importlib.metadata``, which imports ``email`` and ``zipfile`` and reads every
    distribution's metadata (measured: a seventh of Textual's own import, for a lookup that
    finds nothing on most machines). Anything else on the path that may hold distributions
    (a zip, another metadata finder on ``sys.meta_path``) says yes: the full lookup decides."""
    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return True
    for entry in sys.path:
        folder = entry or "."
        try:
            with os.scandir(folder) as found:
                names = [e.name for e in found if e.name.endswith((".dist-info", ".egg-info", ".egg"))]
        except NotADirectoryError:
            return True  # a zip file on the path
        except OSError:
            continue  # not there: nothing to find (as importlib.metadata)
        if folder.endswith(".egg"):
            names.append("EGG-INFO")
        for name in names:
            for where in ((folder, name, "entry_points.txt"), (folder, name, "EGG-INFO", "entry_points.txt")):
                try:
                    with open(os.path.join(*where), encoding="utf-8", errors="replace") as fh:
                        if ENTRY_POINT_GROUP in fh.read():
                            return True
                except OSError:
                    continue
    return False


def reload_entry_points() -> None:
    """Look for ``prose_tui.backends`` entry points again (after installing a package)."""
    global _plugins, _ordered
    with _lock:
        _plugins = None
        _ordered = None
        _errors.clear()


__all__ = ["ANY", "BUILTIN", "ENTRY_POINT_GROUP", "Backend", "Claim", "RunBackend", "backend_for", "backend_of",
           "backend_or_default", "backends", "is_run_folder", "load_errors", "open_text", "option_backends", "register",
           "reload_entry_points", "unregister"]
