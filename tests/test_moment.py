"""The cursor is the truth (issue 11): at a past event the trace cursor rests on that event's
statement and the value pane shows what that event wrote (or the event itself, never a
later write); ``}`` restores the live view; a failure report numbers its statement as the
trace shows it; the History rows spend no width on columns with nothing in them.

Model tests run without an app; pilot tests at 80x24 and 120x40 on the failed event-log
run ``triage.prose`` (its log: ``1→ fetch ✓``, ``2→ ∥start security,perf``, ``2a→ security ✓``,
…, ``4→ draft ✗ rate limited`` at event 10; its program: ``security = …`` on line 9,
``let draft = …`` on line 17)."""

from __future__ import annotations

import shutil

import pytest
from app_helpers import make_app, ready, wait_until
from conftest import FIXTURES

from prose_tui.backends import open_run
from prose_tui.viewmodel.explorer_model import ExplorerModel, LivePlace
from prose_tui.tui.screens.history_keys import failure_markdown
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

FAILED_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"
SIZES = [(80, 24), (120, 40)]


def _model(path=FAILED_RUN) -> ExplorerModel:
    model = ExplorerModel()
    model.touch(open_run(path), None)
    model.load_history()
    return model


# -- the model ------------------------------------------------------------------------------------
def test_live_there_is_no_moment_to_focus():
    assert _model().moment_focus() is None


def test_at_a_past_event_the_focus_is_its_statement_and_the_binding_it_wrote():
    model = _model()
    assert model.to(2).moved
    focus = model.moment_focus()
    assert focus is not None and focus.binding is not None and focus.binding.name == "security"
    lines = model.trace_lines()  # the program, annotated from the log up to event 2
    index = model.trace_index(focus.line, lines)
    assert index is not None and lines[index].line == 9 and "security = session" in lines[index].text


def test_an_event_that_wrote_nothing_is_shown_as_itself():
    model = _model()
    model.to(1)
    model.trace_lines()
    focus = model.moment_focus()
    assert focus is not None and focus.binding is None
    assert focus.title == "Event 1 · parallel started"
    assert "2→ ∥start security,perf" in focus.details and "trace line 8" in focus.details


def test_a_binding_written_again_later_is_not_shown_with_its_later_value(tmp_path):
    run_dir = tmp_path / "20260305-120000-e1e2e4"
    shutil.copytree(FAILED_RUN, run_dir)
    state = run_dir / "state.md"
    state.write_text(state.read_text(encoding="utf-8").replace("2b→ perf ✓\n", "2b→ perf ✓\n2a→ security ✓\n"),
                     encoding="utf-8")
    model = _model(run_dir)
    model.to(2)
    model.trace_lines()
    focus = model.moment_focus()
    assert focus is not None and focus.binding is None  # the file holds event 4's write
    assert "written again at event 4" in focus.details


def test_the_live_place_is_kept_once_and_given_back_only_when_live():
    model = _model()
    first, second = LivePlace(following=False, cursor=16, value="failure"), LivePlace(following=True, cursor=0)
    model.remember_live(first)
    model.to(2)
    model.remember_live(second)  # already frozen: the place left is kept
    assert model.take_live_place() is None  # not live yet
    model.live()
    assert model.take_live_place() == first
    assert model.take_live_place() is None  # once


def test_one_numbering_a_log_line_is_named_by_the_program_line_the_trace_shows():
    model = _model()
    model.trace_lines()
    failed = next(t for t in model.run.trace if "rate limited" in t.text)
    assert model.shown_line(failed.line) == 17
    ctx = model.failure_to_open_on()
    assert ctx is not None and ctx.statement is not None
    text = failure_markdown(ctx, statement=(model.shown_line(ctx.statement.line), 'let draft = session "Draft"'))
    assert "(trace line 17)" in text and "logged as `4→ draft ✗ rate limited`" in text
    assert f"(trace line {ctx.statement.line})" not in text


