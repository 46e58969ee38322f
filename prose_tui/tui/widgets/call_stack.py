"""The call stack: block invocations, innermost first (seeds/filesystem.md, Call Stack)."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from prose_tui.model import Frame

_COLUMNS = ("id", "block", "depth", "status")  # id: the frame's execution_id
EMPTY_NOTE = "no block executing (root scope)"
_STATUS_STYLE = {"executing": "bold yellow", "waiting": "dim", "failed": "bold red", "complete": "green"}


class CallStackView(DataTable):
    """A table of frames: execution_id, block, depth, status. Empty stack: one explanatory
    sentence (``EMPTY_NOTE``) without a header."""

    HELP_GROUP = "Call stack"
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("enter", "open_frame", "Open frame's bindings"),
    ]

    class FrameChosen(Message):
        """Enter on a frame: show its scope (its bindings) and where it was called."""

        def __init__(self, frame: Frame) -> None:
            super().__init__()
            self.frame = frame

    def action_open_frame(self) -> None:
        if self.frames and 0 <= self.cursor_row < len(self.frames):
            self.post_message(self.FrameChosen(self.frames[self.cursor_row]))

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self.frames: list[Frame] = []
        self.search_term = ""

    def on_mount(self) -> None:
        self.set_frames([])

    def set_frames(self, frames: list[Frame], note: str | None = None) -> None:
        """Show ``frames`` (innermost first); ``note`` explains an empty stack. The same frames
        and note as shown: nothing to do (no repaint on a live change that left the stack)."""
        if self.row_count and frames == self.frames and note == getattr(self, "_note", None):
            return
        self._note = note
        self.frames = frames
        row = self.cursor_row
        # Columns are rebuilt as wide as these rows: a DataTable's automatic widths only ever
        # grow and are settled lazily, so they depended on what was shown before (the
        # empty-stack note, a summary) and on when the screen was painted.
        self.clear(columns=True)
        if not frames:
            # One headerless sentence, not a row of four columns: "—" cells beside the note
            # pushed it past a side pane's width (cut, with a horizontal scrollbar, at 120x40).
            self.show_header = False
            note_text = Text(note or EMPTY_NOTE, "dim")
            self.add_column("", width=note_text.cell_len)
            self.add_row(note_text)
            return
        self.show_header = True
        rows = []
        for f in frames:
            status = (f.status or "").lower()
            rows.append((
                Text(str(f.execution_id) if f.execution_id is not None else "root"),
                Text(f.block or "—"),
                Text(str(f.depth) if f.depth is not None else "—"),
                Text(f.status or "—", _STATUS_STYLE.get(status.split()[0] if status else "", "")),
            ))
        for i, label in enumerate(_COLUMNS):
            self.add_column(label, width=max([len(label)] + [r[i].cell_len for r in rows]))
        self.add_rows(rows)
        self.move_cursor(row=min(row, len(frames) - 1))

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Move to the next frame whose block or execution id contains ``term``."""
        needle = term.lower()
        count = len(self.frames)
        for step in range(1, count + 1):
            i = (self.cursor_row + (-step if backwards else step)) % count
            f = self.frames[i]
            if needle in (f.block or "").lower() or needle == str(f.execution_id):
                self.move_cursor(row=i)
                return True
        return False
