"""The compact strip under the trace at small sizes (lazygit-style: every panel's gist on
screen): the status reason in full, the innermost frames or active constructs, the newest
binding (name, size, first line). It shows the moment under the history cursor."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.text import open_regular
from prose_tui.model import Binding, Run
from prose_tui.tui.glyphs import STATUS_BADGE
from prose_tui.tui.widgets.repaint import show_text
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


class ContextStrip(Static):
    """Shown under the trace in the compact layout; ``show`` with the run as of the cursor."""

    DEFAULT_CSS = """
    ContextStrip { height: auto; max-height: 5; padding: 0 1; background: $boost; }
    """

    shown: Text = Text()
    _asked: tuple[Run | None, Binding | None, str | None, str | None, str] | None = None  # show's arguments

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
        screen. It reads no file."""
        self._asked = (view, binding, moment, absent, value_line)
        if view is None:
            text = Text(absent, "yellow") if absent else Text("no run selected", "dim")
        else:
            width = (self.content_region.width or self.app.size.width - 2) - 1
            text = strip_text(view, binding, value_line, moment, width)
        # Unchanged: no repaint; the same number of rows: a repaint of the strip alone.
        if show_text(self, text, shown=self.shown):
            self.shown = text
