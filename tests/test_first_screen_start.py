"""The first screen's start, third pass (issue 33): the search prompt comes after the first
screen, "/" still opens it at once; the run chosen for the user is opened without a message;
the trace is the pane on screen from the first frame, and the newest event stays in view.

At 80x24 the search prompt (a Textual ``Input`` with its CSS, hidden until "/") is composed
just after the frame that shows the run, with the hidden panes; a "/" typed before composes
it then and the keys typed after the "/" go to it, also while the start-up reads end (they
used to take the focus to the trace, so the rest of the query moved the cursor). The run the
start-up read chooses (the newest, or the running one) is opened by the read itself, not
through the run list's ``RunChosen`` (two frames later); a run the user chooses still is.
At 80x24 the frames before the run is read show the trace pane alone: Textual's default
focus went to the run list, which made it the pane shown until the runs were listed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app_helpers import held_listing, held_run_reads, make_app, settled, wait_until
from textual import events

from prose_tui.tui.screens.explorer import ExplorerScreen
from prose_tui.tui.widgets.search_bar import SearchBar
from prose_tui.tui.widgets.trace_view import TraceView

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import huge_run  # noqa: E402


def _run(tmp_path: Path, name: str = "one") -> Path:
    return huge_run(tmp_path / name, bindings=20, trace_lines=40, agents=0, segments=0)


async def test_the_first_screen_at_80x24_is_drawn_before_the_search_prompt_is_composed(tmp_path):
    _run(tmp_path)
    app = make_app(tmp_path)
    frames: list[tuple[int, bool]] = []  # per frame handed out: trace lines shown, search prompt mounted

    def record() -> None:
        screen = app.screen
        trace = screen.query(TraceView)
        frames.append((len(trace.first().lines) if trace else 0, bool(screen.query(SearchBar))))
        if len(frames) < 1000:
            app.after_frame(record)

    async with app.run_test(size=(80, 24)) as pilot:
        app.after_frame(record)
        await settled(pilot)
        first = next(i for i, (lines, _) in enumerate(frames) if lines)
        assert not any(mounted for _, mounted in frames[:first + 1])  # up to the frame that shows the run
        bar = app.explorer.query_one(SearchBar)  # settled: there, hidden until "/"
        assert not bar.display
        await pilot.press("slash", *"step")
        assert app.focused is bar and bar.value == "step"


async def test_keys_typed_with_a_slash_before_any_run_is_read_reach_the_search_and_keep_it(tmp_path, monkeypatch):
    _run(tmp_path)
    listing, reads = held_listing(monkeypatch), held_run_reads(monkeypatch)
    app = make_app(tmp_path)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            explorer = app.explorer
            await wait_until(pilot, lambda: explorer.query(TraceView), what="the explorer composed")
            assert not explorer.query(SearchBar)  # not composed before the first screen
            # "/" and the keys after it arrive together, as over SSH: all queued before any is handled.
            for key, char in [("slash", "/"), ("j", "j"), ("2", "2")]:  # j, 2 would move or switch pane
                app.post_message(events.Key(key, char))
            await wait_until(pilot, lambda: explorer.query(SearchBar) and explorer.query_one(SearchBar).value == "j2",
                             what="the keys typed with / in the prompt")
            bar = explorer.query_one(SearchBar)
            assert app.focused is bar and bar.display
            listing.release()
            reads.release()
            await settled(pilot)
            # The start-up reads ended (the run on screen) and left the prompt focused: typed on, it takes the keys.
            assert explorer.current_run is not None and explorer.current_run.trace
            assert app.focused is bar
            await pilot.press("k", "1")
            assert bar.value == "j2k1" and explorer.active == 1
    finally:
        listing.release()
        reads.release()


async def test_the_run_chosen_at_start_opens_without_a_run_list_message_and_a_users_choice_with_one(tmp_path, monkeypatch):
    _run(tmp_path, "older")
    _run(tmp_path, "newer")
    chosen: list[Path] = []
    on_chosen = ExplorerScreen.on_run_list_run_chosen

    def counted(self, event):
        chosen.append(event.path)
        return on_chosen(self, event)

    monkeypatch.setattr(ExplorerScreen, "on_run_list_run_chosen", counted)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        explorer = app.explorer
        runs = explorer.run_list
        assert len(runs.runs) == 2 and explorer.current_run is not None
        assert explorer.current_run.path == runs.chosen == runs.runs[0].path  # opened: the newest
        assert chosen == []  # by the read, not through RunChosen
        await pilot.press("1", "j")  # the user moves to the other run: RunChosen opens it
        await wait_until(pilot, lambda: explorer.current_run is not None and explorer.current_run.path == runs.runs[1].path,
                         what="the run the user chose opened")
        assert chosen == [runs.runs[1].path]



async def test_every_frame_at_80x24_shows_the_trace_pane_alone_from_the_first(tmp_path):
    _run(tmp_path, "older")
    _run(tmp_path, "newer")
    app = make_app(tmp_path)
    frames: list[tuple[int, list[str]]] = []  # per frame: trace lines shown, the panes displayed

    def record() -> None:
        screen = app.screen
        if isinstance(screen, ExplorerScreen) and screen.query(TraceView):
            panes = [pane_id for pane_id in ("runs-pane", "trace-pane", "history-pane", "stack-pane", "data-pane", "value-pane")
                     if screen.query_one(f"#{pane_id}").display]
            frames.append((len(screen.query_one(TraceView).lines), panes))
        if len(frames) < 1000:
            app.after_frame(record)

    async with app.run_test(size=(80, 24)) as pilot:
        app.after_frame(record)
        await settled(pilot)  # also: the executing line centred in the trace, at its height now
        first = next(i for i, (lines, _) in enumerate(frames) if lines)
        assert [panes for _, panes in frames[:first + 1]] == [["trace-pane"]] * (first + 1)
        assert app.focused is app.explorer.query_one(TraceView)
