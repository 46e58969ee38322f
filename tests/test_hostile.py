"""Hostile input, as the user sees it: each case builds its input in ``tmp_path``, opens it
with the explorer (Pilot, 100x30) or the CLI, and checks the screen.

Run files are written by LLMs and may hold anything. What must hold whatever they contain:
escape sequences and Rich/Textual markup are shown literally (never styled, never sent to
the terminal), unreadable or vanishing files give a message instead of a traceback or a
hang, and the explorer leaves every input tree byte-for-byte as it found it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from app_helpers import held_watches, make_app, ready, tree_digest, wait_until

from prose_tui.backends import open_run
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

RUN_ID = "20260301-100000-abc123"
SIZE = (200, 40)  # every pane shown, the trace wide enough for whole hostile lines
ESC = "\x1b"
# Seconds: only ends a start-up that would otherwise hang (a read stuck on a pipe or in a
# symlink loop), so the suite goes on; ``ready`` itself waits on what the app signals. Not a
# timing: a loaded 2-core machine may take far longer than an idle one.
HANG_GUARD = 300


# -- building inputs --------------------------------------------------------------------------------
def state_md(trace: list[str], *, bindings: list[str] = (), updated: str = "2026-03-01T10:07:00Z") -> str:
    rows = "\n".join(f"| {name} | let | bindings/{name}.md |" for name in bindings)
    index = f"### Bindings\n\n| Name | Kind | Path |\n|---|---|---|\n{rows}\n" if bindings else "(none yet)\n"
    return (
        "# Execution State\n\n"
        f"run: {RUN_ID}\nprogram: hostile.prose\nstarted: 2026-03-01T10:00:00Z\nupdated: {updated}\n\n"
        "## Execution Trace\n\n```prose\n" + "\n".join(trace) + "\n```\n\n"
        "## Index\n\n" + index + "\n## Call Stack\n\n(empty)\n"
    )


def make_run(root: Path, trace: list[str], *, bindings: dict[str, bytes | str] | None = None,
             run_id: str = RUN_ID, state: str | bytes | None = None) -> Path:
    """``root/.prose/runs/{run_id}/`` with a snapshot state.md and binding files."""
    run_dir = root / ".prose" / "runs" / run_id
    (run_dir / "bindings").mkdir(parents=True)
    for name, body in (bindings or {}).items():
        data = body.encode() if isinstance(body, str) else body
        (run_dir / "bindings" / f"{name}.md").write_bytes(data)
    text = state if state is not None else state_md(trace, bindings=list(bindings or {}))
    (run_dir / "state.md").write_bytes(text.encode() if isinstance(text, str) else text)
    return run_dir


def binding_file(value: str | bytes, kind: str = "let") -> bytes:
    head = f"# value\n\nkind: {kind}\n\nsource:\n```prose\nlet value = session \"x\"\n```\n\n---\n\n".encode()
    return head + (value.encode() if isinstance(value, str) else value)


# -- reading the screen ---------------------------------------------------------------------------------
def screen_lines(app) -> list[str]:
    """The text of every cell row of the current screen, as the terminal would receive it."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def screen_text(app) -> str:
    return "\n".join(screen_lines(app))


def assert_no_control_reaches_the_terminal(app) -> None:
    for y, line in enumerate(screen_lines(app)):
        bad = [f"{ord(c):#04x}" for c in line if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]
        assert not bad, f"screen row {y} sends control characters {bad}: {line!r}"


def trace_rows(app) -> list[str]:
    trace = app.explorer.query_one(TraceView)
    return ["".join(seg.text for seg in trace.render_line(y)) for y in range(trace.scrollable_content_region.height)]


def viewer_warning(app) -> str:
    return str(app.explorer.query_one(ValueViewer).query_one("#value-warning").render())


def notifications(app) -> list[str]:
    """Every notification the app posted, also those whose toast has gone (``make_app``)."""
    return list(getattr(app, "notified", None) or (str(n.message) for n in app._notifications))


