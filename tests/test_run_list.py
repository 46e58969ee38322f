"""The run list widget alone (issue 13, team scale): a virtualised list of many runs.

A minimal app holds one ``RunList``; runs are synthetic. Every test waits on the app
(``pilot.pause``), never on a sleep, and asserts what the widget paints or posts.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from app_helpers import FIXED_NOW, wait_until
from textual.app import App, ComposeResult

import prose_tui.tui.widgets.run_list as run_list_module
from prose_tui.model import Run, RunStatus
from prose_tui.tui.widgets.run_list import RunList

MANY = 10_000
HEIGHT = 20


def runs(n: int) -> list[Run]:
    return [Run(id=f"20260301-{i:06d}-abcdef", path=Path(f"/runs/{i:06d}"), program=f"src/p{i % 7}.prose.md",
                status=RunStatus.FAILED if i % 10 == 3 else RunStatus.COMPLETED,
                started=FIXED_NOW - timedelta(minutes=i), updated=FIXED_NOW - timedelta(minutes=i))
            for i in range(n)]


class ListApp(App):
    CSS = f"RunList {{ width: 50; height: {HEIGHT}; }}"

    def __init__(self) -> None:
        super().__init__()
        self.chosen: list[Path] = []

    def compose(self) -> ComposeResult:
        yield RunList(id="runs")

    def on_run_list_run_chosen(self, message: RunList.RunChosen) -> None:
        self.chosen.append(message.path)


def row_text(widget: RunList, y: int) -> str:
    return "".join(seg.text for seg in widget.render_line(y))


async def shown_with(pilot, n: int) -> RunList:
    widget = pilot.app.query_one(RunList)
    widget.set_runs(runs(n), clock=lambda: FIXED_NOW)
    widget.focus()
    await wait_until(pilot, lambda: widget.virtual_size.height == n and widget.size.height == HEIGHT, what="the rows")
    await pilot.pause()
    return widget


async def test_ten_thousand_runs_render_only_the_rows_on_screen(monkeypatch):
    rendered: list[str] = []
    prompt = run_list_module.run_prompt

    def counting(run, *args, **kwargs):
        rendered.append(run.id)
        return prompt(run, *args, **kwargs)

    monkeypatch.setattr(run_list_module, "run_prompt", counting)
    app = ListApp()
    async with app.run_test(size=(60, 30)) as pilot:
        widget = await shown_with(pilot, MANY)
        assert widget.option_count == MANY and widget.highlighted == 0 and app.chosen == [Path("/runs/000000")]
        assert 0 < len(set(rendered)) <= HEIGHT  # the first screen, not 10,000 rows
        assert row_text(widget, 0).startswith("✓ 20260301-000000-abcdef")
        rendered.clear()
        await pilot.press("G")
        await wait_until(pilot, lambda: widget.scroll_offset.y == MANY - HEIGHT, what="the last screen")
        await pilot.pause()
        assert app.chosen[-1] == Path(f"/runs/{MANY - 1:06d}") and widget.highlighted == MANY - 1
        assert f"{MANY - 1:06d}" in row_text(widget, HEIGHT - 1)
        assert 0 < len(set(rendered)) <= HEIGHT


async def test_ages_tick_and_a_changed_run_repaint_rows_without_a_layout(monkeypatch):
    now = [FIXED_NOW]
    app = ListApp()
    async with app.run_test(size=(60, 30)) as pilot:
        widget = await shown_with(pilot, MANY)
        widget._clock = lambda: now[0]
        layouts: list[bool] = []
        refresh = widget.refresh

        def spy(*regions, **kwargs):
            layouts.append(bool(kwargs.get("layout")))
            return refresh(*regions, **kwargs)

        monkeypatch.setattr(widget, "refresh", spy)
        before = row_text(widget, 1)
        now[0] = FIXED_NOW + timedelta(days=3)
        widget.tick()
        await pilot.pause()
        assert row_text(widget, 1) != before and row_text(widget, 1).rstrip().endswith("d")
        widget.update_run(replace(widget.runs[1], status=RunStatus.FAILED, program="src/renamed.prose.md"))
        await pilot.pause()
        assert row_text(widget, 1).startswith("✗ ") and "rename…" in row_text(widget, 1)  # cut in the middle
        assert layouts and not any(layouts)


async def test_keys_click_and_filter_choose_runs():
    app = ListApp()
    async with app.run_test(size=(60, 30)) as pilot:
        widget = await shown_with(pilot, 200)
        await pilot.press("j", "j", "k", "down")
        assert widget.highlighted == 2 and widget.chosen == Path("/runs/000002")
        await pilot.click(RunList, offset=(3, 5))  # the row at y=5 (no top border or padding)
        await wait_until(pilot, lambda: widget.chosen == Path("/runs/000005"), what="the clicked run")
        assert app.chosen[-1] == Path("/runs/000005")
        widget.select_path(Path("/runs/000013"))  # failed: it stays through the filter below
        assert widget.search("failed") and widget.shown_count == 20
        assert widget.chosen == Path("/runs/000013") and widget.highlighted == 1
        await pilot.pause()
        assert row_text(widget, 0).startswith("✗ 20260301-000003")
        assert not widget.search("no such run") and widget.shown_count == 0
        assert widget.search("") and widget.shown_count == 200 and widget.chosen == Path("/runs/000013")
