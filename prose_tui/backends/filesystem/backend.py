"""The filesystem backend: run folders of every generation (seeds/filesystem.md; FORMATS.md
generations 1-4 and their dialects; openprose-0.15 state/filesystem.md)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.filesystem.folder import STATE_FILES, is_run_dir, load_run
from prose_tui.backends.protocol import Value
from prose_tui.model import Backend, Binding, Delta, Event, Run


class FilesystemBackend:
    """A folder with ``state.md``/``vm.log.md`` (or a program, bindings...), or its state file."""

    kind: ClassVar[Backend] = Backend.FILESYSTEM

    def claims(self, path: Path) -> bool:
        if path.is_file():
            return path.name in STATE_FILES
        return is_run_dir(path)

    def open(self, path: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
             observed: datetime | None = None, summary: bool = False) -> Run:
        run_dir = path.parent if path.is_file() else path
        return load_run(run_dir, now=now, stale_after=stale_after, observed=observed,
                        summary=summary and not path.is_file())

    def apply(self, run: Run, paths: set[Path], *, now: datetime | None = None,
              stale_after: float = DEFAULT_STALE_AFTER, observed: datetime | None = None) -> Delta:
        fresh = self.open(run.path, now=now, stale_after=stale_after, observed=observed)
        return Delta.whole(fresh, paths)

    def read_value(self, run: Run, binding: Binding) -> Value:
        version = (binding.fields or {}).get("version")  # 0.15 world-model/{node}/.version
        note = f"published by {binding.service}, content address {version}" if version else ""
        return Value(path=binding.path, offset=binding.value_offset, note=note, warning=binding.warning)

    def events(self, run: Run) -> list[Event]:
        return run.events