async def show_binding(pilot, path: Path) -> ValueViewer:
    explorer = pilot.app.explorer
    await wait_until(pilot, lambda: explorer.query_one(BindingTree).select_binding_path(path), what=f"{path.name} in the tree")
    viewer = explorer.query_one(ValueViewer)
    await wait_until(pilot, lambda: viewer.target is not None and viewer.target.path == path, what=f"{path.name} in the viewer")
    await pilot.press("5")
    await pilot.pause()
    return viewer


# -- escape sequences and markup: shown literally ------------------------------------------------------------
async def test_ansi_escapes_in_trace_lines_are_shown_as_pictures_and_never_sent(tmp_path):
    run_dir = make_run(tmp_path, [
        f'let a = session "{ESC}[31mred{ESC}[0m"  # --> bindings/a.md (complete)',
        f'session "title {ESC}]0;pwned{ESC}\\ bell \x07 back\x08"  # <-- EXECUTING {ESC}[2J',
    ], bindings={"a": binding_file("ok")})
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("2", "z")  # the trace zoomed to the whole width: its long lines in full
        await wait_until(pilot, lambda: app.explorer.zoomed, what="the zoomed trace")
        await pilot.wait_for_scheduled_animations()
        rows = "\n".join(trace_rows(app))
        assert "␛[31mred␛[0m" in rows
        assert "␛]0;pwned" in rows and "␇" in rows and "␈" in rows
        assert "# <-- EXECUTING ␛[2J" in rows
        assert_no_control_reaches_the_terminal(app)
    assert tree_digest(tmp_path) == before


async def test_markup_in_trace_lines_binding_values_and_names_is_shown_literally(tmp_path):
    value = f"[bold red]x[/] and [link=https://evil.example]click[/link] [@click=app.quit]quit[/] $accent [/] {ESC}[7mrev\n"
    run_dir = make_run(tmp_path, [
        'let a = session "[reverse]inverted[/reverse]"  # --> bindings/a.md (complete) [/]',
        'session "z"  # <-- EXECUTING [blink]',
    ], bindings={"a": binding_file(value)})
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("2")
        rows = "\n".join(trace_rows(app))
        assert '"[reverse]inverted[/reverse]"' in rows and "(complete) [/]" in rows and "EXECUTING [blink]" in rows
        viewer = await show_binding(pilot, run_dir / "bindings" / "a.md")
        text = screen_text(app)
        assert "[bold red]x[/]" in text and "[@click=app.quit]quit[/]" in text and "$accent [/]" in text and "␛[7mrev" in text
        assert_no_control_reaches_the_terminal(app)
        await pilot.press("r")  # raw as well as Markdown
        assert viewer.raw and "[bold red]x[/]" in screen_text(app) and "␛[7mrev" in screen_text(app)
        assert_no_control_reaches_the_terminal(app)
        assert app.is_running
    assert tree_digest(tmp_path) == before


async def test_markup_in_memory_and_segment_files_is_shown_literally(tmp_path):
    run_dir = make_run(tmp_path, ['session "x"  # <-- EXECUTING'])
    agent = run_dir / "agents" / "captain"
    agent.mkdir(parents=True)
    (agent / "memory.md").write_text(f"# memory\n\n[bold]remember[/bold] {ESC}[5mblink{ESC}[0m [/]\n")
    (agent / "captain-001.md").write_text(f"timestamp: [red]now[/red]{ESC}[1m\nprompt: [/]\n\nbody\n")
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        viewer = app.explorer.query_one(ValueViewer)
        await pilot.press("4", "slash", *"memory.md", "enter")
        await wait_until(pilot, lambda: viewer.target is not None and viewer.target.kind == "memory" and not viewer.reading,
                         what="memory read into the viewer")
        await wait_until(pilot, lambda: "[bold]remember[/bold] ␛[5mblink␛[0m [/]" in screen_text(app),
                         what="the memory's markup shown literally")
        text = screen_text(app)
        assert "001  [red]now[/red]␛[1m" in text  # the segment's timestamp in the tree
        assert_no_control_reaches_the_terminal(app)
    assert tree_digest(tmp_path) == before


