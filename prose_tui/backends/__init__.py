"""Backends: one subpackage per persisted state format, behind one protocol.

``protocol.RunBackend`` is the base class each backend subclasses (claims a path, opens a run,
applies a change and returns a ``model.Delta``, reads a value; every other capability is
declared, with a default for a backend that lacks it); ``registry`` finds the backend for a
path or a run (built-ins, then the ``prose_tui.backends`` entry points, by ``priority``).
``open_run`` and ``find_runs`` are the entry points the layers above use; ``common/`` holds
helpers shared by backends. Nothing outside this package imports a backend subpackage.
"""

from prose_tui.backends.discover import RunRef, find_runs
from prose_tui.backends.loader import NotARunError, open_run
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.backends.registry import backend_for, backend_of

__all__ = ["NotARunError", "RunBackend", "RunRef", "Value", "backend_for", "backend_of", "find_runs", "open_run"]
