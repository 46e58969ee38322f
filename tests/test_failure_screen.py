"""A failed run on an 80x24 screen (issue 28, part 2): it opens on its failing statement,
marked ✗, with the first line of its error on the first screen and no key pressed; ``!``
always shows the failure; ``!`` and ``x``/``X`` agree, and a recovered failure says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import FIXED_NOW, make_app, ready, settled, wait_until

from prose_tui.demo.simulator import write_history_runs
from prose_tui.model import StatementState
from prose_tui.tui.screens.explorer import VALUE
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

REACTOR = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "reactor" / "monorepo-ci"


def screen(app) -> str:
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


def report(app) -> str:
    target = app.explorer.query_one(ValueViewer).target
    return (target.text or "") if target is not None and target.kind == "section" else ""


@pytest.fixture
def demo_failed(tmp_path) -> Path:
    write_history_runs(tmp_path, clock=lambda: FIXED_NOW)  # the failed run is the newer of the two
    return tmp_path


async def test_a_failed_run_opens_on_its_failing_statement_with_its_error_on_screen(demo_failed):
    app = make_app(demo_failed)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        trace = app.explorer.query_one(TraceView)
        here = trace.lines[trace.cursor]
        assert here.line == 3 and here.state is StatementState.FAILED  # ✗, not ↻ RETRYING
        shown = screen(app)
        assert '✗ session "Publish the site to the docs bucket"' in shown
        assert "403 Forbidden: credentials" in shown  # the error's first line, no key pressed
        assert "RETRYING" not in shown


async def test_bang_shows_the_failure_even_when_the_cursor_is_already_on_it(demo_failed):
    app = make_app(demo_failed)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        for _ in range(2):
            await pilot.press("!")
            await settled(pilot)
            await wait_until(pilot, lambda: "403 Forbidden" in report(app), what="the failure report")
            assert app.explorer.active == VALUE
            text = report(app)
            assert 'session "Publish the site to the docs bucket"' in text and "Attempt:** 3/3" in text
            assert "403 Forbidden: credentials expired" in screen(app)
            await pilot.press("2")  # back to the trace: ! again brings the report back


async def test_bang_and_previous_failure_agree_on_a_reactor_ledger_and_say_recovered():
    if not (REACTOR / "receipts.json").is_file():
        pytest.skip(f"the Reactor corpus is not at {REACTOR}")
    app = make_app(REACTOR)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("!")
        await settled(pilot)
        await wait_until(pilot, lambda: "Recovered" in report(app), what="the recovered failure's report")
        bang = app.explorer.model.nav.position
        assert "This run has no failure" not in [n.message for n in app._notifications]
        assert "test.pkg-api" in report(app)
        await pilot.press("}")  # back to live, then X: the previous failure or retry
        await settled(pilot)
        await pilot.press("X")
        await settled(pilot)
        assert app.explorer.model.nav.position == bang
        assert "Recovered" in report(app)


# -- event-log runs shown on their program (issue 28, part 3) --------------------------------

LAND = REACTOR.parent.parent / "real" / "rawwerks__ypi" / ".prose" / "runs" / "20260213-114703-24e632"


async def test_a_real_rejected_gate_is_marked_on_its_program_line_and_bang_names_it():
    """land.prose: ``2→ gate ✗ rejected`` is program line 22 (``gate **all e2e tests
    pass**``), not line 3 (a comment) because it is the log's third line."""
    if not (LAND / "state.md").is_file():
        pytest.skip(f"the real corpus run is not at {LAND}")
    app = make_app(LAND)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        trace = app.explorer.query_one(TraceView)
        here = trace.lines[trace.cursor]
        assert here.line == 22 and here.state is StatementState.FAILED
        assert "✗ gate **all e2e tests pass**" in screen(app)
        await pilot.press("!")
        await settled(pilot)
        await wait_until(pilot, lambda: "Statement (trace line 22)" in report(app).replace("*", ""),
                         what="the report naming program line 22")
        text = report(app)
        assert "gate **all e2e tests pass**" in text and "trace line 3)" not in text.replace("*", "")
        assert "Fix failing e2e tests before landing." in text  # the ---error's words with the bare "rejected"
