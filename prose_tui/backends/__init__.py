"""Backends: one subpackage per persisted state format, behind one protocol.

``protocol.RunBackend`` is what each backend implements (claims a path, opens a run, applies
a change and returns a ``model.Delta``, reads a value, gives its events); ``registry`` finds
the backend for a path or a run. ``open_run`` and ``find_runs`` are the entry points the
layers above use; ``common/`` holds helpers shared by backends.
"""

from prose_tui.backends.discover import RunRef, find_runs
from prose_tui.backends.loader import NotARunError, open_run
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.backends.registry import backend_for, backend_of

__all__ = ["NotARunError", "RunBackend", "RunRef", "Value", "backend_for", "backend_of", "find_runs", "open_run"]