async def test_markup_in_a_run_folder_name_is_shown_literally(tmp_path):
    run_id = "20260301-100000-[red]x[-]"
    run_dir = make_run(tmp_path, ['session "x"  # <-- EXECUTING'], run_id=run_id)
    before = tree_digest(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        runs_pane = screen_lines(app)[2]
        assert "20260301-100000-[red]x[-]" in runs_pane  # run list and header, brackets kept
        assert app.explorer.current_run.path == run_dir
    assert tree_digest(tmp_path) == before


async def test_escapes_and_newlines_in_file_and_folder_names_are_shown_as_pictures(tmp_path):
    run_id = f"20260301-100000-{ESC}[2Jrun\nid"
    run_dir = make_run(tmp_path, ['session "x"  # <-- EXECUTING'], run_id=run_id,
                       bindings={f"b{ESC}[31mred\x07": binding_file("v")})
    (run_dir / "agents" / f"cap{ESC}[5m").mkdir(parents=True)
    (run_dir / "agents" / f"cap{ESC}[5m" / "memory.md").write_text("m")
    (run_dir / "imports" / f"lib{ESC}]0;t").mkdir(parents=True)
    (run_dir / "imports" / f"lib{ESC}]0;t" / "state.md").write_text(state_md(['session "i"  # (complete)']))
    before = tree_digest(tmp_path)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(140, 50)) as pilot:  # 50 rows: the tree under the run list shows every name
        await watched(pilot)
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
        assert "20260301-100000-␛[2Jrun␊id" in text
        assert "b␛[31mred␇" in text and "cap␛[5m" in text and "lib␛]0;t" in text
        assert_no_control_reaches_the_terminal(app)
        # A live change to the import keeps one entry under its shown name.
        (run_dir / "imports" / f"lib{ESC}]0;t" / "state.md").write_text(state_md(['session "j"  # <-- EXECUTING']))
        await wait_until(pilot, lambda: [i.trace[0].text for i in app.explorer.current_run.imports] == ['session "j"'],
                         what="the import to update in place")
        assert_no_control_reaches_the_terminal(app)
    before_keys = {k for k in before if "imports" not in k or "state.md" not in k}
    assert {k: v for k, v in tree_digest(tmp_path).items() if k in before_keys} == {k: before[k] for k in before_keys}


def tree_labels(app) -> list[str]:
    tree = app.explorer.query_one(BindingTree)
    return ["".join(seg.text for seg in tree.render_line(y)) for y in range(tree.size.height)]


async def test_markup_in_a_program_file_name_is_shown_literally(tmp_path):
    run_dir = make_run(tmp_path, ['session "x"  # <-- EXECUTING'])
    (run_dir / "[b]evil.prose").write_text('session "x"\n')
    app = make_app(run_dir)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await pilot.press("4", "slash", *"evil", "enter")
        await pilot.pause()
        assert any("[b]evil.prose" in line for line in tree_labels(app)), tree_labels(app)


async def test_markup_in_a_sqlite_table_name_is_shown_literally(tmp_path):
    import sqlite3

    run_dir = tmp_path / ".prose" / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    conn = sqlite3.connect(run_dir / "state.db")
    conn.executescript('CREATE TABLE run (id TEXT, status TEXT); CREATE TABLE "x_[/]" (a); CREATE TABLE "x_[b]t" (a);')
    conn.commit()
    conn.close()
    app = make_app(run_dir)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await pilot.press("4", "slash", *"x_", "enter")
        await pilot.pause()
        assert app.is_running
        labels = "\n".join(tree_labels(app))
        assert "x_[/]" in labels and "x_[b]t" in labels


async def test_enter_on_a_line_whose_note_holds_markup_says_so_literally(tmp_path):
    run_dir = make_run(tmp_path, ['session "x"  # done [/] [bold]B[/bold]'])
    app = make_app(run_dir)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("2", "g", "enter")
        said = "'done [/] [bold]B[/bold]' names no binding file"
        await wait_until(pilot, lambda: any(said == n.message for n in app._notifications), what="the notification")
        assert app.is_running


