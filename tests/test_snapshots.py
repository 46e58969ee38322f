"""Snapshot tests: the screens a user sees, pinned as SVGs (pytest-textual-snapshot).

The clock is fixed and the watcher is off, so ages and the status line are stable.
Update deliberately with ``pytest tests/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

import pytest
from app_helpers import make_app, pinned_copy, ready
from conftest import FIXTURES


@pytest.fixture
def project(tmp_path):
    return pinned_copy(FIXTURES / "project", tmp_path / "project")


async def _trace(pilot) -> None:
    await ready(pilot)
    await pilot.press("2")
    await pilot.pause()


async def _settle(pilot) -> None:
    await ready(pilot)
    await pilot.pause()


async def _help(pilot) -> None:
    await ready(pilot)
    await pilot.press("question_mark")
    await pilot.pause()


async def _binding(pilot) -> None:
    await ready(pilot)
    await pilot.press("2", "k", "k", "k", "k", "enter")
    await pilot.pause()


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
