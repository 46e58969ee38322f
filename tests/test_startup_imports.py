"""Starting the explorer imports what its first screen needs, not every reader (issue 33).

``prose-tui PATH`` imports the command line and the Textual app before it shows anything.
Libraries only some runs or panes need (markdown-it-py for a snapshot state file, rich's
Markdown with Pygments for a value shown as Markdown, PyYAML and python-frontmatter for
front matter and reactor.yml, python-dotenv for a project's ``.env``) are imported when
first used, not at start-up: together they were about a fifth of the explorer's import
time. A fresh interpreter, as a user's shell starts it; what is asserted is which modules
are loaded, never a time (the times are in benchmarks/bench_open.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ON_DEMAND = ("markdown_it", "rich.markdown", "rich.syntax", "pygments", "yaml", "frontmatter", "dotenv")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_starting_the_explorer_leaves_the_markdown_yaml_and_dotenv_readers_for_later():
    loaded = _loaded_after("import prose_tui.cli.main, prose_tui.tui.app")
    assert "textual.app" in loaded  # the probe imported the explorer
    assert sorted(m for m in ON_DEMAND if m in loaded) == []


def test_the_readers_still_load_when_a_run_needs_them():
    code = (
        "from prose_tui.backends.filesystem.snapshot import parse_snapshot\n"
        "from prose_tui.backends.common.bindings import parse_binding_head\n"
        # A fence needs markdown-it (plain headings and tables do not: common/markdown.py).
        "state = parse_snapshot('# Execution State\\n\\n## Index\\n\\n### Bindings\\n\\n| Name | Kind |\\n|---|---|\\n| a | let |\\n'\n"
        "                       '\\n## Notes\\n\\n```\\nkept\\n```\\n')\n"
        "assert [r.get('name') for r in state.binding_rows] == ['a'], state\n"
        "fields, _, _, _ = parse_binding_head('---\\nkind: let\\n---\\nvalue\\n')\n"
        "assert fields == {'kind': 'let'}, fields\n"
    )
    assert {"markdown_it", "frontmatter", "yaml"} <= _loaded_after(code)


# -- the backends: imported for the paths they may claim, not at start (issue 33) -------------------

EVENTLOG = ROOT / "tests" / "fixtures" / "eventlog"
OTHER_BACKENDS = ("sqlite", "reactor", "receipt_ledger", "narration")
FIRST_SCREEN = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from app_helpers import make_app, ready
from prose_tui.model import RunStatus

async def main():
    app = make_app(Path({project!r}))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        run = app.explorer.current_run
        assert run is not None and run.events and run.status is not RunStatus.UNREADABLE, run
        print("shown:", run.path.name, len(run.events), run.status.value)

asyncio.run(main())
"""


def _backends_in(loaded: set[str]) -> list[str]:
    return sorted({m.split(".")[2] for m in loaded if m.startswith("prose_tui.backends.") and m.count(".") >= 3} - {"common"})


def test_an_event_log_runs_first_screen_imports_no_other_backend():
    """The explorer on a project whose run is an event log (seeds/filesystem.md): once the
    run's newest events and status are on screen, the filesystem backend is the only reader
    imported; SQLite (and Python's sqlite3), Reactor, the receipt ledger and narration are
    not, nor is PostgreSQL's driver. The command line's own options (``--postgres``) do
    import the PostgreSQL backend, without psycopg (or python-dotenv: the project has no
    ``.env``), nor ``importlib.metadata`` (no installed distribution names the entry point
    group). Nor are the screens no key was pressed for (help, Mission Control, compare)."""
    loaded = _loaded_after("import prose_tui.cli.main\nprose_tui.cli.main._main_parser()\n"
                           + FIRST_SCREEN.format(tests=str(ROOT / "tests"), project=str(EVENTLOG)))
    assert "textual.app" in loaded and "prose_tui.backends.filesystem.backend" in loaded  # the run was read
    assert _backends_in(loaded) == ["filesystem", "postgres"]
    assert not {"sqlite3", "psycopg", "dotenv"} & loaded
    assert "importlib.metadata" not in loaded  # no distribution declares a backend: no metadata read
    assert "watchfiles" not in loaded  # the probe does not watch (watch=False): the watcher's engine is not needed
    later = ("prose_tui.mission", "prose_tui.tui.screens.help", "prose_tui.tui.screens.mission_control",
             "prose_tui.tui.screens.compare")
    assert sorted(m for m in later if m in loaded) == []


