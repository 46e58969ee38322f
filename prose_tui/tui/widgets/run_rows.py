"""The run list's dense rows (k9s/htop style), apart from the widget that paints them.

One row per run: status glyph, run id (cut in the middle with ``…``), program, age
right-aligned. Column widths come from the content (:class:`Measure` keeps the longest id
and program so 100,000 runs are not walked again for every row or layout).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from rich.text import Text

from prose_tui.backends.common.status import ahead_of, age, as_utc
from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.tui.glyphs import STATUS_SHORT

AGE_WIDTH = 6  # cells of the age column ("59 min", "12 d")
ID_WANTED = 48  # most cells the id column asks the pane for (whole ids: 22 cells, or 41 for the long ones)
PROGRAM_WANTED = 18  # most cells the program column asks the pane for
MIN_ID = 12  # cells the id keeps however narrow the pane
STATUS_WIDTH = 11  # the status word ("interrupted"), where the row has room for it
STARTED_WIDTH = 16  # the start time, UTC ("2026-05-14 00:25"), likewise
DB_MARK = "⛁ "  # before the program of a run that lives off disk (a database)


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


def label(run: Run) -> str:
    """The id column's text: the run id, and the import handle of an imported run."""
    return run.id + (f" ({run.import_handle})" if run.import_handle else "")


def program(run: Run) -> str:
    """The program column's text (a database run's marked with :data:`DB_MARK`)."""
    return (DB_MARK if run.location else "") + program_name(run.program)


@dataclass(slots=True)
class Measure:
    """The longest id label and program name (in characters) of a set of runs; 12 and 8 for none."""

    longest_id: int = 12
    longest_prog: int = 8
    empty: bool = True

    @classmethod
    def of(cls, runs: Iterable[Run]) -> Measure:
        m = cls()
        for run in runs:
            m.add(run)
        return m

    def add(self, run: Run) -> bool:
        """Take ``run`` into account; ``True`` when a column got longer (or this was the first run)."""
        id_len, prog_len = len(label(run)), len(program_name(run.program))
        if self.empty:
            self.longest_id, self.longest_prog, self.empty = id_len, prog_len, False
            return True
        grew = id_len > self.longest_id or prog_len > self.longest_prog
        self.longest_id = max(self.longest_id, id_len)
        self.longest_prog = max(self.longest_prog, prog_len)
        return grew

    def widths(self, width: int) -> tuple[int, ...]:
        """(id width, program width) for rows ``width`` cells wide: the id first (at least 12
        cells), the program gets what is left. Where whole ids and programs leave room for
        them (a run list across the screen), the status word and the start time too:
        (id width, program width, ``STATUS_WIDTH``, ``STARTED_WIDTH``)."""
        room = max(0, width - 2 - 1 - AGE_WIDTH - 1)  # glyph+space, space before the age
        id_w = min(self.longest_id, max(MIN_ID, room - min(self.longest_prog, 12) - 1))
        prog_w = max(0, min(self.longest_prog, room - id_w - 1))
        extras = 1 + STATUS_WIDTH + 1 + STARTED_WIDTH
        if id_w == self.longest_id and room - id_w - 1 - extras >= min(self.longest_prog, PROGRAM_WANTED):
            return id_w, min(self.longest_prog, room - id_w - 1 - extras), STATUS_WIDTH, STARTED_WIDTH
        return id_w, prog_w

    @property
    def preferred(self) -> int:
        """The width (cells) the rows want; the pane sizes itself from it, within bounds."""
        return self.wanted(programs_known=True)

    def wanted(self, *, programs_known: bool) -> int:
        """The width (cells) the rows want. ``programs_known=False``: rows of runs not read
        yet, whose program column is counted at its widest (``PROGRAM_WANTED``), so that the
        pane sized from them need not widen once the programs are read."""
        prog = min(self.longest_prog, PROGRAM_WANTED) if programs_known else PROGRAM_WANTED
        return 2 + min(self.longest_id, ID_WANTED) + 1 + prog + 1 + AGE_WIDTH


class RunRows(list[Run]):
    """The run list's runs, in order, with their :class:`Measure` kept beside them (whoever
    changes an item calls ``measure.add``)."""

    def __init__(self, runs: Iterable[Run] = ()) -> None:
        super().__init__(runs)
        self.measure = Measure.of(self)


def column_widths(runs: list[Run], width: int) -> tuple[int, ...]:
    """(id width, program width) for rows of ``runs`` ``width`` cells wide (see :meth:`Measure.widths`)."""
    return Measure.of(runs).widths(width)


def preferred_width(runs: list[Run], *, programs_known: bool = True) -> int:
    """The width (cells) the dense rows of ``runs`` want (see :meth:`Measure.wanted`): O(1)
    for the run list's own :class:`RunRows`, O(len(runs)) for any other list."""
    return (runs.measure if isinstance(runs, RunRows) else Measure.of(runs)).wanted(programs_known=programs_known)


def age_text(run: Run, now: datetime | None) -> str:
    """The age cell: since the run last changed (or began, when it never said); blank when
    unknown. A time in the future (a VM's wrong clock: a run id dated 2099) is no age: the
    state file's modification time decides instead, as for an ``updated:`` header in the
    future (``status.distrust_future``), else the cell is blank."""
    now = now or datetime.now(timezone.utc)
    when = run.updated or run.started
    if ahead_of(when, now) is not None:
        mtime = datetime.fromtimestamp(run.state_mtime, timezone.utc) if run.state_mtime else None
        when = mtime if ahead_of(mtime, now) is None else None
    changed = age(when, now)
    return "" if changed == "—" else changed


def row_key(run: Run, now: datetime | None, widths: tuple[int, ...]) -> tuple:
    """Everything a row's look depends on (a cache key: equal keys, equal rows). The glyph's
    style is in it, so a theme change misses the cache."""
    return (run.id, run.import_handle, STATUS_SHORT[run.status], run.program, bool(run.location),
            age_text(run, now), run.started if len(widths) > 3 else None, widths)


def run_prompt(run: Run, now: datetime | None = None, widths: tuple[int, ...] = (22, 18)) -> Text:
    """One dense row: status glyph, run id (cut with ``…``), program, age right-aligned;
    with ``widths`` of four (see :meth:`Measure.widths`) the status word after the id and
    the start time (UTC) before the age, as ``prose-tui runs`` prints them."""
    glyph, style = STATUS_SHORT[run.status]
    id_w, prog_w = widths[0], widths[1]
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(glyph, style)
    text.append(" ")
    text.append(cut(label(run), id_w).ljust(id_w), "bold" if run.status.value == "running" else "")
    if len(widths) > 2:
        text.append(" ")
        text.append(run.status.value.ljust(widths[2]), style)
    if prog_w:
        text.append(" ")
        text.append(cut(program(run), prog_w).ljust(prog_w), "italic dim")
    if len(widths) > 3:
        started = as_utc(run.started)
        text.append(" " + (started.strftime("%Y-%m-%d %H:%M") if started else "—").ljust(widths[3]), "dim")
    text.append(" " + age_text(run, now).rjust(AGE_WIDTH), "dim")
    return text
