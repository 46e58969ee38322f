"""The explorer screen at 80x24 and 120x40 (issue 11): layout, zoom, search, the cursor as
the truth, failures where they are, keys that work, nodes. Every test waits on a condition
the app signals (``loaded_run``, focus, widget state), never on a sleep."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from app_helpers import FIXED_NOW, make_app, ready, wait_until
from conftest import FIXTURES
from textual.app import App

from prose_tui.backends import open_run
from prose_tui.backends.common.bindings import failure_of, read_binding
from prose_tui.history import History
from prose_tui.model import Event, EventKind, Node, Run, RunFormat, RunStatus
from prose_tui.model.serialize import binding as binding_json
from prose_tui.viewmodel.explorer_model import ExplorerModel, when_text
from prose_tui.tui.screens.history_keys import failure_markdown
from prose_tui.tui.targets import Target
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.call_stack import CallStackView
from prose_tui.tui.widgets.context_strip import ContextStrip
from prose_tui.tui.widgets.node_table import NodeTable
from prose_tui.tui.widgets.run_list import RunList, column_widths, cut, run_prompt
from prose_tui.tui.widgets.search_bar import SearchBar
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer, looks_like_markdown

PROJECT = FIXTURES / "project"
NEWEST = PROJECT / ".prose" / "runs" / "20260301-100000-a1b2c3"
OLDER = PROJECT / ".prose" / "runs" / "20260228-090000-d4e5f6"
FAILED_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"
SIZES = [(80, 24), (120, 40)]


async def loaded(pilot, path: Path | None = None) -> None:
    """Wait for the first read and for a run's full read to be on the widgets."""
    await ready(pilot)
    explorer = pilot.app.explorer
    await wait_until(pilot, lambda: explorer.loaded_run is not None and (path is None or explorer.loaded_run == path)
                     and explorer.first_read_done, what="the full read of a run")
    await pilot.pause()


def shown(app, selector: str) -> bool:
    widget = app.explorer.query_one(selector)
    return bool(widget.display) and widget.region.width > 0 and widget.region.height > 0


def plain(widget) -> str:
    """The text a Static shows."""
    return widget.shown.plain


def strip_plain(app) -> str:
    return plain(app.explorer.query_one(ContextStrip))


# -- layout ------------------------------------------------------------------------------------------
async def test_80x24_keeps_the_trace_on_screen_with_a_strip_of_the_rest():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot, NEWEST)
        explorer = app.explorer
        assert explorer.active == 1 and shown(app, "#trace-pane") and shown(app, "#strip")
        assert not shown(app, "#runs-pane")
        text = strip_plain(app)
        run = explorer.current_run
        # The whole status reason, the innermost frame, the newest binding with its size.
        assert run.status_reason in " ".join(text.split())
        assert run.call_stack and run.call_stack[0].block in text
        assert "◆" in text and ("KiB" in text or " B" in text)


async def test_120x40_shows_every_pane_and_gives_the_width_to_the_trace():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        for pane in ("#runs-pane", "#trace-pane", "#history-pane", "#stack-pane", "#data-pane", "#value-pane"):
            assert shown(app, pane), pane
        assert not shown(app, "#strip")
        # The trace no narrower than at 80x24 (issue 32): the run list a band over it.
        trace = app.explorer.query_one("#trace-pane").region
        assert trace.width >= 80 and trace.width > app.explorer.query_one("#side").region.width
        assert app.explorer.query_one("#runs-pane").region.bottom <= trace.y
        # One dense row per run.
        runs = app.explorer.query_one(RunList)
        assert runs.option_count == len(runs.runs) == 2
        assert all("\n" not in runs.get_option_at_index(i).prompt.plain for i in range(runs.option_count))


