"""What showing one live change costs on the UI thread (issues 9 and 13, third pass showcost):
the first change after opening a run lays nothing out, and the bindings tree takes a new
binding or agent segment in place, ending as a fresh tree would be."""

from __future__ import annotations

from app_helpers import count_layouts, settled, wait_until, watched

from prose_tui.tui.widgets.run_header import RunHeader
from prose_tui.tui.widgets.trace_view import TraceView

RUN_ID = "20260115-090000-4f2a1c"


def _event_log(root, events: int):
    run = root / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    state = run / "state.md"
    lines = [f"# run:{RUN_ID} long.prose\n"] + [f"{i}→ step_{i} ✓ [09:00:{i:02d}]\n" for i in range(1, events + 1)]
    state.write_text("".join(lines), encoding="utf-8")
    return state


async def test_the_first_live_change_after_opening_a_run_lays_nothing_out(tmp_path, monkeypatch):
    # Opened weeks after its last change, the run is "interrupted" with a reason that takes
    # two rows; its first live change makes it "running" with a one-row reason. The header
    # keeps its rows (a blank one) instead of laying the whole screen out.
    state = _event_log(tmp_path, 20)
    layouts = count_layouts(monkeypatch)
    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        header = explorer.query_one(RunHeader)
        assert "interrupted" in header.shown.plain
        rows = header.size.height
        assert rows >= 3  # the badge line and a reason of two rows
        trace = explorer.query_one(TraceView)
        layouts.clear()
        with open(state, "a", encoding="utf-8") as fh:
            fh.write("21→ step_21 ✓ [09:00:21]\n22→ live_marker\n")
        await wait_until(pilot, lambda: any("live_marker" in line.text for line in trace.lines), what="the append")
        await wait_until(pilot, lambda: "running" in header.shown.plain, what="the header to say running")
        await settled(pilot)
        assert layouts == []
        assert header.size.height == rows  # the shorter text is padded, not re-laid out
        assert header.render_line(0).text.strip().startswith("●")  # the new text is what is painted


# --- the bindings tree grows in place -----------------------------------------------------

from pathlib import Path  # noqa: E402

from textual.app import App, ComposeResult  # noqa: E402

from prose_tui.model import Agent, Binding, Run  # noqa: E402
from prose_tui.model.agent import Segment  # noqa: E402
from prose_tui.tui.widgets.binding_tree import BindingTree  # noqa: E402

RUN = Path("/runs/r1")


class _Tree(App[None]):
    def compose(self) -> ComposeResult:
        yield BindingTree()


def _run(bindings: list[tuple[str, int | None]], segments: int = 0) -> Run:
    agent_memory = RUN / "agents" / "captain" / "memory.md"
    return Run(id="r1", path=RUN,
               bindings=[Binding(name=name, path=RUN / "bindings" / f"{name}-{eid}.md", kind="let", execution_id=eid)
                         for name, eid in bindings],
               agents=[Agent(name="captain", scope="execution", memory=agent_memory,
                             segments=[Segment(number=i + 1, path=RUN / "agents" / "captain" / f"captain-{i + 1:03d}.md",
                                               timestamp=f"12:00:{i:02d}") for i in range(segments)]),
                       Agent(name="scout", scope="stateless")],
               state_file=RUN / "state.md")


def _looks(tree: BindingTree) -> list:
    """Every node: depth, label, target, expanded; and what is kept back for lazy nodes."""
    out = []

    def walk(node, depth):
        for child in node.children:
            data = child.data
            kept = tree._lazy.get(child.id)
            out.append((depth, child.label.plain, child.label.spans == child.label.spans and str(child.label.spans),
                        (data.kind, data.path) if data is not None else None, child.is_expanded,
                        [(label.plain, t.path if t else None) for label, t in kept] if kept is not None else None))
            walk(child, depth + 1)

    walk(tree.root, 0)
    return out


