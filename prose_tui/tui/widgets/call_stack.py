"""The call stack: block invocations, innermost first (seeds/filesystem.md, Call Stack)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from prose_tui.model import Frame

_STATUS_STYLE = {"executing": "bold yellow", "waiting": "dim", "failed": "bold red", "complete": "green"}


class CallStackView(DataTable):
    """A table of frames: execution_id, block, depth, status. Empty stack: one explanatory row."""

    HELP_GROUP = "Call stack"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self.frames: list[Frame] = []
        self.search_term = ""

    def on_mount(self) -> None:
        self.set_frames([])

    def set_frames(self, frames: list[Frame], note: str | None = None) -> None:
        """Show ``frames`` (innermost first); ``note`` explains an empty stack."""
        self.frames = frames
        row = self.cursor_row
        # Columns too: a DataTable column only ever widens, so widths would depend on what
        # was shown before (the empty-stack note, a summary) instead of on these frames.
        self.clear(columns=True)
        self.add_columns("exec id", "block", "depth", "status")
        if not frames:
            self.add_row(Text("—", "dim"), Text(note or "root scope: no block is executing", "dim"), "", "")
            return
        for f in frames:
            status = (f.status or "").lower()
            self.add_row(
                Text(str(f.execution_id) if f.execution_id is not None else "root"),
                Text(f.block or "—"),
                Text(str(f.depth) if f.depth is not None else "—"),
                Text(f.status or "—", _STATUS_STYLE.get(status.split()[0] if status else "", "")),
            )
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
