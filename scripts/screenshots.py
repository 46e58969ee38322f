"""Regenerate the SVGs in screenshots/ from the demo VM's run (used by the README).

    python scripts/screenshots.py

Writes a demo project with a fixed clock into a temporary folder, stops the simulated VM
partway (so a statement is executing), opens the explorer headless at several sizes and
saves what it shows. ``keys-80x24.svg`` is the keys cheat sheet: drawn from the app's own
bindings (so it says the keys the app has), at 80x24, in the same terminal style.
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
from prose_tui.tui.screens.help import describe_key  # noqa: E402
from prose_tui.tui.widgets.key_footer import KeyFooter  # noqa: E402

# The cheat sheet: (heading, [(action ids shown as one row, label or None for the binding's own)]).
CHEAT_SHEET = [
    ("Panes & live", [(["next_pane"], "next pane (1-6 go to one)"), (["toggle_follow"], "follow the executing line"),
                      (["search", "next_match"], "search the pane, next match"), (["rescan"], "rescan for runs")]),
    ("Trace & value", [(["open"], "open the binding it wrote"), (["jump_executing"], "jump to the executing line"),
                       (["toggle_raw"], "raw / Markdown value"), (["toggle_tail"], "head / tail of a long value")]),
    ("History", [(["step_back_one_event", "step_forward_one_event"], "step back / forward"),
                 (["history_start", "history_live"], "first event / back to live"),
                 (["next_failure_or_retry"], "next failure or retry"),
                 (["history_first_failure"], "first failure and its context")]),
    ("Open & copy", [(["open_pager"], "open in $PAGER"), (["open_editor"], "read-only copy in $EDITOR"),
                     (["edit_file"], "edit the file itself (asks)"),
                     (["copy_menu"], "copy value/line/failure/path")]),
    ("Everywhere", [(["command_palette"], "command palette, themes"), (["mission_control"], "Mission Control"),
                    (["help"], "every key"), (["quit"], "quit")]),
]

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


TURNS = 2000  # turns of the event loop before giving up (never a wall-clock wait)


def busy(app: ProseTUI) -> str | None:
    """What the app still has on its way to the screen, or ``None`` when a capture would
    show what it read: the explorer's own ready signal (``pending``: the reads, the full
    read, the history), then the footer's keys (of the screen on top)."""
    waiting = app.explorer.pending()
    if waiting is not None:
        return waiting
    if not all(footer.up_to_date for footer in app.screen.query(KeyFooter)):
        return "the footer's keys"
    return None


async def settle(pilot, app: ProseTUI) -> None:
    for _ in range(TURNS):
        await pilot.wait_for_scheduled_animations()
        if busy(app) is None:
            await pilot.pause()
            if busy(app) is None:
                return
        await pilot.pause()
    raise SystemExit(f"the explorer did not settle: still waiting for {busy(app)}")


async def shoot(project: Path, name: str, size: tuple[int, int], keys: list[str]) -> None:
    app = ProseTUI(project, watch=False, clock=lambda: START + timedelta(minutes=4))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press(*keys)
        await settle(pilot, app)
        app.save_screenshot(str(OUT / f"{name}.svg"))
    print(f"wrote screenshots/{name}.svg")


def cheat_sheet(path: Path) -> None:
    """The keys cheat sheet as an 80x24 SVG, from the app's bindings (``CHEAT_SHEET`` picks them)."""
    from rich.console import Console, Group
    from rich.table import Table
    from rich.text import Text

    bindings = {b.id: b for _, group in ProseTUI.binding_groups() for b in group if b.id}
    console = Console(record=True, width=80, height=24, file=open(os.devnull, "w"), color_system="truecolor")
    table = Table.grid(padding=(0, 1), expand=True)
    for _ in range(2):
        table.add_column(style="bold cyan", no_wrap=True, width=9)
        table.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    sections: list[list[tuple[Text, Text]]] = []
    for heading, rows in CHEAT_SHEET:
        cells = [(Text(""), Text.assemble((heading, "bold underline")))]
        for ids, label in rows:
            keys = " ".join(describe_key(bindings[i].key).split(" / ")[0] for i in ids)
            cells.append((Text(keys), Text(label or bindings[ids[0]].description)))
        sections.append(cells + [(Text(""), Text(""))])
    total = sum(len(c) for c in sections)
    left: list[tuple[Text, Text]] = []
    right: list[tuple[Text, Text]] = []
    for cells in sections:  # whole sections per column, the left one filled to about half
        (left if not right and len(left) + len(cells) <= (total + 1) // 2 + 2 else right).extend(cells)
    for i in range(max(len(left), len(right))):
        lk, lv = left[i] if i < len(left) else (Text(""), Text(""))
        rk, rv = right[i] if i < len(right) else (Text(""), Text(""))
        table.add_row(lk, lv, rk, rv)
    title = Text.assemble(("prose-tui keys", "bold"), ("  ? in the app lists every key; ctrl+p every action", "dim"))
    note = Text("Rebind any key by action name in the config file: [keys] toggle_follow = \"F\"\n"
                "prose-tui config edit opens it; prose-tui config show lists the names.", "dim")
    console.print(Group(title, Text(""), table, note))
    console.save_svg(str(path), title="prose-tui keys")
    print(f"wrote screenshots/{path.name}")


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    cheat_sheet(OUT / "keys-80x24.svg")
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
