"""Pilot tests: real keys through the explorer's main flows, at 80x24 and wide."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from app_helpers import held_run_reads, make_app, ready, settled, tree_digest, wait_until
from conftest import FIXTURES

from prose_tui.tui.screens.help import HelpScreen
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

PROJECT = FIXTURES / "project"
PAUSED = PROJECT / ".prose" / "runs" / "20260301-100000-a1b2c3"


def status_text(app) -> str:
    return str(app.explorer.query_one(StatusLine).render())


async def test_run_list_newest_first_and_trace_follows_the_retrying_statement():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        runs = app.explorer.query_one(RunList)
        assert [r.id for r in runs.runs] == ["20260301-100000-a1b2c3", "20260228-090000-d4e5f6"]
        assert app.explorer.active == 1  # several runs: open on the newest run's trace
        await pilot.press("2")
        trace = app.explorer.query_one(TraceView)
        assert app.explorer.active == 1 and trace.has_focus
        assert trace.following
        assert trace.lines[trace.cursor].line == 47
        assert "RETRYING" in trace.lines[trace.cursor].note
        # The line is on screen: the trace scrolled to it.
        top = trace.scroll_offset.y
        assert top <= trace.row_of(trace.cursor) < top + trace.scrollable_content_region.height


async def test_moving_stops_following_and_f_resumes():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2", "k", "k")
        trace = app.explorer.query_one(TraceView)
        assert not trace.following
        assert trace.lines[trace.cursor].line == 45
        # The status line follows a message the trace posts: a turn or more later.
        await wait_until(pilot, lambda: "follow off" in status_text(app), what="the status line saying follow off")
        assert "paused" in app.explorer.query_one("#trace-pane").border_title
        await pilot.press("f")
        assert trace.following and trace.lines[trace.cursor].line == 47
        await wait_until(pilot, lambda: "follow on" in status_text(app), what="the status line saying follow on")


async def test_enter_on_a_trace_line_opens_its_binding_in_the_value_pane():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2", "k", "k", "k", "k")  # line 43: let parts = session ... --> bindings/parts__43.md
        trace = app.explorer.query_one(TraceView)
        assert trace.lines[trace.cursor].line == 43
        await pilot.press("enter")
        viewer = app.explorer.query_one(ValueViewer)
        # The request bubbles to the screen, and the value is read in a worker.
        await wait_until(pilot, lambda: app.explorer.active == 4 and viewer.target is not None and not viewer.reading,
                         what="the binding read into the value pane")  # narrow layout: the value pane
        assert viewer.target.binding.name == "parts" and viewer.target.binding.execution_id == 43
        head = str(viewer.query_one("#value-head").render())
        assert "parts" in head and "execution 43" in head
        assert viewer.text.strip()  # the value below the header, not empty
        assert not viewer.text.lstrip().startswith("# parts")  # header is not part of the value


async def test_raw_toggle_and_tree_selection_of_an_agent_segment():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("4")
        tree = app.explorer.query_one(BindingTree)
        assert tree.has_focus
        await pilot.press("slash", *"002", "enter")
        viewer = app.explorer.query_one(ValueViewer)
        # The search reveals the node after a refresh; the choice bubbles; a worker reads it.
        await wait_until(pilot, lambda: viewer.target is not None and viewer.target.kind == "segment" and not viewer.reading,
                         what="the segment read into the value pane")
        assert viewer.target.kind == "segment" and viewer.target.path.name == "captain-002.md"
        assert "Plan the guide" in viewer.text
        await pilot.press("5", "r")
        assert viewer.raw


async def test_the_binding_tree_paints_its_rows_again_at_a_new_width():
    """A resize repaints the tree's rows in its new place and width (it no longer lays the
    whole screen out for it): the same rows, none missing, nothing of the old place left."""
    app = make_app(PROJECT)
    async with app.run_test(size=(160, 50)) as pilot:  # 50 rows: the run list's band above leaves the tree 6+
        await ready(pilot)
        await pilot.press("4")
        tree = app.explorer.query_one(BindingTree)

        def rows() -> list[str]:
            region = tree.scrollable_content_region
            lines = ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]
            return [line[region.x:region.right].rstrip() for line in lines[region.y:region.bottom]]

        await pilot.pause()
        wide, wide_x = rows(), tree.scrollable_content_region.x
        assert sum(1 for row in wide if row) > 5
        await pilot.resize_terminal(120, 50)
        # The app's size changes at once, the screen's outer size at its (debounced) layout.
        await wait_until(pilot, lambda: app.screen.outer_size.width == 120, what="the narrower screen laid out")
        await settled(pilot)
        assert tree.scrollable_content_region.x != wide_x, "the tree moved"
        narrow = rows()
        n = min(len(narrow), len(wide))  # a scrollbar may come or go at the bottom
        assert n > 5 and narrow[:n] == wide[:n]


async def test_call_stack_shows_frames_innermost_first():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("3")
        table = app.explorer.query_one(CallStackView)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[0] for r in rows] == ["43", "42", "41"]
        assert rows[0][3] == "executing" and rows[1][3] == "waiting"


async def test_slash_searches_the_current_pane_and_n_repeats():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2", "slash")
        await pilot.press(*"outline", "enter")
        trace = app.explorer.query_one(TraceView)
        first = trace.lines[trace.cursor]
        assert "outline" in (first.text + (first.note or "")).lower()
        await pilot.press("n")
        second = trace.lines[trace.cursor]
        assert second.line != first.line and "outline" in (second.text + (second.note or "")).lower()
        await pilot.press("slash", *"no-such-thing", "enter")
        await pilot.pause()
        assert any("no match" in message for message in app.notified)


async def test_tab_cycles_panes_and_help_lists_every_binding():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        seen = []
        for _ in range(6):
            await pilot.press("tab")
            seen.append(app.explorer.active)
        assert seen == [2, 3, 4, 5, 0, 1]
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.groups
        described = {b.description for _, group in table for b in group}
        for expected in ("Follow", "Search", "Next pane", "Open binding", "Raw/Markdown", "Quit", "Command palette"):
            assert expected in described
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_command_palette_opens_a_run_by_id():
    app = make_app(PROJECT)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        assert app.explorer.current_run.id == "20260301-100000-a1b2c3"
        await pilot.press("ctrl+p")
        await pilot.press(*"open run 20260228")
        await wait_until(pilot, lambda: "20260228" in str(app.screen.query("CommandList").first().get_option_at_index(0).prompt) if app.screen.query("CommandList") and app.screen.query("CommandList").first().option_count else False, what="palette hits")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.explorer.current_run.id == "20260228-090000-d4e5f6", what="run to open")


async def test_q_quits():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("q")
    assert app.return_code == 0


async def test_exploring_leaves_the_run_tree_byte_for_byte_unchanged():
    before = tree_digest(PROJECT)
    app = make_app(PROJECT, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        for keys in (["2", "enter"], ["4", "j", "j", "j", "enter"], ["5", "r", "t"], ["1", "j"], ["2", "f"]):
            await pilot.press(*keys)
        await settled(pilot)  # the run chosen with "1 j" read in full and shown
    assert tree_digest(PROJECT) == before


@pytest.mark.parametrize("path", [PAUSED, PAUSED / "state.md"])
async def test_pointing_at_one_run_opens_it_in_the_trace(path):
    app = make_app(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert app.explorer.current_run.id == "20260301-100000-a1b2c3"
        assert app.explorer.active == 1


async def test_a_run_read_after_the_first_layout_is_still_centred_on_its_executing_line(monkeypatch):
    """The run is read once the 80x24 screen is laid out (a loaded machine): the strip under
    the trace grows with what the read brings, and Textual sends the trace no Resize for
    that. It stayed centred for the taller pane, a row off; ``settled`` waited forever."""
    release = held_run_reads(monkeypatch)
    app = make_app(PAUSED)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            trace = app.explorer.query_one(TraceView)
            await wait_until(pilot, lambda: trace.size.height > 0, what="the trace laid out")
            release.release()
            await settled(pilot)  # the trace centred on the executing line at its height now
            assert app.explorer.active == 1 and trace.cursor == trace.executing_index() is not None
    finally:
        release.release()


async def test_no_color_keeps_every_state_readable_by_shape(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(PROJECT)
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2")
        await pilot.pause()
        screen = app.export_screenshot()
        # Colour is gone, the glyphs and words that carry the state are not.
        for shown in ("↻", "✓", "running", "RETRYING"):
            assert shown in screen
        text_svg_colors = {c for c in ("#98c379", "#c678dd") if c in screen}
        assert not text_svg_colors  # the highlighter's colours were filtered out


async def test_a_large_value_opens_in_a_window_that_grows_as_the_reader_scrolls(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-120000-b1g000"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(
        "# Execution State\n\nrun: 20260301-120000-b1g000\nprogram: big.prose\n\n## Execution Trace\n\n"
        "```prose\nlet notes = session \"Take notes\"  # --> bindings/notes.md (complete)\n```\n"
    )
    lines = "".join(f"note {i:06d}: the session wrote this line\n" for i in range(20000))
    (run_dir / "bindings" / "notes.md").write_text(f"# notes\n\nkind: let\n\n---\n\n{lines}")
    app = make_app(run_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.target is not None, what="the binding")
        first = len(viewer.text)
        assert first <= 32 * 1024 and "note 000000" in viewer.text
        assert "scroll down for more" in str(viewer.query_one("#value-warning").render())
        await pilot.press("5", "G")
        await wait_until(pilot, lambda: len(viewer.text) > first, what="the window to grow")
        assert viewer.text.startswith("note 000000")


async def test_a_scope_with_hundreds_of_bindings_opens_in_pages_that_search_still_reaches(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-130000-many00"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(
        "# Execution State\n\nrun: 20260301-130000-many00\nprogram: many.prose\n\n## Execution Trace\n\n"
        "```prose\nsession \"Fan out\"  # <-- EXECUTING\n```\n"
    )
    for i in range(450):
        (run_dir / "bindings" / f"item_{i:03d}.md").write_text(f"# item_{i:03d}\n\nkind: let\n\n---\n\nvalue {i}\n")
    app = make_app(run_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        tree = app.explorer.query_one(BindingTree)
        root_group = next(n for n in tree._walk() if str(n.label).startswith("root ("))
        assert [str(c.label) for c in root_group.children] == ["1–200", "201–400", "401–450"]
        assert all(not c.children for c in root_group.children)  # filled only when opened
        await pilot.press("4", "slash", *"item_417", "enter")
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.target is not None and viewer.target.path.name == "item_417.md"
                         and not viewer.reading, what="item_417 read into the value pane")
        assert viewer.target is not None and viewer.target.path.name == "item_417.md"
        assert "value 417" in viewer.text


async def test_quitting_while_runs_are_still_being_read_is_clean(tmp_path):
    runs = tmp_path / ".prose" / "runs"
    for i in range(1500):
        run_dir = runs / f"20260301-{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-r{i:05d}"
        run_dir.mkdir(parents=True)
        (run_dir / "state.md").write_text(
            f"# Execution State\n\nrun: {run_dir.name}\nprogram: p.prose\n\n## Execution Trace\n\n"
            "```prose\nlet a = session \"x\"  # --> bindings/a.md (complete)\n```\n"
        )
    app = make_app(tmp_path)
    # The reader is held after 20 runs until the app has quit, so the quit always comes first,
    # however fast or loaded the machine is; ``scan_over`` says when the reading thread is done.
    reads: list[Path] = []
    held, scan_over = threading.Event(), threading.Event()
    read, scan = app.workspace._read, app.workspace.scan

    def held_read(path, **kwargs):
        if len(reads) >= 20:
            held.wait(60)
        reads.append(path)
        return read(path, **kwargs)

    def watched_scan(*args, **kwargs):
        try:
            return scan(*args, **kwargs)
        finally:
            scan_over.set()

    app.workspace._read, app.workspace.scan = held_read, watched_scan
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.explorer.query_one(RunList).option_count > 0, what="the listing")
        await pilot.press("q")
    assert app.return_code == 0 and app._exception is None
    read_at_exit = len(reads)
    held.set()
    assert await asyncio.to_thread(scan_over.wait, 60), "the start-up read did not stop after the app quit"
    # Reading stopped with the app: at most the read in hand finished after it quit.
    assert len(reads) <= read_at_exit + 2 and len(app.workspace.runs) < 1500


async def test_after_start_up_the_newest_run_is_highlighted_even_if_an_undated_one_was_read_first(tmp_path):
    runs = tmp_path / ".prose" / "runs"
    state = ("# Execution State\n\nrun: {run}\nprogram: p.prose\nstarted: {started}\n\n## Execution Trace\n\n"
             "```prose\nlet a = session \"x\"  # --> bindings/a.md (complete)\n```\n")
    (runs / "20260301-100000-newest").mkdir(parents=True)
    (runs / "20260301-100000-newest" / "state.md").write_text(state.format(run="20260301-100000-newest", started="2026-03-01T10:00:00Z"))
    (runs / "nightly").mkdir()  # no time in its id: ordered by its folder time until read
    (runs / "nightly" / "state.md").write_text(state.format(run="nightly", started="2025-01-20T10:00:00Z"))
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        run_list = app.explorer.query_one(RunList)
        assert [r.id for r in run_list.runs] == ["20260301-100000-newest", "nightly"]
        assert run_list.highlighted == 0 and app.explorer.current_run.id == "20260301-100000-newest"


async def test_after_frame_calls_back_once_after_the_next_frame_and_keeps_the_newest(tmp_path):
    """``ProseTUI.after_frame``: each callback runs once, after a frame is handed out; while
    no frame comes (an app suspended) only the newest 64 are kept, never an unbounded list."""
    app = make_app(tmp_path)
    frames = [0]
    real_display = app._display

    def display(screen, renderable):
        frames[0] += 1
        return real_display(screen, renderable)

    app._display = display  # type: ignore[method-assign]
    async with app.run_test() as pilot:
        await ready(pilot)
        called: list[tuple[int, int]] = []  # (callback, frames handed out when it ran)
        before = frames[0]
        for i in range(70):  # one turn of the loop: no frame in between
            app.after_frame(lambda i=i: called.append((i, frames[0])))
        assert called == []
        app.screen.refresh()
        await wait_until(pilot, lambda: len(called) == 64, what="the callbacks after the next frame")
        await pilot.pause()
        assert [i for i, _ in called] == list(range(6, 70)), "the newest 64, in order, each once"
        assert all(at > before for _, at in called), "none ran before a frame was handed out"