def test_each_backend_is_imported_for_the_run_it_reads():
    """A path a built-in may claim imports that backend and it reads the run: a state.db,
    a Reactor state dir, a narration file, each in a fresh interpreter that asked for that
    path alone."""
    code = ("from pathlib import Path\nfrom prose_tui.backends import open_run\n"
            "run = open_run(Path({path!r}))\nprint(run.backend.value)\n")
    narration = ROOT / "tests" / "fixtures" / "narration" / "compact.md"
    reactor = ROOT / "tests" / "fixtures" / "reactor" / "newsroom"
    for path, backend in ((narration, "narration"), (reactor, "reactor")):
        loaded = _loaded_after(code.format(path=str(path)))
        assert backend in _backends_in(loaded), (path, _backends_in(loaded))
        assert "sqlite" not in _backends_in(loaded)


def test_the_declared_claims_are_the_backends_own():
    """Each built-in's declaration in ``registry.BUILTIN`` says what its class does: the same
    name, priority and kind; it tells run folders apart (``finds``) exactly when it overrides
    ``is_run_folder``, adds options (``options``) exactly when it overrides ``add_options``
    or ``sources_for``."""
    from prose_tui.backends import registry
    from prose_tui.backends.protocol import RunBackend

    for target, claim in registry.BUILTIN.items():
        module, _, name = target.partition(":")
        import importlib

        cls = getattr(importlib.import_module(module), name)
        assert (cls.name, cls.priority, cls.kind.value) == (claim.name, claim.priority, claim.kind), target
        assert (cls.is_run_folder is not RunBackend.is_run_folder) == claim.finds, target
        assert (cls.add_options is not RunBackend.add_options or cls.sources_for is not RunBackend.sources_for) \
            == claim.options, target


def _sample_paths() -> list[Path]:
    """Every folder and file of the test fixtures and, when present, the shared corpus of real
    runs (read in place), plus a few made in a temporary folder by the fixture below."""
    roots = [ROOT / "tests" / "fixtures", Path("/work/shared/corpus")]
    paths: list[Path] = []
    for root in roots:
        if root.is_dir():
            paths.extend(p.resolve() for p in [root, *sorted(root.rglob("*"))][:3000])
    return paths


def test_a_backend_claims_no_path_its_declaration_leaves_out(tmp_path):
    """For every fixture and corpus path (and an SQLite run, a ledger run and a database
    key made here), a built-in whose ``claims`` says yes was declared as one that may claim
    it: the registry, which skips a backend its declaration rules out, finds the same
    backend as asking every backend would."""
    import sqlite3

    from prose_tui.backends import registry

    db_run = tmp_path / "runs" / "20260101-000000-abcdef"
    db_run.mkdir(parents=True)
    sqlite3.connect(db_run / "state.db").execute("create table t(x)").connection.close()
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    (ledger / "receipts.jsonl").write_text("", encoding="utf-8")
    (ledger / "state.md").write_text("# state\n", encoding="utf-8")
    made = [db_run, db_run / "state.db", ledger, ledger / "receipts.jsonl", ledger / "state.md",
            Path("postgres:/db@host/20260101-000000-abcdef")]
    every = registry.backends()
    claimed = 0
    for path in [*_sample_paths(), *made]:
        for backend in every:
            target = f"{type(backend).__module__}:{type(backend).__qualname__}"
            if target not in registry.BUILTIN:
                continue
            try:
                claims = backend.claims(path)
            except OSError:
                continue
            if claims:
                claimed += 1
                assert registry.BUILTIN[target].may_claim(path), (backend.name, path)
    assert claimed >= len(made) - 1  # the paths were claimed: the check checked something


# -- the filesystem backend's readers: the event log's at start, the rest on first use (issue 33) --

SNAPSHOT_READERS = ("prose_tui.backends.filesystem.snapshot", "prose_tui.backends.filesystem.snapshot_sections",
                    "prose_tui.backends.filesystem.snapshot_trace", "prose_tui.backends.common.markdown",
                    "prose_tui.backends.common.annotations")
SKILL_READERS = ("prose_tui.backends.filesystem.receipts", "prose_tui.backends.filesystem.skill_live",
                 "prose_tui.backends.filesystem.skill_receipts", "prose_tui.backends.filesystem.world_model")


