"""Sources: one reader per state format, each turning files into the run model.

``open_run`` and ``find_runs`` are the one place that decides which reader a path gets.
"""

from prose_tui.backends.discover import RunRef, find_runs
from prose_tui.backends.loader import NotARunError, open_run

__all__ = ["NotARunError", "RunRef", "find_runs", "open_run"]
