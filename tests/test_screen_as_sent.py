"""The terminal shows what a full repaint shows, after every live change (issue 33).

A live change repaints only the rows it changed (the trace's and the timeline's own rows,
``RegionCompositor`` asking each widget only for the rows repainted, ``SentCells`` leaving
out what the terminal shows already). A row left out by mistake is a stale row on the
user's screen until something repaints it: a wrong state mark, an event shown twice, a
cursor in two places. These tests replay every frame the app hands out into a terminal
emulator (pyte, the cells a terminal would show) and compare it, cell by cell with its
colours, with a full repaint of the screen made from nothing cached.
"""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import pyte
import pytest
from rich.console import Console
from textual import app as textual_app
from textual.app import App, ComposeResult
from textual.widget import Widget

from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.widgets.repaint import RegionCompositor, repaint_regions_only
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView
from tests.app_helpers import make_app, settled, wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bytes import WRITER  # noqa: E402
from generate import EventLogWriter  # noqa: E402

Cell = tuple[str, str, str, bool, bool, bool]


class Terminal:
    """A terminal of ``width`` x ``height`` fed every frame an app hands to its display."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.screen = pyte.Screen(width, height)
        self.stream = pyte.Stream(self.screen)
        self.frames = 0

    def feed(self, update) -> None:
        self.stream.feed(update.render_segments(_console(self.width, self.height)))
        self.frames += 1

    def cells(self) -> list[list[Cell]]:
        return _cells(self.screen)


def _console(width: int, height: int) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=width, height=height,
                   legacy_windows=False, safe_box=False)


def _cells(screen: pyte.Screen) -> list[list[Cell]]:
    return [[(c.data, c.fg, c.bg, c.bold, c.reverse, c.underscore)
             for c in (screen.buffer[y][x] for x in range(screen.columns))] for y in range(screen.lines)]


def _listen(monkeypatch, terminal: Terminal) -> None:
    """Every frame the app hands out (after its own filter of what the terminal shows) goes
    to ``terminal``, as the driver would write it."""
    display = textual_app.App._display

    def _display(self, screen, renderable) -> None:
        if renderable is not None and not getattr(self, "_batch_count", 0) and hasattr(renderable, "render_segments"):
            terminal.feed(renderable)
        display(self, screen, renderable)

    monkeypatch.setattr(textual_app.App, "_display", _display)


def _full_repaint(app: App) -> list[list[Cell]]:
    """The screen repainted whole from nothing cached: every widget's styled rows, the
    trace's and the timeline's own line caches and row memos dropped first."""
    screen = app.screen
    for widget in (screen, *screen.walk_children(with_self=False)):
        assert isinstance(widget, Widget)
        widget._styles_cache.clear()
        for name in ("_cache", "_memo"):
            cache = getattr(widget, name, None)
            if hasattr(cache, "clear") and isinstance(widget, (TraceView, Timeline)):
                cache.clear()
    fresh = Terminal(app.size.width, app.size.height)
    fresh.feed(screen._compositor.render_full_update())
    return fresh.cells()


def _differences(shown: list[list[Cell]], full: list[list[Cell]]) -> list[str]:
    out = []
    for y, (a, b) in enumerate(zip(shown, full)):
        if a != b:
            shown_text, full_text = "".join(c[0] for c in a), "".join(c[0] for c in b)
            if shown_text == full_text:
                columns = [x for x, (p, q) in enumerate(zip(a, b)) if p != q]
                out.append(f"row {y}: {shown_text!r}: other colours at columns {columns[0]}-{columns[-1]}")
            else:
                out.append(f"row {y}: shown {shown_text!r}\n        full  {full_text!r}")
    return out


async def _frame_shown(pilot, terminal: Terminal) -> None:
    """Wait until the app has handed out a frame after what it holds now. The screen is
    refreshed so that a frame comes even when nothing changed; that asks each widget for
    its rows as its own cache holds them, so a row a change left unrepainted stays stale."""
    await pilot.pause()
    app = pilot.app
    shown: list[bool] = []
    frames = terminal.frames
    if hasattr(app, "after_frame"):  # the explorer: its frames may send nothing (SentCells)
        app.after_frame(lambda: shown.append(True))
    app.screen.refresh()
    await wait_until(pilot, lambda: shown or terminal.frames > frames, what="a frame handed out")


def _append(writer: EventLogWriter, n: int = 1) -> None:
    """Append ``n`` events from another process (the VM's side)."""
    subprocess.run([sys.executable, "-c", WRITER, str(writer.state), str(writer.count), str(n), "1000"], check=True)
    writer.count += n


@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
async def test_after_each_event_a_second_process_appends_the_terminal_shows_a_full_repaint(tmp_path, monkeypatch, size):
    writer = EventLogWriter(tmp_path)
    writer.append(300)
    terminal = Terminal(*size)
    _listen(monkeypatch, terminal)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.lines and "step_300" in trace.lines[-1].text, what="the log shown")
        await _frame_shown(pilot, terminal)
        assert not _differences(terminal.cells(), _full_repaint(app))
        for n in range(301, 301 + 12):  # enough to turn a page at both sizes
            frames = terminal.frames
            _append(writer)
            await wait_until(pilot, lambda n=n: f"step_{n}" in trace.lines[-1].text and trace.cursor == len(trace.lines) - 1,
                             what=f"step_{n} followed")
            await _frame_shown(pilot, terminal)
            assert terminal.frames > frames, "the change was sent"
            assert f"step_{n}" in "\n".join(terminal.screen.display), f"step_{n} on the terminal"
            differences = _differences(terminal.cells(), _full_repaint(app))
            assert not differences, f"after step_{n}, rows differ from a full repaint:\n" + "\n".join(differences)


