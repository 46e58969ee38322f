"""The hidden run list asks for no layout of the screen (issue 33, fourth pass).

At 80x24 the run list's pane is hidden until "1" (or a key that needs it). Given its rows
(the start-up read lists the runs before the first screen, a live run appears), it asked
Textual for a layout of the whole screen (7-15 ms of CPU at 80x24, in a frame the first
screen or a live change may wait for), though nothing shown changes: its size and scrollbars
come with the layout that shows it. Asserted from the widgets that ask Textual's screen for
a layout up to the first screen; and the run list, once shown, has its rows and scrolls
through them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app_helpers import make_app, settled, wait_until
from textual.screen import Screen

from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import huge_run  # noqa: E402

NOT_SHOWN = {"runs"}  # the run list (its pane hidden at 80x24)


async def test_the_hidden_run_list_asks_for_no_layout_before_the_first_screen_at_80x24(tmp_path, monkeypatch):
    for i in range(3):
        huge_run(tmp_path / f"r{i}", bindings=5, trace_lines=30, agents=0, segments=0)
    app = make_app(tmp_path)
    asked: list[set[str]] = []  # per layout of the screen: the ids of the widgets that asked
    shown = [False]
    real = Screen._refresh_layout

    def refresh_layout(screen, *args, **kwargs):
        if not shown[0]:
            asked.append({str(w.id) for ws in screen._layout_widgets.values() for w in ws})
        return real(screen, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", refresh_layout)

    def record() -> None:
        trace = app.screen.query(TraceView)
        if trace and trace.first().lines:
            shown[0] = True
        else:
            app.after_frame(record)

    async with app.run_test(size=(80, 24)) as pilot:
        app.after_frame(record)
        await settled(pilot)
        assert shown[0]
        assert asked  # the probe saw the layouts up to the first screen
        assert sorted(set().union(*asked) & NOT_SHOWN) == []
        # Shown later, the run list has every run's row and scrolls through them.
        await pilot.press("1")
        run_list = app.explorer.query_one(RunList)
        await wait_until(pilot, lambda: run_list.region.height > 0)
        assert len(run_list.runs) == 3
        assert run_list.virtual_size.height >= 3 and run_list.size.height > 0
        assert run_list.max_scroll_y == max(0, run_list.virtual_size.height - run_list.scrollable_content_region.height)
