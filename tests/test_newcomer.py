"""A new user's rough edges (issue 32): the run list's width, Enter and Esc, typeahead after
``/``, a bad path, help and keys, notifications and status lines, labels. Each test drives
the app as a user does (keys, a paste) at 80x24 and 120x40 and waits on what the app signals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from app_helpers import make_app, ready, settled, wait_until
from conftest import FIXTURES
from textual import events

from prose_tui.tui.screens.help import HelpScreen, bindings_table
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.search_bar import SearchBar
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

PROJECT = FIXTURES / "project"
NEWEST = PROJECT / ".prose" / "runs" / "20260301-100000-a1b2c3"
SIZES = [(80, 24), (120, 40)]


def screen_text(app, selector: str | None = None) -> str:
    """The cells of the screen (or of the widget ``selector``), row by row, as the terminal gets them."""
    rows = ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]
    if selector is None:
        return "\n".join(rows)
    region = app.explorer.query_one(selector).region
    return "\n".join(row[region.x:region.right] for row in rows[region.y:region.bottom])


# -- 3. typeahead after "/" ------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
async def test_every_key_typed_right_after_slash_reaches_the_search(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"a1b2")
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "a1b2", what=f"the query typed after / (have {bar.value!r})")


@pytest.mark.parametrize("size", SIZES)
async def test_a_query_pasted_right_after_slash_reaches_the_search(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        # "/" and the paste arrive together, as over SSH: both queued before either is handled.
        app.post_message(events.Key("slash", "/"))
        app.post_message(events.Paste("a1b2c3"))
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "a1b2c3", what=f"the pasted query (have {bar.value!r})")


@pytest.mark.parametrize("size", SIZES)
async def test_keys_arriving_together_with_slash_reach_the_search(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        for key, char in [("slash", "/"), ("j", "j"), ("k", "k"), ("2", "2")]:  # j, k, 2 would move or switch pane
            app.post_message(events.Key(key, char))
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "jk2", what=f"the keys typed with / (have {bar.value!r})")
        app.post_message(events.Key("enter", "\r"))
        await wait_until(pilot, lambda: not bar.has_class("-open") and app.explorer.search_term == "jk2", what="the search to run")


async def test_a_slash_typed_into_the_query_is_part_of_it():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"runs/2026")
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "runs/2026", what=f"the query with a slash (have {bar.value!r})")


# -- 5. a bad path ---------------------------------------------------------------------------------
def test_a_file_that_is_not_a_run_exits_1_with_the_line_show_prints(tmp_path, capsys):
    from prose_tui.cli.main import main

    garbage = tmp_path / "garbage.md"
    garbage.write_text("hello, not a run\n")
    assert main(["show", str(garbage)]) == 1
    said_by_show = capsys.readouterr().err
    # Exits before the full-screen app starts (no terminal is needed to see the message).
    assert main([str(garbage)]) == 1
    err = capsys.readouterr().err
    assert err == said_by_show and "not a run" in err and "garbage.md" in err


@pytest.mark.parametrize("size", SIZES)
async def test_an_empty_folder_says_where_it_looked_and_what_it_looks_for(tmp_path, size):
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: "No runs found" in screen_text(app), what="the empty message")
        # The run list (the pane shown at 80x24) says it whole, wrapped to its width.
        said = "".join(screen_text(app, "#runs-pane").replace("│", "").split())  # unwrapped, spaces aside
        assert "waitingforonetoappear" in said.lower()
        for looked_for in (str(tmp_path), ".prose/runs/", "state.md", "vm.log.md"):
            assert looked_for in said, looked_for


# -- 2. Enter opens a run; Esc goes back to an import's parent -------------------------------------
OLDER = PROJECT / ".prose" / "runs" / "20260228-090000-d4e5f6"


@pytest.mark.parametrize("size", SIZES)
async def test_enter_on_a_run_opens_it_in_the_trace(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.press("1")
        runs = app.explorer.query_one(RunList)
        await wait_until(pilot, lambda: runs.has_focus, what="the run list to have focus")
        await pilot.press("j", "enter")
        trace_pane = app.explorer.query_one("#trace-pane")
        await wait_until(pilot, lambda: app.explorer.active == 1 and app.explorer.query_one(TraceView).has_focus
                         and trace_pane.display and trace_pane.region.height > 0, what="the trace brought up")
        await settled(pilot, OLDER)
        assert app.explorer.current_run.path == OLDER
        assert "20260228-090000-d4e5f6" in screen_text(app)


@pytest.mark.parametrize("size", SIZES)
async def test_esc_goes_back_from_an_import_to_its_parent_and_a_breadcrumb_says_where(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await settled(pilot, NEWEST)
        parent = app.explorer.current_run
        await pilot.press("4")
        tree = app.explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: tree.has_focus and tree._imports, what="the tree with the import")
        node = next(n for n in tree._walk() if n.id in tree._imports)
        for ancestor in [node.parent, node.parent.parent] if node.parent else []:
            if ancestor is not None:
                ancestor.expand()
        await pilot.pause()
        tree.move_cursor(node)
        await pilot.pause()
        await pilot.press("enter")
        child = parent.imports[0]
        await wait_until(pilot, lambda: app.explorer.current_run is child and app.explorer.active == 1,
                         what="the import opened in the trace")
        title = str(app.explorer.query_one("#trace-pane").border_title)
        assert f"{parent.id} › {child.import_handle}" in title
        assert f"{parent.id} › {child.import_handle}"[:20] in screen_text(app, "#trace-pane")
        await pilot.press("escape")
        await settled(pilot, NEWEST)
        assert app.explorer.current_run.path == NEWEST
        assert "›" not in str(app.explorer.query_one("#trace-pane").border_title)
        await pilot.press("escape")  # nothing further back: stays
        await pilot.pause()
        assert app.explorer.current_run.path == NEWEST


# -- 1. each pane what its content needs -----------------------------------------------------------
LONG_IDS = [f"20260514-00253{i}-{i}-landing-page-responsive" for i in range(6)]


def _long_id_project(root):
    for i, run_id in enumerate(LONG_IDS):
        run_dir = root / ".prose" / "runs" / run_id
        run_dir.mkdir(parents=True)
        (run_dir / "state.md").write_text(
            f"# Execution State\n\nrun: {run_id}\nprogram: web-landing-page-{i}.prose\nstatus: completed\n\n"
            "## Execution Trace\n\n```prose\nsession \"Build the page\"  # (complete)\n```\n")
    return root


@pytest.mark.parametrize("size", [(120, 40), (160, 45), (200, 50)])
async def test_the_run_list_shows_whole_ids_programs_and_ages_and_the_trace_keeps_80_columns(tmp_path, size):
    app = make_app(_long_id_project(tmp_path))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.first_read_done, what="the first read settled")
        await pilot.pause()
        runs = screen_text(app, "#runs-pane")
        for i, run_id in enumerate(LONG_IDS[: app.explorer.query_one(RunList).scrollable_content_region.height]):
            row = next((line for line in runs.splitlines() if run_id in line), None)
            assert row is not None, f"{run_id} whole in the run list:\n{runs}"
            assert f"web-landing-page-{i}.prose" in row and "completed" in row or "✓" in row
        assert app.explorer.query_one("#trace-pane").region.width >= 80
        for pane in ("#runs-pane", "#trace-pane", "#history-pane", "#stack-pane", "#data-pane", "#value-pane"):
            widget = app.explorer.query_one(pane)
            assert widget.display and widget.region.height > 0, pane


# -- 7. help and keys ----------------------------------------------------------------------------
def _help_sections(app) -> dict[str, str]:
    """The help screen's text, per section heading (rendered as the user reads it)."""
    from rich.console import Console

    console = Console(width=88, record=True, file=open(os.devnull, "w"))
    console.print(bindings_table(app.screen.groups))
    sections: dict[str, list[str]] = {}
    current = ""
    for line in console.export_text().splitlines():
        if line and not line.startswith(" ") and line.strip() in {t for t, _ in app.screen.groups}:
            current = line.strip()
            continue
        sections.setdefault(current, []).append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


