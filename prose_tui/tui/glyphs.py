"""Glyphs and styles for states and statuses, shared by the TUI and headless output.

Every glyph differs by shape, not only colour, so the views read with ``NO_COLOR`` set.
"""

from __future__ import annotations

from prose_tui.model import EventKind, RunStatus, StatementState

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

# One vocabulary for statuses everywhere (run list, badges, status line, CLI): the
# ``RunStatus`` values themselves, after the glyph.
STATUS_BADGE: dict[RunStatus, tuple[str, str]] = {
    RunStatus.RUNNING: ("● running", "bold black on green"),
    RunStatus.COMPLETED: ("✓ completed", "green"),
    RunStatus.FAILED: ("✗ failed", "bold white on red"),
    RunStatus.INTERRUPTED: ("◌ interrupted", "bold black on yellow"),
    RunStatus.UNKNOWN: ("? unknown", "dim"),
}

STATUS_SHORT: dict[RunStatus, tuple[str, str]] = {
    RunStatus.RUNNING: ("●", "green"),
    RunStatus.COMPLETED: ("✓", "green"),
    RunStatus.FAILED: ("✗", "red"),
    RunStatus.INTERRUPTED: ("◌", "yellow"),
    RunStatus.UNKNOWN: ("?", "dim"),
}

KIND_GLYPH: dict[EventKind, tuple[str, str]] = {
    EventKind.STATEMENT_STARTED: ("▶", "yellow"),
    EventKind.STATEMENT_COMPLETED: ("✓", "green"),
    EventKind.STATEMENT_FAILED: ("✗", "bold red"),
    EventKind.STATEMENT_SKIPPED: ("⊘", "dim"),
    EventKind.RETRY: ("↻", "bold magenta"),
    EventKind.BINDING_WRITTEN: ("◆", "cyan"),
    EventKind.FRAME_PUSHED: ("⤷", "blue"),
    EventKind.FRAME_POPPED: ("⤶", "blue"),
    EventKind.PARALLEL_STARTED: ("∥", "blue"),
    EventKind.PARALLEL_JOINED: ("⋈", "blue"),
    EventKind.LOOP_ITERATION: ("⟳", "blue"),
    EventKind.AGENT_SEGMENT: ("◇", "cyan"),
    EventKind.IMPORT_ENTERED: ("⇲", "blue"),
    EventKind.IMPORT_LEFT: ("⇱", "blue"),
    EventKind.RUN_ENDED: ("■", "green"),
    EventKind.RUN_ERRORED: ("■", "bold red"),
    EventKind.RUN_RESUMED: ("▷", "yellow"),
    EventKind.NOTE: ("…", "dim"),
    EventKind.RECEIPT_RENDERED: ("◉", "green"),
    EventKind.RECEIPT_SKIPPED: ("∅", "dim"),
    EventKind.RECEIPT_FAILED: ("⨯", "bold red"),
}
