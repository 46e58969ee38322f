"""The compact strip under the trace at small sizes (lazygit-style: every panel's gist on
screen): the status reason in full, the innermost frames or active constructs, the newest
binding (name, size, first line). It shows the moment under the history cursor."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.text import open_regular
from prose_tui.model import Binding, Run
from prose_tui.tui.glyphs import STATUS_BADGE
from prose_tui.tui.widgets.repaint import text_strip
from prose_tui.tui.widgets.sizes import human_size


FIRST_LINE_BYTES = 4096  # bytes of a value read for the strip's binding line


def line_of(value: str) -> str:
    """The first non-empty line of ``value`` (the text of a binding's value from its value
    offset), other than a ``---`` rule; ``""`` when there is none."""
    return next((line.strip() for line in value.splitlines() if line.strip() and line.strip() != "---"), "")


def first_line(binding: Binding, limit: int = FIRST_LINE_BYTES, root: Path | None = None) -> str:
    """The first non-empty line of a file binding's value (after its header), ``""`` when it
    cannot be read (missing, encrypted, not a file of its own); the note "outside the run:
    not read" for a file outside the run (``root``: the run's ``Run.root``). It reads the
    file: call it off the UI thread (``Panes`` does, in a worker)."""
    if binding.outside:
        return OUTSIDE_RUN
    if binding.encrypted or not binding.exists:
        return ""
    try:
        with open_regular(binding.path, root=root) as f:
            f.seek(binding.value_offset)
            chunk = f.read(limit).decode("utf-8", errors="replace")
    except OutsideRun:
        return OUTSIDE_RUN
    except OSError:
        return ""
    return line_of(chunk)


def _line(text: Text, width: int) -> Text:
    """``text`` on one line of ``width`` cells, cut with an ellipsis."""
    text.no_wrap, text.overflow = True, "ellipsis"
    text.truncate(max(1, width), overflow="ellipsis")
    return text


def strip_text(view: Run, binding: Binding | None, value_line: str, moment: str | None, width: int = 78) -> Text:
    """The strip's lines for ``view`` (the run as of the cursor), most useful first: the
    status and its full reason (or, at a past event, that event), the innermost frames, the
    newest binding, then active constructs, one line each."""
    badge, style = STATUS_BADGE[view.status]
    head = Text()
    head.append(badge, style)
    if moment:
        head.append(f" {moment}", "bold")
    elif view.status_reason:
        head.append(f" · {view.status_reason}", "italic")
    lines = [head]
    if view.call_stack:
        frames = Text()
        frames.append("⤷ ", "blue")
        for i, frame in enumerate(view.call_stack[:3]):
            if i:
                frames.append("  ‹ ", "dim")
            eid = f"#{frame.execution_id}" if frame.execution_id is not None else ""
            frames.append(f"{frame.block}{eid}", "bold" if i == 0 else "")
            if frame.status:
                frames.append(f" {frame.status}", "dim")
        if len(view.call_stack) > 3:
            frames.append(f"  ‹ +{len(view.call_stack) - 3}", "dim")
        lines.append(_line(frames, width))
    if binding is not None:
        row = Text()
        row.append("◆ ", "cyan")
        row.append(binding.name, "bold")
        row.append(f" {human_size(binding.bytes)}", "dim")
        if binding.failure:
            row.append(f" ✗ {binding.failure}", "bold red")
        if value_line:
            row.append(f"  {value_line}")
        lines.append(_line(row, width))
    for construct in view.constructs[:2]:
        row = Text()
        row.append("∥ ", "blue")
        row.append(construct.title, "bold")
        if construct.items:
            row.append(" · " + " · ".join(i.strip() for i in construct.items[:4]), "dim")
        lines.append(_line(row, width))
    return Text("\n").join(lines)


class ContextStrip(Widget):
    """Shown under the trace in the compact layout; ``show`` with the run as of the cursor.

    Drawn a row at a time (Textual's line API): the status reason wraps over as many rows
    as it needs, every other line is one row, at most ``MAX_ROWS``. A live change usually
    changes one row (the status reason, or the newest binding): only that row is painted
    again. As a ``Static``, the whole strip was wrapped and painted on every change, about
    1.5-2 ms of each frame at 80x24 (issue 33).

    Fewer rows than before (a long reason, "interrupted · nothing changed for over 30 min
    ...", giving way to "running" at the run's first change) are painted in place first, the
    rows below left blank, and the strip shrinks in the frame after: a change of height lays
    out the whole screen (12-15 ms at 80x24), which the change itself then does not wait for.
    More rows are laid out at once: the text needs them."""

    DEFAULT_CSS = """
    ContextStrip { height: auto; max-height: 5; padding: 0 1; background: $boost; }
    """

    MAX_ROWS = 5

    shown: Text = Text()
    _asked: tuple[Run | None, Binding | None, str | None, str | None, str] | None = None  # show's arguments

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: list[Text] = []  # the rows shown, at ``_width`` cells
        self._width = 0
        self._strips: dict[int, Strip] = {}  # painted rows by their place (cleared by what changes them)
        self._held = 0  # rows kept, blank below the text, until the frame that shows fewer rows is out

    def on_resize(self) -> None:
        """Rows are cut to the strip's width: a strip shown before its layout settled (its
        width not final yet) is cut again at the width it has now."""
        if self._asked is not None:
            view, binding, moment, absent, value_line = self._asked
            self.show(view, binding, moment, absent=absent, value_line=value_line)

    def show(self, view: Run | None, binding: Binding | None, moment: str | None, *,
             absent: str | None = None, value_line: str = "") -> None:
        """Show ``view`` (the run as of the cursor), its newest ``binding`` with ``value_line``
        (the first line of its value, read off the UI thread: ``first_line``), the ``moment``
        label when the cursor is not live; without a run, ``absent`` (why none is shown:
        the chosen run is gone from disk) or "no run selected". ``shown`` keeps the text on
        screen. It reads no file. Unchanged: nothing is painted; the same number of rows
        or fewer: the rows that changed are painted (fewer: the strip shrinks after that
        frame); more: the screen is laid out."""
        self._asked = (view, binding, moment, absent, value_line)
        width = max(1, self.content_region.width or self.app.size.width - 2)
        if view is None:
            text = Text(absent, "yellow") if absent else Text("no run selected", "dim")
        else:
            text = strip_text(view, binding, value_line, moment, width - 1)
        if width == self._width and text == self.shown:
            return
        self.shown = text
        rows = self._wrapped(text, width)
        old, self._rows, self._width = self._rows, rows, width
        height = max(len(old), self._held)  # the rows laid out now
        if len(rows) > height or not self.is_mounted:
            self._held = 0
            self._strips.clear()
            self.refresh(layout=True)
            return
        for y in range(height):
            was = old[y] if y < len(old) else None
            now = rows[y] if y < len(rows) else None
            if was != now:
                self._strips.pop(y, None)
                self.refresh(Region(0, y, width, 1))
        if len(rows) < height and not self._held:
            self._held = height
            after_frame = getattr(self.app, "after_frame", None)  # ProseTUI's: just after the frame is out
            (after_frame or self.call_after_refresh)(self._shrink)

    def _shrink(self) -> None:
        """The frame showing fewer rows in place is out: the strip takes the rows it needs."""
        if self._held:
            self._held = 0
            self.refresh(layout=True)

    def _wrapped(self, text: Text, width: int) -> list[Text]:
        """``text``'s lines as rows of ``width`` cells: a line too long (the status reason)
        wraps at words, the others were cut to one row by ``strip_text``."""
        rows: list[Text] = []
        for line in text.split("\n", allow_blank=True):
            line.end = ""
            if line.cell_len <= width:
                rows.append(line)
            else:
                rows.extend(line.wrap(self.app.console, width, overflow="fold"))
            if len(rows) >= self.MAX_ROWS:
                break
        for row in rows:
            row.end = ""
            row.rstrip()
        return rows[:self.MAX_ROWS]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width != self._width and self._asked is not None and width > 0:
            self._rows, self._width = self._wrapped(self.shown, width), width
            self._strips.clear()
        return max(1, len(self._rows), self._held)

    def render_line(self, y: int) -> Strip:
        strip = self._strips.get(y)
        if strip is None:
            base = self.rich_style
            width = self.content_region.width or self._width
            if y < len(self._rows):
                strip = text_strip(self._rows[y], self.app.console, base).crop_extend(0, width, base)
            else:
                strip = Strip.blank(width, base)
            self._strips[y] = strip
        return strip

    def notify_style_update(self) -> None:
        self._strips.clear()  # a theme or a class change: the rows' colours
        super().notify_style_update()