async def test_help_lists_enter_in_runs_and_bindings_and_names_keys_as_typed():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        sections = _help_sections(app)
        assert "Enter" in sections["Runs"] and "Open the run" in sections["Runs"]
        assert "Enter" in sections["Bindings & agents"]
        assert "Ctrl+Home" in sections["Nodes"]
        everything = "\n".join(sections.values())
        assert "HOME" not in everything and "END" not in everything


def test_the_readme_key_table_has_every_explorer_key():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    table = readme[readme.index("### Keys"):readme.index("![prose-tui keys")]
    rows = {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")}
    assert any("`L`" in key for key in rows)
    assert any("Ctrl+R" in key for key in rows)
    assert any(line.startswith("| Enter | runs |") for line in table.splitlines())


async def test_t_on_a_small_value_goes_to_its_end_and_says_why_there_is_no_tail():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, NEWEST)
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.target is not None and not viewer.reading, what="a value shown")
        await pilot.press("5", "t")
        await wait_until(pilot, lambda: any("whole value is shown" in str(n.message) for n in app._notifications),
                         what="a note on t")
        assert not viewer.tail


async def test_the_palette_lists_our_commands_before_textuals_own():
    app = make_app(PROJECT)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        textuals = ("Keys", "Maximize", "Screenshot", "Quit", "Theme")

        def prompts() -> list[str]:
            lists = app.screen.query("CommandList")
            if not lists:
                return []
            options = lists.first()
            return [str(options.get_option_at_index(i).prompt).split("\n")[0] for i in range(options.option_count)]

        await wait_until(pilot, lambda: any(p.startswith("Screenshot") or p.startswith("Keys") for p in prompts()),
                         what="Textual's commands listed")
        listed = prompts()
        first_textual = min(i for i, p in enumerate(listed) if p.startswith(textuals))
        assert first_textual > 0 and listed[0] == "Toggle follow", listed[:5]
        assert all(not p.startswith(("Open run", "Go to", "Export")) for p in listed[first_textual:]), listed


