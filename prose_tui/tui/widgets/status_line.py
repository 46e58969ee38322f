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
             as_of: str | None = None, said_above: bool = False) -> None:
        """``run`` is the run as of the cursor; ``last_change`` an age (``12 s``); ``watcher`` a
        short state (``watching``); ``as_of`` the cursor's moment when not live
        (``as of event 41 of 0–85 · 14:02:11``). ``said_above``: the context strip or the run
        header shows the status with its whole reason, so this line leaves both out (said once)."""
        text = Text(no_wrap=True, overflow="ellipsis")
        if run is None:
            text.append("no run selected", "dim")
        elif not said_above:
            badge, style = STATUS_BADGE[run.status]
            text.append(badge, style)
        if as_of:
            text.append(f" {as_of}", "bold")
            if pending:
                text.append(f" · {pending} new", "bold")
            text.append(" · } live", "dim")
        else:
            if last_change != "—":
                text.append(f" changed {last_change} ago")
            text.append(" · follow " + ("on" if following else "off (f)"), "" if following else "bold")
        text.append(f" · {watcher}", "dim")
        if run is not None and run.status_reason and not as_of and not said_above:
            text.append(f" · {run.status_reason}", "dim")
        if said_above and run is not None:
            text = text[1:] if text.plain.startswith(" ") else text
            text.no_wrap, text.overflow = True, "ellipsis"
        if text.plain == self.shown.plain and text.spans == self.shown.spans:
            return  # nothing new: no repaint
        self.shown = text
        # One row whatever it says: no screen-wide layout for a new text (profiled in
        # docs/performance.md as the largest share of a live change's cost).
        self.update(text, layout=False)
