"""Watching runs: watchfiles events -> sets of changed paths, with a short debounce.

watchfiles' default debounce (1.6 s) is far too slow for a live view; changes are grouped
for at most ``debounce_ms`` (default 30 ms), waiting ``step_ms`` (default 10 ms) for more.
Only the ``runs`` folders are watched, recursively. The explorer, ``record`` and Mission
Control share one watcher (:mod:`prose_tui.live.watcher`, which uses these settings and
``interesting``); ``watch_paths`` is a standalone async iterator for scripts. Textual-free.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

DEBOUNCE_MS = 30
STEP_MS = 10
_IGNORED_SUFFIXES = (".swp", ".swx", "~", ".tmp", ".part")


def interesting(path: Path) -> bool:
    """False for editor swap files and a VM's temporary files (its rename will follow)."""
    name = path.name
    return not (name.endswith(_IGNORED_SUFFIXES) or name.startswith(".#") or name.startswith(".tmp"))


async def watch_paths(
    roots: list[Path],
    stop: asyncio.Event | None = None,
    *,
    debounce_ms: int = DEBOUNCE_MS,
    step_ms: int = STEP_MS,
) -> AsyncIterator[set[Path]]:
    """Yield batches of changed absolute paths under ``roots`` until ``stop`` is set.

    Raises whatever watchfiles raises when a root cannot be watched (e.g. it vanished).
    """
    from watchfiles import awatch  # here: the explorer's start does not import watchfiles (issue 33)

    existing = [str(r) for r in roots if r.exists()]
    if not existing:
        return
    async for changes in awatch(*existing, stop_event=stop, debounce=debounce_ms, step=step_ms,
                                recursive=True, yield_on_timeout=False, rust_timeout=1000):
        batch = {Path(p) for _change, p in changes}
        batch = {p for p in batch if interesting(p)}
        if batch:
            yield batch