# -- 8. notifications and status lines -------------------------------------------------------------
async def test_notifications_are_short_lived_and_errors_last_longer():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("f")  # "Follow off: ..."
        await wait_until(pilot, lambda: app._notifications, what="a notification")
        app.notify("a config note", severity="warning", timeout=12)
        app.notify("it broke", severity="error")
        await pilot.pause()
        lives = {n.severity: n.timeout for n in app._notifications}
        assert 3 <= lives["information"] <= 6 and lives["warning"] <= 8 and lives["error"] > lives["information"]


@pytest.mark.parametrize("size", SIZES)
async def test_a_notification_never_covers_the_buttons_of_the_ctrl_e_dialog(size):
    from textual.widgets import Button
    from textual.widgets._toast import Toast

    from prose_tui.tui.screens.confirm import ConfirmScreen

    app = make_app(PROJECT)
    async with app.run_test(size=size, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+e")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        for i in range(3):
            app.notify(f"note {i}: something happened while the dialog was open, in a few words", severity="warning")
        await wait_until(pilot, lambda: len(app.screen.query(Toast)) == 3 and all(t.region.height for t in app.screen.query(Toast)),
                         what="the toasts on screen")
        buttons = [b.region for b in app.screen.query(Button)]
        assert buttons
        for toast in app.screen.query(Toast):
            for button in buttons:
                assert not toast.region.overlaps(button), (toast.region, button)


@pytest.mark.parametrize("pane", ["3", "4", "5", "6"])
async def test_the_status_line_at_80x24_shows_only_whole_parts(pane):
    from prose_tui.tui.widgets.status_line import StatusLine

    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, NEWEST)
        await pilot.press(pane)
        await wait_until(pilot, lambda: app.explorer.active == int(pane) - 1, what="the pane")
        await pilot.pause()
        line = app.explorer.query_one(StatusLine)
        shown = line.shown.plain
        assert len(shown) <= line.content_region.width, shown
        assert "…" not in shown
        run = app.explorer.current_run
        # Each part is one the app says whole: the reason whole or up to a clause's end.
        last = shown.split(" · ")[-1]
        assert run.status_reason.startswith(last) and (last == run.status_reason or
                                                        run.status_reason[len(last)] in ";,( "), shown
        assert "running" in shown and "follow on" in shown


