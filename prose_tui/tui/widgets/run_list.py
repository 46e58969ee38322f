"""The run list pane: every run found, newest first, with status, program and age."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from prose_tui.backends.common.status import age, as_utc
from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.tui.glyphs import STATUS_SHORT
from prose_tui.tui.keys import keyed


def run_prompt(run: Run, now: datetime | None = None) -> Text:
    """Three lines: status glyph and run id; program and format; status, start and age."""
    glyph, style = STATUS_SHORT[run.status]
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(glyph, style)
    text.append(" ")
    text.append(run.id, "bold" if run.status.value == "running" else "")
    if run.import_handle:
        text.append(f" ({run.import_handle})", "dim")
    text.append("\n  ")
    text.append(program_name(run.program), "italic")
    text.append(f" · {run.location or run.format.value}", "dim")  # a run off disk says where it lives
    started = f" · started {as_utc(run.started):%m-%d %H:%M}" if run.started else ""
    changed = age(run.updated, now)
    text.append(f"\n  {run.status.value}{started}" + (f" · {changed} ago" if changed != "—" else ""), "dim")
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

    @property
    def chosen(self) -> Path | None:
        """The folder of the highlighted run."""
        return self._chosen

    def set_runs(self, runs: list[Run], *, clock=None) -> None:
        """Show ``runs`` (already sorted); keeps the highlighted run where it still exists."""
        self.runs = runs
        now = clock() if clock else datetime.now(timezone.utc)
        keep = self._chosen
        shown = [r for r in runs if self._matches(r)]
        self.clear_options()
        self.add_options(Option(run_prompt(r, now), id=str(r.path)) for r in shown)
        if not shown:
            return
        index = next((i for i, r in enumerate(shown) if r.path == keep), 0)
        self.highlighted = index

    def update_run(self, run: Run, *, clock=None) -> None:
        """Redraw one run's row in place."""
        now = clock() if clock else datetime.now(timezone.utc)
        for i, r in enumerate(self.runs):
            if r.path == run.path:
                self.runs[i] = run
        try:
            self.replace_option_prompt(str(run.path), run_prompt(run, now))
        except Exception:  # the row is filtered out
            pass

    def _matches(self, run: Run) -> bool:
        if not self.filter:
            return True
        needle = self.filter.lower()
        return any(needle in (v or "").lower() for v in (run.id, run.program, run.status.value, run.format.value, run.location))

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
