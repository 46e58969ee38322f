"""The annotated execution trace: program text, a state glyph per statement, annotations.

A Line-API ``ScrollView`` (as toolong's log view): only visible lines are highlighted and
rendered, as they are painted, and kept in a bounded cache, so a 100,000-line trace costs
what the screen shows and memory per line is the parsed ``TraceLine`` only. A live change
(``lines_changed``) repaints the lines it names; appended lines only extend the view. While *following*, the
cursor sits on the executing statement and moves with it as the run advances; moving the
cursor or scrolling stops following (the border says so) until ``f`` turns it back on.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict

from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from prose_tui.backends.common.text import visible_name
from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.glyphs import STATE_GLYPH
from prose_tui.tui.highlight import highlight
from prose_tui.tui.keys import keyed


def _shown(text: str) -> str:
    """A trace line as one row of cells: tabs expanded, every other control as its picture
    (the parsers already picture controls; this holds for any text a backend hands over)."""
    return visible_name(text.expandtabs(4))


_END_STATES = (None, StatementState.COMPLETE, StatementState.SKIPPED, StatementState.FAILED)
CACHE_LINES = 1024  # rendered lines kept (a few screens)

_NOTE_STYLE = {
    StatementState.EXECUTING: "bold yellow",
    StatementState.RETRYING: "bold magenta",
    StatementState.FAILED: "bold red",
    StatementState.COMPLETE: "green",
    None: "dim",
}


class TraceView(ScrollView, can_focus=True):
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

    class FollowChanged(Message):
        """Following the executing statement was turned on or off."""

        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following

    cursor: reactive[int] = reactive(0)
    following: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[TraceLine] = []
        self._cache: OrderedDict[tuple, Strip] = OrderedDict()
        self._blocks: list[int] = []  # indexes of lines holding triple quotes (a string block may open or close)
        self._block_open: dict[int, bool] = {}  # such a line -> whether a block is open after it
        self._width = 0
        self._gutter_was = 0
        # Indexes whose state is executing/retrying, and whose state is not an end state:
        # kept per change so following costs what changed.
        self._live: set[int] = set()
        self._open: set[int] = set()
        self._has_state = False
        self._moving_programmatically = False
        self.search_term: str | None = None

    # -- data -------------------------------------------------------------------------------
    def set_lines(self, lines: list[TraceLine]) -> None:
        """Show ``lines``; keeps the reader's place, or moves to the executing line when following."""
        self.lines = lines
        self._cache.clear()
        self._blocks = [i for i, t in enumerate(lines) if '"""' in t.text]
        self._settle_blocks(0)
        self._width = max((t.indent + len(t.text) + len(t.note or "") for t in lines), default=0)
        self._live, self._open, self._has_state = set(), set(), False
        for i, t in enumerate(lines):
            self._note_state(i, t)
        self._resized()

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

    def lines_changed(self, changed: set[int] | None) -> None:
        """``lines`` (the same list) changed in place: ``changed`` indexes were added or
        re-stated (``None``: any may have). Costs what changed, not the trace."""
        if changed is None:
            self.set_lines(self.lines)
            return
        lines = self.lines
        changed = {i for i in changed if i < len(lines)}
        if len(self._cache) and any(key[1] >= len(lines) for key in self._cache):
            self._cache = OrderedDict((k, v) for k, v in self._cache.items() if k[1] < len(lines))
        first_block = None
        for gone in [i for i in self._live | self._open if i >= len(lines)]:
            self._live.discard(gone)
            self._open.discard(gone)
        for i in changed:
            self._cache.pop(("line", i), None)
            t = lines[i]
            self._note_state(i, t)
            self._width = max(self._width, t.indent + len(t.text) + len(t.note or ""))
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
        if first_block is not None:
            self._settle_blocks(first_block)
            self._cache = OrderedDict((k, v) for k, v in self._cache.items() if k[1] < first_block)
        self._resized()

    def _resized(self) -> None:
        lines = self.lines
        if self._gutter != self._gutter_was:
            self._gutter_was = self._gutter
            self._cache.clear()
        self.virtual_size = Size(self._gutter + self._width + 4, len(lines))
        if self.following:
            self._to_executing()
        else:
            self.cursor = min(self.cursor, max(0, len(lines) - 1))
        self.refresh()

    def _settle_blocks(self, start: int) -> None:
        """Whether a triple-quoted block is open after each line holding one, from ``start`` on."""
        pos = bisect_left(self._blocks, start)
        state = self._block_open.get(self._blocks[pos - 1], False) if pos > 0 else False
        self._block_open = {i: self._block_open[i] for i in self._blocks[:pos] if i in self._block_open}
        for i in self._blocks[pos:]:
            _, state = highlight(_shown(self.lines[i].text), state)
            self._block_open[i] = state

    def _styled(self, index: int) -> Text:
        """Line ``index`` highlighted, with a string block carried in from above."""
        pos = bisect_left(self._blocks, index)
        in_string = self._block_open.get(self._blocks[pos - 1], False) if pos > 0 else False
        return highlight(_shown(self.lines[index].text), in_string)[0]

    @property
    def _gutter(self) -> int:
        return len(str(len(self.lines))) + 3

    def executing_index(self) -> int | None:
        """Index of the statement the run is at (``model.executing_line``)."""
        return max(self._live) if self._live else None

    def _to_executing(self) -> None:
        index = self.executing_index()
        if index is None:
            index = max(0, len(self.lines) - 1) if self._has_state and self._ended() else self.cursor
        self._move(index, center=True)

    def _ended(self) -> bool:
        return not self._open

    def _move(self, index: int, *, center: bool = False) -> None:
        if not self.lines:
            self.cursor = 0
            return
        self._moving_programmatically = True
        self.cursor = max(0, min(index, len(self.lines) - 1))
        self._moving_programmatically = False
        self.scroll_to_cursor(center=center)

    def move_cursor(self, index: int) -> None:
        """Put the cursor on line index ``index`` and bring it into view."""
        self._move(index, center=True)

    def scroll_to_cursor(self, *, center: bool = False) -> None:
        height = self.scrollable_content_region.height or 1
        top = self.scroll_offset.y
        if center:
            self.scroll_to(y=max(0, self.cursor - height // 2), animate=False)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    # -- follow -------------------------------------------------------------------------------
    def set_following(self, following: bool) -> None:
        if following == self.following:
            return
        self.following = following
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
        index = event.y + self.scroll_offset.y
        if 0 <= index < len(self.lines):
            self._user_moved()
            self._move(index)

    def _on_mouse_scroll_up(self, event) -> None:
        self._user_moved()

    def _on_mouse_scroll_down(self, event) -> None:
        self._user_moved()

    def watch_cursor(self, old: int, new: int) -> None:
        self._cache.pop(("line", old), None)
        self._cache.pop(("line", new), None)
        self.refresh()

    # -- rendering ------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        strip = self._line_strip(index)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    def _line_strip(self, index: int) -> Strip:
        key = ("line", index)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        t = self.lines[index]
        glyph, glyph_style = STATE_GLYPH[t.state]
        gutter_style = self.get_component_rich_style("trace--gutter")
        text = Text(no_wrap=True, end="")
        text.append(f"{t.line:>{self._gutter - 3}} ", gutter_style)
        text.append(glyph, glyph_style)
        text.append(" ")
        text.append_text(self._styled(index))
        if t.note:
            text.append("  ")
            text.append(f"# {t.note}", _NOTE_STYLE.get(t.state, "dim"))
        if self.search_term:
            text.highlight_words([self.search_term], self.get_component_rich_style("trace--match"), case_sensitive=False)
        style = self.rich_style
        if index == self.cursor:
            style = style + self.get_component_rich_style("trace--cursor")
        segments = [Segment(s.text, style + s.style if s.style else style) for s in text.render(self.app.console)]
        strip = Strip(segments).simplify()
        self._cache[key] = strip
        while len(self._cache) > CACHE_LINES:
            self._cache.popitem(last=False)
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def on_resize(self) -> None:
        self._cache.clear()
        if self.following:
            self.call_after_refresh(self._follow)

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        # Textual drops a scroll while the scrollbar is not (yet) shown: new lines longer than
        # the pane scroll to the executing line once the scrollbar appears.
        if shown and self.following:
            self._to_executing()

    def on_show(self) -> None:
        if self.following:
            self.call_after_refresh(self._follow)

    def _follow(self) -> None:
        """After a refresh: to the executing line, unless following stopped meanwhile (a run
        opened on its failure moves the cursor there; this must not move it back)."""
        if self.following:
            self._to_executing()

