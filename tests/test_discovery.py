"""Where runs are found (prose_tui.backends.discover): native ``runs/`` of an OpenProse root,
``.agents/prose/runs/``, ``~/.agents/prose/runs/`` only when asked, Reactor state dirs, and the
0.11-0.14 manifests (openprose-0.15 state/filesystem.md and reactor.md; FORMATS.md 5-7).
Projects are built in tmp_path; HOME is a fake home (conftest's autouse fixture)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from prose_tui.backends.discover import (
    STATE_DIR,
    find_runs,
    include_user_scope,
    owning_run,
    runs_roots,
)
from prose_tui.cli import main as cli

SKILL = FIXTURES / "skill"
COMPLETED = SKILL / "completed" / "runs" / "20260702-091500-a1b2c3"


@pytest.fixture(autouse=True)
def _user_scope_off():
    include_user_scope(False)
    yield
    include_user_scope(False)


def names(refs) -> list[str]:
    return sorted(r.path.name for r in refs)


def skill_run(root: Path, run_id: str = COMPLETED.name) -> Path:
    target = root / run_id
    shutil.copytree(COMPLETED, target)
    return target


def reactor_dir(folder: Path) -> Path:
    (folder / "compile").mkdir(parents=True)
    (folder / "compile" / "topology.json").write_text(json.dumps({"nodes": [], "edges": []}))
    (folder / "receipts.json").write_text("[]")
    return folder


def test_native_runs_folder_is_found_by_its_run_folders(tmp_path):
    skill_run(tmp_path / "runs")
    skill_run(tmp_path / "runs", "20260703-101010-bbbbbb")
    refs = find_runs(tmp_path)
    assert names(refs) == ["20260702-091500-a1b2c3", "20260703-101010-bbbbbb"]
    assert {r.runs_root for r in refs} == {(tmp_path / "runs").resolve()}
    assert runs_roots(tmp_path) == [(tmp_path / "runs").resolve()]


def test_a_runs_folder_of_something_else_is_not_a_run_list(tmp_path):
    (tmp_path / "runs" / "exp1").mkdir(parents=True)
    (tmp_path / "runs" / "exp1" / "events.out.tfevents").write_text("x")
    (tmp_path / "runs" / "Nov23_10-00").mkdir()
    (tmp_path / "runs" / "Nov23_10-00" / "state.md").write_text("checkpoint notes")  # a run file, no run id
    assert find_runs(tmp_path) == []
    assert runs_roots(tmp_path) == []


def test_native_runs_lists_only_the_run_folders(tmp_path):
    skill_run(tmp_path / "runs")
    (tmp_path / "runs" / "notes").mkdir()
    (tmp_path / "runs" / "notes" / "README.md").write_text("not a run")
    odd = tmp_path / "runs" / "handmade"
    odd.mkdir()
    (odd / "vm.log.md").write_text("# run:handmade demo\n1→ a ✓\n")  # an OpenProse-only file
    assert names(find_runs(tmp_path)) == ["20260702-091500-a1b2c3", "handmade"]
    assert names(find_runs(tmp_path / "runs")) == ["20260702-091500-a1b2c3", "handmade"]


def test_native_runs_nested_in_a_repository(tmp_path):
    skill_run(tmp_path / "services" / "billing" / "runs")
    assert names(find_runs(tmp_path)) == ["20260702-091500-a1b2c3"]


def test_attached_repository_runs(tmp_path):
    skill_run(tmp_path / ".agents" / "prose" / "runs")
    refs = find_runs(tmp_path)
    assert names(refs) == ["20260702-091500-a1b2c3"]
    assert refs[0].runs_root == (tmp_path / ".agents" / "prose" / "runs").resolve()


def test_a_run_folder_itself_and_a_project_root_with_runs(tmp_path):
    run = skill_run(tmp_path / "runs")
    assert [r.path for r in find_runs(run)] == [run.resolve()]
    # An OpenProse root with world-model/ of its own is still a project, not one run.
    (tmp_path / "world-model").mkdir()
    assert names(find_runs(tmp_path)) == ["20260702-091500-a1b2c3"]


def test_user_scope_only_when_asked(tmp_path, _isolated_user_dirs):
    home = _isolated_user_dirs
    skill_run(home / ".agents" / "prose" / "runs", "20260601-080000-cccccc")
    project = tmp_path / "project"
    skill_run(project / "runs")
    assert names(find_runs(project)) == ["20260702-091500-a1b2c3"]
    assert names(find_runs(project, user=True)) == ["20260601-080000-cccccc", "20260702-091500-a1b2c3"]
    other = tmp_path / "elsewhere"
    skill_run(other / ".agents" / "prose" / "runs", "20260601-080000-cccccc")
    assert names(find_runs(project, user=True, home=other)) == ["20260601-080000-cccccc", "20260702-091500-a1b2c3"]
    include_user_scope(True)
    assert names(find_runs(project)) == ["20260601-080000-cccccc", "20260702-091500-a1b2c3"]


def test_user_scope_is_not_listed_twice(_isolated_user_dirs):
    home = _isolated_user_dirs
    skill_run(home / ".agents" / "prose" / "runs", "20260601-080000-cccccc")
    assert names(find_runs(home, user=True)) == ["20260601-080000-cccccc"]


def test_runs_command_user_flag(tmp_path, _isolated_user_dirs, capsys):
    skill_run(_isolated_user_dirs / ".agents" / "prose" / "runs", "20260601-080000-cccccc")
    project = tmp_path / "project"
    skill_run(project / "runs")
    assert cli.main(["runs", str(project), "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["20260702-091500-a1b2c3"]
    assert cli.main(["runs", str(project), "--user", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["20260702-091500-a1b2c3", "20260601-080000-cccccc"]
    assert cli.main(["runs", str(project), "--json"]) == 0  # the flag does not stick
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_reactor_default_state_dir(tmp_path):
    state = reactor_dir(tmp_path / ".reactor")
    refs = find_runs(tmp_path)
    assert [(r.path, r.kind, r.flat) for r in refs] == [(state.resolve(), STATE_DIR, False)]
    assert refs[0].runs_root == state.resolve()  # watched whole
    assert [(r.path, r.kind) for r in find_runs(state)] == [(state.resolve(), STATE_DIR)]


def test_reactor_yml_names_the_state_dir(tmp_path):
    project = tmp_path / "desk"
    state = project / "var" / "reactor-state"
    state.mkdir(parents=True)  # named by reactor.yml: found even before its first receipt
    (project / "reactor.yml").write_text("state:\n  dir: ./var/reactor-state\nmodel:\n  provider: openrouter\n")
    assert [(r.path, r.kind) for r in find_runs(tmp_path)] == [(state.resolve(), STATE_DIR)]
    assert [(r.path, r.kind) for r in find_runs(project / "reactor.yml")] == [(state.resolve(), STATE_DIR)]


def test_reactor_yml_default_and_missing_state_dir(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "reactor.yml").write_text("model:\n  provider: openrouter\n")
    (tmp_path / "a" / ".reactor").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "reactor.yml").write_text("state:\n  dir: ./nowhere\n")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "reactor.yml").write_text("state: [unclosed\n")
    assert [r.path for r in find_runs(tmp_path)] == [(tmp_path / "a" / ".reactor").resolve()]


def test_real_reactor_corpus_is_one_run_per_state_dir():
    corpus = Path(os.environ.get("PROSE_TUI_REACTOR_CORPUS", FIXTURES.parent.parent.parent / "shared" / "corpus" / "reactor"))
    if not corpus.is_dir():
        pytest.skip(f"Reactor corpus not found at {corpus} (set PROSE_TUI_REACTOR_CORPUS)")
    refs = find_runs(corpus)
    expected = sorted(p.parent.parent for p in corpus.glob("**/compile/topology.json"))
    assert sorted(r.path for r in refs) == [p.resolve() for p in expected]
    assert all(r.kind == STATE_DIR for r in refs)


def test_manifest_runs_of_0_11_to_0_14():
    refs = find_runs(SKILL / "manifests")
    assert names(refs) == ["20260503-101500-4d5e6f", "20260520-160000-aa11bb", "20260528-090000-cc22dd"]
    roots = {r.path.name: r.runs_root.relative_to((SKILL / "manifests").resolve()).as_posix() for r in refs}
    assert roots["20260503-101500-4d5e6f"] == ".agents/prose/runs"
    assert roots["20260528-090000-cc22dd"] == "runs"


def test_judge_era_state_counts_only_in_a_run_id_folder(tmp_path):
    root = tmp_path / "root"
    (root / "state" / "responsibilities" / "x").mkdir(parents=True)  # an OpenProse root's durable state
    assert find_runs(root) == []
    run = tmp_path / "runs" / "20260528-090000-cc22dd"
    (run / "state" / "responsibilities" / "x").mkdir(parents=True)
    assert names(find_runs(tmp_path)) == ["20260528-090000-cc22dd"]


def test_walk_never_follows_symlinks(tmp_path):
    skill_run(tmp_path / "real" / "runs")
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "back").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert names(find_runs(tmp_path)) == ["20260702-091500-a1b2c3"]


def test_walk_is_bounded_in_depth(tmp_path):
    deep = tmp_path
    for i in range(12):
        deep = deep / f"d{i}"
    skill_run(deep / "runs")
    assert find_runs(tmp_path) == []
    assert names(find_runs(deep)) == ["20260702-091500-a1b2c3"]


def test_skipped_folders_are_not_walked(tmp_path):
    skill_run(tmp_path / "node_modules" / "pkg" / "runs")
    skill_run(tmp_path / "deps" / "github.com" / "openprose" / "prose" / "runs")
    assert find_runs(tmp_path) == []


def test_owning_run_keeps_its_contract(tmp_path):
    run = tmp_path / "runs" / "20260702-091500-a1b2c3"
    assert owning_run(run / "receipts" / "a.jsonl", [run, tmp_path / "runs"]) == run
    assert owning_run(tmp_path / "other", [run]) is None


def _ledger_run(folder: Path) -> Path:
    """A run folder holding only a receipt ledger and its anchor (FORMATS.md generation 8)."""
    folder.mkdir(parents=True)
    (folder / "receipts.jsonl").write_text("")
    (folder / "run.json").write_text(json.dumps({"v": "libretto.run.v1", "receipt_count": 0, "ledger_head": None}))
    return folder


def test_receipt_ledger_runs_are_found_in_libretto_and_native_runs(tmp_path):
    _ledger_run(tmp_path / ".libretto" / "runs" / "20260716-120000-abc123")
    _ledger_run(tmp_path / "tools" / "runs" / "nightly")  # a receipts.jsonl marks a run without a run-id name
    (tmp_path / "tools" / "runs" / "checkpoints").mkdir()  # not a run
    assert names(find_runs(tmp_path)) == ["20260716-120000-abc123", "nightly"]
    one = tmp_path / ".libretto" / "runs" / "20260716-120000-abc123"
    assert [r.path for r in find_runs(one)] == [one.resolve()]
    assert [r.path for r in find_runs(one / "receipts.jsonl")] == [one.resolve()]