async def test_searching_for_markup_that_matches_nothing_says_so_literally(tmp_path):
    run_dir = make_run(tmp_path, ['session "x"  # <-- EXECUTING'])
    app = make_app(run_dir)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("2", "slash", *"[/]", "enter")
        await wait_until(pilot, lambda: "no match for '[/]'" in screen_text(app), what="'no match' on screen")
        assert app.is_running


async def test_narration_with_escapes_shows_pictures_not_escapes(tmp_path):
    path = tmp_path / "narration.md"
    path.write_bytes(
        "[Program] hostile.prose\n"
        f"[Position] 1: let a = session \"{ESC}[31mred{ESC}[0m\"\n"
        f"[Binding] a = \"{ESC}]0;title\x07 [bold]b[/bold]\"\n"
        f"[Position] 2: session \"{ESC}[2J\"\n".encode()
    )
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("2")
        assert "␛[31mred␛[0m" in "\n".join(trace_rows(app))
        assert_no_control_reaches_the_terminal(app)


async def test_sqlite_values_with_escapes_show_pictures_not_escapes(tmp_path):
    import sqlite3

    run_dir = tmp_path / ".prose" / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    conn = sqlite3.connect(run_dir / "state.db")
    conn.executescript(
        "CREATE TABLE run (id TEXT, program_path TEXT, status TEXT, started_at TEXT, updated_at TEXT);"
        "CREATE TABLE execution (id INTEGER PRIMARY KEY, statement_index INTEGER, statement_text TEXT, status TEXT,"
        " started_at TEXT, completed_at TEXT, error_message TEXT, parent_id INTEGER, metadata TEXT);"
        "CREATE TABLE bindings (name TEXT, execution_id INTEGER, kind TEXT, value TEXT, source_statement TEXT);"
    )
    conn.execute("INSERT INTO run VALUES (?, 'h.prose', 'running', '2026-03-01 10:00:00', '2026-03-01 10:07:00')", (RUN_ID,))
    conn.execute("INSERT INTO execution VALUES (1, 1, ?, 'executing', '2026-03-01 10:01:00', NULL, NULL, NULL, NULL)",
                 (f'session "{ESC}[31mred{ESC}[0m [bold]b[/]"',))
    conn.execute("INSERT INTO bindings VALUES (?, NULL, 'let', ?, 'x')", (f"n{ESC}[1m", f"{ESC}[2J [red]v[/red]"))
    conn.commit()
    conn.close()
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await pilot.press("2")
        assert "␛[31mred␛[0m [bold]b[/]" in "\n".join(trace_rows(app))
        assert_no_control_reaches_the_terminal(app)
    assert tree_digest(tmp_path) == before


