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
    _said: tuple | None = None  # the arguments of the last ``show``, to fit them again on a resize

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def show(self, run: Run | None, *, last_change: str, watcher: str, following: bool, pending: int = 0,
             as_of: str | None = None, said_above: bool = False, absent: str | None = None,
             busy: tuple[str, ...] = ()) -> None:
        """``run`` is the run as of the cursor; ``last_change`` an age (``12 s``); ``watcher`` a
        short state (``watching``); ``as_of`` the cursor's moment when not live
        (``as of event 41 of 0–85 · 14:02:11``). ``said_above``: the context strip or the run
        header shows the status with its whole reason, so this line leaves both out (said once).
        ``absent``: without a run, why none is shown (the chosen run is gone from disk).
        ``busy``: what the explorer is doing that a key waits for, longest form first
        (``indexing 100,000 events for the history…``, ``indexing…``): said first."""
        self._said = (run, last_change, watcher, following, pending, as_of, said_above, absent, busy)
        text = self._fit(*self._said)
        if text.plain == self.shown.plain and text.spans == self.shown.spans:
            return  # nothing new: no repaint
        self.shown = text
        # One row whatever it says: no screen-wide layout for a new text (profiled in
        # docs/performance.md as the largest share of a live change's cost).
        self.update(text, layout=False)

    def on_resize(self) -> None:
        if self._said is not None:
            self.shown = Text()
            text = self._fit(*self._said)
            self.shown = text
            self.update(text, layout=False)

    def _fit(self, run: Run | None, last_change: str, watcher: str, following: bool, pending: int,
             as_of: str | None, said_above: bool, absent: str | None = None, busy: tuple[str, ...] = ()) -> Text:
        """The line's parts that fit the width whole, in their order on the line; what does
        not fit is left out (or said shorter: the status reason's first clause), most
        important kept first: the moment, the status reason, the follow state, the last
        change, the watcher. Never a part cut mid-word."""
        # (order on the line, priority (lower: kept first), [texts, longest first], style)
        parts: list[tuple[int, int, list[str], str]] = []
        if busy:
            parts.append((-1, 0, list(busy), "bold"))
        if as_of:
            parts.append((0, 0, [as_of], "bold"))
            if pending:
                parts.append((1, 0, [f"{pending} new"], "bold"))
            parts.append((2, 1, ["} live"], "dim"))
        else:
            if last_change != "—":
                parts.append((3, 3, [f"changed {last_change} ago"], ""))
            parts.append((4, 2, ["follow " + ("on" if following else "off (f)")], "" if following else "bold"))
        parts.append((5, 4, [watcher], "dim"))
        if run is not None and run.status_reason and not as_of and not said_above:
            parts.append((6, 1, _shorter(run.status_reason), "dim"))
        head = Text(no_wrap=True, overflow="ellipsis")
        if run is None:
            head.append(absent or "no run selected", "yellow" if absent else "dim")
            head.append(" · ")
        elif not said_above:
            badge, style = STATUS_BADGE[run.status]
            head.append(badge, style)
            head.append(" · ")
        width = self.content_region.width or max(0, self.app.size.width - 2)
        room = width - head.cell_len + 3 if width else 10**6  # + 3: the first part has no " · " before it
        # Which parts: each in its shortest form, most important first; then, in the same
        # order, each said as fully as the room left allows.
        chosen: dict[int, tuple[list[str], int, str]] = {}  # order -> (texts, index of the form, style)
        for order, _, texts, style in sorted(parts, key=lambda p: p[1]):
            cost = len(texts[-1]) + 3
            if cost <= room:
                chosen[order] = (texts, len(texts) - 1, style)
                room -= cost
        for order, _, texts, style in sorted(parts, key=lambda p: p[1]):
            if order not in chosen:
                continue
            _, form, _ = chosen[order]
            for better in range(form):
                extra = len(texts[better]) - len(texts[form])
                if extra <= room:
                    chosen[order] = (texts, better, style)
                    room -= extra
                    break
        text = head
        for i, order in enumerate(sorted(chosen)):
            texts, form, style = chosen[order]
            text.append(f" · {texts[form]}" if i else texts[form], style)
        return text


def _shorter(reason: str) -> list[str]:
    """``reason`` and its shorter whole forms: up to each clause's end (``;``, ``(``, ``,``)."""
    forms = [reason]
    for mark in ("; ", " (", ", "):
        head = reason.split(mark)[0].rstrip()
        if head and head not in forms and len(head) < len(forms[-1]):
            forms.append(head)
    return forms
