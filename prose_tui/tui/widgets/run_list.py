"""The run list pane: every run found, newest first, one dense row each (k9s/htop style):
status glyph, run id cut with an ellipsis, program, age (ticking). Rows: ``run_rows``.

A virtualised list (Textual's Line API, as its docs and Textualize/toolong's log view do):
``virtual_size`` is one line per shown run and ``render_line(y)`` renders only the rows on
screen, each cached as a ``Strip`` keyed by what it shows (``run_rows.row_key``) and how
(highlighted, hovered, focused). So 10,000 or 100,000 runs cost what the screen shows:
nothing lays out every row, ages tick by repainting the visible rows (no layout), and a
changed run repaints its own row only. Looks and behaves like the ``OptionList`` it replaces
(same cursor colours, keys, mouse, messages and the ``highlighted``/``option_count``
properties the screens and tests use).
"""

from __future__ import annotations

import textwrap
from datetime import datetime, timezone
from pathlib import Path

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import visualize
from textual.widgets.option_list import Option

from prose_tui.model import Run
from prose_tui.tui.keys import keyed
from prose_tui.tui.widgets.repaint import set_virtual_size
from prose_tui.tui.widgets.run_rows import (  # noqa: F401  (the run list's row API, re-exported)
    AGE_WIDTH,
    RunRows,
    age_text,
    column_widths,
    cut,
    preferred_width,
    row_key,
    run_prompt,
)

AGE_TICK = 5.0  # seconds between repaints of the age cells
CACHED_ROWS = 1024  # strips kept (a few screens' worth, in each look)


class _CursorList(ScrollView, can_focus=True):
    """The keys every row list has (kept off ``RunList.BINDINGS``, which the help screen lists)."""

    BINDINGS = [
        Binding("down", "cursor_down", "Down", show=False),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("pagedown", "page_down", "Page Down", show=False),
        Binding("pageup", "page_up", "Page Up", show=False),
        Binding("enter", "select", "Select", show=False),
    ]


