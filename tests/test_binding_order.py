"""Bindings in the order the run wrote them; history steps in the order it records (issue 32, item 4).

After a git clone every file has the same time and a folder lists its files in whatever order
the filesystem keeps, so neither may decide what a user sees. These runs are written as a VM
following the seeds would write them (whole files, ``os.replace``; SQLite rows one statement at
a time from a second process), then every file is given the same time (as a clone does) and
created in reverse order (so the folder's listing order differs from any sorted one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from prose_tui.backends.loader import open_run
from prose_tui.cli.main import main
from prose_tui.history.reconstruct import reconstruct
from prose_tui.model import EventKind
from prose_tui.tui.widgets.binding_tree import BindingTree

RUN_ID = "20260301-090000-0rd3r5"
CLONED = 1_767_000_000  # the one time a clone gives every file (2025-12-29: the run started 2026-03-01)

# The program writes s10, then s2, then alpha (an input written last), then calls `split`
# three times (execution ids 9, 10, 11; the trace names only the last pass's file), and the
# captain agent twice.
STATE_MD = f"""# Execution State

run: {RUN_ID}
program: order.prose
started: 2026-03-01T09:00:00Z
updated: 2026-03-01T09:09:00Z
status: completed

## Execution Trace

```prose
agent captain:
  model: opus
  persist: true
let s10 = session "First draft"                 # --> bindings/s10.md (complete)
let s2 = resume: captain                        # --> bindings/s2.md (complete)
  prompt: "Review the draft"
block split(text):
  let parts = session "Split"                   # --> bindings/parts__11.md (complete)
let pieces = do split(s2)                       # (complete)
let alpha = resume: captain                     # --> bindings/alpha.md (complete)
  prompt: "Approve"
```

## Index

### Bindings

| Name | Kind | Path | Execution ID |
|------|------|------|--------------|
| s10 | let | bindings/s10.md | (root) |
| s2 | let | bindings/s2.md | (root) |
| parts | let | bindings/parts__9.md | 9 |
| parts | let | bindings/parts__10.md | 10 |
| parts | let | bindings/parts__11.md | 11 |
| alpha | let | bindings/alpha.md | (root) |

### Agents

| Name | Scope | Path |
|------|-------|------|
| captain | execution | agents/captain/ |

## Call Stack

(empty - execution complete)
"""

WRITTEN = ["s10", "s2", "parts__9", "parts__10", "parts__11", "alpha"]  # the order the program wrote them


def _write_whole(path: Path, text: str) -> None:
    """As the seed asks of a VM: a temporary name, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def cloned_snapshot_run(tmp_path: Path) -> Path:
    """The run above, its files created in reverse write order, then all given one time."""
    run_dir = tmp_path / ".prose" / "runs" / RUN_ID
    files: list[tuple[str, str]] = [("state.md", STATE_MD)]
    for stem in WRITTEN:
        name, _, eid = stem.partition("__")
        head = f"# {name}\nkind: let\n" + (f"execution_id: {eid}\n" if eid else "")
        files.append((f"bindings/{stem}.md", f"{head}source:\n```prose\nlet {name} = session\n```\n---\n{stem} value\n"))
    files += [("agents/captain/memory.md", "# Agent Memory: captain\n"),
              ("agents/captain/captain-001.md", "# Segment 001\nprompt: \"Review the draft\"\n"),
              ("agents/captain/captain-002.md", "# Segment 002\nprompt: \"Approve\"\n")]
    for rel, text in reversed(files):
        _write_whole(run_dir / rel, text)
    for path in [run_dir, *run_dir.rglob("*")]:
        os.utime(path, (CLONED, CLONED))
    return run_dir


def _tree_rows(tree: BindingTree) -> list[str]:
    """The binding leaves in the order they are on screen, as ``name`` or ``name@eid``."""
    rows = []
    for group in tree._bindings_node.children if tree._bindings_node else []:
        for leaf in group.children:
            data = leaf.data
            name = leaf.label.plain.split()[0]
            rows.append(name if data is None or "__" not in data.path.stem else f"{name}@{data.path.stem.split('__')[1]}")
    return rows


def test_show_json_lists_a_cloned_snapshot_runs_bindings_in_the_programs_order(tmp_path, capsys):
    run_dir = cloned_snapshot_run(tmp_path)
    assert main(["show", "--json", str(run_dir)]) == 0
    shown = json.loads(capsys.readouterr().out)
    stems = [Path(b["path"]).stem for b in shown["bindings"]]
    assert stems == WRITTEN
    assert shown["newest_binding"]["name"] == "alpha"


async def test_the_bindings_pane_follows_the_programs_order_after_a_clone(tmp_path):
    from app_helpers import make_app, ready, wait_until

    run_dir = cloned_snapshot_run(tmp_path)
    app = make_app(run_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.loaded_run == run_dir and explorer.first_read_done,
                         what="the full read of the cloned run")
        tree = explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: len(_tree_rows(tree)) == 6, what="six binding leaves")
        # root first, then the scopes in the order they were entered (execution ids grow)
        assert _tree_rows(tree) == ["s10", "s2", "alpha", "parts@9", "parts@10", "parts@11"]


