"""The filesystem backend: run folders of every generation (seeds/filesystem.md; FORMATS.md
generations 1-4 and their dialects; openprose-0.15 state/filesystem.md)."""

from __future__ import annotations

import threading
from collections.abc import Collection
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.filesystem.folder import (
    STATE_FILES,
    folder_read_problem,
    is_run_dir,
    load_run,
    load_run_tail_first,
    load_snapshot_first_screen,
)
from prose_tui.backends.filesystem.eventlog_tail import EventLogTail
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.model import Backend, Binding, Delta, Part, Run, RunFormat

if TYPE_CHECKING:
    from prose_tui.backends.filesystem.history import FilesystemHistory

# Following a run (``.live``) and its history (``.history``) come after its first screen: they
# are imported when first asked for, not with the backend the first screen waits for (issue 33).


class FilesystemBackend(RunBackend):
    """A folder with ``state.md``/``vm.log.md`` (or a program, bindings...), or its state file.

    Per run folder it keeps the event-log tail (byte offset and parser state) of the last
    ``open``/``apply`` and whether the run was opened in full or as a summary; ``apply``
    parses only what was appended (see :mod:`prose_tui.backends.filesystem.live`).
    """

    kind: ClassVar[Backend] = Backend.FILESYSTEM
    name: ClassVar[str] = "filesystem"
    priority: ClassVar[int] = 30  # after SQLite (a folder of state.db alone) and Reactor state dirs
    summary_parts: ClassVar[frozenset[Part] | None] = frozenset({Part.STATE})  # a row reads state.md only

    def __init__(self) -> None:
        # Run folder -> the tails of the (at most three) runs last read there: a summary, a
        # first screen and a full read of the same folder can be live at once. A run's tail
        # is the one whose parser holds the run's trace list.
        self._tails: dict[Path, list[EventLogTail]] = {}
        # Run folder -> the run last opened there as a summary (a run list row: only its
        # state file is followed, and a change reads it as a summary again).
        self._summaries: dict[Path, Run] = {}
        self._lock = threading.Lock()

    def claims(self, path: Path) -> bool:
        if path.is_file():
            return path.name in STATE_FILES
        try:
            path.lstat()
        except (FileNotFoundError, NotADirectoryError):
            return False  # nothing there (a database key is no folder): no run to show
        except OSError:
            pass  # there, but not to be looked at: claimed below and shown as unreadable
        # A folder that cannot be listed may be a run: it is shown as unreadable, not left out.
        try:
            if is_run_dir(path):
                return True
        except OSError:
            pass
        return folder_read_problem(path) is not None

    def is_run_folder(self, folder: Path) -> bool:
        """A folder holding a file a VM writes into a run folder (state, program, bindings, a
        0.11-0.15 manifest or ledger; ``folder.is_run_dir``). Raises ``OSError``."""
        return is_run_dir(folder)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run_dir = path.parent if path.is_file() else path
        tails: dict[Path, EventLogTail] = {}
        summary = summary and not path.is_file()
        if not summary:
            # A run read in full is followed live: its reader imports what a live change needs
            # (before the read: a long log's first screen is followed meanwhile), rather than
            # the live worker as the first change waits (5-10 ms).
            from prose_tui.backends.filesystem import live  # noqa: F401
        run = load_run(run_dir, now=now, stale_after=stale_after, observed=observed, summary=summary, tails=tails)
        self._keep(run_dir, tails.get(run_dir))
        with self._lock:
            if summary:
                self._summaries[run_dir] = run
            else:
                self._summaries.pop(run_dir, None)
        if not summary and run.format is RunFormat.SNAPSHOT:
            from prose_tui.backends.filesystem import snapshot_trace  # noqa: F401  (a rewrite's changed lines)
        return run

    def open_first_screen(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
                          observed: datetime | None = None) -> Run | None:
        """A long event log's header and tail (``folder.load_run_tail_first``), a snapshot
        with many binding files without them (``folder.load_snapshot_first_screen``); see
        ``RunBackend``."""
        if path.is_file():
            return None
        tails: dict[Path, EventLogTail] = {}
        run = load_run_tail_first(path, now=now, stale_after=stale_after, observed=observed, tails=tails)
        if run is not None:
            self._keep(path, tails.get(path))  # followed by ``apply`` until the whole read replaces it
            return run
        return load_snapshot_first_screen(path, now=now, stale_after=stale_after, observed=observed)

    def apply(self, run: Run, paths: Collection[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        """See ``RunBackend.apply`` and :mod:`prose_tui.backends.filesystem.live`. ``run`` is
        changed in place where the change allows (an append); one caller per run at a time."""
        with self._lock:
            tail = next((t for t in self._tails.get(run.path, []) if t.parser.log.trace is run.trace), None)
            summary = self._summaries.get(run.path) is run
        tails = {run.path: tail} if tail is not None else {}
        from prose_tui.backends.filesystem.live import apply_paths

        delta = apply_paths(run, paths, tails, now=now or datetime.now(timezone.utc), stale_after=stale_after,
                            observed=observed, summary=summary)
        if summary and delta.run is not run:
            with self._lock:
                if self._summaries.get(run.path) is run:
                    self._summaries[run.path] = delta.run
        fresh = tails.get(run.path)
        if fresh is not tail:
            self._keep(run.path, fresh, replacing=tail)
        return delta

    def status(self, run: Run, *, now: datetime, stale_after: float = DEFAULT_STALE_AFTER,
               observed: datetime | None = None):
        """``(status, reason)`` of ``run`` now (``common.status.infer_status``), without
        scanning a tailed event log's trace."""
        with self._lock:
            tail = next((t for t in self._tails.get(run.path, []) if t.parser.log.trace is run.trace), None)
        from prose_tui.backends.filesystem.live import run_status

        return run_status(run, tail, now=now, stale_after=stale_after, observed=observed)

    def _keep(self, run_dir: Path, tail: EventLogTail | None, replacing: EventLogTail | None = None) -> None:
        with self._lock:
            kept = [t for t in self._tails.get(run_dir, []) if t is not replacing]
            if tail is not None:
                kept = (kept + [tail])[-3:]
            if kept:
                self._tails[run_dir] = kept
            else:
                self._tails.pop(run_dir, None)

    def forget(self, path: Path) -> None:
        """Drop the reading state kept for the run at ``path`` (it was removed)."""
        with self._lock:
            self._tails.pop(path, None)
            self._summaries.pop(path, None)

    def read_value(self, run: Run, binding: Binding) -> Value:
        version = (binding.fields or {}).get("version")  # 0.15 world-model/{node}/.version
        note = f"published by {binding.service}, content address {version}" if version else ""
        return Value(path=binding.path, offset=binding.value_offset, note=note, warning=binding.warning)

    def history_source(self) -> FilesystemHistory:
        """Event logs cut at a line, snapshot revisions parsed, skill nodes as of a cursor (:mod:`.history`)."""
        global _HISTORY
        if _HISTORY is None:
            from prose_tui.backends.filesystem.history import FilesystemHistory

            _HISTORY = FilesystemHistory()
        return _HISTORY


_HISTORY: FilesystemHistory | None = None  # one for every run: it keeps no state
