"""Regenerate the SVGs in screenshots/ from the demo VM's run (used by the README).

    python scripts/screenshots.py

Writes a demo project with a fixed clock into a temporary folder, stops the simulated VM
partway (so a statement is executing), opens the explorer headless at several sizes and
saves what it shows.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prose_tui.demo import DemoVM, write_history_runs  # noqa: E402
from prose_tui.tui.app import ProseTUI  # noqa: E402

START = datetime(2026, 3, 14, 9, 30, 0, tzinfo=timezone.utc)
OUT = ROOT / "screenshots"


def clock():
    t = [START]

    def now():
        t[0] += timedelta(seconds=7)
        return t[0]

    return now


def build(project: Path, steps: int) -> None:
    write_history_runs(project, clock=clock())
    vm = DemoVM(project, clock=clock(), run_id="20260314-093000-d3m0a1")
    for i, _ in enumerate(vm.steps()):
        if i + 1 >= steps:
            break
    stamp = (START + timedelta(minutes=10)).timestamp()
    for path in project.rglob("*"):
        os.utime(path, (stamp, stamp))


async def shoot(project: Path, name: str, size: tuple[int, int], keys: list[str]) -> None:
    app = ProseTUI(project, watch=False, clock=lambda: START + timedelta(minutes=4))
    async with app.run_test(size=size) as pilot:
        for _ in range(500):  # until a run's full read is on the widgets
            if app.explorer.loaded_run is not None:
                break
            await pilot.pause(0.02)
        await pilot.press(*keys)
        await pilot.pause(0.2)
        app.save_screenshot(str(OUT / f"{name}.svg"))
    print(f"wrote screenshots/{name}.svg")


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        build(project, steps=22)
        await shoot(project, "explorer-wide", (160, 45), [])
        await shoot(project, "explorer-120x40", (120, 40), [])
        await shoot(project, "trace-80x24", (80, 24), [])
        await shoot(project, "history-80x24", (80, 24), ["left_square_bracket"] * 4)
        await shoot(project, "binding-80x24", (80, 24), ["4", "slash", *"result", "enter", "enter"])
        await shoot(project, "help", (100, 40), ["question_mark"])


if __name__ == "__main__":
    asyncio.run(main())