class _Trace(App[None]):
    CSS = "TraceView { height: 14; width: 64; } Screen { layout: horizontal; }"

    def compose(self) -> ComposeResult:
        yield TraceView()

    def on_mount(self) -> None:
        repaint_regions_only(self.screen)


_STATES = [StatementState.COMPLETE, StatementState.EXECUTING, StatementState.FAILED, StatementState.RETRYING,
           StatementState.SKIPPED, None]


def _line(rng: random.Random, number: int) -> TraceLine:
    text = rng.choice([f"let v{number} = session: worker", f"parallel {number}:", f'"""note {number}',
                       f"output r{number} = 日本 {number}", f"call step_{number}(x)" + " and more" * rng.randint(0, 9)])
    note = rng.choice([None, None, "failed: " + "the worker gave up " * rng.randint(1, 6), "3 receipts"])
    return TraceLine(line=number, text="  " * rng.randint(0, 3) + text, state=rng.choice(_STATES), note=note)


async def test_a_trace_changed_in_every_way_shows_on_the_terminal_what_a_full_repaint_shows(monkeypatch):
    terminal = Terminal(70, 16)
    _listen(monkeypatch, terminal)
    app = _Trace()
    rng = random.Random(33)
    async with app.run_test(size=(70, 16)) as pilot:
        assert isinstance(app.screen._compositor, RegionCompositor)
        trace = app.query_one(TraceView)
        lines = [_line(rng, i + 1) for i in range(20)]
        trace.set_lines(lines)
        await _frame_shown(pilot, terminal)
        for step in range(120):
            kind = rng.choice(["append", "append", "restate", "restate", "note", "shrink", "new", "key", "follow"])
            if kind == "append":
                first = len(lines)
                lines.extend(_line(rng, len(lines) + 1) for _ in range(rng.randint(1, 3)))
                trace.lines_changed(set(range(first, len(lines))))
            elif kind in ("restate", "note"):
                i = rng.randrange(len(lines))
                old = lines[i]
                lines[i] = TraceLine(line=old.line, text=old.text, state=rng.choice(_STATES),
                                     note=_line(rng, old.line).note if kind == "note" else old.note)
                trace.lines_changed({i})
            elif kind == "shrink" and len(lines) > 5:
                lines = lines[: rng.randint(3, len(lines) - 1)]
                trace.set_lines(list(lines))
                lines = trace.lines
            elif kind == "new":
                changed = list(lines)
                i = rng.randrange(len(changed))
                changed[i] = _line(rng, changed[i].line)
                trace.set_lines(changed)
                lines = trace.lines
            elif kind == "key":
                trace.focus()
                await pilot.press(rng.choice(["up", "down", "pageup", "pagedown", "home", "end"]))
            else:
                trace.set_following(not trace.following)
            await _frame_shown(pilot, terminal)
            differences = _differences(terminal.cells(), _full_repaint(app))
            assert not differences, f"step {step} ({kind}): rows differ from a full repaint:\n" + "\n".join(differences)
