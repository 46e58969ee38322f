"""Themes (issue 15): Textual's themes from the palette and the config; the state glyphs take
the theme's colours; NO_COLOR still wins.

Update the snapshot deliberately with ``pytest tests/test_theme_snapshot.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from app_helpers import FIXED_NOW, make_app, pinned_copy, ready, wait_until
from conftest import FIXTURES

from prose_tui.model import StatementState
from prose_tui.tui import glyphs
from prose_tui.tui.app import ProseTUI
from prose_tui.tui.config import Config


@pytest.fixture
def project(tmp_path):
    return pinned_copy(FIXTURES / "project", tmp_path / "project")


async def _switch_theme_from_the_palette(pilot, name: str = "nord") -> None:
    """What a user does: ctrl+p, "theme", Enter, the theme's name, Enter."""
    await ready(pilot)
    await pilot.press("2", "ctrl+p")
    await pilot.pause()
    await pilot.press(*"theme")
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()
    await pilot.press(*name)
    await pilot.pause()
    await pilot.press("enter")
    await wait_until(pilot, lambda: pilot.app.theme == name and not pilot.app.screen.is_modal,
                     what=f"the {name} theme")
    await pilot.pause()


def _color(app, role: str) -> str:
    return app.get_css_variables()[role].lower()


def test_trace_in_the_nord_theme_chosen_from_the_palette(snap_compare, project):
    assert snap_compare(make_app(project), terminal_size=(80, 24), run_before=_switch_theme_from_the_palette)


async def test_state_glyphs_take_the_theme_colours(project):
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        dark = {role: _color(app, role) for role in ("success", "warning", "secondary")}
        await _switch_theme_from_the_palette(pilot)
        nord = {role: _color(app, role) for role in ("success", "warning", "secondary")}
        assert nord != dark
        assert glyphs.STATE_GLYPH[StatementState.COMPLETE][1].lower() == nord["success"]
        assert glyphs.STATE_GLYPH[StatementState.RETRYING][1].lower() == f"bold {nord['secondary']}"
        screen = app.export_screenshot().lower()
        # The trace's ✓ and ↻ glyphs are drawn in nord's colours, no longer in textual-dark's.
        assert nord["success"] in screen and nord["secondary"] in screen
        assert dark["success"] not in screen
    assert glyphs.STATE_GLYPH[StatementState.COMPLETE][1] == "green"  # plain names again after the app


async def test_the_config_theme_applies_at_start(project):
    app = ProseTUI(project, watch=False, config=Config(theme="dracula"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert app.theme == "dracula"
        assert glyphs.STATE_GLYPH[StatementState.COMPLETE][1].lower() == _color(app, "success")


async def test_no_color_wins_over_the_theme(project, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = ProseTUI(project, watch=False, clock=lambda: FIXED_NOW, config=Config(theme="nord"))
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2")
        await pilot.pause()
        assert app.theme == "nord"
        screen = app.export_screenshot().lower()
        for shown in ("↻", "✓", "running"):
            assert shown in screen
        for role in ("success", "warning", "error", "secondary", "accent"):
            assert _color(app, role) not in screen, role
