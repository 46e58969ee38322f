"""Helpers for app tests: a fixed clock, an app on a path, waiting for the explorer."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.tui.app import ProseTUI

FIXED_NOW = datetime(2026, 3, 1, 10, 8, 0, tzinfo=timezone.utc)


def make_app(path: Path, *, watch: bool = False, now: datetime = FIXED_NOW, stale_after: float = 1800) -> ProseTUI:
    return ProseTUI(path, watch=watch, clock=lambda: now, stale_after=stale_after)


async def wait_until(pilot, predicate, *, timeout: float = 10.0, what: str = "condition") -> None:
    """Let the app run until ``predicate()`` holds; fail with ``what`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def ready(pilot) -> None:
    """Wait for the first scan to show runs and for the screen to settle."""
    explorer = pilot.app.explorer

    def loaded() -> bool:
        title = explorer.query_one("#runs-pane").border_title if explorer.query("#runs-pane") else None
        return explorer.current_run is not None or bool(title and title.startswith("Runs ("))

    await wait_until(pilot, loaded, what="runs to load")
    await pilot.pause()


def pinned_copy(src: Path, dest: Path) -> Path:
    """Copy a fixture tree with every file time set to ``FIXED_NOW`` minus a minute.

    A clone gives files checkout-order times; pinning them keeps "newest binding" and ages
    the same on every machine, so snapshots are stable.
    """
    shutil.copytree(src, dest)
    stamp = FIXED_NOW.timestamp() - 60
    for path in dest.rglob("*"):
        os.utime(path, (stamp, stamp))
    return dest


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file below ``root`` plus the set of folders, for read-only checks."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out