@pytest.mark.parametrize("size", SIZES)
async def test_z_zooms_any_pane_to_the_full_screen_and_back(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        await pilot.press("4", "z")
        data = app.explorer.query_one("#data-pane")
        # ``zoomed`` and ``display`` change at once; the pane's region at the next layout.
        await wait_until(pilot, lambda: app.explorer.zoomed and shown(app, "#data-pane") and data.region.width == size[0],
                         what="the data pane zoomed to the full width")
        for pane in ("#runs-pane", "#trace-pane", "#value-pane", "#history-pane"):
            assert not shown(app, pane)
        await pilot.press("z")
        # compact: the chosen pane, else all
        await wait_until(pilot, lambda: not app.explorer.zoomed and shown(app, "#data-pane")
                         and shown(app, "#trace-pane") == (size[0] >= 100),
                         what="the panes as before the zoom")
        await pilot.press("z", "escape")
        assert not app.explorer.zoomed


async def test_enter_in_the_data_pane_brings_up_the_value_at_80x24():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot, NEWEST)
        await pilot.press("4")
        tree = app.explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: tree.has_focus, what="the tree to have focus")
        node = next(n for n in tree._walk() if n.data is not None and n.data.kind == "binding" and n.line >= 0)
        tree.move_cursor(node)
        await pilot.pause()
        await pilot.press("enter")
        # ``active`` changes at once; the pane has a place on screen after the next layout.
        await wait_until(pilot, lambda: app.explorer.active == 4 and shown(app, "#value-pane"), what="the value pane")
        assert app.explorer.query_one(ValueViewer).target.title == node.data.title
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.explorer.active == 1 and shown(app, "#trace-pane"), what="the trace pane")
        assert not shown(app, "#value-pane")


@pytest.mark.parametrize("size", SIZES)
async def test_pane_keys_typed_fast_end_on_the_last_one(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        await pilot.press("1", "6", "4", "3")
        await pilot.pause()
        assert app.explorer.active == 2
        assert isinstance(app.focused, CallStackView)


# -- run list ----------------------------------------------------------------------------------------
def test_ids_are_cut_in_the_middle_and_widths_come_from_content():
    assert cut("20261123-014949-cd18fc", 13) == "202611…cd18fc"
    assert cut("short", 10) == "short"
    run = Run(id="20261123-014949-cd18fc", path=Path("/r"), program="release-notes.prose", status=RunStatus.RUNNING,
              updated=FIXED_NOW - timedelta(minutes=8))
    id_w, prog_w = column_widths([run], 60)
    assert id_w == 22 and prog_w == len("release-notes.prose")
    row = run_prompt(run, FIXED_NOW, (id_w, prog_w)).plain
    assert row.startswith("● 20261123-014949-cd18fc release-notes.prose") and row.rstrip().endswith("8 min")


async def test_ages_tick_while_nothing_is_written():
    now = [FIXED_NOW]
    app = make_app(PROJECT)
    app.workspace.clock = lambda: now[0]
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        runs = app.explorer.query_one(RunList)
        runs._clock = lambda: now[0]
        before = runs.get_option_at_index(0).prompt.plain
        now[0] = FIXED_NOW + timedelta(days=3)
        runs.tick()
        await pilot.pause()
        after = runs.get_option_at_index(0).prompt.plain
        assert before != after and after.rstrip().endswith("d")


async def test_one_status_vocabulary_in_list_badge_and_status_line():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        explorer = app.explorer
        word = explorer.current_run.status.value
        assert word in explorer.head_text.plain
        # The header above the trace says the status and why: the status line not again.
        assert word not in plain(explorer.query_one(StatusLine))
        await pilot.press("3", "z")  # another pane zoomed: the header is off screen
        await wait_until(pilot, lambda: word in plain(explorer.query_one(StatusLine)),
                         what="the status on the status line once the header is hidden")
        for old in ("DONE", "STOPPED", "RUNNING", "FAILED"):
            assert old not in plain(explorer.query_one(StatusLine))
        await pilot.press("z")
        await wait_until(pilot, lambda: word not in plain(explorer.query_one(StatusLine)),
                         what="the status said once again, by the header")


# -- search ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
async def test_keys_typed_fast_after_slash_go_to_the_visible_search_input(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        await pilot.press("slash", "z", "z", "q")
        bar = app.explorer.query_one(SearchBar)
        assert app.is_running and bar.value == "zzq" and app.focused is bar
        footer_top = app.screen.query_one("KeyFooter").region.y
        assert bar.region.height == 1 and bar.region.y < footer_top  # on screen, above the footer
        await pilot.press("escape")
        assert not bar.display


async def test_n_and_N_go_through_every_hit_also_in_wrapped_lines():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        long = "word " * 60
        text = f"needle first {long} needle second {long} needle third\nplain\nneedle fourth\n" + "filler\n" * 60
        await pilot.press("5")
        viewer = app.explorer.query_one(ValueViewer)
        viewer.show_target(Target("section", "wrapped", text=text))
        await pilot.press("slash", *"needle", "enter")
        rows = [viewer.hit_row]
        for _ in range(3):
            await pilot.press("n")
            rows.append(viewer.hit_row)
        assert rows == sorted(rows) and len(set(rows)) == 4  # four hits, each further down
        await pilot.press("n")
        assert viewer.hit_row == rows[0]  # round to the first
        await pilot.press("N")
        assert viewer.hit_row == rows[-1]


# -- the cursor is the truth ----------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
async def test_a_past_event_is_shown_as_that_moment_everywhere(size):
    app = make_app(FAILED_RUN)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, FAILED_RUN)
        await pilot.press("right_curly_bracket", "left_curly_bracket", "right_square_bracket")
        explorer = app.explorer
        assert explorer.nav.position == 1
        status = plain(explorer.query_one(StatusLine))
        strip = explorer.query_one(ContextStrip)
        said = plain(strip) if strip.display else explorer.head_text.plain  # said once: strip or header
        assert "as of event 1 of 0–" in status and "running" in said  # the run was running then
        assert "failed" not in status and "failed" not in said
        assert "as of event 1" in explorer.query_one("#trace-pane").border_title
        assert ("as of event 1" in explorer.head_text.plain) == (size[0] >= 100)  # compact: title and strip say it


async def test_a_failed_run_opens_on_its_failure_with_the_real_message():
    app = make_app(FAILED_RUN)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot, FAILED_RUN)
        explorer = app.explorer
        viewer = explorer.query_one(ValueViewer)
        assert viewer.target is not None and viewer.target.title.startswith("Failure at event")
        assert "rate limited" in viewer.text or "timeout" in viewer.text
        trace = explorer.query_one(TraceView)
        on = trace.lines[trace.cursor]
        # The program annotated from the log, the cursor on the statement that failed.
        assert on.state.value == "failed" and "draft" in on.text and "rate limited" in on.note
        assert explorer.active == 1  # the trace stays; ! brings the report up
        # 80x24: the strip says the status with its whole reason (the status line not again)
        assert explorer.nav.live and plain(explorer.query_one(ContextStrip)).startswith("✗ failed")
        assert "failed" not in plain(explorer.query_one(StatusLine))
        await pilot.press("exclamation_mark")
        await wait_until(pilot, lambda: explorer.active == 4, what="the value pane with the report")