# -- 9. labels that erode trust --------------------------------------------------------------------
async def test_database_agents_with_memory_show_it_and_only_stateless_agents_say_stateless(tmp_path):
    from textual.app import App

    from prose_tui.model import Agent, Run

    class _Tree(App[None]):
        def compose(self):
            yield BindingTree()

    db = tmp_path / "state.db"
    run = Run(id="r1", path=tmp_path, agents=[
        Agent(name="librarian", scope="project", path=db, details={"memory": "Knows the repo layout."}),
        Agent(name="mentor", scope="user", path=tmp_path / "agents" / "mentor", details={"memory": "Prefers short answers."}),
        Agent(name="planner", scope="project", path=tmp_path / ".prose" / "agents" / "planner"),
        Agent(name="scout", scope="stateless"),
    ])
    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(run)
        await pilot.pause()
        said = {node.label.plain.split()[0]: [(label.plain, target) for label, target in tree._lazy.get(node.id, [])]
                for node in tree._agent_nodes}
        for name, memory in (("librarian", "Knows the repo layout."), ("mentor", "Prefers short answers.")):
            (label, target), = said[name]
            assert "stateless" not in label and target is not None and target.kind == "memory" and target.text == memory
        assert said["planner"][0][0].startswith("no memory yet (project scope)")
        assert said["scout"] == [("no memory (stateless)", None)]


def test_agent_status_warns_when_a_paused_agent_has_not_taken_up_a_command_for_long(tmp_path, capsys):
    from prose_tui.cli.main import main

    state = tmp_path / "agent_state.json"
    state.write_text('{"desired_state": "continuous", "current_state": "pause", "timestamp": "2025-01-01T00:00:00Z"}')
    assert main(["agent", "status", "--agent-state", str(state)]) == 0
    out = capsys.readouterr().out
    assert "IDLE" in out
    warning = next(line for line in out.splitlines() if line.strip().startswith("Warning"))
    assert "not taken up continuous" in warning and "not polling" in warning


def test_an_unreadable_agent_state_keeps_the_file_name_as_given(tmp_path, monkeypatch, capsys):
    from prose_tui.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "garbage.md").write_bytes(b"\xff\xfe not utf-8")
    main(["agent", "status", "--agent-state", "garbage.md"])
    out = capsys.readouterr().out
    assert "garbage.md is not UTF-8 text." in out and "Garbage.md" not in out


def test_the_demo_run_appears_whole_never_a_run_folder_without_its_state_file(tmp_path, monkeypatch):
    from prose_tui.demo import DemoVM
    from prose_tui.demo import simulator

    vm = DemoVM(tmp_path)
    real_write = simulator._Writer.write
    seen_half: list[str] = []

    listed = tmp_path / ".prose" / "runs" / vm.run_id  # where an explorer finds the run

    def write(self, path, text):
        real_write(self, path, text)
        if listed.exists() and not (listed / "state.md").exists():
            seen_half.append(f"after writing {path.name}")

    monkeypatch.setattr(simulator._Writer, "write", write)
    step = next(vm.steps())  # the first step: the run appears
    assert (vm.run_dir / "state.md").is_file() and (vm.run_dir / "program.prose").is_file()
    assert vm.run_dir / "state.md" in step.paths and all(p.exists() for p in step.paths)
    assert not seen_half, f"the run folder was visible without state.md: {seen_half}"
    assert not list((tmp_path / ".prose").glob(".*.new"))
