"""The newest binding comes from the run, not file times; bindings sort naturally (issue 32, item 4).

A git clone or a copy gives every file the time it was written out, so a run's file times say
nothing about which binding it wrote last. The run says: its trace (state.md is written in
execution order), its events, its execution ids.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.backends.loader import open_run
from prose_tui.demo.simulator import write_demo_project
from prose_tui.model import Binding, Run
from prose_tui.viewmodel.explorer_model import ExplorerModel
from prose_tui.tui.widgets.binding_tree import BindingTree


def _cloned_demo(tmp_path: Path) -> Path:
    """The demo run copied elsewhere with its binding files' times reversed: the first
    binding the run wrote (``repo``) now looks newest, the last (``notes``) oldest."""
    run_dir = write_demo_project(tmp_path / "src", clock=lambda: datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc))
    clone = tmp_path / "clone" / run_dir.name
    shutil.copytree(run_dir, clone)
    files = sorted((clone / "bindings").rglob("*.md"), key=lambda p: p.stat().st_mtime)
    base = 1_700_000_000
    for n, path in enumerate(reversed(files)):
        os.utime(path, (base + n, base + n))
    os.utime(clone / "bindings" / "repo.md", (base + 10_000, base + 10_000))
    return clone


def test_after_a_clone_the_strip_shows_the_binding_the_run_wrote_last(tmp_path):
    run = open_run(_cloned_demo(tmp_path))
    assert max(run.bindings, key=lambda b: b.mtime or 0.0).name == "repo"  # file times lie
    model = ExplorerModel()
    model.touch(run, None)
    newest = model.newest_binding_now()
    assert newest is not None and newest.name == "notes"  # the trace's last write: output notes = ...


def test_a_frame_opens_on_its_scope_binding_by_execution_not_file_time(tmp_path):
    """Without the trace naming them, scoped bindings are ordered by execution id: pass 3's
    ``parts`` is newer than pass 1's even when pass 1's file was touched last."""
    from prose_tui.viewmodel.explorer_model import newest_binding  # the name the explorer has always exported

    bindings = [Binding(name="parts", path=tmp_path / f"bindings/parts__{i}.md", execution_id=i,
                        mtime=1_700_000_000.0 + (10 - i)) for i in (1, 2, 3)]
    run = Run(id="r", path=tmp_path, bindings=bindings)
    newest = newest_binding(run)
    assert newest is not None and newest.execution_id == 3


def test_natural_key_puts_s2_before_s10():
    from prose_tui.model.binding import natural_key

    names = ["s10", "s2", "S1", "parts__10", "parts__9", "notes", "s2b"]
    assert sorted(names, key=natural_key) == ["notes", "parts__9", "parts__10", "S1", "s2", "s2b", "s10"]


async def test_the_bindings_tree_lists_s2_before_s10_also_when_s10_arrives_later(tmp_path):
    from textual.app import App

    class _Tree(App[None]):
        def compose(self):
            yield BindingTree()

    def run_with(*names: str) -> Run:
        return Run(id="r", path=tmp_path, bindings=[Binding(name=n, path=tmp_path / "bindings" / f"{n}.md")
                                                     for n in names])

    def listed(tree: BindingTree) -> list[str]:
        root = tree._groups["root"]
        return [node.label.plain.split()[0] for node in root.children]

    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(run_with("s10", "s1", "s2"))
        await pilot.pause()
        assert listed(tree) == ["s1", "s2", "s10"]
        tree.show(run_with("s10", "s1", "s2", "s3", "s11"))  # live: new leaves go in their place
        await pilot.pause()
        assert listed(tree) == ["s1", "s2", "s3", "s10", "s11"]


def test_show_json_names_the_binding_the_run_wrote_last_after_a_clone(tmp_path, capsys):
    import json

    from prose_tui.cli.main import main

    clone = _cloned_demo(tmp_path)
    assert main(["show", "--json", str(clone)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["newest_binding"]["name"] == "notes"


CONTRACT_RUN = Path("/work/shared/corpus/real/eksno__nix-config/.prose/runs/20260417-152853-710f25")


def test_an_event_log_contract_run_places_each_service_binding_at_its_statement(tmp_path):
    """``10-> test-cycle (verify) ✓`` is the last statement that wrote a binding
    (``bindings/test-cycle/result.md``), though the caller's request file is touched last."""
    import pytest

    if not CONTRACT_RUN.is_dir():
        pytest.skip(f"corpus run absent: {CONTRACT_RUN}")
    clone = tmp_path / CONTRACT_RUN.name
    shutil.copytree(CONTRACT_RUN, clone)
    os.utime(clone / "bindings" / "caller" / "request.md", (2_000_000_000, 2_000_000_000))
    model = ExplorerModel()
    model.touch(open_run(clone), None)
    newest = model.newest_binding_now()
    assert newest is not None and (newest.service, newest.name) == ("test-cycle", "result")


async def test_the_strip_on_screen_shows_the_last_write_of_a_cloned_run(tmp_path):
    from app_helpers import make_app, ready, wait_until

    from prose_tui.tui.widgets.context_strip import ContextStrip

    clone = _cloned_demo(tmp_path)
    app = make_app(clone)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.loaded_run == clone and explorer.first_read_done,
                         what="the full read of the cloned run")
        await pilot.pause()
        said = explorer.query_one(ContextStrip).shown.plain
        assert "notes" in said and "repo" not in said, said


def test_equal_ranks_go_to_the_later_name_in_natural_order(tmp_path):
    """Among bindings the record places alike (same place, execution id and file time), the
    newest is the last by natural order: ``s10`` after ``s2``. The name is compared only
    among those tied (a guard on how the tie is broken, not a new rule)."""
    from prose_tui.model.write_order import newest_binding

    names = ["s2", "s10", "s9", "notes"]
    run = Run(id="r", path=tmp_path, bindings=[Binding(name=n, path=tmp_path / f"bindings/{n}.md", mtime=5.0)
                                               for n in names])
    newest = newest_binding(run)
    assert newest is not None and newest.name == "s10"
    run.bindings.append(Binding(name="a", path=tmp_path / "bindings/a.md", mtime=6.0))  # a later file time wins
    assert newest_binding(run).name == "a"


def test_the_strip_asks_the_runs_record_once_until_the_run_changes(tmp_path, monkeypatch):
    """A status tick repaints the strip with nothing changed on disk: the newest binding is
    not worked out again over every binding and statement (2-5 ms a frame at 500 bindings);
    a live change of the run works it out afresh."""
    import prose_tui.model.write_order as write_order_module

    asked = []
    real = write_order_module.write_order

    def counted(run, **kwargs):
        asked.append(run)
        return real(run, **kwargs)

    monkeypatch.setattr(write_order_module, "write_order", counted)
    run = open_run(_cloned_demo(tmp_path))
    model = ExplorerModel()
    model.show(run)  # (the value pane asks once: the newest binding is the value shown)
    asked.clear()
    first = model.newest_binding_now()
    assert first is not None and first.name == "notes" and len(asked) == 1
    assert model.newest_binding_now() is first and len(asked) == 1, "asked again with nothing changed"
    model.show(run, {run.path / "state.md"})  # a live change of the same run
    asked.clear()
    assert model.newest_binding_now() == first and len(asked) == 1