def test_failure_report_quotes_the_line_and_leaves_out_the_failed_attempt():
    from prose_tui.history import FailureContext

    failed = Event(seq=5, kind=EventKind.STATEMENT_FAILED, text="4→ build ✗ rejected: make: *** [all] Error 2",
                   status="rejected")
    retry = Event(seq=3, kind=EventKind.RETRY, text="4→ retry:2/3")
    ctx = FailureContext(event=failed, statement=None, error="rejected", retries=[retry, failed])
    text = failure_markdown(ctx, ["build: exit 2 · make: *** [all] Error 2"])
    assert "make: *** [all] Error 2" in text and "**Error:** rejected" not in text
    retries = text.split("Retries before it", 1)[1]
    assert "event 3" in retries and "event 5" not in retries


def test_statement_times_slowest_first_and_never_negative():
    t0 = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    events = [
        Event(0, EventKind.STATEMENT_STARTED, "a", time=t0, name="a"),
        Event(1, EventKind.STATEMENT_STARTED, "b", time=t0 + timedelta(seconds=5), name="b"),
        Event(2, EventKind.STATEMENT_STARTED, "c", time=t0 + timedelta(seconds=65), name="c"),
        Event(3, EventKind.STATEMENT_STARTED, "d", time=t0 + timedelta(seconds=60), name="d"),  # backwards
        Event(4, EventKind.RUN_ENDED, "end", time=t0 + timedelta(seconds=70)),
    ]
    model = ExplorerModel()
    model.run = Run(id="r", path=Path("/r"))
    model.nav.history = History(events=events, origin="log", note="")
    times = model.statement_times()
    assert [t.name for t in times][:2] == ["b", "d"]
    assert all(t.seconds >= 0 for t in times)
    assert when_text(t0, today=t0).count(":") == 2 and "2026-03-01" in when_text(t0, today=t0 + timedelta(days=2))


