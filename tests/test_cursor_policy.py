"""Who moves the trace cursor, and when: the follow policy (``ExplorerModel.touch``) and the
follow moves the trace defers to after a refresh.

The race these pin (issue 11, "a failed run opens on the failure"): at 120x40 and 200x50 the
trace is resized while the run list takes its width, after the failed run's placeholder was
shown following; the resize deferred a "go to the executing line" to after the next refresh,
the failure jump turned following off in between, and the stale move then put the cursor on
the ended run's last line. Each test here fails when that deferred move ignores ``following``
or when a failed run is left following."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult

from prose_tui.model import Run, RunStatus, StatementState, TraceLine
from prose_tui.viewmodel.explorer_model import ExplorerModel, failure_line
from prose_tui.tui.widgets.trace_view import TraceView

RUN = Path("/runs/20260305-120000-e1e2e3")


def _run(status: RunStatus, path: Path = RUN) -> Run:
    return Run(id=path.name, path=path, status=status)


def _lines(failed_at: int | None = None, count: int = 40) -> list[TraceLine]:
    lines = [TraceLine(line=i + 1, text=f"let s{i} = session \"step {i}\"", state=StatementState.COMPLETE) for i in range(count)]
    if failed_at is not None:
        lines[failed_at] = TraceLine(line=failed_at + 1, text=f"let s{failed_at} = session", state=StatementState.FAILED)
    return lines


class _Trace(App[None]):
    def compose(self) -> ComposeResult:
        yield TraceView(id="trace")


async def test_a_follow_move_deferred_by_a_resize_does_not_undo_a_jump_made_before_it_runs():
    async with _Trace().run_test(size=(60, 12)) as pilot:
        trace = pilot.app.query_one(TraceView)
        trace.set_lines(_lines())
        await pilot.pause()
        assert trace.following and trace.cursor == 39  # an ended run: following rests on the last line
        # The order the explorer hit at 120x40: a resize while following (its move deferred to
        # after the refresh), then the failure jump, then the refresh.
        trace.on_resize()
        trace.set_following(False)
        trace.move_cursor(7)
        await pilot.pause()
        await pilot.pause()
        assert trace.cursor == 7
        trace.on_show()  # the pane shown again defers the same move
        await pilot.pause()
        assert trace.cursor == 7
        trace.set_following(True)  # following again: the deferred moves still follow
        trace.on_resize()
        await pilot.pause()
        assert trace.cursor == 39


def test_a_new_run_follows_unless_it_failed():
    model = ExplorerModel()
    touch = model.touch(_run(RunStatus.RUNNING), None)
    assert (touch.same, touch.follow, touch.failed) == (False, True, False)
    touch = model.touch(_run(RunStatus.FAILED, Path("/runs/other")), None)
    assert (touch.same, touch.follow, touch.failed) == (False, False, True)


def test_a_placeholder_read_as_failed_stops_following_once():
    model = ExplorerModel()
    assert model.touch(_run(RunStatus.UNKNOWN), None).follow is True  # the placeholder, not read yet
    touch = model.touch(_run(RunStatus.FAILED), None)  # its full read: failed
    assert touch.same and touch.follow is False and touch.failed
    touch = model.touch(_run(RunStatus.FAILED), {RUN / "state.md"})  # later changes leave the user's f alone
    assert touch.follow is None and not touch.failed


def test_a_live_run_that_fails_stops_following():
    model = ExplorerModel()
    model.touch(_run(RunStatus.RUNNING), None)
    assert model.touch(_run(RunStatus.RUNNING), {RUN / "state.md"}).follow is None
    touch = model.touch(_run(RunStatus.FAILED), {RUN / "state.md"})
    assert touch.follow is False and touch.failed


def test_follow_on_start_off_opens_runs_without_following():
    model = ExplorerModel(follow_on_start=False)
    assert model.touch(_run(RunStatus.RUNNING), None).follow is False


def test_a_failed_run_rests_on_its_first_failed_line_else_the_last():
    assert failure_line(_lines(failed_at=12)) == 12
    assert failure_line(_lines()) == 39
    assert failure_line([]) == 0