class RunList(_CursorList):
    """Posts ``RunChosen`` when the highlighted run changes (and on Enter or a click), but
    not for a run its caller chose ``quiet`` (``set_runs``, ``select_path``); ``/`` search
    filters the rows."""

    BINDINGS = keyed([
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "First run", show=False),
        Binding("G", "last", "Last run", show=False),
        Binding("enter", "select", "Open the run in the trace", show=False),
    ])
    HELP_GROUP = "Runs"

    # The OptionList look it replaces (its cursor colours, focused and not).
    DEFAULT_CSS = """
    RunList {
        height: auto; max-height: 100%; color: $foreground; overflow-x: hidden;
        padding: 0 1; background: $surface;
        & > .run-list--highlighted {
            color: $foreground; background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .run-list--highlighted {
                color: $block-cursor-foreground; background: $block-cursor-background;
                text-style: $block-cursor-text-style;
            }
        }
        & > .run-list--hover { background: $block-hover-background; }
    }
    """
    COMPONENT_CLASSES = {"run-list--option", "run-list--highlighted", "run-list--hover"}

    class RunChosen(Message):
        """The user moved to another run (``path`` is its folder); ``opened``: with Enter, to
        read it (the trace brought up), not only passing over it."""

        def __init__(self, path: Path, *, opened: bool = False) -> None:
            super().__init__()
            self.path = path
            self.opened = opened

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.runs: RunRows = RunRows()
        self.filter: str = ""
        self._shown: list[Run] = self.runs  # the runs the filter lets through (``runs`` itself without one)
        self._pos: dict[Path, int] | None = None  # path -> index in ``runs`` (built when asked)
        self._rows: dict[Path, int] | None = None  # path -> index in ``_shown``
        self._highlighted: int | None = None
        self._hover: int | None = None
        self._chosen: Path | None = None
        self._held: Path | None = None  # the chosen run, gone from disk: kept chosen until it returns
        self._clock = None
        self._paint_now: datetime | None = None  # one clock reading per paint
        self._widths: tuple[int, ...] = (22, 18)
        self._strips: LRUCache[tuple, Strip] = LRUCache(CACHED_ROWS)
        self._told: dict[Path, tuple] = {}  # path -> row_key of the run update_run last got
        self.empty_text = ""  # shown, wrapped, in place of the rows when there are none (``show_empty``)
        self._aged: dict[int, str] = {}  # row -> the age text it was last painted with

    def on_mount(self) -> None:
        self.set_interval(AGE_TICK, self.tick)

    # -- the runs -----------------------------------------------------------------------------
    def set_runs(self, runs: list[Run], *, clock=None, quiet: bool = False) -> None:
        """Show ``runs`` (already sorted); keeps the highlighted run where it still exists.
        O(len(runs)) for the bookkeeping; the paint costs the rows on screen. ``quiet``: a
        run chosen for the user (the first row, when the chosen run is not listed) posts no
        ``RunChosen``: the caller opens it (the explorer's reads, ``chosen`` after the call)."""
        if clock is not None:
            self._clock = clock
        self.runs = RunRows(runs)
        if runs:
            self.empty_text = ""
        self._pos = None
        self._told.clear()
        self._aged.clear()
        self._refilter()
        self._strips.clear()  # a theme change comes this way too
        self._fit()
        self._sized()
        self.refresh()
        if not self._shown:
            self._highlighted = self._hover = None
            return
        keep = self._row(self._chosen) if self._chosen is not None else None
        if keep is None and self._held is not None and self._held == self._chosen:
            self._highlighted = None  # the chosen run is gone: no other run is chosen for the user
            return
        self._highlight(keep or 0, force=True, quiet=quiet)

    def update_run(self, run: Run, *, clock=None) -> None:
        """Show ``run``'s new state in its row (found by path; a run not listed is ignored).
        Repaints that row only, unless a column had to widen."""
        if clock is not None:
            self._clock = clock
        if self._pos is None:
            self._pos = self._row_index() if self._shown is self.runs else _index(self.runs)
        i = self._pos.get(run.path)
        if i is None:
            return
        # What the row showed when last told (a live run is changed in place): a row that
        # looks the same is not repainted, which would widen every live frame's repainted
        # area to the run list (docs/performance.md, third pass).
        look = row_key(run, self._now(), self._widths)
        same_look = self._told.get(run.path) == look
        self._told[run.path] = look
        self.runs[i] = run
        row: int | None = i
        if self._shown is not self.runs:
            row = self._row(run.path)
            if row is not None:
                self._shown[row] = run
        if self.runs.measure.add(run) and self._fit():
            return  # the columns changed: every row is repainted
        if row is not None and self._visible(row) and not same_look:
            self.refresh_line(row)

    def tick(self) -> None:
        """Repaint the rows on screen whose age text moved on since they were painted (ages
        change while nothing is written): a row now and then, not the list every tick, whose
        rows all went to the terminal again (issue 33). No layout."""
        now = self._clock() if self._clock else datetime.now(timezone.utc)
        top = self.scroll_offset.y
        for index in range(top, min(len(self._shown), top + max(self.scrollable_content_region.height, 1))):
            if self._aged.get(index) != age_text(self._shown[index], now):
                self.refresh_line(index)

    def _refilter(self) -> None:
        needle = self.filter.lower()
        self._shown = [r for r in self.runs if _matches(r, needle)] if needle else self.runs
        self._rows = None
        self._hover = None

    def _row(self, path: Path | None) -> int | None:
        """The shown row of the run at ``path`` (``None`` when filtered out or unknown)."""
        return None if path is None else self._row_index().get(path)

    def _row_index(self) -> dict[Path, int]:
        if self._rows is None:
            self._rows = _index(self._shown)
        return self._rows

    # -- the API the screens use ------------------------------------------------------------------
    @property
    def chosen(self) -> Path | None:
        """The folder of the highlighted run."""
        return self._chosen

    @property
    def preferred_width(self) -> int:
        """The width (cells) the rows want (see ``run_rows.Measure.preferred``)."""
        return self.runs.measure.preferred

    @property
    def shown_count(self) -> int:
        """Rows shown (after the filter)."""
        return len(self._shown)

    @property
    def option_count(self) -> int:
        """Rows shown (the ``OptionList`` name, kept for its callers)."""
        return len(self._shown)

    @property
    def highlighted(self) -> int | None:
        """The index of the highlighted row (among those shown), ``None`` when no row is shown."""
        return self._highlighted

    @highlighted.setter
    def highlighted(self, index: int | None) -> None:
        if index is not None:
            self._highlight(index)

    def get_option_at_index(self, index: int) -> Option:
        """Row ``index`` as an ``Option`` (prompt: the row's text as painted now, id: the run's path)."""
        run = self._shown[index]
        return Option(run_prompt(run, self._now(), self._widths), id=str(run.path))

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Filter the list to runs whose id, program, status, format or location contains ``term``."""
        self.filter = term
        self.set_runs(self.runs)
        return bool(self._shown)

    def show_empty(self, text: str) -> None:
        """Say ``text`` (wrapped to the pane) where the rows are while no run is listed: where
        the explorer looked and what it looks for."""
        if text != self.empty_text:
            self.empty_text = text
            self._sized()
            self.refresh()

    def _empty_lines(self, width: int) -> list[str]:
        if self._shown or not self.empty_text or width <= 0:
            return []
        return textwrap.wrap(self.empty_text, width, break_on_hyphens=False) or [""]

    def select_path(self, path: Path, *, quiet: bool = False) -> None:
        """Highlight the run at ``path`` (posts ``RunChosen`` when it was not the chosen one,
        unless ``quiet``: chosen for the user by a caller that opens it itself)."""
        row = self._row(path)
        if row is not None:
            self._highlight(row, quiet=quiet)

    def hold(self, path: Path | None) -> None:
        """Keep the run at ``path`` chosen while it is not listed (its folder went from disk):
        ``set_runs`` then highlights no row instead of choosing another run, and highlights it
        again (without ``RunChosen``) once it is listed. Moving the cursor chooses another
        run and ends the hold; ``None`` ends it too."""
        self._held = path
        if path is not None:
            self._chosen = path

    # -- the cursor ---------------------------------------------------------------------------------
    def _highlight(self, index: int, *, force: bool = False, quiet: bool = False) -> None:
        if not self._shown:
            return
        index = max(0, min(index, len(self._shown) - 1))
        old, self._highlighted = self._highlighted, index
        if old != index or force:
            if old is not None:
                self._refresh_row(old)
            self._refresh_row(index)
            self.scroll_to_highlight()
        path = self._shown[index].path
        if path != self._chosen:
            self._chosen = path
            self._held = None
            if not quiet:
                self.post_message(self.RunChosen(path))

    def scroll_to_highlight(self) -> None:
        """Bring the highlighted row on screen (no animation)."""
        if self._highlighted is None or not self.is_mounted:
            return
        region = Region(0, self._highlighted, max(1, self.scrollable_content_region.width), 1)
        self.scroll_to_region(region, animate=False, force=True, immediate=True)

    def action_cursor_down(self) -> None:
        self._highlight(0 if self._highlighted is None else self._highlighted + 1)

    def action_cursor_up(self) -> None:
        self._highlight(0 if self._highlighted is None else self._highlighted - 1)

    def action_first(self) -> None:
        self._highlight(0)

    def action_last(self) -> None:
        self._highlight(len(self._shown) - 1)

    def action_page_down(self) -> None:
        self._highlight((self._highlighted or 0) + max(1, self.scrollable_content_region.height))

    def action_page_up(self) -> None:
        self._highlight((self._highlighted or 0) - max(1, self.scrollable_content_region.height))

    def action_select(self, opened: bool = True) -> None:
        """Enter: open the highlighted run (``RunChosen`` with ``opened``, even when it is the
        chosen one)."""
        if self._highlighted is not None and self._shown:
            self._chosen = self._shown[self._highlighted].path
            self.post_message(self.RunChosen(self._chosen, opened=opened))

    def on_show(self) -> None:
        self.scroll_to_highlight()

    # -- the mouse ------------------------------------------------------------------------------------
    def _row_at(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        row = offset.y + self.scroll_offset.y
        return row if 0 <= row < len(self._shown) else None

    async def _on_click(self, event: events.Click) -> None:
        row = self._row_at(event)
        if row is not None:
            self._highlight(row)
            self.action_select(opened=False)

    def _on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self._row_at(event))

    def _on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, row: int | None) -> None:
        if row != self._hover:
            for changed in (self._hover, row):
                if changed is not None:
                    self._refresh_row(changed)
            self._hover = row

    # -- painting --------------------------------------------------------------------------------------
    def _now(self) -> datetime:
        if self._paint_now is not None:
            return self._paint_now
        return self._clock() if self._clock else datetime.now(timezone.utc)

    def _fit(self) -> bool:
        """Column widths for the pane's width; ``True`` (and every row showing a run
        repainted) when they changed. The blank rows below the runs do not depend on them: a
        run whose status became wider repainted 45 rows at 200x50 (6 ms), not 1."""
        widths = self.runs.measure.widths(self.scrollable_content_region.width or 40)
        if widths == self._widths:
            return False
        self._widths = widths
        top = self.scroll_offset.y
        shown = min(len(self._shown) - top, max(self.scrollable_content_region.height, 1))
        if shown > 0:
            self.refresh_lines(top, shown)
        return True

    def _sized(self) -> None:
        # A new width (the pane resized) or number of rows: scrollbars again, no layout of the
        # screen (the pane's size does not follow its rows).
        width = self.scrollable_content_region.width
        set_virtual_size(self, Size(width, len(self._shown) or len(self._empty_lines(width))))

    def on_resize(self) -> None:
        self._fit()
        self._sized()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self.refresh()

    def _visible(self, row: int) -> bool:
        top = self.scroll_offset.y
        return top <= row < top + max(self.scrollable_content_region.height, 1)

    def _refresh_row(self, row: int) -> None:
        if self._visible(row):
            self.refresh_line(row)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._paint_now = self._clock() if self._clock else datetime.now(timezone.utc)
        try:
            return super().render_lines(crop)
        finally:
            self._paint_now = None

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if not 0 <= index < len(self._shown) or width <= 0:
            blank = self.get_visual_style("run-list--option").rich_style
            empty = self._empty_lines(width)
            if 0 <= index < len(empty):
                return Strip([Segment(empty[index].ljust(width), blank + RichStyle(color="yellow"))], width)
            return Strip.blank(width, blank)
        run = self._shown[index]
        look = ("run-list--highlighted" if index == self._highlighted
                else "run-list--hover" if index == self._hover else None)
        style = self.get_visual_style("run-list--option", look) if look else self.get_visual_style("run-list--option")
        now = self._now()
        key = (row_key(run, now, self._widths), style, width)
        self._aged[index] = age_text(run, now)
        strip = self._strips.get(key)
        if strip is None:
            visual = visualize(self, run_prompt(run, now, self._widths), markup=False)
            strips = visual.to_strips(self, visual, width, None, style)
            strip = (strips[0] if strips else Strip([])).extend_cell_length(width, style.rich_style)
            self._strips[key] = strip
        return strip


def _matches(run: Run, needle: str) -> bool:
    """Whether ``needle`` (lower case) is in the run's id, program, status, format or location."""
    return any(needle in v.lower() for v in (run.id, run.program, run.status.value, run.format.value, run.location) if v)


def _index(runs: list[Run]) -> dict[Path, int]:
    return {run.path: i for i, run in enumerate(runs)}