def test_cli_show_prints_escapes_as_pictures(tmp_path):
    run_dir = make_run(tmp_path, [f'session "{ESC}[31mred{ESC}]0;t\x07"  # <-- EXECUTING'],
                       bindings={"a": binding_file(f"{ESC}[2J")})
    out = subprocess.run([sys.executable, "-m", "prose_tui", "show", str(run_dir)], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "␛[31mred" in text
    assert ESC not in text and "\x07" not in text


# -- bytes that are not text -----------------------------------------------------------------------------------
async def test_invalid_utf8_and_nul_bytes_show_replacement_and_pictures(tmp_path):
    run_dir = make_run(tmp_path, [], state=state_md(['let a = session "ok"  # --> bindings/a.md (complete)',
                                                      'session "b"  # <-- EXECUTING']).encode()
                       .replace(b'"b"', b'"\xff\xfe\x00nul\xc3"'),
                       bindings={"a": binding_file(b"value \x00\x01 \xff\xfe bytes\n")})
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("2")
        assert '"��␀nul�"' in "\n".join(trace_rows(app))
        await show_binding(pilot, run_dir / "bindings" / "a.md")
        await pilot.press("r")
        assert "value ␀␁ �� bytes" in screen_text(app)
        assert_no_control_reaches_the_terminal(app)
    assert tree_digest(tmp_path) == before


async def test_binary_state_and_binding_files_open_with_a_warning(tmp_path):
    blob = bytes(range(256)) * 64 + b"\x89PNG\r\n\x1a\n" + os.urandom(4096)
    run_dir = make_run(tmp_path, [], state=blob, bindings={"image": blob})
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.explorer.current_run is not None
        head = str(app.explorer.query_one("#run-head").render())
        assert "shown raw" in head  # the state file is shown raw, with a warning
        await show_binding(pilot, run_dir / "bindings" / "image.md")
        assert "no binding header" in viewer_warning(app)
        assert_no_control_reaches_the_terminal(app)
    assert tree_digest(tmp_path) == before


async def test_a_10_mb_single_line_binding_opens_in_a_window(tmp_path):
    line = ("0123456789abcdef" * (10 * 1024 * 1024 // 16)).encode()
    run_dir = make_run(tmp_path, ['let big = session "x"  # --> bindings/big.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"big": binding_file(line)})
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        viewer = await show_binding(pilot, run_dir / "bindings" / "big.md")
        assert "Showing the first 32.0 KiB of 10.0 MiB" in viewer_warning(app)
        assert len(viewer.text) <= 32 * 1024
        assert "0123456789abcdef" in screen_text(app)
        await pilot.press("t")  # the tail window, read by a worker
        await wait_until(pilot, lambda: not viewer.reading, what="the tail window read")
        assert "Showing the last 32.0 KiB" in viewer_warning(app)
        await pilot.press("G", "g")
        assert app.is_running
    assert tree_digest(tmp_path) == before


async def test_a_10_mb_single_line_state_file_opens_cut_with_a_warning(tmp_path):
    trace = ['session "a"  # <-- EXECUTING ' + "x" * (10 * 1024 * 1024)]
    run_dir = make_run(tmp_path, trace)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        head = str(app.explorer.query_one("#run-head").render())
        assert "over 8 MiB; only its start was read" in head
        await pilot.press("2", "l", "l")
        assert app.is_running


# -- structure: deep imports, symlink loops, special files ---------------------------------------------------------
def nested_imports(run_dir: Path, depth: int) -> Path:
    folder = run_dir
    for level in range(depth):
        folder = folder / "imports" / f"lib{level}"
        folder.mkdir(parents=True)
        (folder / "state.md").write_text(state_md([f'session "level {level + 1}"  # (complete)']))
    return folder


async def test_100_nested_imports_load_to_the_depth_cap_with_a_warning(tmp_path):
    run_dir = make_run(tmp_path, ['session "x"  # <-- EXECUTING'])
    nested_imports(run_dir, 100)
    run = open_run(run_dir)  # no RecursionError
    chain = [run]
    while chain[-1].imports:
        chain.append(chain[-1].imports[0])
    assert len(chain) == 33  # the run and 32 levels of imports
    assert any("deeper than 32 levels" in w for w in chain[-1].warnings)
    assert "imports nested deeper than 32 levels are not shown" in run.warnings  # said at the top too
    before = tree_digest(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert "imports nested deeper than 32 levels" in str(app.explorer.query_one("#run-head").render())
        await pilot.press("4", "slash", *"lib31", "enter")
        tree = app.explorer.query_one(BindingTree)
        # the search opens the import's ancestors and moves the cursor after the next refresh
        await wait_until(pilot, lambda: tree.cursor_node is not None and str(tree.cursor_node.label).startswith("lib31"),
                         what="the cursor on the deepest import shown")
        await pilot.press("slash", *"lib32", "enter")  # the cap: level 33 is not loaded
        await pilot.pause()
        assert str(tree.cursor_node.label).startswith("lib31")
        assert app.is_running
    assert tree_digest(tmp_path) == before


def remove_deep_folders(start: Path) -> None:
    """Undo ``deep_folders`` without recursion (``shutil.rmtree``, and so pytest's tmp_path
    clean-up, would raise RecursionError on it)."""
    cwd = os.getcwd()
    try:
        os.chdir(start)
        depth = 0
        while os.path.isdir("a") and not os.path.islink("a"):
            os.chdir("a")
            depth += 1
        for _ in range(depth):
            for name in os.listdir("."):
                os.unlink(name)
            os.chdir("..")
            os.rmdir("a")
    finally:
        os.chdir(cwd)


def deep_folders(start: Path, depth: int) -> Path:
    """``start/a/a/.../a`` ``depth`` levels deep (made relatively: the path stays short to create)."""
    cwd = os.getcwd()
    try:
        os.chdir(start)
        for _ in range(depth):
            os.mkdir("a")
            os.chdir("a")
        Path("deep.md").write_bytes(binding_file("at the bottom"))
        return Path(os.getcwd())
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("watch", [False, True])
async def test_1100_nested_folders_under_bindings_do_not_crash(tmp_path, watch):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("top value")})
    deep_folders(run_dir / "bindings", 1100)  # deeper than os.walk can recurse on Python 3.11
    try:
        run = open_run(run_dir)
        assert [b.name for b in run.bindings] == ["a"]
        app = make_app(run_dir, watch=watch)
        async with app.run_test(size=SIZE) as pilot:
            await (watched(pilot) if watch else ready(pilot))
            await show_binding(pilot, run_dir / "bindings" / "a.md")
            assert "top value" in screen_text(app)
            if watch:
                (run_dir / "state.md").write_text(state_md(['session "z"  # <-- EXECUTING']))
                trace = app.explorer.query_one(TraceView)  # hidden behind the value pane at this size
                await wait_until(pilot, lambda: any('session "z"' in t.text for t in trace.lines), what="a live update")
            assert app.is_running and app._exception is None
    finally:
        remove_deep_folders(run_dir / "bindings")


async def test_symlink_loops_under_runs_and_imports_do_not_hang(tmp_path):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("ok")})
    runs = run_dir.parent
    os.symlink(runs, runs / "loop")  # runs/loop -> runs
    os.symlink("self", runs / "self")  # a link to itself (ELOOP)
    (run_dir / "imports").mkdir()
    os.symlink(run_dir, run_dir / "imports" / "back")  # an import that is the run itself
    os.symlink("me", run_dir / "imports" / "me")
    os.symlink(run_dir / "bindings", run_dir / "bindings" / "again")
    os.symlink("a.md", run_dir / "bindings" / "a-link.md")
    agents = run_dir / "agents"
    agents.mkdir()
    os.symlink(agents, agents / "captain")
    before = tree_digest_links(tmp_path)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await asyncio.wait_for(ready(pilot), HANG_GUARD)
        await watched(pilot)  # the watches installed: b.md written below is seen
        runs_shown = app.explorer.query_one(RunList).runs
        assert [r.id for r in runs_shown] == [RUN_ID]
        assert any("loops back" in w for w in runs_shown[0].warnings)
        (run_dir / "bindings" / "b.md").write_bytes(binding_file("later"))
        before["/".join([".prose", "runs", RUN_ID, "bindings", "b.md"])] = tree_digest_links(tmp_path)[
            "/".join([".prose", "runs", RUN_ID, "bindings", "b.md"])]
        await wait_until(pilot, lambda: any(b.name == "b" for b in app.explorer.current_run.bindings), what="a live update")
        assert app.is_running
    assert tree_digest_links(tmp_path) == before


def tree_digest_links(root: Path) -> dict[str, str]:
    """Like ``tree_digest`` but without following symlinks (which may loop)."""
    import hashlib

    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


async def test_a_named_pipe_for_a_binding_or_state_db_does_not_hang(tmp_path):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'])
    os.mkfifo(run_dir / "bindings" / "a.md")
    os.symlink("/dev/zero", run_dir / "bindings" / "zero.md")  # a device: never ends
    other = run_dir.parent / "20260301-090000-pipe00"
    other.mkdir()
    os.mkfifo(other / "state.db")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        try:
            await asyncio.wait_for(ready(pilot), HANG_GUARD)
            ids = [r.id for r in app.explorer.query_one(RunList).runs]
            assert RUN_ID in ids
            await show_binding(pilot, run_dir / "bindings" / "a.md")
            assert "cannot read a.md: not a regular file" in screen_text(app)
            assert "does not exist" not in screen_text(app)
            await show_binding(pilot, run_dir / "bindings" / "zero.md")
            assert "outside the run: not read" in screen_text(app)  # a link to a device elsewhere: never opened
        finally:  # before the app exits: it may wait for its reader threads
            release_pipe_readers(run_dir / "bindings" / "a.md", other / "state.db")


def release_pipe_readers(*fifos: Path) -> None:
    """Give end-of-file to any reader blocked on ``fifos``: when the app wrongly opened one,
    the test fails (``HANG_GUARD``) and the stuck reader thread lets the app exit."""
    for fifo in fifos:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader has it open, as it should be
            pass


@pytest.mark.skipif(os.name != "posix", reason="permissions")
async def test_an_unreadable_binding_says_cannot_read(tmp_path):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("secret")})
    path = run_dir / "bindings" / "a.md"
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as root: chmod 000 does not make the file unreadable")
        app = make_app(run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await show_binding(pilot, path)
            assert "cannot read" in screen_text(app)
            assert "secret" not in screen_text(app)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


# -- files changing under the explorer ---------------------------------------------------------------------------
async def watched(pilot) -> None:
    await ready(pilot)
    await wait_until(pilot, lambda: pilot.app.explorer.watcher_state.startswith("watching"), what="the watcher")


async def test_a_binding_deleted_while_shown_says_so(tmp_path, monkeypatch):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("the value of a")})
    path = run_dir / "bindings" / "a.md"
    install = held_watches(monkeypatch)  # a loaded machine: the watches come after the first screen
    app = make_app(run_dir, watch=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await wait_until(pilot, install.asked.is_set, what="the watcher about to install its watches")
            # Not watching yet, and not said to be: a change now would not be seen.
            assert not app.explorer.watcher_state.startswith("watching")
            install.release()
            await watched(pilot)
            await show_binding(pilot, path)
            assert "the value of a" in screen_text(app)
            path.unlink()
            await wait_until(pilot, lambda: "cannot read a.md" in viewer_warning(app), what="the deletion to show")
            assert "the value of a" not in screen_text(app)
            assert app.is_running
    finally:
        install.release()


async def test_a_binding_truncated_while_shown_shows_it_empty(tmp_path):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("first version, long enough to notice\n")})
    path = run_dir / "bindings" / "a.md"
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        viewer = await show_binding(pilot, path)
        assert "first version" in screen_text(app)
        with open(path, "r+b") as fh:
            fh.truncate(0)
        await wait_until(pilot, lambda: "first version" not in screen_text(app), what="the truncation to show")
        assert viewer.text == ""  # an empty value (shown as "(empty)" or with the no-header warning)
        assert app.is_running


