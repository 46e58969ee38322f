"""The repository's own seed-format runs in tests/fixtures/ (see tests/fixtures/README.md).

Expected values were read off the fixture files by hand. Trace line numbers are 1-based
within the fenced ``prose`` block of state.md.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES

from prose_tui.backends import find_runs, open_run
from prose_tui.cli import main as cli
from prose_tui.model import RunFormat, RunStatus, StatementState
from prose_tui.model.serialize import run_detail

S = StatementState
PROJECT = FIXTURES / "project"
RUNS = PROJECT / ".prose" / "runs"
PAUSED = RUNS / "20260301-100000-a1b2c3"
DONE = RUNS / "20260228-090000-d4e5f6"
HOME = FIXTURES / "home"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def line(run, number: int):
    (found,) = [t for t in run.trace if t.line == number]
    return found


def agent(run, name: str):
    (found,) = [a for a in run.agents if a.name == name]
    return found


@pytest.fixture
def paused(monkeypatch):
    monkeypatch.setenv("HOME", str(HOME))  # mentor lives in ~/.prose/agents/
    return open_run(PAUSED)


@pytest.fixture
def done():
    return open_run(DONE)


# --- the paused run ----------------------------------------------------------------------


def test_paused_header(paused):
    assert paused.id == "20260301-100000-a1b2c3"
    assert paused.format is RunFormat.SNAPSHOT
    assert paused.program == "field-guide.prose"
    assert paused.program_path == PAUSED / "program.prose"
    assert paused.started == utc("2026-03-01T10:00:00Z")
    assert paused.updated == utc("2026-03-01T10:07:42Z")
    assert "status" not in paused.header
    assert paused.warnings == []


def test_paused_retrying_line_47(paused):
    current = paused.executing
    assert current.line == 47
    assert current.text == '  let text = session "Write the subsection text"'
    assert current.state is S.RETRYING
    assert current.note == "<-- RETRYING (attempt 2/3)"
    assert (current.attempt, current.max_attempts) == (2, 3)
    assert [t.line for t in paused.trace if (t.note or "").startswith("<--")] == [47]
    assert len(paused.trace) == 72


def test_paused_status_depends_on_age():
    # as written it is running; the frozen snapshot is months old, so it is interrupted
    stale = open_run(PAUSED)
    assert stale.status is RunStatus.INTERRUPTED
    assert "line 47" in stale.status_reason and "RETRYING" in stale.status_reason
    # outline/glossary after line 47 belong to the parallel that calls the block: no staleness hint
    assert "later statements" not in stale.status_reason
    fresh = open_run(PAUSED, now=utc("2026-03-01T10:08:42Z"))
    assert fresh.status is RunStatus.RUNNING
    assert "line 47" in fresh.status_reason


def test_paused_annotations(paused):
    use = line(paused, 1)
    assert use.text == 'use "acme/summarize" as summarize'
    assert use.note == "--> imports/acme--summarize/"
    assert use.binding is None  # an import, not a binding
    expected = {3: "topic", 4: "style", 25: "sources", 29: "approval", 33: "brief", 35: "plan",
                39: "anon_001", 43: "parts__43", 52: "outline", 56: "glossary"}
    for n, stem in expected.items():
        t = line(paused, n)
        assert (t.binding, t.state) == (f"bindings/{stem}.md", S.COMPLETE), n
    assert [t.line for t in paused.trace if t.binding] == sorted(expected)
    assert (line(paused, 45).note, line(paused, 45).state) == ("(complete)", S.COMPLETE)
    loop = line(paused, 60)
    assert loop.text.startswith("loop until **the captain approves the guide**")
    assert (loop.note, loop.state) == ("[not yet entered]", S.PENDING)
    for n in (51, 55):
        assert (line(paused, n).note, line(paused, n).state) == (None, None)
    assert line(paused, 51).text == "parallel:"
    assert line(paused, 55).text == "  body = do expand(plan)"


def test_paused_bindings(paused):
    root = {b.name: b.kind for b in paused.bindings if b.execution_id is None}
    assert root == {"topic": "input", "style": "const", "sources": "let", "approval": "let", "brief": "let",
                    "plan": "let", "anon_001": "let", "outline": "let", "glossary": "let"}
    scoped = sorted((b.execution_id, b.name, b.kind, b.path.name) for b in paused.bindings if b.execution_id)
    assert scoped == [(41, "parts", "let", "parts__41.md"), (42, "parts", "let", "parts__42.md"),
                      (43, "parts", "let", "parts__43.md")]
    assert len(paused.bindings) == 12
    assert all(b.exists and b.warning is None for b in paused.bindings)
    assert "output" not in {b.kind for b in paused.bindings}
    anon = [b for b in paused.bindings if b.anonymous]
    assert [b.name for b in anon] == ["anon_001"]
    assert next(b for b in paused.bindings if b.execution_id == 42).scope == "execution 42"


def test_paused_scope_resolution(paused):
    assert paused.binding_named("parts", 43).path == PAUSED / "bindings" / "parts__43.md"
    assert paused.binding_named("parts", 41).path.name == "parts__41.md"
    assert paused.binding_named("parts", None) is None  # no parts in root scope
    # from inside the block, root bindings are still visible
    assert paused.binding_named("sources", 43).path.name == "sources.md"
    assert paused.binding_named("nothing", 43) is None


def test_paused_call_stack(paused):
    frames = [(f.execution_id, f.block, f.depth, f.status) for f in paused.call_stack]
    assert frames == [(43, "expand", 3, "executing"), (42, "expand", 2, "waiting"), (41, "expand", 1, "waiting")]


def test_paused_active_constructs(paused):
    titles = [c.title for c in paused.constructs]
    assert titles == ["Parallel (lines 51-58)", "Block expand (lines 42-49)", "Loop (lines 60-65)"]
    assert paused.constructs[0].items == ["outline: complete", "body: executing", "glossary: complete"]
    assert "execution_id: 43" in paused.constructs[1].items
    assert "iteration: 0/3" in paused.constructs[2].items


def test_paused_captain_segments(paused):
    captain = agent(paused, "captain")
    assert captain.scope == "execution"
    assert captain.path == PAUSED / "agents" / "captain"
    assert captain.memory == captain.path / "memory.md"
    assert [(s.number, s.path.name, s.timestamp, s.prompt) for s in captain.segments] == [
        (1, "captain-001.md", "2026-03-01T10:01:10Z", "Approve the source list"),
        (2, "captain-002.md", "2026-03-01T10:02:55Z", "Plan the guide from the brief"),
        (3, "captain-003.md", "2026-03-01T10:04:20Z", "Write the outline of the guide"),
    ]


def test_paused_agents_by_scope(paused):
    assert {a.name for a in paused.agents} == {"researcher", "captain", "archivist", "mentor"}
    researcher = agent(paused, "researcher")
    assert (researcher.scope, researcher.path, researcher.segments) == ("stateless", None, [])
    archivist = agent(paused, "archivist")
    assert archivist.scope == "project"
    assert archivist.path == PROJECT / ".prose" / "agents" / "archivist"
    assert [(s.number, s.timestamp, s.prompt) for s in archivist.segments] == [
        (1, "2026-02-28T09:04:20Z", "Add the guide to the list of published guides")]
    mentor = agent(paused, "mentor")
    assert mentor.scope == "user"
    assert mentor.path == HOME / ".prose" / "agents" / "mentor"
    assert mentor.memory == mentor.path / "memory.md"
    assert [(s.number, s.timestamp, s.prompt) for s in mentor.segments] == [
        (1, "2026-02-20T16:45:00Z", "Note what worked in this guide for next time")]


def test_user_scope_agent_without_memory_in_home():
    # conftest's HOME is an empty temp folder: mentor is still listed, with nothing to show
    mentor = agent(open_run(PAUSED), "mentor")
    assert mentor.scope == "user"
    assert mentor.path is None and mentor.segments == []


def test_paused_import_is_a_completed_child_run(paused):
    (child,) = paused.imports
    assert child.import_handle == "acme--summarize"
    assert child.path == PAUSED / "imports" / "acme--summarize"
    assert child.format is RunFormat.SNAPSHOT
    assert child.status is RunStatus.COMPLETED
    assert child.program == "summarize.prose"
    assert child.program_path == child.path / "program.prose"
    assert (child.started, child.updated) == (utc("2026-03-01T10:01:40Z"), utc("2026-03-01T10:02:30Z"))
    assert {b.name: b.kind for b in child.bindings} == {"text": "input", "points": "let", "summary": "output"}
    assert [(a.name, a.scope) for a in child.agents] == [("condenser", "stateless")]
    assert child.call_stack == [] and child.constructs == []
    assert child.executing is None
    annotated = [t for t in child.trace if t.state is not None]
    assert [t.line for t in annotated] == [1, 7, 11]
    assert all(t.state is S.COMPLETE for t in annotated)
    # the child's bindings are its own, not the parent's
    assert paused.binding_named("summary") is None
    assert child.binding_named("summary").path == child.path / "bindings" / "summary.md"


def test_paused_show_json(capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(HOME))
    assert cli.main(["show", str(PAUSED), "--json"]) == 0
    detail = json.loads(capsys.readouterr().out)
    assert detail["id"] == "20260301-100000-a1b2c3"
    t47 = {t["line"]: t for t in detail["trace"]}[47]
    assert (t47["state"], t47["attempt"], t47["max_attempts"]) == ("retrying", 2, 3)
    assert sorted(b["execution_id"] for b in detail["bindings"] if b["name"] == "parts") == [41, 42, 43]
    assert [f["execution_id"] for f in detail["call_stack"]] == [43, 42, 41]
    assert [i["handle"] for i in detail["imports"]] == ["acme--summarize"]
    assert detail["imports"][0]["status"] == "completed"
    mentor = next(a for a in detail["agents"] if a["name"] == "mentor")
    assert mentor["scope"] == "user" and len(mentor["segments"]) == 1


def _writable_copy(src: Path, dst: Path) -> Path:
    for dirpath, _dirs, files in os.walk(src):
        target = dst / Path(dirpath).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).write_bytes((Path(dirpath) / name).read_bytes())
    return dst


def test_indexed_scoped_binding_whose_file_is_gone(tmp_path):
    run_dir = _writable_copy(PAUSED, tmp_path / "20260301-100000-a1b2c3")
    (run_dir / "bindings" / "parts__42.md").unlink()
    run = open_run(run_dir)
    assert len(run.bindings) == 12
    (gone,) = [b for b in run.bindings if not b.exists]
    assert (gone.name, gone.execution_id, gone.kind) == ("parts", 42, "let")
    assert gone.path == run_dir / "bindings" / "parts__42.md"
    assert "does not exist" in gone.warning


# --- the completed run -------------------------------------------------------------------


def test_completed_run(done):
    assert done.id == "20260228-090000-d4e5f6"
    assert done.status is RunStatus.COMPLETED
    assert "status: completed" in done.status_reason
    assert done.program == "kelp-page.prose"
    assert (done.started, done.updated) == (utc("2026-02-28T09:00:00Z"), utc("2026-02-28T09:04:31Z"))
    assert done.executing is None
    assert len(done.trace) == 22
    annotated = [t for t in done.trace if t.state is not None]
    assert [t.line for t in annotated] == [1, 8, 11, 12, 14, 17, 20]
    assert all(t.state is S.COMPLETE and "(complete)" in t.note for t in annotated)
    assert line(done, 11).text == "parallel:" and line(done, 11).binding is None
    assert line(done, 20).text == "resume: archivist"
    assert line(done, 20).binding == "bindings/anon_001.md"
    assert done.constructs == [] and done.call_stack == []
    assert done.warnings == []


def test_completed_run_bindings(done):
    assert {b.name: b.kind for b in done.bindings} == {
        "topic": "input", "draft": "let", "facts": "let", "tone": "let", "guide": "output", "anon_001": "let"}
    assert all(b.execution_id is None and b.exists and b.warning is None for b in done.bindings)


def test_completed_run_project_agent(done):
    (archivist,) = done.agents
    assert (archivist.name, archivist.scope) == ("archivist", "project")
    assert archivist.path == PROJECT / ".prose" / "agents" / "archivist"
    assert [s.path.name for s in archivist.segments] == ["archivist-001.md"]


def test_completed_run_stays_completed_whatever_the_time():
    run = open_run(DONE, now=datetime(2030, 1, 1, tzinfo=timezone.utc))
    assert run.status is RunStatus.COMPLETED


# --- the project folder ------------------------------------------------------------------


def test_project_with_env_file(capsys):
    assert (PROJECT / ".prose" / ".env").is_file()
    refs = find_runs(PROJECT)
    assert sorted(r.path.name for r in refs) == ["20260228-090000-d4e5f6", "20260301-100000-a1b2c3"]
    assert sorted(r.path.name for r in find_runs(PROJECT / ".prose")) == sorted(r.path.name for r in refs)
    assert cli.main(["runs", str(PROJECT), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["20260301-100000-a1b2c3", "20260228-090000-d4e5f6"]  # newest first
    assert [r["status"] for r in rows] == ["interrupted", "completed"]
    for ref in refs:
        json.dumps(run_detail(open_run(ref.path)))


def test_show_on_env_file_is_not_a_run(capsys):
    assert cli.main(["show", str(PROJECT / ".prose" / ".env")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("prose-tui: ") and "\n" not in err
