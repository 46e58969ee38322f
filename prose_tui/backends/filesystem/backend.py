"""The filesystem backend: run folders of every generation (seeds/filesystem.md; FORMATS.md
generations 1-4 and their dialects; openprose-0.15 state/filesystem.md)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.filesystem.folder import STATE_FILES, is_run_dir, load_run
from prose_tui.backends.filesystem.live import apply_paths
from prose_tui.backends.filesystem.tail import EventLogTail
from prose_tui.backends.protocol import Value
from prose_tui.model import Backend, Binding, Delta, Event, Run


class FilesystemBackend:
    """A folder with ``state.md``/``vm.log.md`` (or a program, bindings...), or its state file.

    Per run folder it keeps the event-log tail (byte offset and parser state) of the last
    ``open``/``apply`` and whether the run was opened in full or as a summary; ``apply``
    parses only what was appended (see :mod:`prose_tui.backends.filesystem.live`).
    """

    kind: ClassVar[Backend] = Backend.FILESYSTEM

    def __init__(self) -> None:
        self._tails: dict[Path, EventLogTail] = {}
        self._summary: dict[Path, bool] = {}
        self._lock = threading.Lock()  # guards the two dicts; a run is applied by one worker at a time

    def claims(self, path: Path) -> bool:
        if path.is_file():
            return path.name in STATE_FILES
        return is_run_dir(path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run_dir = path.parent if path.is_file() else path
        summary = summary and not path.is_file()
        tails: dict[Path, EventLogTail] = {}
        run = load_run(run_dir, now=now, stale_after=stale_after, observed=observed, summary=summary, tails=tails)
        with self._lock:
            if summary and self._summary.get(run_dir) is False and run_dir in self._tails:
                return run  # opened in full meanwhile: keep that one's tail
            self._summary[run_dir] = summary
            self._tails.pop(run_dir, None)
            self._tails.update(tails)
        return run

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        with self._lock:
            summary = self._summary.get(run.path, True)
            tail = self._tails.get(run.path)
        tails = {run.path: tail} if tail is not None else {}
        delta = apply_paths(run, paths, tails, now=now or datetime.now(timezone.utc), stale_after=stale_after,
                            observed=observed, summary=summary)
        with self._lock:
            if tails.get(run.path) is not None:
                self._tails[run.path] = tails[run.path]
            else:
                self._tails.pop(run.path, None)
        return delta

    def forget(self, path: Path) -> None:
        """Drop the reading state kept for the run at ``path`` (it was removed or closed)."""
        with self._lock:
            self._tails.pop(path, None)
            self._summary.pop(path, None)

    def read_value(self, run: Run, binding: Binding) -> Value:
        return Value(path=binding.path, offset=binding.value_offset, warning=binding.warning)

    def events(self, run: Run) -> list[Event]:
        return run.events
