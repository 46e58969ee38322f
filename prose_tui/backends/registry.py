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
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Collection
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.protocol import NotARunError, RunBackend, Value
from prose_tui.model import Backend, Binding, Delta, Run

ENTRY_POINT_GROUP = "prose_tui.backends"

BUILTIN = (
    "prose_tui.backends.sqlite.backend:SqliteBackend",
    "prose_tui.backends.reactor.backend:ReactorBackend",
    "prose_tui.backends.receipt_ledger.backend:ReceiptLedgerBackend",
    "prose_tui.backends.filesystem.backend:FilesystemBackend",
    "prose_tui.backends.narration.backend:NarrationBackend",
    "prose_tui.backends.postgres.backend:PostgresBackend",
)
"""The built-in backends (``module:Class``); their ``priority`` orders them, not this list."""

_lock = threading.RLock()
_builtin: list[RunBackend] | None = None
_plugins: list[RunBackend] | None = None
_registered: list[RunBackend] = []
_ordered: list[RunBackend] | None = None
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
    """Every backend, in the order they are asked: by ``priority``, then ``name``."""
    global _ordered
    with _lock:
        if _ordered is None:
            every: list[RunBackend] = []
            for backend in (*_builtins(), *_entry_point_backends(), *_registered):
                if all(type(b) is not type(backend) for b in every):
                    every.append(backend)
            _ordered = sorted(every, key=lambda b: (b.priority, b.name))
        return list(_ordered)


def backend_for(path: Path) -> RunBackend | None:
    """The backend that claims ``path`` (resolved), or ``None``. A backend whose ``claims``
    raises ``OSError`` is taken not to claim it."""
    for backend in backends():
        try:
            if backend.claims(path):
                return backend
        except OSError:
            continue
    return None


def backend_of(run: Run) -> RunBackend:
    """The backend that read ``run`` (the first of its ``kind``). Raises ``LookupError`` for
    an unregistered kind."""
    for backend in backends():
        if backend.kind is run.backend:
            return backend
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


def _load(target: str) -> RunBackend:
    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module), name)
    return _instance(cls, target)


def _instance(cls: object, where: str) -> RunBackend:
    if not (isinstance(cls, type) and issubclass(cls, RunBackend)):
        raise TypeError(f"{where} is not a RunBackend subclass")
    return cls()


def _builtins() -> list[RunBackend]:
    global _builtin
    if _builtin is None:
        _builtin = [_load(target) for target in BUILTIN]
    return _builtin


def _entry_point_backends() -> list[RunBackend]:
    global _plugins
    if _plugins is None:
        found: list[RunBackend] = []
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            try:
                found.append(_instance(ep.load(), f"entry point {ep.name} ({ep.value})"))
            except Exception as exc:  # a broken plugin must not take the explorer down
                _errors.append(f"backend {ep.name} ({ep.value}) could not be loaded: {type(exc).__name__}: {exc}")
        _plugins = found
    return _plugins


def reload_entry_points() -> None:
    """Look for ``prose_tui.backends`` entry points again (after installing a package)."""
    global _plugins, _ordered
    with _lock:
        _plugins = None
        _ordered = None
        _errors.clear()


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "Backend", "RunBackend", "backend_for", "backend_of", "backend_or_default", "backends",
           "load_errors", "open_text", "register", "reload_entry_points", "unregister"]