# -- on screen ------------------------------------------------------------------------------------
async def _opened(pilot) -> None:
    explorer = pilot.app.explorer
    await ready(pilot)
    await wait_until(pilot, lambda: explorer.loaded_run is not None and explorer.first_read_done
                     and not explorer.history_pending and explorer.nav.events, what="the failed run and its history")
    viewer = explorer.query_one(ValueViewer)
    await wait_until(pilot, lambda: viewer.target is not None and viewer.target.title.startswith("Failure"),
                     what="the run opened on its failure")


def _cursor_line(app) -> int:
    trace = app.explorer.query_one(TraceView)
    return trace.lines[trace.cursor].line


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_past_event_moves_the_trace_cursor_and_the_value_and_brace_restores_live(size):
    app = make_app(FAILED_RUN)
    async with app.run_test(size=size) as pilot:
        await _opened(pilot)
        explorer, viewer = app.explorer, app.explorer.query_one(ValueViewer)
        assert _cursor_line(app) == 17 and viewer.target.title == "Failure at event 10"
        await pilot.press("left_curly_bracket", "right_square_bracket", "right_square_bracket")
        await wait_until(pilot, lambda: explorer.nav.position == 2, what="the cursor at event 2")
        assert _cursor_line(app) == 9  # security = session: reviewer
        assert viewer.target.title == "security"
        assert "Failure" not in viewer.text and "rate limited" not in viewer.text
        await pilot.press("left_square_bracket")  # event 1 wrote nothing: the event itself
        assert _cursor_line(app) == 8 and viewer.target.title == "Event 1 · parallel started"
        await pilot.press("right_curly_bracket")
        assert explorer.nav.live
        assert _cursor_line(app) == 17 and viewer.target.title == "Failure at event 10"
        assert not explorer.query_one(TraceView).following  # a failed run stays on its failure


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_failure_report_numbers_its_statement_as_the_trace_does(size):
    app = make_app(FAILED_RUN)
    async with app.run_test(size=size) as pilot:
        await _opened(pilot)
        text = app.explorer.query_one(ValueViewer).text
        assert "Statement (trace line 17)" in text.replace("*", "") and "trace line 11" not in text


async def test_history_rows_give_the_event_text_the_width_when_times_are_unknown():
    app = make_app(FAILED_RUN)
    async with app.run_test(size=(120, 40)) as pilot:
        await _opened(pilot)
        await pilot.press("left_curly_bracket", "right_square_bracket", "right_square_bracket")
        timeline = app.explorer.query_one(Timeline)
        await wait_until(pilot, lambda: timeline.cursor == 2, what="the history cursor at event 2")
        timeline.scroll_to(y=0, animate=False)
        await pilot.pause()
        rows = ["".join(seg.text for seg in timeline.render_line(y)).rstrip()
                for y in range(timeline.scrollable_content_region.height)]
        assert rows[1] == " 1 ∥ 2→ ∥start security,perf", rows
        assert not any("--:--:--" in r for r in rows[:13]), rows  # no row on screen has a time


def test_a_write_no_annotation_names_is_placed_on_the_statement_that_assigns_it():
    """A loop's third ``result`` goes to ``bindings/result__3.md``; the trace's annotation
    names only the first (``result__1``). The cursor goes to the statement, not to an
    earlier event's line."""
    from prose_tui.model import TraceLine
    from prose_tui.viewmodel.moment import statement_writing

    trace = [TraceLine(1, "loop until **done** (max: 3):"),
             TraceLine(2, "  let result = session \"Write\"", note="--> bindings/result__1.md", binding="bindings/result__1.md"),
             TraceLine(3, "  letter = session \"Post\""),
             TraceLine(4, "  draft = session \"Revise\"")]
    assert statement_writing(trace, "result__1") == 2  # named by its annotation
    assert statement_writing(trace, "result__3") == 2  # assigned by the statement
    assert statement_writing(trace, "letter") == 3
    assert statement_writing(trace, "draft") == 4
    assert statement_writing(trace, "summary") is None