def test_statement_times_take_event_times_with_and_without_a_zone():
    t0 = datetime(2026, 3, 1, 10, 0)  # no zone (as a SQLite timestamp may be), then one with it
    events = [Event(0, EventKind.STATEMENT_STARTED, "a", time=t0, name="a"),
              Event(1, EventKind.STATEMENT_STARTED, "b", time=(t0 + timedelta(seconds=30)).replace(tzinfo=timezone.utc), name="b"),
              Event(2, EventKind.RUN_ENDED, "end", time=t0 + timedelta(seconds=40))]
    model = ExplorerModel()
    model.run = Run(id="r", path=Path("/r"))
    model.nav.history = History(events=events, origin="log", note="")
    assert [(t.name, t.seconds) for t in model.statement_times()] == [("a", 30.0), ("b", 10.0)]


# -- failures where they are ---------------------------------------------------------------------------
def test_exit_codes_and_error_lines_mark_the_binding_and_reach_json(tmp_path):
    root = tmp_path / "bindings"
    root.mkdir()
    (root / "e2e.md").write_text("# e2e\n\nkind: let\nexit_code: 2\n\n---\n\nrunning tests\nmake: *** [Makefile:24: e2e] Error 1\n")
    (root / "ok.md").write_text("# ok\n\nkind: let\nexit_code: 0\n\n---\n\nall good\n")
    bad, good = read_binding(root / "e2e.md", root), read_binding(root / "ok.md", root)
    assert bad.failure == "exit 2 · make: *** [Makefile:24: e2e] Error 1"
    assert good.failure is None
    assert binding_json(bad)["failure"] == bad.failure and "failure" not in binding_json(good)
    assert failure_of({}, "Traceback (most recent call last):\n  x") == "Traceback (most recent call last):"


async def test_a_binding_that_records_exit_1_marks_its_statement(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    run_dir = project / ".prose" / "runs" / OLDER.name
    draft = run_dir / "bindings" / "draft.md"
    draft.write_text(draft.read_text().replace("kind: let\n", "kind: let\nexit_code: 1\n", 1))
    app = make_app(run_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, run_dir)
        lines = app.explorer.query_one(TraceView).lines
        marked = [t for t in lines if t.failure]
        assert [t.text.split("=")[0].strip() for t in marked] == ["let draft"]
        assert "✗ exit 1" in marked[0].note


def test_command_output_is_not_rendered_as_markdown():
    assert not looks_like_markdown("$ make test\nok 1\nok 2\nmake: *** Error 1\n")
    assert looks_like_markdown("# Title\n\n- a\n- b\n")


# -- keys in help work ------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
async def test_tree_keys_h_l_g_G(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, NEWEST)
        await pilot.press("4")
        tree = app.explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: tree.has_focus, what="the tree")
        await pilot.press("G")
        assert tree.cursor_line == tree.last_line > 0
        await pilot.press("g")
        assert tree.cursor_line == 0
        group = tree.cursor_node
        assert group.is_expanded
        await pilot.press("h")
        assert not group.is_expanded
        await pilot.press("l")
        assert group.is_expanded
        await pilot.press("l")  # on an open group: to its first child, once the tree's lines are rebuilt
        await wait_until(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.parent is group,
                         what="the cursor on the group's first child")


async def test_enter_on_a_call_stack_frame_opens_its_scope():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        await pilot.press("3")
        stack = app.explorer.query_one(CallStackView)
        await wait_until(pilot, lambda: stack.has_focus, what="the call stack")
        frame = stack.frames[0]
        await pilot.press("enter")
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.target is not None and viewer.target.binding is not None
                         and viewer.target.binding.execution_id == frame.execution_id, what="the frame's binding")


async def test_the_palette_and_the_tree_open_an_import_as_a_run():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        parent = app.explorer.current_run
        assert parent.imports
        handle = parent.imports[0].import_handle or parent.imports[0].id
        from prose_tui.tui.commands import ExplorerCommands

        names = [name for name, _a, _h in ExplorerCommands(app.screen, None)._commands()]
        assert f"Open import {handle} of {parent.id}" in names
        assert app.explorer.open_import(parent.path, handle)
        await pilot.pause()
        assert app.explorer.current_run is parent.imports[0]
        assert app.explorer.loaded_run == parent.imports[0].path


# -- nodes ----------------------------------------------------------------------------------------------
def _node_run() -> Run:
    run = Run(id="reactor-1", path=Path("/nowhere/reactor-1"), format=RunFormat.SNAPSHOT, status=RunStatus.RUNNING)
    run.nodes = [
        Node(name="fetch", status="rendered", receipts=3, version="sha256:9f2c4e1aa", tokens_fresh=1200, tokens_reused=300),
        Node(name="summarise", status="failed", receipts=1, failure_reason="schema mismatch", producers=["fetch"]),
    ]
    return run


