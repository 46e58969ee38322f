"""The real-run corpus (FORMATS.md, corpus/real/RUNS.tsv), read in place.

Every expected value below was read off the corpus files by hand (state.md, the binding
files, RUNS.tsv), never computed with prose-tui. Trace line numbers are 1-based within the
fenced ``prose`` block of state.md. Nothing is copied from the corpus into the repository;
the one test that changes a run works on a copy in a temporary folder.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from prose_tui.backends import find_runs, open_run
from prose_tui.cli import main as cli
from prose_tui.model import RunFormat, RunStatus, StatementState
from prose_tui.model.serialize import run_detail

S = StatementState

PS = "DoriniTT__PS-TEROS/.prose/runs"
THERMO = "DoriniTT__PS-TEROS/examples/binary_surface_thermo/.prose/runs"
YPI = "rawwerks__ypi/.prose/runs"
FLAT = "cankocakulak__mood-flicker2/.prose/runs"
APOLLO = "apollostreetcompany__baseline/.prose/runs"

ENCRYPTED = ["20260213-120608-f0e627", "20260213-121934-2a6fd3"]
# SOPS-encrypted state.md followed by plain event lines the VM appended afterwards:
# (run id, status, last plain event line) read from the files by hand.
PARTLY_ENCRYPTED = [
    ("20260213-115216-9afc66", "completed", "13→ summary ✓"),  # program.prose is plaintext
    ("20260213-115457-2e6299", "interrupted", "7→ encrypt ✓"),  # no ---end after it
    ("20260213-120945-ebec26", "completed", "19→ summary ✓"),
    ("20260213-123723-3ea75b", "completed", "18→ summary ✓"),
    ("20260215-065027-48dfb7", "completed", "16→ jj new ✓"),
]
VM_LOG = ["1-kill-gate", "2-offer-smoke-test", "3-brand-to-landing", "4-anti-slop-cleanup", "5-landing-page-responsive"]

RUN_KEYS = {"id", "path", "format", "program", "status", "status_reason", "started", "updated"}
DETAIL_KEYS = RUN_KEYS | {"trace", "bindings", "agents", "call_stack", "imports", "warnings"}
TRACE_KEYS = {"line", "text", "state", "note", "binding"}
BINDING_KEYS = {"name", "kind", "execution_id", "path", "bytes"}
AGENT_KEYS = {"name", "scope", "path", "segments"}
FRAME_KEYS = {"execution_id", "block", "depth", "status"}


def at(corpus: Path, rel: str):
    return open_run(corpus / rel)


def kinds(run) -> dict[str, str | None]:
    return {b.name: b.kind for b in run.bindings}


def line(run, number: int):
    (found,) = [t for t in run.trace if t.line == number]
    return found


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def expected_run_dirs(corpus: Path) -> set[Path]:
    """Run folders as RUNS.tsv lists them (kind ``filesystem``), one row per run."""
    with open(corpus / "RUNS.tsv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["kind"] == "filesystem"]
    return {(corpus / r["repo"].replace("/", "__") / r["path-prefix"]).resolve() for r in rows}


# --- every run opens ------------------------------------------------------------------------


def test_every_run_is_found_once_and_opens(corpus):
    refs = find_runs(corpus)
    expected = expected_run_dirs(corpus)
    assert len(expected) == 35  # counted by hand from the folder tree and RUNS.tsv
    assert len(refs) == len(expected)
    assert {r.path for r in refs} == expected
    for ref in refs:
        detail = run_detail(open_run(ref.path))
        json.dumps(detail)  # JSON-serialisable, imports included
        assert detail["path"] == str(ref.path)


def test_flat_layout_is_one_run_named_current(corpus):
    refs = [r for r in find_runs(corpus) if "mood-flicker2" in str(r.path)]
    assert [r.path for r in refs] == [(corpus / FLAT).resolve()]
    assert refs[0].flat
    run = open_run(refs[0].path)
    assert run.id == "current"
    # its bindings/ folder is part of the run, not a run of its own
    assert not any(r.path.name == "bindings" for r in find_runs(corpus))


def test_nested_prose_folders_are_found(corpus):
    found = {r.path.name for r in find_runs(corpus / "DoriniTT__PS-TEROS")}
    assert {"20260120-090541-thermo", "20260122-verify-equations"} <= found
    assert len(found) == 10
    (ref,) = find_runs(corpus / "LA3D__cogitarelink-fabric")
    assert ref.path.name == "20260311-183500-5f7d2f"
    assert "experiments" in ref.path.parts


def test_projects_without_runs_list_nothing(corpus):
    for repo in ("liamzebedee__glyphgen", "zby__llm-do", "maxtheman__proseRlm"):
        assert find_runs(corpus / repo) == []


def test_flat_layout_found_from_its_state_file(corpus):
    (ref,) = find_runs(corpus / FLAT / "state.md")
    assert ref.path == (corpus / FLAT).resolve()
    assert ref.flat


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_runs_json_lists_every_run(corpus, capsys):
    assert cli.main(["runs", str(corpus), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 35
    for row in rows:
        assert RUN_KEYS <= set(row)
    ids = [r["id"] for r in rows]
    assert "current" in ids and "20260213-064959-" in ids and "20260213-064959-a606dc" in ids
    by_id = {r["id"]: r for r in rows}
    assert by_id["20260119-215202-51e737"]["status"] == "interrupted"
    assert by_id["20260213-114703-24e632"]["status"] == "failed"
    assert by_id["20260213-120608-f0e627"]["format"] == "encrypted"
    assert by_id["20260213-115216-9afc66"]["format"] == "event-log"


def test_cli_show_json_every_run(corpus, capsys):
    for ref in find_runs(corpus):
        assert cli.main(["show", str(ref.path), "--json"]) == 0, ref.path
        detail = json.loads(capsys.readouterr().out)
        assert DETAIL_KEYS <= set(detail), ref.path
        assert detail["path"] == str(ref.path)


def test_cli_show_json_item_shapes(corpus, capsys):
    # the flat run has a trace, bindings, an agent and a call stack all at once
    assert cli.main(["show", str(corpus / FLAT), "--json"]) == 0
    detail = json.loads(capsys.readouterr().out)
    assert detail["id"] == "current"
    assert detail["trace"] and detail["bindings"] and detail["agents"] and detail["call_stack"]
    for t in detail["trace"]:
        assert TRACE_KEYS <= set(t)
    for b in detail["bindings"]:
        assert BINDING_KEYS <= set(b)
    for a in detail["agents"]:
        assert AGENT_KEYS <= set(a)
    for f in detail["call_stack"]:
        assert FRAME_KEYS <= set(f)
    annotated = {t["line"]: t for t in detail["trace"]}[36]
    assert annotated["binding"] == "bindings/product_spec_run.md"
    assert annotated["state"] == "complete"
    assert detail["call_stack"] == [{"execution_id": None, "block": "-", "depth": 0, "status": "executing"}]


@pytest.mark.parametrize(
    "rel",
    ["DoriniTT__PS-TEROS", "DoriniTT__PS-TEROS/examples/binary_surface_thermo", "jparklev__prose/.prose/.env"],
)
def test_cli_show_not_a_run(corpus, capsys, rel):
    assert cli.main(["show", str(corpus / rel), "--json"]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert err and "\n" not in err
    assert "not a run" in err


# --- generation 1 snapshot runs: facts read from the files ---------------------------------


def test_hello_world_3_column_index(corpus):
    run = at(corpus, f"{PS}/20260119-204900-a7b3c9")
    assert run.format is RunFormat.SNAPSHOT
    assert run.status is RunStatus.COMPLETED and "complete" in run.status_reason
    assert run.program == "01-hello-world.prose"
    assert run.executing is None
    assert len(run.trace) == 4
    t = line(run, 4)
    assert t.text == 'session "Say hello and briefly introduce yourself"'
    assert (t.state, t.binding) == (S.COMPLETE, "bindings/anon_001.md")
    assert kinds(run) == {"anon_001": "let"}
    assert run.agents == []  # no Agents section, no agent in the program
    assert run.warnings == []


def test_registered_annotation_and_agents_table_with_other_columns(corpus):
    run = at(corpus, f"{PS}/20260119-205230-b8c4d2")
    assert run.status is RunStatus.COMPLETED
    t = line(run, 1)
    assert (t.text, t.note, t.state, t.binding) == ("agent reviewer:", "[registered]", S.COMPLETE, None)
    assert (line(run, 5).text, line(run, 5).state) == ("parallel:", S.COMPLETE)
    assert line(run, 8).binding == "bindings/perf.md"
    assert kinds(run) == {"security": "let", "perf": "let", "style": "let", "anon_001": "let"}
    (agent,) = run.agents
    assert agent.name == "reviewer"
    assert agent.scope == "stateless" and agent.path is None  # no persist: in the program
    assert agent.details.get("model") == "sonnet"  # the Model column is kept


def test_status_column_index_and_outputs_section(corpus):
    run = at(corpus, f"{PS}/20260119-211111-c5d7e9")
    assert run.status is RunStatus.COMPLETED and "COMPLETED" in run.status_reason
    assert kinds(run) == {"arch": "let", "qual": "let", "documentation": "let", "aiida": "let", "report": "output"}
    assert all(b.exists and b.execution_id is None for b in run.bindings)
    t = line(run, 27)
    assert t.text == 'output report = session "Synthesize..."'
    assert t.binding == "bindings/report.md"
    assert "Outputs" in [s.title for s in run.sections]
    assert {a.name for a in run.agents} == {"architect", "quality", "docs", "integration"}


def test_non_binding_outputs_and_results_summary(corpus):
    run = at(corpus, f"{PS}/20260119-212315-f8g2h4")
    assert run.status is RunStatus.COMPLETED
    assert run.updated == utc("2026-01-19T21:25:30Z")  # written as completed:
    assert run.started == utc("2026-01-19T21:23:15Z")
    t = line(run, 2)
    assert t.text == "  exceptions = session: implementer"
    assert t.note == "--> exceptions.py created"
    assert t.binding is None
    assert line(run, 7).note == "--> __init__.py updated" and line(run, 7).binding is None
    assert [x.binding for x in run.trace if x.binding] == []
    assert run.bindings == [] and run.program_path is None
    sections = {s.title: s.text for s in run.sections}
    assert "Results Summary" in sections
    assert "test_hf.py" in sections["Results Summary"]


def test_execution_complete_written_as_prose(corpus):
    run = at(corpus, f"{PS}/20260119-214305-6b0816")
    assert run.status is RunStatus.COMPLETED and "COMPLETE" in run.status_reason
    t = line(run, 6)  # "--> bindings/x.md" with no "(complete)"
    assert (t.text, t.binding, t.state) == ("  aimd_fix = session: fixer", "bindings/aimd_fix.md", S.COMPLETE)
    assert kinds(run) == {"aimd_fix": "let", "surface_energy_fix": "let", "summary": "output"}
    assert run.constructs == [] and run.call_stack == []
    assert [(a.name, a.scope, a.path) for a in run.agents] == [("fixer", "stateless", None)]
    titles = [s.title for s in run.sections]
    assert "Active Constructs" not in titles and "Call Stack" not in titles


def test_stale_snapshot_frozen_at_executing(corpus):
    path = corpus / PS / "20260119-215202-51e737"
    run = open_run(path)
    assert run.status is RunStatus.INTERRUPTED
    assert "line 9" in run.status_reason and "EXECUTING" in run.status_reason
    # the later statements whose binding files exist are named as the evidence
    assert "stages_init" in run.status_reason and "preset_stage" in run.status_reason
    current = run.executing
    assert (current.line, current.text, current.state) == (9, "let analysis = session: architect", S.EXECUTING)
    assert line(run, 12).state is S.NEXT
    elided = line(run, 18)
    assert (elided.text, elided.state, elided.note) == ("...remaining stages...", None, None)
    assert len(run.trace) == 20
    # 8 files; the "(none yet)" Index row is not a binding
    assert kinds(run) == {
        "analysis": "let", "stages_init": "let", "preset_stage": "let", "restart_stage": "let",
        "adsorption_stage": None, "aimd_stage": None, "electronic_stage": None, "validation_stage": None,
    }
    for b in run.bindings:
        assert b.exists
        assert (b.warning is not None) == (b.kind is None), b.name
    assert "header" in next(b for b in run.bindings if b.name == "aimd_stage").warning
    assert [(a.name, a.scope, a.path) for a in run.agents] == [
        ("architect", "stateless", None), ("implementer", "stateless", None)]
    # a minute after its updated: header, the same snapshot is simply running
    fresh = open_run(path, now=utc("2026-01-19T21:53:02Z"))
    assert fresh.status is RunStatus.RUNNING


def test_bare_run_without_state_file(corpus):
    run = at(corpus, f"{PS}/20260119-221125-dde0d6")
    assert run.format is RunFormat.BARE
    assert run.state_file is None
    assert run.program_path is not None and run.program_path.name == "program.prose"
    assert run.status is RunStatus.UNKNOWN and "no state file" in run.status_reason
    (b,) = run.bindings
    assert (b.name, b.kind) == ("slab_elec", None)
    assert b.warning and "header" in b.warning
    assert run.trace == []
    assert [a.name for a in run.agents] == ["refactorer"]  # declared in program.prose


def test_program_only_run(corpus):
    run = at(corpus, f"{YPI}/20260213-102121-d28237")
    assert run.format is RunFormat.BARE
    assert run.program_path.name == "program.prose"
    assert run.status is RunStatus.UNKNOWN
    assert run.bindings == []


def test_checkmark_annotations_without_hash(corpus):
    run = at(corpus, f"{PS}/20260121-143414-b74480")
    assert run.status is RunStatus.COMPLETED
    assert len(run.trace) == 12
    for n in range(1, 5):
        assert line(run, n).note == "✓ defined" and line(run, n).state is S.COMPLETE
    assert line(run, 1).text == "agent code-explorer:"
    for n in range(6, 13):
        t = line(run, n)
        assert (t.note, t.state, t.binding) == ("✓ DONE", S.COMPLETE, None)
    assert line(run, 6).text == "let analysis = session: code-explorer"
    assert line(run, 12).text == "output implementation_plan = session"
    assert kinds(run) == {
        "analysis": "let", "design": "let", "visualization_impl": "let", "exports_impl": "let",
        "example_impl": "let", "review": "let", "implementation_plan": "output",
    }
    titles = [s.title for s in run.sections]
    assert "Implementation Applied" in titles and "Verification" in titles


@pytest.mark.parametrize(
    ("run_id", "started", "agents"),
    [
        ("20260120-090541-thermo", "2026-01-20T09:05:41Z", ["literature_expert", "code_analyst", "comparator"]),
        ("20260122-verify-equations", "2026-01-22T10:00:00Z", ["theory_expert", "code_analyst", "equation_verifier"]),
    ],
)
def test_nested_runs_with_registered_agents(corpus, run_id, started, agents):
    run = at(corpus, f"{THERMO}/{run_id}")
    assert run.id == run_id
    assert run.status is RunStatus.COMPLETED
    assert run.started == utc(started)
    for n in (1, 2, 3):
        t = line(run, n)
        assert (t.text, t.note, t.state) == (f"agent {agents[n - 1]}:", "(registered)", S.COMPLETE)
    assert [(a.name, a.scope, a.path) for a in run.agents] == [(name, "session", None) for name in agents]
    assert kinds(run)["recommendations"] == "output"
    assert kinds(run)["reference_theory"] == "let"


def test_thermo_trace_and_bindings(corpus):
    run = at(corpus, f"{THERMO}/20260120-090541-thermo")
    assert line(run, 8).text == "parallel:" and line(run, 8).state is S.COMPLETE
    assert line(run, 10).binding == "bindings/binary_impl.md"
    assert kinds(run) == {
        "reference_theory": "let", "ternary_impl": "let", "binary_impl": "let",
        "comparison": "let", "recommendations": "output",
    }


def test_flat_run_root_frame_and_approved_annotation(corpus):
    run = at(corpus, FLAT)
    assert run.id == "current"
    assert run.format is RunFormat.SNAPSHOT
    assert run.program == "product-to-code.prose"
    assert run.program_path.name == "current.prose"
    assert run.started == utc("2025-01-20T10:00:00Z")
    # no executing trace line, but the root frame says executing and the header is old
    assert run.executing is None
    assert run.status is RunStatus.INTERRUPTED
    assert "root" in run.status_reason
    t = line(run, 36)
    assert t.text == "let product_spec_run = session: stage-runner"
    assert t.note == "--> bindings/product_spec_run.md (complete - APPROVED)"
    assert (t.state, t.binding) == (S.COMPLETE, "bindings/product_spec_run.md")
    (frame,) = run.call_stack
    assert (frame.execution_id, frame.block, frame.depth, frame.status) == (None, "-", 0, "executing")
    # implementation_run is on disk though the Index does not name it
    assert kinds(run) == {"product_spec_run": "let", "bootstrap_run": "let", "implementation_run": "let"}
    assert [(a.name, a.scope) for a in run.agents] == [("stage-runner", "execution")]
    assert [c.title for c in run.constructs] == ["Session (line 43)", "Session (line 56)", "Session (line 69)"]
    assert run.constructs[2].items[0] == "stage-runner: executing"


def test_none_row_in_agents_table_is_not_an_agent(corpus):
    run = at(corpus, "jparklev__prose/.prose/runs/20260121-054932-rbbce6")
    assert run.status is RunStatus.COMPLETED
    assert run.agents == []
    assert kinds(run) == {"anon_001": "let"}
    assert line(run, 4).binding == "bindings/anon_001.md"


def _writable_copy(src: Path, dst: Path) -> Path:
    """Copy a run into a temporary folder with writable files (the corpus is read-only)."""
    for dirpath, _dirs, files in os.walk(src):
        target = dst / Path(dirpath).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).write_bytes((Path(dirpath) / name).read_bytes())
    return dst


def test_index_row_for_a_missing_binding_file(corpus, tmp_path):
    # no corpus run has one, so delete one file of a copy of a real run
    run_dir = _writable_copy(corpus / THERMO / "20260120-090541-thermo", tmp_path / "20260120-090541-thermo")
    (run_dir / "bindings" / "comparison.md").unlink()
    run = open_run(run_dir)
    missing = [b for b in run.bindings if not b.exists]
    assert [(b.name, b.kind, b.execution_id) for b in missing] == [("comparison", "let", None)]
    assert "does not exist" in missing[0].warning
    assert len(run.bindings) == 5
    assert {b["name"]: b["exists"] for b in run_detail(run)["bindings"]}["comparison"] is False


# --- other formats ---------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", ENCRYPTED)
def test_encrypted_runs_say_so_and_show_no_ciphertext(corpus, run_id):
    run = at(corpus, f"{YPI}/{run_id}")
    assert run.format is RunFormat.ENCRYPTED
    assert run.encrypted
    assert run.status is RunStatus.UNKNOWN
    assert "encrypted" in run.status_reason.lower()
    assert run.trace == []
    text = json.dumps(run_detail(run))
    assert "ENC[" not in text and "AES256_GCM" not in text
    assert all(b.encrypted and b.kind is None for b in run.bindings)


@pytest.mark.parametrize(("run_id", "status", "last_line"), PARTLY_ENCRYPTED)
def test_plain_events_after_an_encrypted_block_are_shown(corpus, run_id, status, last_line):
    run = at(corpus, f"{YPI}/{run_id}")
    assert run.format is RunFormat.EVENT_LOG
    assert run.status.value == status
    assert [t for t in run.trace if t.step][-1].text.strip() == last_line
    assert any("SOPS-encrypted" in w for w in run.warnings)
    text = json.dumps(run_detail(run))
    assert "ENC[" not in text and "AES256_GCM" not in text


def test_encrypted_run_bindings_listed(corpus):
    run = at(corpus, f"{YPI}/20260213-115457-2e6299")
    assert sorted(b.name for b in run.bindings) == ["e2e", "fast", "log", "smoke", "status"]
    run = at(corpus, f"{YPI}/20260213-115216-9afc66")
    assert run.bindings == [] and run.program_path.name == "program.prose"


@pytest.mark.parametrize("suffix", VM_LOG)
def test_vm_log_runs(corpus, suffix):
    run = at(corpus, f"{APOLLO}/20260514-002532-{suffix}")
    assert run.id == f"20260514-002532-{suffix}"
    assert run.format is RunFormat.VM_LOG
    assert run.state_file.name == "vm.log.md"
    assert run.status is RunStatus.COMPLETED
    assert "status: complete" in run.status_reason
    assert run.program_path.name == "root.prose.md"
    service = suffix.split("-", 1)[1]
    (b,) = run.bindings
    assert (b.name, b.service, b.kind) == ("result", service, None)
    assert b.warning  # bindings/<svc>/result.md has no binding header


def test_vm_log_program_from_source_bullet(corpus):
    run = at(corpus, f"{APOLLO}/20260514-002532-1-kill-gate")
    assert run.program.endswith("/recipes/00-kill-gate.prose.md")


def test_truncated_run_id(corpus):
    run = at(corpus, f"{YPI}/20260213-064959-")
    assert run.id == "20260213-064959-"
    assert run.format is RunFormat.EVENT_LOG
    assert run.program == "check-upstream.prose"
    assert run.started == utc("2026-02-13T06:49:59Z")
    assert run.trace == [] and run.events == []
    assert run.status is RunStatus.INTERRUPTED  # header only, abandoned long ago
    assert any("truncated" in w for w in run.warnings)
    # its sibling with the full id is a different run
    sibling = at(corpus, f"{YPI}/20260213-064959-a606dc")
    assert sibling.status is RunStatus.COMPLETED
    assert sibling.path != run.path


def test_event_log_failed_and_unfinished(corpus):
    failed = at(corpus, f"{YPI}/20260213-114703-24e632")
    assert failed.status is RunStatus.FAILED
    assert "Fix failing e2e tests before landing." in failed.status_reason
    unfinished = at(corpus, f"{YPI}/20260213-114401-818d0d")
    assert unfinished.status is RunStatus.INTERRUPTED  # no ---end, months old


def test_snapshot_trace_links_name_existing_binding_files(corpus):
    checked = 0
    for ref in find_runs(corpus):
        run = open_run(ref.path)
        if run.format is not RunFormat.SNAPSHOT:
            continue
        for t in run.trace:
            if t.binding:
                checked += 1
                assert (run.path / t.binding).is_file(), (run.id, t.line, t.binding)
    assert checked == 24  # "# --> bindings/..." annotations in the 11 snapshot state.md files (grep)


def test_contract_input_step_links_to_its_service_binding(corpus):
    run = at(corpus, "eksno__nix-config/.prose/runs/20260417-152853-710f25")
    assert run.format is RunFormat.CONTRACT
    t = line(run, 1)
    assert t.text.startswith("1-> [input] request")
    assert t.binding == "bindings/caller/request.md"


def test_event_log_exec_step_does_not_link_to_a_missing_binding(corpus):
    run = at(corpus, f"{YPI}/20260213-064959-a606dc")
    t = line(run, 10)
    assert t.text.startswith("10→ exec .pi-version")
    assert t.binding is None or (run.path / t.binding).is_file(), t.binding


# --- reading changes nothing -----------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            out[str(Path(dirpath, name).relative_to(root)) + "/"] = ("dir", 0)
        for name in files:
            p = Path(dirpath, name)
            data = p.read_bytes()
            out[str(p.relative_to(root))] = (hashlib.sha256(data).hexdigest(), p.stat().st_mtime_ns)
    return out


def test_reading_the_corpus_changes_nothing(corpus, capsys):
    before = _snapshot(corpus)
    assert len(before) > 200
    assert cli.main(["runs", str(corpus), "--json"]) == 0
    assert cli.main(["runs", str(corpus)]) == 0
    for ref in find_runs(corpus):
        assert cli.main(["show", str(ref.path), "--json"]) == 0
        assert cli.main(["show", str(ref.path)]) == 0
    capsys.readouterr()
    assert _snapshot(corpus) == before
