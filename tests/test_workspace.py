"""The live workspace: new runs appear, changes re-read only their part of a run."""

from __future__ import annotations

from pathlib import Path

from prose_tui.backends.common import bindings as binding_source
from prose_tui.live.workspace import Workspace

STATE = """# Execution State

run: {run_id}
program: p.prose
started: 2026-03-01T10:00:00Z
updated: 2026-03-01T10:00:00Z

## Execution Trace

```prose
let a = session "x"  # --> bindings/a.md (complete)
session "y"  # <-- EXECUTING
```
"""


def _binding(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {path.stem}\n\nkind: let\n\n---\n\n{value}\n")


def test_a_run_whose_folder_appears_before_its_state_file_is_added(tmp_path):
    runs = tmp_path / ".prose" / "runs"
    (runs / "20260301-100000-aaaaaa").mkdir(parents=True)
    (runs / "20260301-100000-aaaaaa" / "state.md").write_text(STATE.format(run_id="20260301-100000-aaaaaa"))
    ws = Workspace(tmp_path)
    ws.scan()
    new = runs / "20260301-110000-bbbbbb"
    new.mkdir()
    first = ws.apply({new})
    (new / "state.md").write_text(STATE.format(run_id="20260301-110000-bbbbbb"))
    second = ws.apply({new / "state.md"})
    added = first.runs_added + second.runs_added
    assert new in added
    assert new in ws.runs and ws.runs[new].executing.text == 'session "y"'


def test_a_new_run_beside_a_flat_layout_run_is_discovered(tmp_path):
    runs = tmp_path / ".prose" / "runs"
    runs.mkdir(parents=True)
    (runs / "state.md").write_text(STATE.format(run_id="current"))
    ws = Workspace(tmp_path)
    assert [r.id for r in ws.scan()] == ["current"]
    new = runs / "20260301-120000-cccccc"
    new.mkdir()
    (new / "state.md").write_text(STATE.format(run_id="20260301-120000-cccccc"))
    applied = ws.apply({new, new / "state.md"})
    assert new in applied.runs_added
    assert {r.id for r in ws.sorted_runs()} == {"current", "20260301-120000-cccccc"}


def test_a_state_md_rewrite_does_not_re_read_binding_files(tmp_path, monkeypatch):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-aaaaaa"
    for name in ("a", "b", "c"):
        _binding(run_dir / "bindings" / f"{name}.md", f"value {name}")
    (run_dir / "state.md").write_text(STATE.format(run_id=run_dir.name))
    ws = Workspace(tmp_path)
    ws.scan(first=run_dir)
    assert run_dir in ws.detailed
    reads = []
    original = binding_source.read_binding
    def counted(*args, **kwargs):
        reads.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(binding_source, "read_binding", counted)
    monkeypatch.setattr("prose_tui.backends.filesystem.live.read_binding", counted)
    (run_dir / "state.md").write_text(STATE.format(run_id=run_dir.name).replace('session "y"  # <-- EXECUTING', 'session "y"  # (complete)'))
    change = ws.apply({run_dir / "state.md"})
    assert reads == []
    run = change.changed[run_dir].run
    assert run.executing is None and sorted(b.name for b in run.bindings) == ["a", "b", "c"]
    _binding(run_dir / "bindings" / "b.md", "value b, rewritten")
    ws.apply({run_dir / "bindings" / "b.md"})
    assert reads == [run_dir / "bindings" / "b.md"]
