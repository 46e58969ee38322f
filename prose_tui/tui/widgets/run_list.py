"""The run list pane: every run found, newest first, one dense row each (k9s/htop style):
status glyph, run id cut with an ellipsis, program, age (ticking)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from prose_tui.backends.common.status import age
from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.tui.glyphs import STATUS_SHORT
from prose_tui.tui.keys import keyed

AGE_TICK = 5.0  # seconds between refreshes of the age cells
AGE_WIDTH = 6


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, cut in the middle with ``…`` (run ids keep both
    their date and their unique suffix)."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    head = (width - 1) // 2 + (width - 1) % 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def _label(run: Run) -> str:
    return run.id + (f" ({run.import_handle})" if run.import_handle else "")


def column_widths(runs: list[Run], width: int) -> tuple[int, int]:
    """(id width, program width) for rows ``width`` cells wide: from the content, the id
    first (at least 12 cells), the program gets what is left."""
    longest_id = max((len(_label(r)) for r in runs), default=12)
    longest_prog = max((len(program_name(r.program)) for r in runs), default=8)
    room = max(0, width - 2 - 1 - AGE_WIDTH - 1)  # glyph+space, space before the age
    id_w = min(longest_id, max(12, room - min(longest_prog, 12) - 1))
    prog_w = max(0, min(longest_prog, room - id_w - 1))
    return id_w, prog_w


def preferred_width(runs: list[Run]) -> int:
    """The width the dense rows want (the pane sizes itself from it, within bounds)."""
    longest_id = max((len(_label(r)) for r in runs), default=12)
    longest_prog = max((len(program_name(r.program)) for r in runs), default=8)
    return 2 + min(longest_id, 22) + 1 + min(longest_prog, 18) + 1 + AGE_WIDTH


def run_prompt(run: Run, now: datetime | None = None, widths: tuple[int, int] = (22, 18)) -> Text:
    """One dense row: status glyph, run id (cut with ``…``), program, age right-aligned."""
    glyph, style = STATUS_SHORT[run.status]
    id_w, prog_w = widths
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(glyph, style)
    text.append(" ")
    text.append(cut(_label(run), id_w).ljust(id_w), "bold" if run.status.value == "running" else "")
    if prog_w:
        text.append(" ")
        # A run off disk says where it lives: a database glyph before its program.
        program = ("⛁ " if run.location else "") + program_name(run.program)
        text.append(cut(program, prog_w).ljust(prog_w), "italic dim")
    changed = age(run.updated or run.started, now)  # runs that never said when they changed: since they began
    text.append(" " + ("" if changed == "—" else changed).rjust(AGE_WIDTH), "dim")
    return text


class RunList(OptionList):
    """Posts ``RunChosen`` when the highlighted run changes; ``/`` search filters the rows."""

    BINDINGS = keyed([
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "First run", show=False),
        Binding("G", "last", "Last run", show=False),
    ])
    HELP_GROUP = "Runs"

    class RunChosen(Message):
        """The user moved to another run (``path`` is its folder)."""

        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.runs: list[Run] = []
        self.filter: str = ""
        self._chosen: Path | None = None
        self._clock = None
        self._widths: tuple[int, int] = (22, 18)

    def on_mount(self) -> None:
        self.set_interval(AGE_TICK, self.tick)

    def _now(self) -> datetime:
        return self._clock() if self._clock else datetime.now(timezone.utc)

    def _fit(self) -> None:
        self._widths = column_widths(self.runs, self.scrollable_content_region.width or 40)

    def tick(self) -> None:
        """Redraw every shown row (ages move on while nothing is written)."""
        now = self._now()
        for run in self.runs:
            if self._matches(run):
                self._redraw(run, now)

    def _redraw(self, run: Run, now: datetime) -> None:
        prompt = run_prompt(run, now, self._widths)
        key = str(run.path)
        try:
            if self.get_option(key).prompt == prompt:
                return  # the same row: no repaint of the list (a live change often leaves it as it was)
            self.replace_option_prompt(key, prompt)
        except Exception:  # the row is filtered out
            pass

    def on_resize(self) -> None:
        widths = self._widths
        self._fit()
        if widths != self._widths:
            self.tick()

    @property
    def chosen(self) -> Path | None:
        """The folder of the highlighted run."""
        return self._chosen

    def set_runs(self, runs: list[Run], *, clock=None) -> None:
        """Show ``runs`` (already sorted); keeps the highlighted run where it still exists."""
        self.runs = runs
        if clock is not None:
            self._clock = clock
        now = self._now()
        self._fit()
        keep = self._chosen
        shown = [r for r in runs if self._matches(r)]
        self.clear_options()
        self.add_options(Option(run_prompt(r, now, self._widths), id=str(r.path)) for r in shown)
        if not shown:
            return
        index = next((i for i, r in enumerate(shown) if r.path == keep), 0)
        self.highlighted = index

    def update_run(self, run: Run, *, clock=None) -> None:
        """Redraw one run's row in place."""
        if clock is not None:
            self._clock = clock
        for i, r in enumerate(self.runs):
            if r.path == run.path:
                self.runs[i] = run
        self._redraw(run, self._now())

    def _matches(self, run: Run) -> bool:
        if not self.filter:
            return True
        needle = self.filter.lower()
        return any(needle in (v or "").lower() for v in (run.id, run.program, run.status.value, run.format.value, run.location))

    @property
    def shown_count(self) -> int:
        """Rows shown (after the filter)."""
        return self.option_count

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Filter the list to runs whose id, program, status or format contains ``term``."""
        self.filter = term
        self.set_runs(self.runs)
        return self.option_count > 0

    def select_path(self, path: Path) -> None:
        for i in range(self.option_count):
            if self.get_option_at_index(i).id == str(path):
                self.highlighted = i
                return

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id is None:
            return
        path = Path(event.option.id)
        if path != self._chosen:
            self._chosen = path
            self.post_message(self.RunChosen(path))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self._chosen = Path(event.option.id)
            self.post_message(self.RunChosen(self._chosen))