def test_history_of_a_cloned_snapshot_run_follows_the_record_not_the_listing(tmp_path):
    run = open_run(cloned_snapshot_run(tmp_path))
    history = reconstruct(run)
    steps = [(e.kind, e.name, e.execution_id) for e in history.events
             if e.kind in (EventKind.BINDING_WRITTEN, EventKind.AGENT_SEGMENT, EventKind.FRAME_PUSHED)]
    assert steps == [
        (EventKind.BINDING_WRITTEN, "s10", None),
        (EventKind.BINDING_WRITTEN, "s2", None),
        (EventKind.AGENT_SEGMENT, "captain", None),  # captain-001: the first resume: captain
        (EventKind.FRAME_PUSHED, "split", 9), (EventKind.BINDING_WRITTEN, "parts", 9),
        (EventKind.FRAME_PUSHED, "split", 10), (EventKind.BINDING_WRITTEN, "parts", 10),
        (EventKind.FRAME_PUSHED, "split", 11), (EventKind.BINDING_WRITTEN, "parts", 11),
        (EventKind.BINDING_WRITTEN, "alpha", None),
        (EventKind.AGENT_SEGMENT, "captain", None),  # captain-002: the second
    ]
    segments = [e.status for e in history.events if e.kind is EventKind.AGENT_SEGMENT]
    assert segments == ["001", "002"]
    # the clone's file time is months before the run's started: it cannot be when a step ran
    assert run.started is not None
    assert all(e.time is None or e.time >= run.started for e in history.events), \
        [(e.text, e.time) for e in history.events if e.time is not None and e.time < run.started]


_SQL_VM = """
import sqlite3, sys
sys.path.insert(0, sys.argv[2])
from sqlite_vm_writer import SCHEMA
db = sys.argv[1]
def statement(sql):  # the seed's VM: one sqlite3 call, one connection, per statement
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(sql)
    finally:
        conn.close()
statement(SCHEMA)
for i, name in enumerate(["s10", "s2", "alpha", "s1"], 1):
    statement(f"BEGIN; INSERT INTO execution (statement_index, statement_text, status) VALUES ({i}, 'let {name} = session', 'completed');"
              f" INSERT INTO bindings (name, execution_id, kind, value, source_statement) VALUES ('{name}', NULL, 'let', 'v{i}', 'let {name} = session'); COMMIT;")
"""


async def test_the_bindings_pane_lists_a_databases_bindings_in_the_order_the_vm_inserted_them(tmp_path):
    from app_helpers import make_app, ready, wait_until

    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-5q1173"
    run_dir.mkdir(parents=True)
    subprocess.run([sys.executable, "-c", _SQL_VM, str(run_dir / "state.db"), str(Path(__file__).parent)], check=True)
    for path in [run_dir, *run_dir.iterdir()]:
        os.utime(path, (CLONED, CLONED))
    app = make_app(run_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.loaded_run == run_dir and explorer.first_read_done,
                         what="the full read of the database run")
        tree = explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: len(_tree_rows(tree)) == 4, what="four binding leaves")
        assert _tree_rows(tree) == ["s10", "s2", "alpha", "s1"]


async def test_a_run_that_records_no_order_lists_its_bindings_naturally_also_as_they_arrive(tmp_path):
    """No trace, Index nor table: natural order (s2 before s10), also for files that arrive
    later, whatever order the folder lists them in."""
    from textual.app import App

    from prose_tui.model import Binding, Run

    class _Tree(App[None]):
        def compose(self):
            yield BindingTree()

    def run_with(*names: str) -> Run:
        return Run(id="r", path=tmp_path, bindings=[Binding(name=n, path=tmp_path / "bindings" / f"{n}.md")
                                                     for n in names])

    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(run_with("s10", "s1", "s2"))
        await pilot.pause()
        assert _tree_rows(tree) == ["s1", "s2", "s10"]
        tree.show(run_with("s11", "s10", "s3", "s1", "s2"))
        await pilot.pause()
        assert _tree_rows(tree) == ["s1", "s2", "s3", "s10", "s11"]
        assert tree.rebuilds == 1  # grown in place


async def test_bindings_written_live_join_the_pane_in_write_order_without_a_rebuild(tmp_path):
    """A snapshot revision that writes one more binding adds its leaf where the trace puts it
    (after the others here), in place."""
    from textual.app import App

    from prose_tui.model import Binding, Run, StatementState, TraceLine

    class _Tree(App[None]):
        def compose(self):
            yield BindingTree()

    def revision(*names: str) -> Run:
        trace = [TraceLine(line=n + 1, text=f"let {name} = session", state=StatementState.COMPLETE,
                           binding=f"bindings/{name}.md") for n, name in enumerate(names)]
        bindings = [Binding(name=n, path=tmp_path / "bindings" / f"{n}.md") for n in sorted(names)]  # as a folder lists them
        return Run(id="r", path=tmp_path, bindings=bindings, trace=trace)

    app = _Tree()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(BindingTree)
        tree.show(revision("s10", "s2"))
        await pilot.pause()
        assert _tree_rows(tree) == ["s10", "s2"]
        tree.show(revision("s10", "s2", "alpha"))
        await pilot.pause()
        assert _tree_rows(tree) == ["s10", "s2", "alpha"]
        assert tree.rebuilds == 1  # grown in place
