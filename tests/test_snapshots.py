"""Snapshot tests: the screens a user sees, pinned as SVGs (pytest-textual-snapshot).

The clock is fixed, file times are pinned (``pinned_copy``), no temporary path is on screen
and the watcher is off, so ages and the status line are stable; each picture is taken once the
explorer has settled (``app_helpers.settled``: runs read, trace scrolled to where it goes).
Update deliberately with ``pytest tests/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

import pytest
from app_helpers import make_app, pinned_copy, settled, wait_until
from conftest import FIXTURES

from prose_tui.tui.screens.help import HelpScreen
from prose_tui.tui.widgets.value_viewer import ValueViewer


@pytest.fixture
def project(tmp_path):
    return pinned_copy(FIXTURES / "project", tmp_path / "project")


async def _final(pilot) -> None:
    """Lay the screen out once more and settle: the picture is then made from the layout of
    what is shown, not from whichever partial updates happened to come last (which changed
    how rows were cut into SVG spans from run to run, with the same text and colours)."""
    pilot.app.screen.refresh(layout=True)
    await settled(pilot)


async def _trace(pilot) -> None:
    await settled(pilot)
    await pilot.press("2")
    await settled(pilot)  # the trace pane shown at 80x24 scrolls to the executing line
    await _final(pilot)


async def _settle(pilot) -> None:
    await settled(pilot)
    await _final(pilot)


async def _help(pilot) -> None:
    await settled(pilot)
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), what="the help screen")
    await pilot.wait_for_scheduled_animations()
    await _final(pilot)


async def _binding(pilot) -> None:
    await settled(pilot)
    await pilot.press("2", "k", "k", "k", "k", "enter")
    await wait_until(pilot, lambda: pilot.app.explorer.query_one(ValueViewer).target is not None
                     and pilot.app.explorer.query_one(ValueViewer).target.title == "parts", what="the binding in the viewer")
    await settled(pilot)
    await _final(pilot)


def test_main_screen_wide(snap_compare, project):
    assert snap_compare(make_app(project), terminal_size=(160, 45), run_before=_settle)


def test_trace_at_80x24(snap_compare, project):
    assert snap_compare(make_app(project), terminal_size=(80, 24), run_before=_trace)


def test_run_list_at_80x24(snap_compare, project):
    assert snap_compare(make_app(project), terminal_size=(80, 24), run_before=_settle)


def test_binding_value_at_80x24(snap_compare, project):
    assert snap_compare(make_app(project), terminal_size=(80, 24), run_before=_binding)


def test_help_screen(snap_compare, project):
    assert snap_compare(make_app(project), terminal_size=(100, 40), run_before=_help)
