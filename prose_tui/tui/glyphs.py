"""Glyphs and styles for states and statuses, shared by the TUI and headless output.

Every glyph differs by shape, not only colour, so the views read with ``NO_COLOR`` set.

Colours are written as theme roles (``$success``, ``$warning``, ``$error``, ``$accent``,
``$primary``, ``$secondary``) and resolved to plain colour names by default (headless output,
a terminal's own palette). The TUI calls ``apply_theme`` with its Textual theme's colours,
which re-resolves every table in place, so the glyphs follow the theme.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from prose_tui.model import EventKind, RunStatus, StatementState

ROLES = ("success", "warning", "error", "accent", "primary", "secondary")
DEFAULT_COLORS: dict[str, str] = {"success": "green", "warning": "yellow", "error": "red",
                                  "accent": "cyan", "primary": "blue", "secondary": "magenta"}

STATE_GLYPH: dict[StatementState | None, tuple[str, str]] = {
    StatementState.COMPLETE: ("✓", "$success"),
    StatementState.EXECUTING: ("▶", "bold $warning"),
    StatementState.RETRYING: ("↻", "bold $secondary"),
    StatementState.FAILED: ("✗", "bold $error"),
    StatementState.SKIPPED: ("⊘", "dim"),
    StatementState.NEXT: ("›", "$accent"),
    StatementState.PENDING: ("·", "dim"),
    None: (" ", ""),
}

# One vocabulary for statuses everywhere (run list, badges, status line, CLI): the
# ``RunStatus`` values themselves, after the glyph.
STATUS_BADGE: dict[RunStatus, tuple[str, str]] = {
    RunStatus.RUNNING: ("● running", "bold black on $success"),
    RunStatus.COMPLETED: ("✓ completed", "$success"),
    RunStatus.FAILED: ("✗ failed", "bold white on $error"),
    RunStatus.INTERRUPTED: ("◌ interrupted", "bold black on $warning"),
    RunStatus.UNKNOWN: ("? unknown", "dim"),
    RunStatus.UNREADABLE: ("! unreadable", "bold white on $error"),
}

STATUS_SHORT: dict[RunStatus, tuple[str, str]] = {
    RunStatus.RUNNING: ("●", "$success"),
    RunStatus.COMPLETED: ("✓", "$success"),
    RunStatus.FAILED: ("✗", "$error"),
    RunStatus.INTERRUPTED: ("◌", "$warning"),
    RunStatus.UNKNOWN: ("?", "dim"),
    RunStatus.UNREADABLE: ("!", "$error"),
}

KIND_GLYPH: dict[EventKind, tuple[str, str]] = {
    EventKind.STATEMENT_STARTED: ("▶", "$warning"),
    EventKind.STATEMENT_COMPLETED: ("✓", "$success"),
    EventKind.STATEMENT_FAILED: ("✗", "bold $error"),
    EventKind.STATEMENT_SKIPPED: ("⊘", "dim"),
    EventKind.RETRY: ("↻", "bold $secondary"),
    EventKind.BINDING_WRITTEN: ("◆", "$accent"),
    EventKind.FRAME_PUSHED: ("⤷", "$primary"),
    EventKind.FRAME_POPPED: ("⤶", "$primary"),
    EventKind.PARALLEL_STARTED: ("∥", "$primary"),
    EventKind.PARALLEL_JOINED: ("⋈", "$primary"),
    EventKind.LOOP_ITERATION: ("⟳", "$primary"),
    EventKind.AGENT_SEGMENT: ("◇", "$accent"),
    EventKind.IMPORT_ENTERED: ("⇲", "$primary"),
    EventKind.IMPORT_LEFT: ("⇱", "$primary"),
    EventKind.RUN_ENDED: ("■", "$success"),
    EventKind.RUN_ERRORED: ("■", "bold $error"),
    EventKind.RUN_RESUMED: ("▷", "$warning"),
    EventKind.NOTE: ("…", "dim"),
    EventKind.RECEIPT_RENDERED: ("◉", "$success"),
    EventKind.RECEIPT_SKIPPED: ("∅", "dim"),
    EventKind.RECEIPT_FAILED: ("⨯", "bold $error"),
}


_TABLES: list[dict] = [STATE_GLYPH, STATUS_BADGE, STATUS_SHORT, KIND_GLYPH]
_SPECS: list[dict] = [dict(t) for t in _TABLES]
_ROLE = re.compile(r"\$(" + "|".join(ROLES) + r")\b")


def resolve_style(spec: str, colors: Mapping[str, str]) -> str:
    """``spec`` (a Rich style with ``$role`` placeholders) with each role's colour put in."""
    return _ROLE.sub(lambda m: colors.get(m.group(1)) or DEFAULT_COLORS[m.group(1)], spec)


def apply_theme(colors: Mapping[str, str] | None = None) -> None:
    """Re-resolve every glyph table for ``colors`` (role -> colour such as ``"#A3BE8C"``);
    ``None`` restores the plain colour names. Changes the tables in place."""
    chosen = {**DEFAULT_COLORS, **(colors or {})}
    for table, spec in zip(_TABLES, _SPECS):
        for key, (glyph, style) in spec.items():
            table[key] = (glyph, resolve_style(style, chosen))


apply_theme()
