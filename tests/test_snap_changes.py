"""What a watched snapshot rewrite and a binding append cost between the write and the
screen (issue 33, branch ``snap``).

Counted, never timed: a VM's atomic rewrite of a 200-statement run with 100 bindings,
written by the test between frames, as ``benchmarks/bench_e2e.py``'s ``snapshot-N``
cases do."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app_helpers import count_layouts, count_rows, settled, wait_until, watched

from prose_tui.model import Run
from prose_tui.tui.widgets.trace_view import TraceView

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import huge_run  # noqa: E402


def _snapshot(tmp_path: Path) -> tuple[Path, list[str], list[int], int]:
    """A snapshot run (200 trace lines, 100 bindings); its state.md lines, the statement
    lines and the executing one."""
    run = huge_run(tmp_path, bindings=100, trace_lines=200, agents=0, segments=0)
    lines = (run / "state.md").read_text(encoding="utf-8").splitlines()
    statements = [i for i, ln in enumerate(lines) if ln.startswith("let value_")]
    executing = next(i for i, ln in enumerate(lines) if "<-- EXECUTING" in ln)
    return run, lines, statements, executing


def _move_marker(run: Path, lines: list[str], frm: int, to: int, text: str) -> None:
    """Rewrite state.md as a VM does (a temporary file renamed over it): the statement at
    line ``frm`` completes, the one at ``to`` executes with ``text``."""
    lines[frm] = lines[frm].replace("# <-- EXECUTING", "# (complete)")
    lines[to] = f"let value_{to:05d} = session: {text}".ljust(70) + " # <-- EXECUTING"
    tmp = run / ".state.md.tmp"
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, run / "state.md")


async def test_building_a_watched_runs_history_does_not_write_the_run_out_as_text(tmp_path, monkeypatch):
    # Each rewrite builds the run's history in a worker. Textual describes a worker by the
    # repr of its work unless given a description: here a partial holding the whole run,
    # 300-600 KB of text formatted on the UI thread (7-14 ms at 500-2,000 statements) for
    # every rewrite, beside the next change's paint.
    run_dir, lines, statements, executing = _snapshot(tmp_path)
    formatted: list[str] = []
    real = Run.__repr__

    def counting(self):
        formatted.append(self.id)
        return real(self)

    monkeypatch.setattr(Run, "__repr__", counting)
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        nav = explorer.panes.model.nav
        built = nav.history  # the history adopted last (a new object per build)
        formatted.clear()
        nxt = statements[statements.index(executing) + 1]
        _move_marker(run_dir, lines, executing, nxt, "marker_one")
        await wait_until(pilot, lambda: any("marker_one" in line.text for line in trace.lines), what="the rewrite")
        # A build of the history after the rewrite, adopted (``history_pending`` is true only
        # while one waits or runs: a loaded machine's turn of the loop may span a whole build).
        await wait_until(pilot, lambda: nav.history is not built, what="the history built again after the rewrite")
        await settled(pilot)
        assert formatted == []


async def test_a_rewrite_that_wrote_no_binding_does_not_order_the_runs_bindings(tmp_path, monkeypatch):
    # Which binding the value pane follows is asked of every live change; a rewrite of
    # state.md alone names no binding file, and ordering the run's bindings by its trace
    # (500-2,000 statements: 1.5-4 ms of the UI thread) cannot pick one.
    import threading

    from prose_tui.model import write_order as order_module

    run_dir, lines, statements, executing = _snapshot(tmp_path)
    on_ui: list[bool] = []
    real = order_module.write_order

    def counting(run, *, first=False):
        on_ui.append(threading.current_thread() is threading.main_thread())
        return real(run, first=first)

    monkeypatch.setattr(order_module, "write_order", counting)
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        shown = explorer.panes.value_target
        on_ui.clear()
        nxt = statements[statements.index(executing) + 1]
        _move_marker(run_dir, lines, executing, nxt, "marker_two")
        await wait_until(pilot, lambda: any("marker_two" in line.text for line in trace.lines), what="the rewrite")
        await pilot.pause()
        assert explorer.panes.value_target == shown  # the value pane still shows what it showed
        assert not any(on_ui), f"the bindings were ordered {on_ui.count(True)} times on the UI thread"


async def test_a_written_binding_keeps_its_place_in_the_bindings_tree(tmp_path):
    # A binding's file written while the run is watched was read again without its Index
    # row's place (``Binding.listed``): it moved to the end of its group, and the tree was
    # rebuilt, its screen laid out again (20-37 ms at 200x50), on the first append.
    import subprocess

    from prose_tui.tui.widgets.binding_tree import BindingTree

    run_dir = huge_run(tmp_path, bindings=12, trace_lines=4, agents=0, segments=0)
    state = run_dir / "state.md"
    text = state.read_text(encoding="utf-8").splitlines()
    rows = [i for i, ln in enumerate(text) if ln.startswith("| value_")]
    text[rows[0]:rows[-1] + 1] = reversed(text[rows[0]:rows[-1] + 1])  # the Index lists them newest first
    state.write_text("\n".join(text) + "\n", encoding="utf-8")
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        tree = explorer.query_one(BindingTree)

        def leaves() -> list[str]:
            return [node.label.plain.split("  ")[0] for node in tree._groups["root"].children]

        before, rebuilds = leaves(), tree.rebuilds
        assert before[:3] == ["value_00011", "value_00010", "value_00009"]
        target = run_dir / "bindings" / "value_00005.md"
        subprocess.run([sys.executable, "-c", f"open({str(target)!r}, 'a').write('appended_marker\\n')"], check=True)
        model = explorer.panes.model
        await wait_until(pilot, lambda: any(b.path == target and b.bytes == target.stat().st_size
                                            for b in model.run.bindings), what="the append read")
        await pilot.pause()
        assert leaves() == before
        assert tree.rebuilds == rebuilds


async def test_text_appended_to_the_value_shown_repaints_its_own_rows_not_the_pane(tmp_path):
    # The value pane follows a binding as the VM appends to it: each append re-rendered and
    # repainted every row of the pane (24 at 200x50), most of the frame that shows it.
    import subprocess

    from prose_tui.tui.widgets.line_view import LineView
    from prose_tui.tui.widgets.value_viewer import ValueViewer

    run_dir = huge_run(tmp_path, bindings=20, trace_lines=40, agents=0, segments=0)
    binding = run_dir / "bindings" / "value_00019.md"
    binding.write_text("# value_00019\n\nkind: let\n\n---\n\nvalue_opened\nsecond line\n", encoding="utf-8")
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        viewer = explorer.query_one(ValueViewer)
        body = viewer.query_one(LineView)
        await wait_until(pilot, lambda: "value_opened" in (viewer.text or ""), what="the binding shown")
        # The text is set before its rows are painted: under load that first paint (every row)
        # came after the counting began. A repaint asked for here takes it in; count from then.
        asked = count_rows([body])
        body.refresh()
        await wait_until(pilot, lambda: asked[body] >= body.size.height > 10, what="the binding's rows painted")
        asked.clear()
        for n in range(3):
            subprocess.run([sys.executable, "-c", f"open({str(binding)!r}, 'a').write('more_{n} ')"], check=True)
            await wait_until(pilot, lambda n=n: f"more_{n}" in (viewer.text or ""), what=f"append {n} shown")
            await pilot.pause()
            rows = body.rows_text()
            assert f"more_{n}" in rows[2] and rows[:2] == ["value_opened", "second line"]
        assert body.size.height > 10
        assert 0 < asked[body] <= 3 * 2, f"{asked[body]} rows painted for three appends to one line"


async def test_lines_replaced_in_place_paint_what_lines_shown_afresh_paint():
    # Kept rows, a line that now wraps onto more rows (the rows under it move), lines added
    # and lines removed: the view's cells are those of a view given the new lines afresh.
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.geometry import Region

    from prose_tui.tui.widgets.line_view import LineView

    class _Two(App):
        CSS = "LineView { height: 8; width: 24; }"

        def compose(self) -> ComposeResult:
            yield LineView(id="kept")
            yield LineView(id="fresh")

    def cells(view: LineView) -> list[str]:
        return [strip.text for strip in view.render_lines(Region(0, 0, view.size.width, view.size.height))]

    steps = [
        ["alpha", "beta", "gamma"],
        ["alpha", "beta", Text("gamma ▌more")],
        ["alpha", "beta grows long enough to wrap onto two rows", "gamma", "delta"],
        ["alpha", "beta", "gamma", "delta", "epsilon"],
        ["alpha", "beta"],
        ["alpha", "beta"],
    ]
    app = _Two()
    async with app.run_test(size=(60, 20)) as pilot:
        kept, fresh = app.query_one("#kept", LineView), app.query_one("#fresh", LineView)
        for lines in steps:
            kept.set_lines(list(lines))
            fresh.set_renderable("")  # nothing kept from before
            await pilot.pause()
            fresh.set_lines(list(lines))
            await pilot.pause()
            assert cells(kept) == cells(fresh), lines


async def test_a_rewrite_that_rebuilds_the_bindings_tree_does_not_lay_the_screen_out(tmp_path, monkeypatch):
    # The Index now lists two bindings the other way round: the tree is built again (its
    # shape changed) with as many lines as before. Textual's Tree asked for a layout of the whole
    # screen after any change of its nodes (20-37 ms at 200x50) though its size is the pane's.
    from prose_tui.tui.widgets.binding_tree import BindingTree

    run_dir, lines, statements, executing = _snapshot(tmp_path)
    layouts = count_layouts(monkeypatch)
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        tree = explorer.query_one(BindingTree)
        trace = explorer.query_one(TraceView)
        rebuilds, count = tree.rebuilds, tree.last_line
        row = next(i for i, ln in enumerate(lines) if ln.startswith("| value_00003 |"))
        lines[row], lines[row + 1] = lines[row + 1], lines[row]  # the Index lists two the other way round
        nxt = statements[statements.index(executing) + 1]
        layouts.clear()
        _move_marker(run_dir, lines, executing, nxt, "marker_three")
        await wait_until(pilot, lambda: any("marker_three" in line.text for line in trace.lines), what="the rewrite")
        await wait_until(pilot, lambda: tree.rebuilds > rebuilds, what="the tree built again")
        await pilot.pause()
        await pilot.pause()
        assert tree.last_line == count
        shown = [strip.text for strip in tree.render_lines(tree.region.reset_offset)]
        assert any("value_00003" in text for text in shown) and any("value_00004" in text for text in shown)
        assert layouts == []


async def test_a_rewrite_repaints_the_header_rows_that_changed(tmp_path):
    # Each rewrite moves the executing marker: the header's reason line changes ("line N is
    # EXECUTING"), its badge line and the rest do not. Every row of the header was painted
    # again; the rows painted now are the changed ones, and they read as a fresh header's.
    from textual.geometry import Region

    from prose_tui.tui.widgets.run_header import RunHeader

    run_dir, lines, statements, executing = _snapshot(tmp_path)
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        header = explorer.query_one(RunHeader)
        at = statements.index(executing)
        _move_marker(run_dir, lines, statements[at], statements[at + 1], "marker_first")  # running now
        await wait_until(pilot, lambda: any("marker_first" in line.text for line in trace.lines), what="a rewrite")
        await settled(pilot)
        real = header.render_lines  # the header's own paint, for the check below
        asked = count_rows([header])
        before = header.shown.plain
        _move_marker(run_dir, lines, statements[at + 1], statements[at + 2], "marker_next")
        await wait_until(pilot, lambda: any("marker_next" in line.text for line in trace.lines), what="the rewrite")
        await wait_until(pilot, lambda: header.shown.plain != before, what="the header's new reason")
        await pilot.pause()
        await pilot.pause()
        changed = sum(a != b for a, b in zip(before.split("\n"), header.shown.plain.split("\n")))
        assert header.size.height >= 3 and 0 < changed < header.size.height
        assert 0 < asked[header] <= changed
        width, height = header.size
        painted = [strip.text for strip in real(Region(0, 0, width, height))]
        header._render_content()  # the text rendered afresh
        header._styles_cache.clear()
        assert [strip.text for strip in real(Region(0, 0, width, height))] == painted


async def test_an_event_appended_to_a_log_leaves_the_bindings_tree_unpainted(tmp_path):
    # Each event of a log changes what orders its bindings (its events), so the tree looked
    # again; it then set its "Bindings (N)" label to the same text, which repainted that
    # row: 1-2 ms of every event's frame at 200x50, for nothing on screen.
    import subprocess

    from prose_tui.tui.widgets.binding_tree import BindingTree

    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-b1d1e5"
    run_dir.mkdir(parents=True)
    state = run_dir / "state.md"
    state.write_text("# run:20260301-090000-b1d1e5 tree.prose\n"
                     + "".join(f"{n}→ step_{n} ✓ [09:00:{n:02d}]\n" for n in range(1, 30)), encoding="utf-8")
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        tree = explorer.query_one(BindingTree)
        trace = explorer.query_one(TraceView)
        asked = count_rows([tree])
        for n in (30, 31):
            subprocess.run([sys.executable, "-c", f"open({str(state)!r}, 'a').write('{n}→ step_{n} ✓ [09:00:{n}]\\n')"],
                           check=True)
            await wait_until(pilot, lambda n=n: trace.lines[-1].text.startswith(f"{n}→"), what=f"event {n}")
            await pilot.pause()
        assert asked[tree] == 0, f"the bindings tree painted {asked[tree]} rows for two appended events"
        assert str(tree._bindings_node.label) == "Bindings (0)"


async def test_a_rewrite_comes_into_the_history_from_its_journal_record_not_after_a_timer(tmp_path, monkeypatch):
    # A snapshot run's history is replayed from the journal, which the live worker writes
    # after the change's frame. The build used to start on a timer (0.4 s after the paint),
    # whatever the run did meanwhile: a run rewriting state.md every 0.3 s had its next
    # change painted beside a 10-70 ms build in a thread (issue 33). Now the record starts
    # it; with both clocks made an hour long, only the record can.
    from prose_tui.tui.screens import explorer_panes
    from prose_tui.viewmodel import explorer_model

    monkeypatch.setattr(explorer_model, "HISTORY_DELAY", 3600.0)
    monkeypatch.setattr(explorer_panes, "RECORD_WAIT", 3600.0)
    run_dir, lines, statements, executing = _snapshot(tmp_path)
    async with watched(tmp_path, size=(80, 24)) as (app, pilot):
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        nav = explorer.panes.model.nav
        at = executing
        for marker in ("marker_a", "marker_b"):
            nxt = statements[statements.index(at) + 1]
            _move_marker(run_dir, lines, at, nxt, marker)
            at = nxt
            await wait_until(pilot, lambda: any(marker in line.text for line in trace.lines), what="the rewrite")
            await wait_until(pilot, lambda: not explorer.history_pending and nav.history is not None
                             and any(marker in event.text for event in nav.history.events),
                             what=f"the history with {marker}, built from its record")
            assert nav.history.origin == "journal"
            assert "after the journal ends" not in (nav.history.note or ""), "built before the record was in"
