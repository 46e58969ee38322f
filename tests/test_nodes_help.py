"""Help lists the Nodes pane's own keys, not Textual's table keys (issue 32, item 7).

Before, the Nodes section of help showed DataTable's bindings as they are (``Ctrl+Home  Top``,
``Home  Home``, ``Enter  Select``): words for the widget, not for a user reading nodes.
"""

from __future__ import annotations

from textual.widgets import DataTable

from prose_tui.tui.app import ProseTUI
from prose_tui.tui.screens.help import describe_key


def _nodes_rows() -> list[tuple[str, str]]:
    groups = dict(ProseTUI.binding_groups())
    return [(describe_key(b.key), b.description) for b in groups["Nodes"]]


def test_help_names_the_nodes_keys_in_the_panes_words():
    rows = _nodes_rows()
    assert ("g / Home / Ctrl+Home", "First node") in rows and ("G / End / Ctrl+End", "Last node") in rows
    widget_own = {(describe_key(b.key), b.description) for b in DataTable.BINDINGS}
    assert not widget_own & set(rows), rows  # no "Ctrl+Home Top", "Home Home", "Enter Select"


async def test_g_and_end_move_over_the_nodes_of_a_reactor_run():
    from pathlib import Path

    from app_helpers import make_app, ready, wait_until

    from prose_tui.tui.widgets.node_table import NodeTable

    newsroom = Path(__file__).parent / "fixtures" / "reactor" / "newsroom"
    app = make_app(newsroom)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        table = app.explorer.query_one(NodeTable)
        await wait_until(pilot, lambda: table.row_count == 5, what="the five nodes")
        table.focus()
        await pilot.press("G")
        await wait_until(pilot, lambda: table.cursor_row == 4, what="the cursor on the last node")
        await pilot.press("g")
        await wait_until(pilot, lambda: table.cursor_row == 0, what="the cursor on the first node")
