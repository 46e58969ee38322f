"""The status line: run status and why, last change age, watcher state, follow state."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from prose_tui.model import Run
from prose_tui.tui.glyphs import STATUS_BADGE


class StatusLine(Static):
    """One line at the bottom. Call ``show`` whenever any of its inputs change; ``shown`` is
    the text on screen."""

    shown: Text = Text()

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def show(self, run: Run | None, *, last_change: str, watcher: str, following: bool, pending: int = 0,
             as_of: str | None = None, said_above: bool = False, absent: str | None = None) -> None:
        """``run`` is the run as of the cursor; ``last_change`` an age (``12 s``); ``watcher`` a
        short state (``watching``); ``as_of`` the cursor's moment when not live
        (``as of event 41 of 0–85 · 14:02:11``). ``said_above``: the context strip or the run
        header shows the status with its whole reason, so this line leaves both out (said once).
        ``absent``: without a run, why none is shown (the chosen run is gone from disk)."""
        parts: list[tuple[str, str]] = []  # (text, style), joined by " · "
        if as_of:
            parts.append((as_of, "bold"))
            if pending:
                parts.append((f"{pending} new", "bold"))
            parts.append(("} live", "dim"))
        else:
            if last_change != "—":
                parts.append((f"changed {last_change} ago", ""))
            parts.append(("follow " + ("on" if following else "off (f)"), "" if following else "bold"))
        parts.append((watcher, "dim"))
        if run is not None and run.status_reason and not as_of and not said_above:
            parts.append((run.status_reason, "dim"))
        text = Text(no_wrap=True, overflow="ellipsis")
        if run is None:
            text.append(absent or "no run selected", "yellow" if absent else "dim")
            text.append(" · ")
        elif not said_above:
            badge, style = STATUS_BADGE[run.status]
            text.append(badge, style)
            text.append(" ")
        for i, (part, style) in enumerate(parts):
            text.append(f" · {part}" if i else part, style)
        if text.plain == self.shown.plain and text.spans == self.shown.spans:
            return  # nothing new: no repaint
        self.shown = text
        # One row whatever it says: no screen-wide layout for a new text (profiled in
        # docs/performance.md as the largest share of a live change's cost).
        self.update(text, layout=False)