async def test_new_bindings_and_segments_grow_the_tree_in_place_as_a_fresh_tree_would_be():
    before = [(f"v{i:03d}", None) for i in range(0, 40, 2)] + [("a", 3), ("b", 3), ("c", 7)]
    grown = before + [("v005", None), ("v999", None), ("aa", 3), ("new", 12), ("zz", 1)]
    app = _Tree()
    async with app.run_test(size=(80, 60)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(_run(before, segments=2))
        await pilot.pause()
        group = next(n for n in tree._walk() if n.label.plain.startswith("execution 3"))
        group.collapse()  # the user's expansion, and cursor, are kept
        agent = next(n for n in tree._walk() if n.label.plain.startswith("captain"))
        agent.expand()
        await pilot.pause()
        leaf = next(n for n in tree._walk() if n.data is not None and n.data.title.startswith("v010"))
        tree.move_cursor(leaf)
        await pilot.pause()
        rebuilds = tree.rebuilds
        run = _run(grown, segments=4)
        tree.show(run)
        await pilot.pause()
        assert tree.rebuilds == rebuilds  # grown in place
        assert tree.cursor_node is leaf
        assert not group.is_expanded and agent.is_expanded
        fresh_app = _Tree()
        async with fresh_app.run_test(size=(80, 60)) as fresh_pilot:
            fresh = fresh_app.query_one(BindingTree)
            fresh.show(_run(before, segments=2))
            await fresh_pilot.pause()
            next(n for n in fresh._walk() if n.label.plain.startswith("execution 3")).collapse()
            next(n for n in fresh._walk() if n.label.plain.startswith("captain")).expand()
            await fresh_pilot.pause()
            fresh.set_run(run)  # the whole rebuild, as before this pass
            await fresh_pilot.pause()
            assert _looks(tree) == _looks(fresh)
        assert tree.shape == tree.shape_of(run)


async def test_a_changed_binding_or_a_paged_group_still_rebuilds():
    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(_run([("a", None), ("b", None)]))
        await pilot.pause()
        rebuilds = tree.rebuilds
        changed = _run([("a", None), ("b", None)])
        changed.bindings[0].exists = False
        tree.show(changed)
        assert tree.rebuilds == rebuilds + 1
        assert "missing" in _looks(tree)[2][1]
        tree.show(_run([(f"x{i:03d}", None) for i in range(201)]))  # past a page: rebuilt, paged
        assert tree.rebuilds == rebuilds + 2


async def test_a_paged_group_takes_new_bindings_after_its_last_in_place():
    before = [(f"x{i:03d}", None) for i in range(399)]
    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(_run(before))
        await pilot.pause()
        rebuilds = tree.rebuilds
        for extra in ([("y000", None)], [("y000", None), ("y001", None), ("y002", None)]):
            run = _run(before + extra)
            tree.show(run)
            assert tree.rebuilds == rebuilds
            fresh_app = _Tree()
            async with fresh_app.run_test(size=(80, 30)) as fresh_pilot:
                fresh = fresh_app.query_one(BindingTree)
                fresh.set_run(run)
                await fresh_pilot.pause()
                assert _looks(tree) == _looks(fresh)
        tree.show(_run(before + [("y000", None), ("y001", None), ("y002", None), ("a", None)]))  # before the last: rebuilt
        assert tree.rebuilds == rebuilds + 1


async def test_a_rebuild_keeps_the_cursor_on_its_binding_when_bindings_share_one_file():
    """A database run's bindings all live in its ``state.db``: after a rebuild the cursor
    stays on the binding it was on, not on the first one with the same file."""
    db = RUN / "state.db"

    def db_run(missing: str | None = None) -> Run:
        return Run(id="r1", path=RUN, state_file=db,
                   bindings=[Binding(name=name, path=db, kind="let", exists=name != missing)
                             for name in ("alpha", "beta", "gamma", "delta")])

    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(db_run())
        await pilot.pause()
        leaf = next(n for n in tree._walk() if n.data is not None and n.data.title.startswith("gamma"))
        tree.move_cursor(leaf)
        await pilot.pause()
        rebuilds = tree.rebuilds
        tree.show(db_run(missing="alpha"))  # a changed binding: the tree is rebuilt
        await pilot.pause()
        assert tree.rebuilds == rebuilds + 1
        assert tree.cursor_node is not None and tree.cursor_node.data.title.startswith("gamma")
