"""Glyphs and styles for states and statuses, shared by the TUI and headless output.

Every glyph differs by shape, not only colour, so the views read with ``NO_COLOR`` set.
"""

from __future__ import annotations

from .model import RunStatus, StatementState

STATE_GLYPH: dict[StatementState | None, tuple[str, str]] = {
    StatementState.COMPLETE: ("✓", "green"),
    StatementState.EXECUTING: ("▶", "bold yellow"),
    StatementState.RETRYING: ("↻", "bold magenta"),
    StatementState.FAILED: ("✗", "bold red"),
    StatementState.SKIPPED: ("⊘", "dim"),
    StatementState.NEXT: ("›", "cyan"),
    StatementState.PENDING: ("·", "dim"),
    None: (" ", ""),
}

STATUS_BADGE: dict[RunStatus, tuple[str, str]] = {
    RunStatus.RUNNING: ("● RUNNING", "bold black on green"),
    RunStatus.COMPLETED: ("✓ DONE", "green"),
    RunStatus.FAILED: ("✗ FAILED", "bold white on red"),
    RunStatus.INTERRUPTED: ("◌ STOPPED", "bold black on yellow"),
    RunStatus.UNKNOWN: ("? UNKNOWN", "dim"),
}

STATUS_SHORT: dict[RunStatus, tuple[str, str]] = {
    RunStatus.RUNNING: ("●", "green"),
    RunStatus.COMPLETED: ("✓", "green"),
    RunStatus.FAILED: ("✗", "red"),
    RunStatus.INTERRUPTED: ("◌", "yellow"),
    RunStatus.UNKNOWN: ("?", "dim"),
}