async def test_the_node_table_has_one_dense_row_per_node():
    class One(App[None]):
        def compose(self):
            yield NodeTable(id="nodes")

    app = One()
    async with app.run_test(size=(100, 10)) as pilot:
        table = app.query_one(NodeTable)
        table.set_nodes(_node_run().nodes)
        await pilot.pause()
        assert table.row_count == 2
        first = [str(c) for c in table.get_row_at(0)]
        assert first[:5] == ["✓", "fetch", "rendered", "3", "9f2c4e1"] and first[5] == "1.2k/300"
        second = [str(c) for c in table.get_row_at(1)]
        assert second[0] == "✗" and "schema mismatch" in second[2] and second[6] == "fetch"


@pytest.mark.parametrize("size", SIZES)
async def test_a_run_with_nodes_shows_them_where_the_call_stack_goes(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        app.explorer.show_run(_node_run())
        await pilot.press("3")
        await pilot.pause()
        assert app.explorer.query_one("#stack-pane").border_title == "Nodes (2)"
        assert shown(app, "#nodes") and not app.explorer.query_one(CallStackView).display
        assert isinstance(app.focused, NodeTable)


# -- the loaded_run contract ----------------------------------------------------------------------------
async def test_loaded_run_follows_full_reads():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        app.explorer.open_run_at(OLDER)
        assert app.explorer.loaded_run in (None, OLDER)
        await wait_until(pilot, lambda: app.explorer.loaded_run == OLDER, what="the older run's full read")
        assert app.explorer.current_run.path == OLDER and app.explorer.current_run.bindings


async def test_a_rescan_keeps_the_pane_the_user_is_in():
    """Ctrl+R reads the run list again; the user stays where they were (the first read ends
    on the trace, a rescan must not take them there)."""
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        explorer = app.explorer
        await pilot.press("1")
        run_list = explorer.query_one(RunList)
        assert app.focused is run_list
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: explorer.reads_done == 2, what="the rescan")
        await ready(pilot)
        assert app.focused is run_list and explorer.active == 0


async def test_the_first_rescan_to_find_a_run_opens_its_trace(tmp_path):
    """A project with no runs yet starts in the (empty) run list; the first read that finds
    a run (Ctrl+R) goes to its trace, as the start-up read does when runs are there."""
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        explorer = app.explorer
        assert explorer.active == 0 and not explorer.first_read_done
        shutil.copytree(NEWEST, tmp_path / ".prose" / "runs" / NEWEST.name)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: explorer.reads_done == 2, what="the rescan")
        await loaded(pilot)
        assert explorer.active == 1 and isinstance(app.focused, TraceView)


async def test_a_summary_read_arriving_after_the_full_read_does_not_replace_it():
    """The start-up read and "open in full" read the same run side by side; a summary (state
    file only) handed over after the full read is on screen must not empty the bindings."""
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        explorer = app.explorer
        full = explorer.current_run
        tree = explorer.query_one(BindingTree)
        names = [node.label.plain for node in tree.root.children]
        assert full.bindings and names
        summary = open_run(NEWEST, now=FIXED_NOW, summary=True)
        assert summary is not full and not summary.bindings
        explorer.feed._detailed(summary)
        await pilot.pause()
        assert explorer.current_run is full and explorer.loaded_run == NEWEST
        assert [node.label.plain for node in tree.root.children] == names


def test_show_json_carries_binding_failures(tmp_path, capsys):
    from prose_tui.cli.main import main

    run_dir = tmp_path / OLDER.name
    shutil.copytree(OLDER, run_dir)
    draft = run_dir / "bindings" / "draft.md"
    draft.write_text(draft.read_text().replace("kind: let\n", "kind: let\nexit_code: 3\n", 1))
    assert main(["show", str(run_dir), "--json"]) in (0, None)
    data = json.loads(capsys.readouterr().out)
    failures = {b["name"]: b.get("failure") for b in data["bindings"]}
    assert failures["draft"] == "exit 3" and failures["facts"] is None


