"""At 80x24 the first screen is drawn with the panes it shows; the others come after (issue 33).

The compact layout (under 100x28) shows the trace and the context strip. The explorer used to
compose, style and lay out every pane before its first frame (the run list aside: history,
call stack, nodes, bindings tree and value viewer, with their CSS), about a sixth of the time
to the first screen. Now those panes' widgets are mounted just after the frame that shows the
run, or at once when the user asks for one of them first; either way each works fully: its
key focuses it, it shows the run as the other panes do, its keys act.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app_helpers import held_listing, held_run_reads, make_app, settled, wait_until

from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.node_table import NodeTable
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import huge_run  # noqa: E402

HIDDEN_AT_80x24 = (BindingTree, CallStackView, NodeTable, Timeline, ValueViewer)


def _run(tmp_path: Path) -> Path:
    return huge_run(tmp_path, bindings=20, trace_lines=40, agents=0, segments=0)


def _hidden_mounted(screen) -> list[str]:
    return [cls.__name__ for cls in HIDDEN_AT_80x24 if screen.query(cls)]


async def test_the_first_screen_at_80x24_is_drawn_before_the_hidden_panes_are_composed(tmp_path):
    _run(tmp_path)
    app = make_app(tmp_path)
    frames: list[tuple[int, list[str]]] = []  # per frame handed out: trace lines shown, hidden panes' widgets mounted

    def record() -> None:
        screen = app.screen
        trace = screen.query(TraceView)
        frames.append((len(trace.first().lines) if trace else 0, _hidden_mounted(screen)))
        if len(frames) < 1000:
            app.after_frame(record)

    async with app.run_test(size=(80, 24)) as pilot:
        app.after_frame(record)
        await settled(pilot)
        explorer = app.explorer
        assert explorer.compact
        first = next(i for i, (lines, _) in enumerate(frames) if lines)
        # The frame that first shows the run's trace: none of the hidden panes was composed.
        assert frames[first][1] == []
        assert all(mounted == [] for _, mounted in frames[:first + 1])
        # Settled: they are there, ready for their keys.
        assert explorer.rest_composed
        assert _hidden_mounted(explorer) == [cls.__name__ for cls in HIDDEN_AT_80x24]


async def test_a_hidden_pane_asked_for_before_the_first_screen_is_composed_then_and_takes_its_keys(tmp_path, monkeypatch):
    _run(tmp_path)
    release = held_run_reads(monkeypatch)
    listing = held_listing(monkeypatch)
    app = make_app(tmp_path)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.query(TraceView), what="the explorer composed")
            assert _hidden_mounted(explorer) == []
            await pilot.press("4")  # the bindings pane, no run listed yet: composed now
            await wait_until(pilot, lambda: explorer.query(BindingTree) and explorer.query_one(BindingTree).has_focus,
                             what="the bindings pane composed and focused")
            assert explorer.active == 3 and explorer.query_one("#data-pane").display
            # The run is listed, then read: the start-up reads leave the pane the user chose.
            listing.release()
            await wait_until(pilot, lambda: explorer.run_list.runs, what="the run listed")
            assert explorer.current_run is None or not explorer.current_run.trace  # listed, not read
            release.release()
            await settled(pilot)
            assert explorer.active == 3 and explorer.query_one(BindingTree).has_focus
            tree = explorer.query_one(BindingTree)  # the same widget, now showing the run read
            assert "Bindings (20)" in str(tree.root.children[0].label)
            await pilot.press("6")  # the history: its events, as the model holds them
            timeline = explorer.query_one(Timeline)
            await wait_until(pilot, lambda: timeline.has_focus, what="the history pane focused")
            assert len(timeline.events) == len(explorer.nav.events) > 0
    finally:
        listing.release()
        release.release()


async def test_the_value_pane_composed_after_the_first_screen_shows_the_newest_binding(tmp_path):
    _run(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        explorer = app.explorer
        await pilot.press("5")
        viewer = explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.region.height > 0, what="the value pane shown")
        target = viewer.target  # chosen by the painter while the pane was not composed
        assert target is not None and target.path is not None and target.path.name.startswith("value_")
        assert explorer.value_target is target
        await pilot.press("3")  # the call stack: its frames, as the strip shows them
        stack = explorer.query_one(CallStackView)
        await wait_until(pilot, lambda: stack.has_focus, what="the call stack focused")
        assert len(stack.frames) == len(explorer.current_run.call_stack) > 0


async def test_widening_the_terminal_before_the_first_screen_shows_every_pane(tmp_path):
    _run(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.resize_terminal(140, 40)
        await settled(pilot)
        explorer = app.explorer
        assert not explorer.compact
        for cls in HIDDEN_AT_80x24:
            assert explorer.query(cls), cls.__name__
        assert explorer.query_one(BindingTree).region.height > 0
        assert explorer.query_one(Timeline).region.height > 0
