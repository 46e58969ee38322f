"""The annotated execution trace: program text, a state glyph per statement, annotations.

A Line-API ``ScrollView`` (as toolong's log view): only visible lines are highlighted and
rendered, as they are painted, and kept in a bounded cache, so a 100,000-line trace costs
what the screen shows; per line it keeps the parsed ``TraceLine`` and 4 bytes of row index
(``trace_layout.RowIndex``). A live change (``lines_changed``) repaints the lines it names;
appended lines only extend the view. While *following*, the cursor sits on the executing
statement and moves with it as the run advances; moving the cursor or scrolling stops
following (the border says so) until ``f`` turns it back on. Following pages as ``less``
does: the view stays put while the executing line is on screen, and when it passes the
bottom the view jumps so that it stands a quarter down (the rows below the trace's end
blank until events fill them), so an appended event repaints two rows, not the pane
(issue 33: each scrolled row is resent to the terminal, 4 KB an event at 80x24).

Each line is a row of gutter (line number, state glyph) and code. Its annotation stands
right-aligned on that row when both fit, else on continuation rows under the code (gutter
blank), wrapped: an annotation is never cut. Horizontal scrolling (``h``/``l``) moves only
the code; the gutter and the annotations stay where they are. ``cursor`` counts lines
(``lines[cursor]``); ``scroll_offset.y`` counts rows (``row_of`` maps one to the other).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import NamedTuple

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.glyphs import STATE_GLYPH
from prose_tui.tui.highlight import highlight
from prose_tui.tui.keys import keyed
from prose_tui.tui.widgets.trace_layout import (
    RIGHT_MARGIN,
    RowIndex,
    TraceLayout,
    cells,
    gutter_cells,
    measured,
    note_rows,
    rows_of,
    settle_blocks,
    shown_code,
    shown_note,
    widest,
)
from prose_tui.tui.widgets.repaint import QuietScrollbars, RowMemo, serial, set_virtual_size, text_strip

_NOTE = attrgetter("note")
_END_STATES = (None, StatementState.COMPLETE, StatementState.SKIPPED, StatementState.FAILED)
CACHE_LINES = 1024  # painted lines kept (a few screens)
# While following, the lines of the next page are painted ahead this many per turn of the
# event loop, after the frame that showed a live change (``_paint_ahead``).
AHEAD_SLICE = 4
WIDEST_APART = 20_000  # lines: a trace this long whose widest line went finds it again in a worker
RESTATE_MOST = 4096  # a new list differing in more lines than this is laid out whole
_NOTE_STYLE = {
    StatementState.EXECUTING: "bold yellow",
    StatementState.RETRYING: "bold magenta",
    StatementState.FAILED: "bold red",
    StatementState.COMPLETE: "green",
    None: "dim",
}


def changed_lines(old: list[TraceLine], new: list[TraceLine], most: int) -> list[int] | None:
    """Indexes (ascending) where ``new`` holds another object than ``old`` (lines past the
    shorter list count as changed); ``None`` when there are more than ``most``. A C-level
    pass: 100,000 lines in about 2 ms."""
    common = min(len(old), len(new))
    if abs(len(old) - len(new)) > most:
        return None
    out = list(compress(range(common), map(is_not, old, new)))
    if len(out) + abs(len(old) - len(new)) > most:
        return None
    return out + list(range(common, max(len(old), len(new))))


def _since_laid(laid: list[TraceLine], lines: list[TraceLine], most: int) -> list[int] | None:
    """``changed_lines(laid, lines, most)`` for a list laid out a moment ago: most often the
    same lines, a few appended since, which one comparison in C tells (identity first: a
    100,000-line list in well under a millisecond, against 5 for the pass per line)."""
    n = len(laid)
    if len(lines) >= n and len(lines) - n <= most and lines[:n] == laid:  # equal lines lay out the same
        return list(range(n, len(lines)))
    return changed_lines(laid, lines, most)


class _Painted(NamedTuple):
    """One line's strips: ``gutter`` (number, glyph), ``code`` (whole, cropped when shown),
    ``beside`` (the annotation on the code's row) or ``notes`` (continuation rows), ``blank``
    (the gutter of a continuation row) and ``pad`` (the style of the rest of the row)."""

    gutter: Strip
    code: Strip
    beside: Strip | None
    beside_cells: int
    notes: list[Strip]
    blank: Strip
    pad: Style
    serial: int  # names this painting of the line in the row memo's keys
    rows: dict[tuple[int, int, int], Strip]  # its rows as drawn, by (row, horizontal scroll, width)


class TraceView(QuietScrollbars, ScrollView, can_focus=True):
    """Shows a list of ``TraceLine``; posts ``BindingRequested`` on Enter, ``FollowChanged`` on toggles."""

    BINDINGS = keyed([
        Binding("j,down", "cursor(1)", "Down", show=False),
        Binding("k,up", "cursor(-1)", "Up", show=False),
        Binding("ctrl+d,pagedown", "page(1)", "Page down", show=False),
        Binding("ctrl+u,pageup", "page(-1)", "Page up", show=False),
        Binding("g,home", "jump_start", "First line", show=False),
        Binding("G,end", "jump_end", "Last line", show=False),
        Binding("e", "jump_executing", "Executing statement", show=False),
        Binding("h,left", "scroll_left", "Scroll left", show=False),
        Binding("l,right", "scroll_right", "Scroll right", show=False),
        Binding("enter", "open", "Open binding"),
    ])
    HELP_GROUP = "Trace"

    DEFAULT_CSS = """
    TraceView { background: $surface; scrollbar-size-horizontal: 0; }
    TraceView > .trace--cursor { background: $accent 30%; }
    TraceView > .trace--gutter { color: $text-muted; }
    TraceView > .trace--match { background: $warning 40%; }
    """
    COMPONENT_CLASSES = {"trace--cursor", "trace--gutter", "trace--match"}

    class BindingRequested(Message):
        """The user asked for the binding a trace line wrote (``path`` is run-relative)."""

        def __init__(self, line: TraceLine, path: str | None) -> None:
            super().__init__()
            self.line = line
            self.path = path

    class AtStart(Message):
        """The cursor reached the first line shown (a paged trace may load older lines)."""

    class FollowChanged(Message):
        """Following the executing statement was turned on or off."""

        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

    cursor: reactive[int] = reactive(0, repaint=False)  # watch_cursor repaints its two lines
    following: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[TraceLine] = []
        self._cache: OrderedDict[int, _Painted] = OrderedDict()
        self._memo = RowMemo()  # painted rows by what they show: a scroll repaints new rows only
        self._looks_now: tuple[Style, Style, Style, Style] | None = None  # set while a frame paints
        self._size_seen = Size(0, 0)  # the size on_resize (or a paint) last followed the cursor at
        self._rows = RowIndex()  # rows per line at the width ``_avail`` (cells right of the gutter)
        self._avail = -1
        self._content_width = 0  # scrollable_content_region.width at the last layout (content_width)
        self._blocks: list[int] = []  # indexes of lines holding triple quotes (a string block may open or close)
        self._block_open: dict[int, bool] = {}  # such a line -> whether a block is open after it
        self._width = 0
        self._width_count = 0  # lines exactly ``_width`` wide (a new list may drop the widest)
        self._sizes = array("i")  # cells of each line's code, or trace_layout.UNMEASURED (``widest``)
        self._gutter_was = 0
        # Indexes whose state is executing/retrying, and whose state is not an end state:
        # kept per change so following costs what changed.
        self._live: set[int] = set()
        self._open: set[int] = set()
        self._has_state = False
        self._moving_programmatically = False
        # While a change is shown (``_resized``): the lines the cursor left and reached, to be
        # repainted with the change's own; None otherwise (``watch_cursor`` repaints them).
        self._repainting: set[int] | None = None
        self.search_term: str | None = None
        # Whether following last moved the view by pages (a live change) rather than centring
        # the executing line (an open, a resize, ``f``): tests wait for one or the other.
        self.turned_pages = False
        self._ahead_asked = False  # a paint of the next page is scheduled (``_paint_ahead``)
        self._lines_changes = 0  # changes laid out so far (a widest found in a worker is for one)
        self._widest_serial = 0
        self._widest_job: tuple[int, list[TraceLine], int] | None = None  # the widest being found apart

    # -- data -------------------------------------------------------------------------------
    @property
    def content_width(self) -> int:
        """Cells across the trace's content (0 before it has a size) as of its last layout: a
        reader thread lays a run's full read out for this width (``TraceLayout.of``)."""
        return self._content_width

    def set_lines(self, lines: list[TraceLine], layout: TraceLayout | None = None) -> None:
        """Show ``lines``; keeps the reader's place, or moves to the executing line when following.

        A list sharing most line objects with the one shown (the run as of the next history
        event: ``history.CursorMemo`` keeps the lines a step does not change) is laid out
        where it differs, as ``lines_changed`` does; the result is the same as a layout of
        the whole list (a 100,000-line trace took 0.8 s of the UI thread per step).

        ``layout``: ``lines`` laid out already (``TraceLayout.of``, by the thread that read
        the run), taken as it is: here only the lines that differ from the ones it laid out
        (the run grew or changed in place since) are laid out, and the rows again only when
        the trace's width changed meanwhile. A 100,000-event log's full read took the UI
        thread 0.1-0.25 s here, a live change waiting behind it (issue 33). A layout is
        taken once; one that no longer fits (most lines differ) is done again here."""
        old = self.lines
        if layout is None and old and lines and lines is not old and self._avail == self._avail_now():
            changed = changed_lines(old, lines, min(RESTATE_MOST, len(lines) // 4))  # the same list: changed in place
            if changed is not None:
                self._restate(old, lines, changed)
                return
        changed = _since_laid(layout.lines, lines, min(RESTATE_MOST, len(lines) // 4)) if layout is not None else None
        if layout is None or changed is None:
            layout = TraceLayout.of(lines, self.scrollable_content_region.width)
            # The live worker may have grown the run's list while it was laid out (a copy).
            changed = _since_laid(layout.lines, lines, min(RESTATE_MOST, len(lines) // 4)) or []
        laid = self._take(layout)
        if changed:
            self._restated(laid, lines, changed)
        self.lines = lines
        if self._avail != self._avail_now():
            self._relayout()  # the width changed since it was laid out: its rows again, here
        self._gutter_was = self._gutter
        self._resized()

    def _take(self, layout: TraceLayout) -> list[TraceLine]:
        """Hold what ``layout`` worked out (its objects become the view's own: it is left
        empty, so it cannot be taken twice); returns the lines it laid out."""
        laid, layout.lines = layout.lines, []
        self.lines = laid
        self._lines_changes += 1
        self._widest_job = None  # the layout found the widest itself
        self._cache.clear()
        self._rows, self._avail, self._content_width = layout.rows, layout.avail, layout.content_width
        self._sizes, self._width, self._width_count = layout.sizes, layout.widest, layout.widest_count
        self._blocks, self._block_open = layout.blocks, layout.block_open
        self._live, self._open, self._has_state = layout.live, layout.open, layout.has_state
        return laid

    def _note_state(self, index: int, t: TraceLine) -> None:
        state = t.state
        if state in (StatementState.EXECUTING, StatementState.RETRYING):
            self._live.add(index)
        else:
            self._live.discard(index)
        if state in _END_STATES:
            self._open.discard(index)
        else:
            self._open.add(index)
        self._has_state = self._has_state or state is not None

    def _restate(self, old: list[TraceLine], lines: list[TraceLine], changed: list[int]) -> None:
        """``set_lines(lines)`` where ``lines`` differs from ``old`` (shown) only at ``changed``."""
        below = self._restated(old, lines, changed)
        self._resized(changed=changed, below=below)

    def _restated(self, old: list[TraceLine], lines: list[TraceLine], changed: list[int]) -> int | None:
        """What the view keeps for ``old`` (laid out) made ``lines``'s, where the two differ
        only at ``changed`` (ascending; past the shorter list too): sizes, the widest, rows,
        states, string blocks. Returns the first index whose rows may look different."""
        width, count, sizes = self._width, self._width_count, self._sizes
        lost_state = later = False
        for i in changed:
            if i < len(old):
                lost_state = lost_state or old[i].state is not None
                if i < len(sizes) and sizes[i] == width:
                    count -= 1
        self.lines = lines
        del sizes[len(lines):]
        for i in changed:
            if i < len(lines):
                size = measured(lines[i])
                if i < len(sizes):
                    sizes[i] = size
                else:
                    sizes.append(size)
                if size > width:
                    width, count = size, 1
                elif size == width:
                    count += 1
        if count <= 0 and len(lines) >= WIDEST_APART:
            # The widest line went (a step back through a long log drops its last lines): the
            # width stays what it was, an upper bound (the horizontal scroll reaches a few blank
            # cells further for a moment), and the widest is found again in a worker: 0.1-0.2 s
            # over the bounds of 100,000 lines, which each step at the log's end waited for.
            count, later = 0, True
        elif count <= 0:
            # The widest found again as a layout finds it (``widest``: the lines whose bound may
            # reach it, in slices), not by measuring every line at least as long.
            sizes = array("i")
            width = widest(lines, sizes)
            self._sizes = sizes
            count = sizes.count(width)
        if lost_state and self._has_state:  # a line that had a state went: any left?
            self._has_state = any(t.state is not None for t in lines)
        self._width, self._width_count = width, count
        below = self._apply(set(changed), width_grows=False)
        if later:
            self._widest_later(lines)
        if len(lines) < len(old):
            below = len(lines) if below is None else min(below, len(lines))  # rows left blank
        return below

    @property
    def widest_pending(self) -> bool:
        """A ready signal: the widest line is being found again in a worker (``_widest_later``)."""
        return self._widest_job is not None

    def _widest_later(self, lines: list[TraceLine]) -> None:
        """Find the widest of ``lines`` (shown now) in a worker; the width is taken when the
        lines shown are still those, unchanged since (another list: found again for it)."""
        self._widest_serial += 1
        job = self._widest_job = (self._widest_serial, lines, self._lines_changes)

        def work() -> None:
            sizes = array("i")
            width = widest(lines, sizes)
            try:
                self.app.call_from_thread(self._widest_found, job, sizes, width)
            except RuntimeError:  # the app stopped meanwhile
                pass

        self.run_worker(work, name="trace widest", group="trace-widest", description="the trace's widest line",
                        exclusive=True, thread=True, exit_on_error=False)

    def _widest_found(self, job: tuple[int, list[TraceLine], int], sizes: array, width: int) -> None:
        if job is not self._widest_job:
            return  # a later one is under way
        self._widest_job = None
        if self.lines is not job[1]:
            self._widest_later(self.lines)  # another list shown since: found for it
        elif self._lines_changes == job[2]:
            self._sizes, self._width, self._width_count = sizes, width, sizes.count(width)
            self._resize_virtual()
        # else changed in place since (a live change: the width only grew with it): the width
        # stays an upper bound, not found again after every append of a streaming run

    def lines_changed(self, changed: set[int] | None) -> None:
        """``lines`` (the same list) changed in place: ``changed`` indexes were added or
        re-stated (``None``: any may have). Costs what changed, not the trace."""
        if changed is None:
            self.set_lines(self.lines)
            return
        below = self._apply(changed, width_grows=True)
        self._resized(live=True, changed=changed, below=below)

    def _apply(self, changed: set[int], *, width_grows: bool) -> int | None:
        """Rows, states, string blocks and painted lines for ``changed`` indexes of ``lines``
        (``width_grows``: the widest code measured here too, as a live change only adds).
        Returns the first index from which lines other than ``changed`` may look different
        (their rows moved, or a string block opened or closed above them), else ``None``."""
        lines = self.lines
        self._lines_changes += 1
        changed = {i for i in changed if i < len(lines)}
        if len(self._cache) and any(key >= len(lines) for key in self._cache):
            self._cache = OrderedDict((k, v) for k, v in self._cache.items() if k < len(lines))
        rows, avail = self._rows, self._avail
        rows.truncate(len(lines))
        moved: int | None = None
        for i in sorted(changed):
            if i < len(rows):
                count = rows_of(lines[i], avail)
                if moved is None and count != rows.rows(i):
                    moved = i  # a line of another height: every row below it moved
                rows.set(i, count)
        for i in range(len(rows), len(lines)):
            rows.append(rows_of(lines[i], avail))
        first_block = None
        for gone in [i for i in self._live | self._open if i >= len(lines)]:
            self._live.discard(gone)
            self._open.discard(gone)
        for i in changed:
            self._cache.pop(i, None)
            t = lines[i]
            self._note_state(i, t)
            has = '"""' in t.text
            pos = bisect_left(self._blocks, i)
            present = pos < len(self._blocks) and self._blocks[pos] == i
            if has != present:
                if has:
                    self._blocks.insert(pos, i)
                else:
                    self._blocks.pop(pos)
                first_block = i if first_block is None else min(first_block, i)
            elif has:
                first_block = i if first_block is None else min(first_block, i)
        while self._blocks and self._blocks[-1] >= len(lines):
            self._blocks.pop()
        if width_grows:
            del self._sizes[len(lines):]
            for i in sorted(changed.union(range(len(self._sizes), len(lines)))):
                self._sized(i, lines[i])
        if first_block is not None:
            self._settle_blocks(first_block)
            self._cache = OrderedDict((k, v) for k, v in self._cache.items() if k < first_block)
            moved = first_block if moved is None else min(moved, first_block)
        return moved

    def _sized(self, index: int, t: TraceLine) -> None:
        """Line ``index`` (re-stated or appended in place) measured: the widest code only
        grows here (the old line's size is counted out when it was the widest)."""
        sizes = self._sizes
        size = measured(t)
        if index < len(sizes):
            if sizes[index] == self._width and size != self._width:
                self._width_count -= 1  # stays at least the width: a live change only adds
            sizes[index] = size
        else:  # appended (in order: ``_apply`` measures every line past the sizes)
            sizes.append(size)
        if size > self._width:
            self._width, self._width_count = size, 1
        elif size == self._width:
            self._width_count += 1

    # -- rows ---------------------------------------------------------------------------------
    def _avail_now(self) -> int:
        """Cells right of the gutter (what code and annotations share); -1 before a size."""
        width = self.scrollable_content_region.width
        return width - self._gutter if width > 0 else -1

    def _relayout(self) -> None:
        """Rows per line for the current width (O(lines): on a new trace, width or gutter);
        a line without an annotation is one row, counted without a call per line."""
        self._avail = avail = self._avail_now()
        self._content_width = self.scrollable_content_region.width
        lines = self.lines
        noted = list(compress(range(len(lines)), map(_NOTE, lines)))
        if noted:
            counts = array("i", repeat(1, len(lines)))
            for i in noted:
                counts[i] = rows_of(lines[i], avail)
            self._rows.reset(counts)
        else:
            self._rows.reset_ones(len(lines))
        self._cache.clear()

    def _ensure_layout(self) -> None:
        if self._avail_now() != self._avail:
            self._relayout()
            self._resize_virtual()

    def _resize_virtual(self, bottom: int = 0, *, repaint: bool = True) -> None:
        # A longer trace: new scroll bounds and scrollbar, no screen-wide layout (repaint.py).
        # Following, the rows a page turn showed below the trace's end stay scrollable (blank)
        # until events fill them; ``bottom``: the view's end row a page turn is about to need.
        rows = self._rows.total
        if self.following:
            height = self.scrollable_content_region.height
            bottom = bottom or (round(self.scroll_offset.y) + height if rows > height > 0 else 0)
            rows = max(rows, bottom)
        set_virtual_size(self, Size(self._gutter + self._width, rows), repaint=repaint)

    @property
    def row_count(self) -> int:
        """Rows the trace takes at the current width (the view may show blank rows past them)."""
        self._ensure_layout()
        return self._rows.total

    def row_of(self, index: int) -> int:
        """The first screen row (``scroll_offset.y`` counts these) of line ``index``."""
        self._ensure_layout()
        return self._rows.start(index)

    def line_at(self, row: int) -> int:
        """The index of the line shown at screen row ``row`` (a continuation row belongs to
        the line above it)."""
        self._ensure_layout()
        return self._rows.find(row)

    def _resized(self, *, live: bool = False, changed: Iterable[int] | None = None, below: int | None = None) -> None:
        """After new or changed lines: scroll bounds, the cursor (following: the executing
        line), and a repaint. ``changed`` (the same list re-stated or grown in place, as
        ``_apply`` took it, ``below`` what it returned): only the rows of those lines and of
        the cursor's old and new line are repainted, and every row from line ``below`` on;
        Textual resends every row of a widget refreshed whole, and each repainted row costs
        the compositor a pass over every widget beside it (issue 33). ``None``: the view."""
        lines = self.lines
        if self._gutter != self._gutter_was:
            self._gutter_was = self._gutter
            self._relayout()
            changed = None
        top = self.scroll_offset.y
        self._repainting = set() if changed is not None else None  # the cursor's lines (watch_cursor)
        try:
            self._resize_virtual(repaint=changed is None)
            if self.following:
                self._to_executing(paged=live)
            else:
                self.cursor = min(self.cursor, max(0, len(lines) - 1))
            cursor_lines = self._repainting
        finally:
            self._repainting = None
        if changed is None or cursor_lines is None:
            self.refresh()
        elif self.scroll_offset.y == top:  # a scroll repaints the view itself (ScrollView)
            self._refresh_lines(set(changed) | cursor_lines, below=below)
        if live and self.following and not self._ahead_asked:
            self._ahead_asked = True
            self.call_after_refresh(self._paint_ahead)

    @property
    def painting_ahead(self) -> bool:
        """Whether lines of the next page are still to be painted ahead (``_paint_ahead``):
        a ready signal for tests and measurements."""
        return self._ahead_asked

    def _paint_ahead(self) -> None:
        """Following a live run, paint the lines of the page below the view before the run
        reaches them, ``AHEAD_SLICE`` at a time, each slice its own turn of the event loop
        (a live change waits at most one slice: about 1-2 ms). When the executing line
        passes the bottom, the page it turns to is then drawn from painted lines: a snapshot
        rewrite's page turn painted 12-28 lines never painted before in its frame, 5-10 ms
        (issue 33). An event log's next page is blank rows until the run writes them."""
        self._ahead_asked = False
        if not self.following or not self.is_mounted or not self.lines:
            return
        height = self.scrollable_content_region.height
        rows = self._rows
        start, end = self.scroll_offset.y + height, min(rows.total, self.scroll_offset.y + 2 * height)
        if height <= 0 or start >= end:
            return
        last = min(rows.find(end - 1), len(self.lines) - 1)
        todo = [i for i in range(rows.find(start), last + 1) if i not in self._cache]
        if not todo:
            return
        scroll_x, width = self.scroll_offset.x, self.scrollable_content_region.width
        self._looks_now = self._looks()
        try:
            for index in todo[:AHEAD_SLICE]:
                painted = self._painted(index)
                for sub in range(rows.rows(index)):
                    self._row(painted, sub, scroll_x, width)
        finally:
            self._looks_now = None
        if len(todo) > AHEAD_SLICE:
            self._ahead_asked = True
            self.call_later(self._paint_ahead)

    def _settle_blocks(self, start: int) -> None:
        """Whether a triple-quoted block is open after each line holding one, from ``start`` on."""
        self._block_open = settle_blocks(self.lines, self._blocks, self._block_open, start)

    def _styled(self, index: int) -> Text:
        """Line ``index`` highlighted, with a string block carried in from above."""
        pos = bisect_left(self._blocks, index)
        in_string = self._block_open.get(self._blocks[pos - 1], False) if pos > 0 else False
        return highlight(shown_code(self.lines[index]), in_string)[0]

    @property
    def _gutter(self) -> int:
        return gutter_cells(len(self.lines))

    def executing_index(self) -> int | None:
        """Index of the statement the run is at (``model.executing_line``)."""
        return max(self._live) if self._live else None

    def _to_executing(self, *, paged: bool = False) -> None:
        """The cursor to the executing line (the last line of an ended run); the view centred
        on it, or with ``paged`` (a live change) turned by pages (``_page_to_cursor``)."""
        index = self.executing_index()
        if index is None:
            index = max(0, len(self.lines) - 1) if self._has_state and self._ended() else self.cursor
        self.turned_pages = paged
        if not paged:
            self._move(index, center=True)
            return
        if self._place_cursor(index):
            self._page_to_cursor()

    def _page_to_cursor(self) -> None:
        """Following a live change: the view stays while the cursor's line is on screen; a
        line just past the bottom (the run advanced) turns a page, the line a quarter down;
        one further away is centred within the trace (no blank rows below it)."""
        height = self.scrollable_content_region.height or 1
        top = self.scroll_offset.y
        first = self.row_of(self.cursor)
        last = first + (self._rows.rows(self.cursor) if self.cursor < len(self._rows) else 1) - 1
        if first >= top and last < top + height:
            return
        if top + height <= first < top + height + height // 2:
            y = max(first - height // 4, last - height + 1)
            self._resize_virtual(bottom=y + height)  # blank rows below the trace's end
        else:
            y = max(0, min(first - height // 2, self._rows.total - height))
        self.scroll_to(y=y, animate=False)

    def _ended(self) -> bool:
        return not self._open

    def _place_cursor(self, index: int) -> bool:
        """Put the cursor on line ``index`` (clamped) as the program, not the user, moving it;
        False when there are no lines (the cursor is then 0)."""
        if not self.lines:
            self.cursor = 0
            return False
        self._moving_programmatically = True
        self.cursor = max(0, min(index, len(self.lines) - 1))
        self._moving_programmatically = False
        return True

    def _move(self, index: int, *, center: bool = False) -> None:
        if self._place_cursor(index):
            self.scroll_to_cursor(center=center)

    def move_cursor(self, index: int) -> None:
        """Put the cursor on line index ``index`` and bring it into view."""
        self._move(index, center=True)

    def scroll_to_cursor(self, *, center: bool = False) -> None:
        """Bring the cursor's line into view (its first row at the centre with ``center``),
        its annotation's rows too where the pane is tall enough."""
        height = self.scrollable_content_region.height or 1
        top = self.scroll_offset.y
        first = self.row_of(self.cursor)
        last = first + (self._rows.rows(self.cursor) if self.cursor < len(self._rows) else 1) - 1
        if center:  # within the trace (not into the blank rows a follow may scroll to)
            self.scroll_to(y=max(0, min(first - height // 2, self._rows.total - height)), animate=False)
        elif first < top:
            self.scroll_to(y=first, animate=False)
        elif last >= top + height:
            self.scroll_to(y=min(first, last - height + 1), animate=False)

    def _refresh_lines(self, indexes: Iterable[int], *, below: int | None = None) -> None:
        """Repaint the rows on screen of lines ``indexes`` (an index past the last line: the
        blank rows below it), and every row from line ``below``'s first on; the view whole
        while it has no size."""
        if not self.is_mounted or not self.size:
            self.refresh()
            return
        self._ensure_layout()
        rows = self._rows
        count = min(len(rows), len(self.lines))  # the list may have grown in place, not laid out yet
        region = self.scrollable_content_region
        top, height, width = round(self.scroll_offset.y), region.height, region.width
        spans: list[tuple[int, int]] = []
        for index in indexes:
            if 0 <= index < count:
                start = rows.start(index)
                spans.append((start, start + rows.rows(index)))
            elif index >= count:
                below = count if below is None else min(below, count)
        if below is not None:
            spans.append((rows.start(below), top + height))
        dirty = [Region(0, first - top, width, last - first) for first, last in
                 ((max(a, top), min(b, top + height)) for a, b in spans) if first < last]
        if dirty:
            self.refresh(*dirty)

    # -- follow -------------------------------------------------------------------------------
    def set_following(self, following: bool) -> None:
        if following == self.following:
            return
        self.following = following
        self._resize_virtual()  # blank rows past the end only while following
        if following:
            self._to_executing()
        self.post_message(self.FollowChanged(following))

    def _user_moved(self) -> None:
        if self.following:
            self.set_following(False)

    # -- actions -------------------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        self._user_moved()
        self._move(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._user_moved()
        self._move(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump_start(self) -> None:
        self._user_moved()
        self._move(0)

    def action_jump_end(self) -> None:
        self._user_moved()
        self._move(len(self.lines) - 1)

    def action_jump_executing(self) -> None:
        index = self.executing_index()
        if index is not None:
            self._user_moved()
            self._move(index, center=True)
        else:
            self.notify("No statement is executing", severity="information", markup=False)

    def action_open(self) -> None:
        if not self.lines:
            return
        line = self.lines[self.cursor]
        self.post_message(self.BindingRequested(line, line.binding))

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Move the cursor to the next line (text or annotation) containing ``term``."""
        self.search_term = term
        self._cache.clear()
        needle = term.lower()
        count = len(self.lines)
        for step in range(1, count + 1):
            index = (self.cursor + (-step if backwards else step)) % count
            t = self.lines[index]
            if needle in t.text.lower() or needle in (t.note or "").lower():
                self._user_moved()
                self._move(index, center=True)
                self.refresh()
                return True
        self.refresh()
        return False

    def on_click(self, event) -> None:
        row = event.y + self.scroll_offset.y
        index = self.line_at(row)
        if 0 <= row < self._rows.total and 0 <= index < len(self.lines):
            self._user_moved()
            self._move(index)

    def _on_mouse_scroll_up(self, event) -> None:
        self._user_moved()

    def _on_mouse_scroll_down(self, event) -> None:
        self._user_moved()

    def watch_cursor(self, old: int, new: int) -> None:
        self._cache.pop(old, None)
        self._cache.pop(new, None)
        if self._repainting is not None:
            self._repainting.update((old, new))  # repainted with the change's lines (_resized)
        else:
            self._refresh_lines((old, new))
        if new == 0 and old != 0 and self.lines and not self.following:  # the reader went up to it
            self.post_message(self.AtStart())

    # -- rendering ------------------------------------------------------------------------------
    def _looks(self) -> tuple[Style, Style, Style, Style]:
        """(the widget's, cursor, gutter, match) rich styles. Textual works each out from the
        widget's ancestors when asked (about 0.1 ms): asked once per frame, not per line."""
        if self._looks_now is not None:
            return self._looks_now
        component = self.get_component_rich_style
        return (self.rich_style, component("trace--cursor"), component("trace--gutter"), component("trace--match"))

    def render_lines(self, crop: Region) -> list[Strip]:
        self._looks_now = None
        self._looks_now = self._looks()
        try:
            return self._render_lines(crop)
        finally:
            self._looks_now = None

    def _render_lines(self, crop: Region) -> list[Strip]:
        self._ensure_layout()
        if self.size != self._size_seen:
            # Textual sends no Resize for some layout changes (the strip below growing as a
            # run's full read lands, the run header above as the first screen shows): the
            # trace follows the new height as on_resize does.
            self.on_resize()
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        rows, painted, total, gutter = self._rows, self._painted, self._rows.total, self._gutter
        lines = self.lines  # the run's own list: the live worker grows it, or cuts a half-written line back
        empty = not lines

        def key(y: int) -> tuple[object, ...]:
            """What row ``y`` on screen shows (``RowMemo``): the line's painting, the row
            within it, the horizontal scroll, the width."""
            row = scroll_y + y
            if row >= total or empty:
                return ("blank", width)
            index = rows.find(row)
            if index >= len(lines):  # cut back a moment (a half-written line re-parsed): its delta follows
                return ("blank", width)
            return (painted(index).serial, row - rows.start(index), scroll_x, width, gutter)

        return self._memo.render_lines(self, crop, key, super().render_lines)

    def render_line(self, y: int) -> Strip:
        self._ensure_layout()
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        if row >= self._rows.total or not self.lines:
            return Strip.blank(width, self._looks()[0])
        index = self._rows.find(row)
        if index >= len(self.lines):  # cut back a moment by the live worker (see _render_lines)
            return Strip.blank(width, self._looks()[0])
        return self._row(self._painted(index), row - self._rows.start(index), scroll_x, width)

    def _row(self, p: _Painted, sub: int, scroll_x: int, width: int) -> Strip:
        """Row ``sub`` of the painted line ``p`` as drawn at horizontal scroll ``scroll_x``
        and ``width`` cells; kept with the painting (a page turn draws painted-ahead lines
        without joining their strips again)."""
        key = (sub, scroll_x, width)
        strip = p.rows.get(key)
        if strip is not None:
            return strip
        avail = max(0, width - self._gutter)
        if sub == 0:
            room = avail - p.beside_cells - RIGHT_MARGIN if p.beside is not None else avail
            parts = [p.gutter, p.code.crop_extend(scroll_x, scroll_x + max(0, room), p.pad)]
            if p.beside is not None:
                parts.append(p.beside)  # the rest of the row (RIGHT_MARGIN) is padded below
        else:
            note = p.notes[sub - 1] if sub - 1 < len(p.notes) else Strip.blank(avail, p.pad)
            parts = [p.blank, note.crop_extend(0, avail, p.pad)]
        strip = Strip.join(parts).crop_extend(0, width, p.pad)
        if len(p.rows) >= 8:
            p.rows.clear()  # another scroll or width each time (a reader scrolling sideways)
        p.rows[key] = strip
        return strip

    def _strip(self, text: Text, base: Style) -> Strip:
        return text_strip(text, self.app.console, base)

    def _painted(self, index: int) -> _Painted:
        """Line ``index``'s strips, from the cache or painted now (highlighted, searched)."""
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        t = self.lines[index]
        base, cursor_style, gutter_style, match_style = self._looks()
        if index == self.cursor:
            base = base + cursor_style
        glyph, glyph_style = STATE_GLYPH[t.state]
        gutter = Text(no_wrap=True, end="")
        gutter.append(f"{t.line:>{self._gutter - 3}} ", gutter_style)
        gutter.append(glyph, glyph_style)
        gutter.append(" ")
        code = self._styled(index)
        code.no_wrap, code.end = True, ""
        note_style = _NOTE_STYLE.get(t.state, "dim")
        match = match_style if self.search_term else None
        beside: Strip | None = None
        beside_cells = 0
        notes: list[Strip] = []
        note = shown_note(t)
        if note is not None:
            rows = note_rows(t, self._avail)
            for part in rows or [note]:
                text = Text(no_wrap=True, end="")
                text.append(part, note_style)  # a span: Text.render leaves a Text's own style out
                if match is not None:
                    text.highlight_words([self.search_term or ""], match, case_sensitive=False)
                notes.append(self._strip(text, base))
            if not rows:
                beside, beside_cells, notes = notes[0], cells(note), []
        if match is not None:
            code.highlight_words([self.search_term or ""], match, case_sensitive=False)
        painted = _Painted(self._strip(gutter, base), self._strip(code, base), beside, beside_cells, notes,
                           Strip.blank(self._gutter, base), base, serial(), {})
        self._cache[index] = painted
        while len(self._cache) > CACHE_LINES:
            self._cache.popitem(last=False)
        return painted

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._memo.clear()

    def on_resize(self) -> None:
        # A painted line depends on the width left of the gutter (its annotation's rows), which
        # ``_ensure_layout`` checks (and clears the cache for), not on the height: a height
        # change (the footer settling after the open) emptied the cache while Textual's own
        # kept the rows, and the first change after opening painted every visible line again.
        self._size_seen = self.size
        self._ensure_layout()
        self._resize_virtual()  # blank rows past the end: as many as the new height shows
        self.call_after_refresh(self._follow_now)

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        # Textual drops a scroll while the scrollbar is not (yet) shown: new lines longer than
        # the pane scroll to the executing line once the scrollbar appears.
        if shown and self.following:
            self._to_executing()

    def on_show(self) -> None:
        self.call_after_refresh(self._follow_now)

    def _follow_now(self) -> None:
        """After a resize or the pane shown: the executing line when following, else the
        cursor brought into view. Following is checked when it runs, not when it was asked
        for: the cursor may have been put elsewhere in between (a failed run opened on its
        failure: a stale move would take it to the last line), or following turned off (``2``
        then ``f`` in the compact layout: the cursor was left where the hidden pane had been
        scrolled)."""
        if self.following:
            self._to_executing(paged=self.turned_pages)  # a live trace keeps turning pages
        elif self.lines:
            self.scroll_to_cursor()