async def test_a_binding_rewritten_with_a_shorter_header_while_shown_shows_the_new_value(tmp_path):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("first version\n")})
    path = run_dir / "bindings" / "a.md"
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        viewer = await show_binding(pilot, path)
        path.write_bytes(b"kind: let\n---\nsecond\n")  # a shorter header: the value starts earlier
        await wait_until(pilot, lambda: "second" in viewer.text, what="the rewrite to show")
        assert viewer.text.strip() == "second"
        assert "kind: let" not in screen_text(app)


async def test_state_md_deleted_while_shown_says_there_is_no_state_file(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'], bindings={"a": binding_file("value")})
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        (run_dir / "state.md").unlink()
        await wait_until(pilot, lambda: "no state file and no program" in screen_text(app), what="the message")
        assert 'session "y"' not in "\n".join(trace_rows(app))
        (run_dir / "state.md").write_text(state_md(['session "back"  # <-- EXECUTING']))
        await wait_until(pilot, lambda: 'session "back"' in "\n".join(trace_rows(app)), what="the new state.md")
        assert app.is_running


async def test_the_run_folder_removed_while_selected_says_so(tmp_path):
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("value")})
    keep = make_run(tmp_path, ['session "z"  # (complete)'], run_id="20260228-090000-keep00")
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None and app.explorer.current_run.id == RUN_ID,
                         what="the newest run to be shown")
        shutil.rmtree(run_dir)
        await wait_until(pilot, lambda: any("was removed from disk" in n for n in notifications(app)), what="the removal")
        await wait_until(pilot, lambda: [r.id for r in app.explorer.query_one(RunList).runs] == [keep.name],
                         what="the run list to drop the run")
        # It stays chosen, said gone (issue 35): no other run is opened in its place.
        assert app.explorer.current_run is None
        assert f"run {RUN_ID} is gone from disk" in screen_text(app) and 'session "y"' not in screen_text(app)
        assert app.is_running