def test_an_event_log_run_is_shown_without_the_snapshot_and_skill_readers():
    """An event-log run on screen, settled (its trace, status and history): the filesystem
    backend imported its event-log reader, not the snapshot parser with its Markdown reader
    (seeds/filesystem.md generation 1), nor the 0.15 receipt ledger and world model
    (openprose-0.15 state/filesystem.md): about a third of the backend's import, on the
    reader's thread beside the first frame."""
    loaded = _loaded_after("import prose_tui.cli.main\n"
                           + FIRST_SCREEN.format(tests=str(ROOT / "tests"), project=str(EVENTLOG)))
    assert "prose_tui.backends.filesystem.eventlog_tail" in loaded  # the run was read as an event log
    assert sorted(m for m in SNAPSHOT_READERS + SKILL_READERS if m in loaded) == []


def test_the_snapshot_and_skill_readers_load_for_the_runs_that_need_them():
    """A snapshot run (its Index names its bindings) and a 0.15 skill run (receipts, world
    model), each opened in a fresh interpreter that imported the explorer first, are read in
    full: their readers come on first use."""
    code = ("import prose_tui.cli.main, prose_tui.tui.app\nfrom pathlib import Path\n"
            "from prose_tui.backends import open_run\nrun = open_run(Path({path!r}))\n"
            "print(json.dumps([run.format.value, len(run.trace), len(run.bindings), len(run.receipts)]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = ((ROOT / "tests" / "fixtures" / "project" / ".prose" / "runs" / "20260301-100000-a1b2c3", SNAPSHOT_READERS),
            (ROOT / "tests" / "fixtures" / "skill" / "completed" / "runs" / "20260702-091500-a1b2c3", SKILL_READERS))
    shown = []
    for path, readers in runs:
        probe = f"import json, sys\n{code.format(path=str(path))}print(json.dumps(sorted(sys.modules)))"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                             check=True).stdout.splitlines()
        assert set(readers) <= set(json.loads(out[-1])), path
        shown.append(json.loads(out[-2]))
    (snap_format, snap_trace, snap_bindings, _), (skill_format, skill_trace, _, skill_receipts) = shown
    assert (snap_format, skill_format) == ("snapshot", "skill")
    assert snap_trace and snap_bindings and skill_trace and skill_receipts  # read in full, not left empty


# -- the panes the compact layout hides: their widgets' modules come with them (issue 33) ---------

LAZY_PANE_MODULES = ("prose_tui.tui.widgets.call_stack", "prose_tui.tui.widgets.node_table",
                     "prose_tui.tui.widgets.binding_tree", "prose_tui.tui.widgets.value_viewer",
                     "prose_tui.tui.widgets.line_view", "prose_tui.tui.widgets.timeline",
                     "prose_tui.tui.widgets.search_bar", "textual.widgets._data_table")


def test_starting_the_explorer_leaves_the_hidden_panes_widgets_for_later():
    """The call stack, nodes, bindings tree, value viewer, timeline and search prompt (with
    Textual's DataTable) are composed after the 80x24 first screen, or when their pane is
    first shown: their modules are imported then, not with the explorer."""
    loaded = _loaded_after("import prose_tui.cli.main, prose_tui.tui.app")
    assert "prose_tui.tui.widgets.trace_view" in loaded  # the probe imported the explorer
    assert sorted(m for m in LAZY_PANE_MODULES if m in loaded) == []


def test_the_hidden_panes_widgets_load_once_composed_and_for_the_help():
    """Settled at 80x24 (the lazy panes composed after the first screen), and the key help
    (every pane's keys), in fresh interpreters: the widgets' modules are there then."""
    loaded = _loaded_after(FIRST_SCREEN.format(tests=str(ROOT / "tests"), project=str(EVENTLOG)))
    assert set(LAZY_PANE_MODULES) <= loaded
    code = ("from prose_tui.tui.app import ProseTUI\n"
            "titles = [title for title, _ in ProseTUI.binding_groups()]\n"
            "assert any('Call stack' in t or 'Stack' in t for t in titles), titles\n")
    assert set(LAZY_PANE_MODULES) - {"prose_tui.tui.widgets.search_bar", "prose_tui.tui.widgets.line_view"} \
        <= _loaded_after(code)
