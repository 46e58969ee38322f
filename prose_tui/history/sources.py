"""Which backend's history knowledge applies to a run (``RunBackend.history_source``).

:mod:`prose_tui.history` reaches a format only through this: the
:class:`~prose_tui.backends.protocol.HistorySource` of the backend that read a run (or that
claims a state file), ``None`` when the backend declares none.
"""

from __future__ import annotations

from pathlib import Path

from prose_tui.backends.protocol import HistorySource
from prose_tui.backends.registry import backend_for, backend_of
from prose_tui.model import Run

__all__ = ["source_for", "source_of"]


def source_of(run: Run) -> HistorySource | None:
    """The history source of the backend that read ``run``; ``None`` when it declares none
    or its kind is not registered. Never raises."""
    try:
        return backend_of(run).history_source()
    except LookupError:
        return None


def source_for(path: Path) -> HistorySource | None:
    """The history source of the backend that claims ``path`` (a state file or run
    folder); ``None`` when none claims it or it declares none. Asks each backend's
    ``claims`` (a few ``stat`` calls): callers keep the answer per run."""
    backend = backend_for(path)
    return backend.history_source() if backend is not None else None