async def test_the_only_run_removed_while_shown_empties_the_screen(tmp_path):
    run_dir = make_run(tmp_path, ['session "y"  # <-- EXECUTING'])
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await watched(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run")
        shutil.rmtree(run_dir)
        await wait_until(pilot, lambda: f"run {RUN_ID} was removed from" in screen_text(app), what="the message")
        assert f"run {RUN_ID} was removed from disk" in notifications(app)
        assert app.explorer.current_run is None
        assert app.explorer.query_one(TraceView).lines == []
        assert 'session "y"' not in screen_text(app)
        assert app.is_running


async def test_state_md_replaced_repeatedly_mid_read_ends_on_the_last_file(tmp_path):
    n = 12
    lines = [f'session "step {i}"' for i in range(n)]

    def version(k: int) -> str:
        trace = [ln + ("  # (complete)" if i < k else "  # <-- EXECUTING" if i == k else "") for i, ln in enumerate(lines)]
        return state_md(trace, updated=f"2026-03-01T10:07:{k % 60:02d}Z")

    run_dir = make_run(tmp_path, [], state=version(0))
    app = make_app(run_dir, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watched(pilot)
        trace = app.explorer.query_one(TraceView)
        tmp = run_dir / ".state.md.tmp"
        for round_ in range(300):
            tmp.write_text(version(round_ % n))
            os.replace(tmp, run_dir / "state.md")
            if round_ % 25 == 0:
                await pilot.pause(0)  # no wait: lets the watcher interleave with the writes
        final = 299 % n
        tmp.write_text(version(final))
        os.replace(tmp, run_dir / "state.md")
        expected = open_run(run_dir).trace
        # The live worker re-states the shown trace list in place (a snapshot rewrite costs
        # what changed): the cursor follows once the UI has taken the change.
        await wait_until(pilot, lambda: trace.lines == expected and trace.lines[trace.cursor].text == f'session "step {final}"',
                         what="the trace to match the last state.md, its cursor on the executing step")
        assert f'step {final}"' in "\n".join(trace_rows(app))
        assert app.is_running


async def test_bindings_written_before_the_watches_are_in_place_are_shown(tmp_path, monkeypatch):
    """A loaded machine installs the watches after the first screen: a binding the VM
    rewrote, and one it wrote new, in that window are shown once the watches are in place
    (no state file changed to bring them)."""
    run_dir = make_run(tmp_path, ['let a = session "x"  # --> bindings/a.md (complete)', 'session "y"  # <-- EXECUTING'],
                       bindings={"a": binding_file("the value of a")})
    path = run_dir / "bindings" / "a.md"
    install = held_watches(monkeypatch)
    app = make_app(run_dir, watch=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await show_binding(pilot, path)
            assert "the value of a" in screen_text(app)
            await wait_until(pilot, install.asked.is_set, what="the watcher about to install its watches")
            path.write_bytes(binding_file("a rewritten before the watches"))
            os.utime(path, (path.stat().st_mtime + 5, path.stat().st_mtime + 5))  # a later write, whatever the clock's grain
            (run_dir / "bindings" / "b.md").write_bytes(binding_file("b, new before the watches"))
            install.release()
            await watched(pilot)
            await wait_until(pilot, lambda: "a rewritten before the watches" in screen_text(app),
                             what="the rewritten binding shown")
            await wait_until(pilot, lambda: any(b.name == "b" for b in app.explorer.current_run.bindings),
                             what="the new binding in the run")
    finally:
        install.release()
