"""The registry: which backend reads a path, and which one a run came from.

Backends are asked in order; the first that claims a path reads it. Order matters where
two could: a folder with a ``state.md`` is a filesystem run even with a ``state.db``
beside it (seeds/sqlite.md keeps ``state.db`` only for SQLite runs).
"""

from __future__ import annotations

from pathlib import Path

from prose_tui.backends.protocol import RunBackend
from prose_tui.model import Backend, Run

_BACKENDS: list[RunBackend] = []


def register(backend: RunBackend, *, first: bool = False) -> None:
    """Add ``backend`` to the registry (at the front with ``first``)."""
    if any(type(b) is type(backend) for b in _BACKENDS):
        return
    if first:
        _BACKENDS.insert(0, backend)
    else:
        _BACKENDS.append(backend)


def backends() -> list[RunBackend]:
    """Every registered backend, in the order they are asked."""
    _ensure_builtin()
    return list(_BACKENDS)


def backend_for(path: Path) -> RunBackend | None:
    """The backend that claims ``path`` (resolved), or ``None``."""
    for backend in backends():
        try:
            if backend.claims(path):
                return backend
        except OSError:
            continue
    return None


def backend_of(run: Run) -> RunBackend:
    """The backend that read ``run``. Raises ``LookupError`` for an unregistered kind."""
    for backend in backends():
        if backend.kind is run.backend:
            return backend
    raise LookupError(f"no backend registered for {run.backend.value}")


def _ensure_builtin() -> None:
    if _BACKENDS:
        return
    from prose_tui.backends.filesystem.backend import FilesystemBackend
    from prose_tui.backends.narration.backend import NarrationBackend
    from prose_tui.backends.postgres.backend import PostgresBackend
    from prose_tui.backends.reactor.backend import ReactorBackend
    from prose_tui.backends.receipt_ledger.backend import ReceiptLedgerBackend
    from prose_tui.backends.sqlite.backend import SqliteBackend

    # SQLite first: a folder with only state.db; filesystem claims state files and run
    # folders; narration claims text by content, so it is asked last.
    for backend in (SqliteBackend(), ReactorBackend(), ReceiptLedgerBackend(), FilesystemBackend(), NarrationBackend(), PostgresBackend()):
        register(backend)


__all__ = ["Backend", "RunBackend", "backend_for", "backend_of", "backends", "register"]