# -- event-log runs ---------------------------------------------------------------------------------
def test_an_event_log_annotates_its_program():
    from prose_tui.cli.main import load_runs
    from prose_tui.viewmodel.program_trace import program_trace

    run = load_runs(FAILED_RUN)[0]
    annotated = program_trace(run.trace, run.program_path.read_text())
    states = {t.text.strip().split(" =")[0]: (t.state.value, t.note) for t in annotated.lines if t.state}
    assert states["let fetch"] == ("complete", "1→ fetch ✓")
    assert states["security"][0] == states["perf"][0] == "complete"
    assert states["let draft"] == ("failed", "4→ draft ✗ rate limited")
    assert states["do review({ security, perf })"][0] == "complete"
    assert states["if **the review approves the change**:"][0] == "failed"
    assert not any(t.note and "retry" in t.note for t in annotated.lines if "context:" in t.text)


@pytest.mark.parametrize("size", SIZES)
async def test_L_switches_between_the_annotated_program_and_the_raw_log(size):
    app = make_app(FAILED_RUN)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, FAILED_RUN)
        trace = app.explorer.query_one(TraceView)
        assert trace.lines[0].text.startswith("# Triage")  # program.prose
        assert "program from the log" in app.explorer.query_one("#trace-pane").border_title
        await pilot.press("L")
        assert trace.lines[0].text == "1→ fetch ✓"
        assert "raw log" in app.explorer.query_one("#trace-pane").border_title
        await pilot.press("L")
        assert trace.lines[0].text.startswith("# Triage")


async def test_the_run_list_keeps_the_width_it_was_listed_with_once_its_runs_are_read(monkeypatch):
    """The run list takes its width in the frame that lists the runs (their programs not
    read yet) and keeps it through the read: a narrower or wider list later is a layout of
    every pane after the run is on screen, the frame a first live change waits behind."""
    from prose_tui.tui.screens.explorer_feed import RunFeed

    listed: list[int] = []
    real = RunFeed._listed

    def listing(self, runs):
        real(self, runs)
        if runs:
            listed.append(self.screen.query_one("#runs-pane").styles.width.value)

    monkeypatch.setattr(RunFeed, "_listed", listing)
    app = make_app(PROJECT)
    async with app.run_test(size=(200, 50)) as pilot:
        await loaded(pilot, NEWEST)
        await wait_until(pilot, lambda: app.explorer.first_read_done, what="the first read settled")
        pane = app.explorer.query_one("#runs-pane")
        assert listed and pane.styles.width.value == listed[0]
        assert pane.region.width == listed[0]


async def test_the_run_opened_at_start_up_is_parsed_once_when_its_open_beats_the_first_read(monkeypatch):
    """The first read takes the newest run in full first; the open of that run (chosen when
    the runs are listed) must not read it beside that read, as a summary or in full. Here the
    read is held until the run is opened, the order that made a 100,000-event log parse twice
    and show twice (1.8 s of the UI thread each); the open leaves the run to that read."""
    import threading

    from prose_tui.live.workspace import Workspace
    from prose_tui.tui.screens.explorer_feed import RunFeed

    opening = threading.Event()
    real_open, real_open_in_full, real_scan, real_read = (RunFeed.open, RunFeed._open_in_full, Workspace.scan,
                                                          Workspace._read_now)
    reads: list[tuple[Path, bool | None]] = []
    read_by_open: list[Path] = []

    def open_run(self, path, *args, **kwargs):
        result = real_open(self, path, *args, **kwargs)
        opening.set()
        return result

    def open_in_full(self, path, *args, **kwargs):
        read_by_open.append(path)
        return real_open_in_full(self, path, *args, **kwargs)

    def scan(self, *args, **kwargs):
        opening.wait(30)  # a bound for a broken open: the assertions below then say what went wrong
        return real_scan(self, *args, **kwargs)

    def read_now(self, path, **kwargs):
        reads.append((path, kwargs.get("summary")))
        return real_read(self, path, **kwargs)

    monkeypatch.setattr(RunFeed, "open", open_run)
    monkeypatch.setattr(RunFeed, "_open_in_full", open_in_full)
    monkeypatch.setattr(Workspace, "scan", scan)
    monkeypatch.setattr(Workspace, "_read_now", read_now)
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot, NEWEST)
        assert opening.is_set()
        newest = [summary for path, summary in reads if path.resolve() == NEWEST.resolve()]
        assert newest == [False], newest  # one full read, no summary beside it
        assert not [p for p in read_by_open if p.resolve() == NEWEST.resolve()]  # the first read's, not the open's
        assert app.explorer.current_run is app.workspace.runs[app.explorer.loaded_run]
