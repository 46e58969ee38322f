"""The timeline: one row per event with its time, how long it took, a duration bar.

An event's duration (``+3s``) and bar are how long its step took (until the next event), on
the event's own row; the bar is scaled to the longest step, so where the time went is
visible at a glance. Times are UTC as everywhere on screen (``explorer_model.when_text``):
the clock time for today, with the date (``03-01 14:02:11``; ``2025-03-01 14:02`` in
another year) where not today, in a column as wide as the list needs. A time reconstructed
from file times (``Event.approximate``) is marked ``≈``. Columns come from content: no time
column when no event has a time, no duration and bar columns when no step has a duration,
so the event text gets the width.

The highlighted row is the history cursor: the other views show the run as of that event.
At the last row the explorer is live. Rows are rendered lazily (Line API) into a bounded
cache, so a run with 100,000 events costs what the screen shows; events appended to the
same list (a live run) cost only themselves (``set_events`` sees the list grew).
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from datetime import datetime, timezone

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from prose_tui.backends.common.text import visible_name
from prose_tui.model import Event
from prose_tui.tui.glyphs import KIND_GLYPH
from prose_tui.tui.keys import keyed
from prose_tui.tui.widgets.repaint import QuietScrollbars, RowMemo, serial, set_virtual_size, text_strip
from prose_tui.viewmodel.steps import Steps, gaps_from

BAR_WIDTH = 8
CACHE_ROWS = 1024
REWRITTEN = 64  # a live list may have its last few events replaced (a line completed)


def _utc(time: datetime) -> datetime:
    return time.astimezone(timezone.utc) if time.tzinfo else time


def stamp(time: datetime | None, today: datetime, dated: str, *, approximate: bool = False) -> str:
    """An event's time as the timeline shows it, ``dated`` cells wide (``time_width``) plus
    one for the ``≈`` an ``approximate`` time is marked with (the caller writes it):
    ``14:02:11`` today, ``03-01 14:02:11`` another day this year, ``2025-03-01 14:02``
    another year; ``--:--:--`` unknown."""
    width = TIME_WIDTH[dated] + (0 if approximate else 1)
    if not isinstance(time, datetime):
        return f"{'--:--:--':>{width}}"
    t, day = _utc(time), _utc(today).date()
    if t.date() == day:
        text = f"{t:%H:%M:%S}"
    elif t.year == day.year:
        text = f"{t:%m-%d %H:%M:%S}"
    else:
        text = f"{t:%Y-%m-%d %H:%M}"
    return f"{text:>{width}}"


TIME_WIDTH = {"time": 8, "date": 14, "year": 16}


def time_width(events: list[Event], today: datetime) -> str:
    """How wide the time column must be for ``events`` (from their first and last times,
    events being in time order): ``"time"``, ``"date"`` or ``"year"``."""
    times = [_utc(e.time) for e in (events[:1] + events[-1:]) if isinstance(e.time, datetime)]
    day = _utc(today).date()
    if any(t.year != day.year for t in times):
        return "year"
    if any(t.date() != day for t in times):
        return "date"
    return "time"


def elapsed(seconds: float | None) -> str:
    """``+4s``, ``+2m05``, ``+1h03``; blank when unknown."""
    if seconds is None or seconds < 0:
        return ""
    if seconds < 60:
        return f"+{seconds:.0f}s"
    if seconds < 3600:
        return f"+{int(seconds // 60)}m{int(seconds % 60):02d}"
    return f"+{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}"


class Timeline(QuietScrollbars, ScrollView, can_focus=True):
    """Posts ``CursorMoved(index)`` when the user moves the history cursor."""

    BINDINGS = keyed([
        Binding("j,down", "move(1)", "Next event", show=False),
        Binding("k,up", "move(-1)", "Previous event", show=False),
        Binding("ctrl+d,pagedown", "page(1)", "Page down", show=False),
        Binding("ctrl+u,pageup", "page(-1)", "Page up", show=False),
        Binding("g,home", "to(0)", "First event", show=False),
        Binding("G,end", "to(-1)", "Last event (live)", show=False),
    ])
    HELP_GROUP = "History"
    DEFAULT_CSS = """
    Timeline { background: $surface; overflow-x: hidden; scrollbar-size-horizontal: 0; }
    Timeline > .timeline--cursor { background: $accent 30%; }
    """
    COMPONENT_CLASSES = {"timeline--cursor"}

    class CursorMoved(Message):
        """The user moved the history cursor to event ``index``."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events: list[Event] = []
        self.cursor = 0
        # Seconds from each event to the next, NaN where unknown: 8 bytes per event (a list of
        # floats held 32).
        self._gaps = array("d")
        self._longest = 0.0
        # index -> (serial, row, the event it shows)
        self._cache: OrderedDict[int, tuple[int, Strip, Event]] = OrderedDict()
        self._digits = 2  # width of the seq column
        self._memo = RowMemo()  # painted rows by what they show: a scroll repaints new rows only
        self._looks_now: tuple[Style, Style] | None = None  # set while a frame paints
        self._dated = "time"
        self._timed = False  # some event on screen has a time: the time column is shown
        self._visible: tuple[int, int] | None = None  # the rows (top, height) the columns fit
        # The scrollable height a live end's page turn gave (blank rows below the last event,
        # kept until events fill them); 0 when no page turn's blank rows are shown.
        self._page_end = 0
        self.live = True  # the run may still grow: a page turn may leave blank rows (set_events)
        self._now = datetime.now(timezone.utc)  # "today" for the rows, as of the last set_events
        self.search_term = ""

    def _today(self) -> datetime:
        """The app's clock (fixed in tests), else now; UTC."""
        workspace = getattr(self.app, "workspace", None)
        clock = getattr(workspace, "clock", None)
        return clock() if callable(clock) else datetime.now(timezone.utc)

    def set_events(self, events: list[Event], cursor: int, *, live: bool = True, steps: Steps | None = None) -> None:
        """Show ``events`` with the cursor on ``cursor`` (the last index when live).

        ``live``: the run may still grow, so an event just past the bottom turns a page, as
        ``less +F`` does. A run that has ended (or one whose history fills in from a worker
        after it ended) keeps no blank rows: its pane always ends on its last event.
        ``steps``: the steps of ``events`` worked out already (``Steps.of``, on the thread
        that read the run), taken when made for this list (which may have grown since);
        else they are worked out here (100,000 events: 50-80 ms of the UI thread)."""
        self.live = live
        repaint: set[int] | None = None  # the rows to repaint (event indexes); None: the view
        if steps is not None and steps.events is events and events is not self.events:
            self.events, steps.events = events, []  # taken once
            self._gaps, self._longest = steps.gaps, steps.longest
            self._cache.clear()
            self._grown(events)  # events added or replaced at its end since
        elif events is self.events and self._gaps:
            repaint = self._grown(events)
        else:
            self.events = events
            self._gaps = array("d", gaps_from(events, 0))
            self._longest = max((g for g in self._gaps if g > 0), default=0.0)
            self._cache.clear()
        self._digits = _digits(len(events))
        self._now = self._today()
        self._visible = None  # the time column is fitted to the rows on screen again
        rows = len(events)
        if live and cursor == rows - 1 and self._page_end > rows:
            # At the live end, the blank rows a page turn showed (below) stay until filled.
            rows = self._page_end
        else:
            self._page_end = 0
        # No screen-wide layout (repaint.py); the rows that changed are repainted below.
        set_virtual_size(self, Size(self.size.width, rows), repaint=repaint is None)
        self._set_cursor(cursor, repaint)

    def _grown(self, events: list[Event]) -> set[int] | None:
        """The steps (``_gaps``, ``_longest``) of the list shown brought up to ``events``, the
        same list grown (or its last events replaced): only its end is worked out. Returns
        the rows to repaint (event indexes), ``None`` for the view."""
        start = max(0, min(len(self._gaps), len(events)) - REWRITTEN)
        before = self._gaps[start:]
        shown = start + len(before)  # events shown until now
        del self._gaps[start:]
        self._gaps.extend(gaps_from(events, start))
        fresh = [g for g in self._gaps[start:] if g > 0]
        longest = max([self._longest, *fresh]) if fresh else self._longest
        if longest != self._longest or _digits(len(events)) != self._digits:
            self._longest = longest
            self._cache.clear()  # every bar is scaled to the longest step; seq column width
            return None
        # A row painted before stays when its event and its step's length did (a row is
        # repainted only when what it shows changed: the new rows, and the row before them,
        # whose step now has an end); only those rows are sent.
        gaps = self._gaps
        stale = [i for i in self._cache if i >= start and (
            i >= len(events) or self._cache[i][2] is not events[i]
            or i - start >= len(before) or not _same_gap(before[i - start], gaps[i]))]
        for index in stale:
            del self._cache[index]
        repaint = set(stale)
        repaint.update(range(min(shown, len(events)), max(shown, len(events))))  # new, or gone
        repaint.update(i for i in range(start, min(shown, len(events)))
                       if not _same_gap(before[i - start], gaps[i]))
        return repaint

    def set_cursor(self, index: int) -> None:
        """Put the history cursor on event ``index`` (clamped) and bring it into view."""
        self._set_cursor(index, set())

    def _set_cursor(self, index: int, repaint: set[int] | None) -> None:
        """``set_cursor``, repainting the rows of events ``repaint`` with the cursor's old and
        new rows (Textual resends every row of a widget refreshed whole); ``None``: the view."""
        if not self.events:
            self.cursor = 0
            self.refresh()
            return
        was = self.cursor
        self._cache.pop(self.cursor, None)
        self.cursor = max(0, min(index, len(self.events) - 1))
        self._cache.pop(self.cursor, None)
        top = self.scroll_offset.y
        self._scroll_to_cursor()
        # A new virtual size applies on the next refresh; scroll again once it has.
        self.call_after_refresh(self._scroll_to_cursor)
        if repaint is None or not self.is_mounted or not self.size:
            self.refresh()
        elif self.scroll_offset.y == top:  # a scroll repaints the view itself (ScrollView)
            self._refresh_rows(repaint | {was, self.cursor})

    def _refresh_rows(self, indexes: set[int]) -> None:
        """Repaint the rows on screen that show events ``indexes`` (or blank rows there)."""
        region = self.scrollable_content_region
        top, height = round(self.scroll_offset.y), region.height
        dirty: list[Region] = []
        for i in sorted(i for i in indexes if top <= i < top + height):
            last = dirty[-1] if dirty else None
            if last is not None and last.bottom == i - top:  # the row under the last: one region
                dirty[-1] = Region(0, last.y, region.width, last.height + 1)
            else:
                dirty.append(Region(0, i - top, region.width, 1))
        if dirty:
            self.refresh(*dirty)

    def _scroll_to_cursor(self) -> None:
        """The cursor's row into view. A cursor just past the bottom (a live run's next
        event) turns a page, the cursor a quarter down, as ``less`` does: each scrolled row is
        sent to the terminal again (issue 33); one further away is centred."""
        height = self.scrollable_content_region.height or 1
        cursor = self.cursor
        rows = len(self.events)
        if cursor < rows - 1 and self._page_end:
            # Off the live end, the blank rows a page turn left below the last event go: the
            # history fills its pane again, whichever order the moves and the layout came in.
            self._page_end = 0
            set_virtual_size(self, Size(self.size.width, rows))
        top = self.scroll_offset.y
        if top <= cursor < top + height:
            return
        if top + height <= cursor < top + height + height // 2:
            y = cursor - height // 4
            if y + height > rows and self.live:  # blank rows below the last event
                self._page_end = y + height
                set_virtual_size(self, Size(self.size.width, y + height))
            elif y + height > rows:
                y = max(0, rows - height)
            self.scroll_to(y=y, animate=False)
        else:
            self.scroll_to(y=max(0, min(cursor - height // 2, len(self.events) - height)), animate=False)

    def _user_move(self, index: int) -> None:
        if not self.events:
            return
        index = max(0, min(index, len(self.events) - 1))
        self.set_cursor(index)
        self.post_message(self.CursorMoved(index))

    def action_move(self, delta: int) -> None:
        self._user_move(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._user_move(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_to(self, index: int) -> None:
        self._user_move(index if index >= 0 else len(self.events) - 1)

    def on_click(self, event) -> None:
        self._user_move(event.y + self.scroll_offset.y)

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Move the cursor to the next event whose text contains ``term``."""
        needle = term.lower()
        count = len(self.events)
        for step in range(1, count + 1):
            index = (self.cursor + (-step if backwards else step)) % count
            if needle in self.events[index].text.lower():
                self._user_move(index)
                return True
        return False

    def on_resize(self) -> None:
        self._cache.clear()
        if self._page_end:
            # A new height is a new layout: no blank rows from a page turn at another height
            # (they were kept, and at 200x50 a failed run's History showed five or none, run to
            # run, by whether the layout came before the live end's page turn).
            self._page_end = 0
            set_virtual_size(self, Size(self.size.width, len(self.events)))
        self.call_after_refresh(self._scroll_to_cursor)

    def on_show(self) -> None:
        self.call_after_refresh(self._scroll_to_cursor)

    def _fit_columns(self, top: int, height: int) -> None:
        """Fit the time column to the rows on screen (``top``, ``height``): shown only when
        one of them has a time, with the date only when one of them is not today."""
        if self._visible == (top, height):
            return
        self._visible = (top, height)
        rows = self.events[top:top + height]
        timed = any(isinstance(e.time, datetime) for e in rows)
        dated = time_width([e for e in rows if isinstance(e.time, datetime)], self._now) if timed else "time"
        if (timed, dated) != (self._timed, self._dated):
            self._timed, self._dated = timed, dated
            self._cache.clear()
            self.refresh()

    def _looks(self) -> tuple[Style, Style]:
        """(the widget's, the cursor's) rich styles. Textual works each out from the widget's
        ancestors when asked (about 0.1 ms): asked once per frame, not per row."""
        if self._looks_now is not None:
            return self._looks_now
        return self.rich_style, self.get_component_rich_style("timeline--cursor")

    def render_lines(self, crop: Region) -> list[Strip]:
        self._looks_now = None
        self._looks_now = self._looks()
        try:
            return self._render_lines(crop)
        finally:
            self._looks_now = None

    def _render_lines(self, crop: Region) -> list[Strip]:
        top = self.scroll_offset.y
        region = self.scrollable_content_region
        self._fit_columns(top, region.height)
        width, count, cursor, cached = region.width, len(self.events), self.cursor, self._cached

        def key(y: int) -> tuple[object, ...]:
            """What row ``y`` on screen shows (``RowMemo``): the event's painted row,
            whether the cursor is on it, the width."""
            index = top + y
            if index >= count:
                return ("blank", width)
            return (cached(index, width)[0], index == cursor, width)

        return self._memo.render_lines(self, crop, key, super().render_lines)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._memo.clear()

    def _cached(self, index: int, width: int) -> tuple[int, Strip, Event]:
        entry = self._cache.get(index)
        if entry is None:
            entry = self._cache[index] = (serial(), self._row(index, width), self.events[index])
            while len(self._cache) > CACHE_ROWS:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(index)
        return entry

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        self._fit_columns(self.scroll_offset.y, self.scrollable_content_region.height)
        if index >= len(self.events):
            return Strip.blank(width, self._looks()[0])
        strip = self._cached(index, width)[1]
        style, cursor_style = self._looks()
        if index == self.cursor:  # the cursor row spans the pane
            style = style + cursor_style
        return strip.crop_extend(0, width, style)

    def _row(self, index: int, width: int) -> Strip:
        event = self.events[index]
        glyph, style = KIND_GLYPH.get(event.kind, ("·", "dim"))
        gap = _loaded(self._gaps[index])  # how long this step took: until the next event
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(f"{event.seq:>{self._digits}} ", "dim")
        if self._timed:
            approximate = event.approximate and isinstance(event.time, datetime)
            text.append("≈" if approximate else "", "bold")
            text.append(stamp(event.time, self._now, self._dated, approximate=approximate), "dim")
            text.append(" ")
        if self._longest > 0:
            text.append(f"{elapsed(gap):>5} ", "dim")
            filled = round(BAR_WIDTH * gap / self._longest) if gap and gap > 0 else 0
            filled = max(0, min(BAR_WIDTH, filled))
            text.append("█" * filled, "blue")
            text.append(" " * (BAR_WIDTH - filled) + " ")
        text.append(f"{glyph} ", style)
        text.append(visible_name(event.text.strip().expandtabs(4)))  # one row: controls as pictures
        base, cursor_style = self._looks()
        if index == self.cursor:
            base = base + cursor_style
        return text_strip(text, self.app.console, base)


def _digits(count: int) -> int:
    """Width of the seq column for ``count`` events."""
    return max(2, len(str(count - 1)))


def _same_gap(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _loaded(gap: float) -> float | None:
    return None if math.isnan(gap) else gap
