"""OpenProse 0.15 skill runs (openprose-0.15 state/filesystem.md), from the fixtures in
tests/fixtures/skill/ written by hand as a VM following that spec would.

Expected values were read off the fixture files: receipts/*.jsonl for statuses and tokens,
world-model/*/.version for content addresses, workspace/*/__error.md for failure text.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest
from conftest import FIXTURES

from prose_tui.backends import open_run
from prose_tui.backends.filesystem.eventlog_lines import classify_line
from prose_tui.backends.registry import backend_of
from prose_tui.cli import main as cli
from prose_tui.history import Journal, history_of
from prose_tui.model import EventKind, RunFormat, RunStatus, StatementState

K = EventKind
SKILL = FIXTURES / "skill"
COMPLETED = SKILL / "completed" / "runs" / "20260702-091500-a1b2c3"
FAILED = SKILL / "failed" / "runs" / "20260703-140210-d4e5f6"
INTERRUPTED = SKILL / "interrupted" / "runs" / "20260705-220000-77aa11"
MIXED = SKILL / "mixed" / "runs" / "20260618-103045-9c8b7a"
FRONT = SKILL / "frontmatter" / "runs" / "20260709-071500-e1f2a3"
MANIFESTS = SKILL / "manifests"
LATER = datetime(2026, 11, 23, tzinfo=timezone.utc)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(timezone.utc)


# -- the new vm.log.md markers, one line at a time -------------------------------------------

@pytest.mark.parametrize(("line", "kind", "name", "status", "state"), [
    ("2→ researcher ✓ rendered", K.STATEMENT_COMPLETED, "researcher", "rendered", StatementState.COMPLETE),
    ("2→ researcher ∅ skipped", K.STATEMENT_SKIPPED, "researcher", "skipped", StatementState.SKIPPED),
    ("4→ server ⇒ synthesizer (delegate: req-001)", K.STATEMENT_STARTED, "server", "delegated", StatementState.EXECUTING),
    ("4→ server ⟳ (resumed)", K.STATEMENT_STARTED, "server", "resumed", StatementState.EXECUTING),
    ("5→ [eval] assertion ✗", K.STATEMENT_FAILED, "assertion", "failed", StatementState.FAILED),
    ("3→ weather ✗ missing-env:OPENWEATHER_API_KEY", K.STATEMENT_FAILED, "weather", "missing-env", StatementState.FAILED),
    ("6→ critic-loop ⊘ terminated (max_rounds)", K.STATEMENT_SKIPPED, "critic-loop", "terminated", StatementState.SKIPPED),
    ("---test PASS", K.STATEMENT_COMPLETED, "test", "PASS", StatementState.COMPLETE),
    ("---test FAIL (2/3 assertions)", K.STATEMENT_FAILED, "test", "FAIL", StatementState.FAILED),
])
def test_new_markers_classify(line, kind, name, status, state):
    info = classify_line(line)
    assert info.recognised
    assert [(i.kind, i.name, i.status) for i in info.items] == [(kind, name, status)]
    assert info.state is state


def test_marker_notes_keep_what_a_user_needs():
    assert classify_line("4→ server ⇒ synthesizer (delegate: req-001)").note == "⇒ synthesizer (request req-001)"
    assert classify_line("3→ weather ✗ missing-env:OPENWEATHER_API_KEY").note == "missing-env:OPENWEATHER_API_KEY"
    assert classify_line("---test FAIL (2/3 assertions)").note == "2/3 assertions"
    assert classify_line("5→ [eval] summary is short ✓").items[0].tag == "eval"


# -- completed ---------------------------------------------------------------------------

def test_completed_run_status_header_and_format():
    run = open_run(COMPLETED, now=LATER)
    assert run.format is RunFormat.SKILL
    assert run.status is RunStatus.COMPLETED
    assert "---end 2026-07-02T09:21:40" in run.status_reason
    assert run.header["upstream"] == "[20260701-180000-0f9e8d]"
    assert run.header["root"] == "research/tide-research"
    assert run.program == "tide-research"
    assert run.program_path == COMPLETED / "root.prose.md"
    assert run.executing is None
    assert run.warnings == []


def test_completed_run_inputs_and_published_outputs_are_bindings():
    run = open_run(COMPLETED, now=LATER)
    by = {(b.service, b.name): b for b in run.bindings}
    question = by[("caller", "question")]
    assert (question.kind, question.source) == ("input", "caller")
    assert question.path.read_bytes()[question.value_offset:].strip().startswith(b"How did tidal stream")
    assert by[("caller", "prior")].fields == {"type": "run"}
    findings = by[("researcher", "findings")]
    assert findings.kind == "output"
    assert findings.warning is None
    assert findings.fields == {"node": "researcher",
                               "version": "sha256:5d41402abc4b2a76b9719d911017c592ae2f1c3a06b0b4f1e5a7c3d9e8f10a21"}
    value = backend_of(run).read_value(run, findings)
    assert "sha256:5d41402abc4b2a76b9719d911017c592ae2f1c3a06b0b4f1e5a7c3d9e8f10a21" in value.note
    assert {k for k in by if k[0] != "caller"} == {
        ("researcher", "findings"), ("researcher", "sources"), ("critic", "evaluation"),
        ("fact-checker", "checks"), ("synthesizer", "report")}
    assert not any(b.path.name == ".version" for b in run.bindings)


def test_completed_run_nodes_follow_the_compiled_intent():
    run = open_run(COMPLETED, now=LATER)
    rows = [(n.name, n.status, n.receipts, n.tokens_fresh, n.tokens_reused, n.producers) for n in run.nodes]
    assert rows == [
        ("researcher", "rendered", 1, 18250, 0, []),
        ("critic", "rendered", 1, 6400, 2100, ["researcher"]),
        ("fact-checker", "skipped", 1, 0, 0, ["researcher"]),
        ("synthesizer", "rendered", 1, 9100, 4800, ["critic", "fact-checker"]),
    ]
    synth = run.nodes[3]
    assert synth.version == "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert all(n.chain_ok and n.failure_reason is None for n in run.nodes)
    assert run.metrics["tokens_fresh"] == 33750
    assert run.metrics["tokens_reused"] == 6900
    assert run.metrics["receipts"] == 4


def test_completed_run_receipts_follow_their_log_lines_with_cost():
    run = open_run(COMPLETED, now=LATER)
    assert [e.seq for e in run.events] == list(range(len(run.events)))
    kinds = [(e.kind, e.name) for e in run.events]
    at = kinds.index((K.STATEMENT_COMPLETED, "researcher"))
    receipt = run.events[at + 1]
    assert (receipt.kind, receipt.name, receipt.status) == (K.RECEIPT_RENDERED, "researcher", "rendered")
    assert "18,250 fresh + 0 reused tokens" in receipt.text
    assert receipt.line == run.events[at].line  # the cursor stays on the node's log line
    assert receipt.time == utc("2026-07-02T09:16:30Z")
    skipped = next(e for e in run.events if e.kind is K.RECEIPT_SKIPPED)
    assert skipped.name == "fact-checker" and "∅ skipped" in skipped.text
    assert kinds[-1] == (K.RUN_ENDED, None)
    delegated = next(e for e in run.events if e.status == "delegated")
    assert delegated.name == "synthesizer"
    trace = {t.text.strip(): t for t in run.trace}
    assert trace["3b→ fact-checker ∅ skipped"].state is StatementState.SKIPPED
    assert trace["4→ synthesizer ⇒ editor (delegate: req-001)"].state is None  # finished since


def test_show_json_carries_receipt_events(capsys):
    assert cli.main(["show", str(COMPLETED), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "skill"
    kinds = [e["kind"] for e in data["events"]]
    assert kinds.count("receipt_rendered") == 3 and kinds.count("receipt_skipped") == 1


def test_summary_read_has_status_and_nodes_but_no_world_model_files():
    run = open_run(COMPLETED, now=LATER, summary=True)
    assert run.status is RunStatus.COMPLETED
    assert [n.name for n in run.nodes] == ["researcher", "critic", "fact-checker", "synthesizer"]
    assert run.bindings == []


# -- failed with __error.md -------------------------------------------------------------

def test_failed_run_says_which_node_failed_and_why():
    run = open_run(FAILED, now=LATER)
    assert run.status is RunStatus.FAILED
    assert "---error" in run.status_reason
    assert "node ranker failed: no-eligible-calls: Every call the scout published closed" in run.status_reason
    ranker = next(n for n in run.nodes if n.name == "ranker")
    assert ranker.status == "failed"
    assert ranker.failure_reason == (
        "no-eligible-calls: Every call the scout published closed before the run date (2026-07-03).")
    assert (ranker.tokens_fresh, ranker.tokens_reused, ranker.producers) == (3310, 12040, ["scout"])
    writer = next(n for n in run.nodes if n.name == "writer")
    assert (writer.status, writer.receipts, writer.producers) == (None, 0, ["ranker"])


def test_failed_receipt_event_carries_the_real_message():
    run = open_run(FAILED, now=LATER)
    event = next(e for e in run.events if e.kind is K.RECEIPT_FAILED)
    assert event.status == "failed" and event.name == "ranker"
    words = event.text.split("✗", 1)[1].strip()
    assert words == "no-eligible-calls: Every call the scout published closed before the run date (2026-07-03)."
    history = history_of(run, journal=Journal())
    assert history.events[event.seq].text == event.text
    assert history.failures()  # the log's ✗ and ---error lines
    error = next(s for s in run.sections if s.title.startswith("Error: ranker"))
    assert "CL5-2026-D3: closed 2026-05-01" in error.text


def test_failed_run_without_root_prose_shows_the_compiled_nodes_as_program():
    run = open_run(FAILED, now=LATER)
    assert run.program_path is None
    program = next(s for s in run.sections if s.title.startswith("Program (nodes of compiled-intent.json)"))
    lines = program.text.strip("`\n").splitlines()
    assert lines[0].startswith("scout    # rendered · 1 receipt · sha256:0b1c2d3e")
    assert lines[1].startswith("ranker ← scout    # failed · 1 receipt · no-eligible-calls:")
    assert lines[2] == "writer ← ranker    # no receipt yet"
    assert [t.text for t in run.trace][0] == "1→ [input] topic ✓"  # the log stays the trace


def test_nodes_are_the_trace_when_there_is_no_log(tmp_path):
    run_dir = tmp_path / "runs" / "20260703-140210-d4e5f6"
    shutil.copytree(FAILED, run_dir)
    (run_dir / "vm.log.md").unlink()
    run = open_run(run_dir, now=LATER)
    assert run.format is RunFormat.SKILL
    assert [(t.text, t.state) for t in run.trace] == [
        ("scout", StatementState.COMPLETE),
        ("ranker ← scout", StatementState.FAILED),
        ("writer ← ranker", StatementState.PENDING),
    ]


# -- interrupted --------------------------------------------------------------------------

def test_interrupted_at_a_delegation_once_nothing_changes():
    run = open_run(INTERRUPTED, now=LATER)
    assert run.status is RunStatus.INTERRUPTED
    assert "line 3 is still EXECUTING" in run.status_reason
    assert run.executing is not None and "⇒ translator" in run.executing.text


def test_same_run_is_running_while_recent():
    run = open_run(INTERRUPTED, now=utc("2026-07-05T22:05:00Z"))
    assert run.status is RunStatus.RUNNING
    assert [(n.name, n.status) for n in run.nodes] == [("collector", "rendered")]


# -- mixed layout: bindings/{service}/ beside world-model/ (June-July 2026) ------------------

def test_mixed_layout_lists_both_binding_stores():
    run = open_run(MIXED, now=LATER)
    rel = sorted(b.path.relative_to(MIXED).as_posix() for b in run.bindings)
    assert rel == [
        "bindings/caller/article.md", "bindings/summarize/summary.md",
        "world-model/caller/article.md", "world-model/glossary/terms.md", "world-model/summarize/summary.md",
    ]
    legacy = next(b for b in run.bindings if b.path == MIXED / "bindings" / "summarize" / "summary.md")
    assert (legacy.kind, legacy.service, legacy.fields) == ("output", "summarize", None)


def test_mixed_test_run_fails_on_its_test_verdict():
    run = open_run(MIXED, now=LATER)
    assert run.status is RunStatus.FAILED
    assert run.status_reason == "the test failed: ---test FAIL (1/2 assertions), then the log ends with ---end"
    from prose_tui.backends.common.status import infer_status

    assert infer_status(run, now=LATER)[0] is RunStatus.FAILED  # the explorer's re-inference agrees
    glossary = next(n for n in run.nodes if n.name == "glossary")
    assert (glossary.status, glossary.receipts, glossary.tokens_fresh, glossary.chain_ok) == ("skipped", 2, 1500, True)
    evals = [e for e in run.events if e.text.startswith(("5→", "6→"))]
    assert [e.kind for e in evals] == [K.STATEMENT_COMPLETED, K.STATEMENT_FAILED]


def test_broken_chain_and_half_written_receipt_are_warned_not_fatal(tmp_path):
    run_dir = tmp_path / "runs" / MIXED.name
    shutil.copytree(MIXED, run_dir)
    ledger = run_dir / "receipts" / "glossary.jsonl"
    ledger.write_text(ledger.read_text().replace('"prev":"sha256:g1"', '"prev":"sha256:elsewhere"')
                      + '{"node":"glossary","status":"rend')
    run = open_run(run_dir, now=LATER)
    glossary = next(n for n in run.nodes if n.name == "glossary")
    assert not glossary.chain_ok and "receipt 2 points to sha256:elsewhere" in (glossary.chain_note or "")
    assert "receipts/glossary.jsonl line 3: not a JSON object, skipped" in run.warnings
    assert glossary.receipts == 2


# -- YAML front matter above the log ----------------------------------------------------

def test_front_matter_status_and_error_decide_without_a_terminator():
    run = open_run(FRONT, now=LATER)
    assert run.status is RunStatus.FAILED
    assert run.status_reason.startswith(
        "the log's front matter says status: failed (weather could not render: OPENWEATHER_API_KEY is not set. "
        "Set it in .env and resume the run.)")
    assert "node weather failed: missing-env:OPENWEATHER_API_KEY" in run.status_reason
    assert run.header["status"] == "failed"
    assert run.header["root"] == "harbour/harbour-forecast"
    assert run.warnings == []  # the front matter is not read as unrecognised events
    from prose_tui.backends.common.status import infer_status

    assert infer_status(run, now=LATER)[0] is RunStatus.FAILED  # the explorer's re-inference agrees


def test_front_matter_keeps_file_line_numbers():
    run = open_run(FRONT, now=LATER)
    assert run.trace[0].text == "1→ [input] harbour ✓"
    assert run.events[0].line == 11  # 7 lines of front matter, # run:, root:, a blank line
    trace = {t.text: t for t in run.trace}
    assert trace["3→ critic-loop ⊘ terminated (max_rounds)"].state is StatementState.SKIPPED
    assert trace["4→ weather ✗ missing-env:OPENWEATHER_API_KEY"].state is StatementState.FAILED


# -- 0.11-0.14 manifests ------------------------------------------------------------------

def test_0_11_manifest_run_opens():
    run = open_run(MANIFESTS / ".agents" / "prose" / "runs" / "20260503-101500-4d5e6f", now=LATER)
    assert (run.format, run.status, run.program) == (RunFormat.VM_LOG, RunStatus.COMPLETED, "release-notes")
    assert [(b.service, b.name) for b in run.bindings] == [("writer", "draft")]


def test_0_13_forme_manifest_run_with_front_matter_opens():
    run = open_run(MANIFESTS / "runs" / "20260520-160000-aa11bb", now=LATER)
    assert run.status is RunStatus.COMPLETED
    assert run.header["status"] == "complete"
    assert run.warnings == []


def test_judge_era_responsibilities_run_is_a_run_folder():
    run = open_run(MANIFESTS / "runs" / "20260528-090000-cc22dd", now=LATER)
    assert run.format is RunFormat.BARE
    assert run.status is RunStatus.UNKNOWN


def test_receipts_written_as_one_json_array_are_read(tmp_path):
    run_dir = tmp_path / "runs" / FAILED.name
    shutil.copytree(FAILED, run_dir)
    lines = (run_dir / "receipts" / "scout.jsonl").read_text().splitlines()
    (run_dir / "receipts" / "scout.jsonl").unlink()
    (run_dir / "receipts" / "scout.json").write_text("[" + ",".join(lines) + ", 7]")
    run = open_run(run_dir, now=LATER)
    scout = next(n for n in run.nodes if n.name == "scout")
    assert (scout.status, scout.receipts, scout.tokens_fresh) == ("rendered", 1, 12040)
    assert run.warnings == ["receipts/scout.json item 2: not a JSON object, skipped"]


def test_a_receipt_appended_while_watching_updates_nodes_events_and_status(tmp_path):
    from prose_tui.live.workspace import Workspace

    run_dir = tmp_path / "runs" / INTERRUPTED.name
    shutil.copytree(INTERRUPTED, run_dir)
    clock = [utc("2026-07-05T22:05:00Z")]
    workspace = Workspace(tmp_path, clock=lambda: clock[0])
    workspace.scan()
    run = workspace.detail(run_dir.resolve())
    assert run is not None and run.status is RunStatus.RUNNING
    (run_dir / "workspace" / "summarizer").mkdir(exist_ok=True)
    (run_dir / "workspace" / "summarizer" / "__error.md").write_text("# Error: translator-timeout\n\nThe translator did not answer.\n")
    (run_dir / "receipts" / "summarizer.jsonl").write_text(
        '{"node":"summarizer","status":"failed","semantic_diff":{"failure_reason":"translator-timeout"},'
        '"cost":{"tokens":{"fresh":900,"reused":2200}}}\n')
    with (run_dir / "vm.log.md").open("a") as fh:
        fh.write("3→ summarizer ✗ translator-timeout\n---error 2026-07-05T22:06:00Z translator-timeout\n")
    paths = {(run_dir / "receipts" / "summarizer.jsonl").resolve(), (run_dir / "vm.log.md").resolve(),
             (run_dir / "workspace" / "summarizer" / "__error.md").resolve()}
    applied = workspace.apply(paths)
    fresh = applied.changed[run_dir.resolve()].run
    assert fresh.status is RunStatus.FAILED
    summarizer = next(n for n in fresh.nodes if n.name == "summarizer")
    assert summarizer.failure_reason == "translator-timeout: The translator did not answer."
    failed = next(e for e in fresh.events if e.kind is K.RECEIPT_FAILED)
    assert "900 fresh + 2,200 reused tokens" in failed.text and failed.text.endswith("✗ translator-timeout: The translator did not answer.")


def test_an_imported_skill_run_is_read_as_one(tmp_path):
    run_dir = tmp_path / "runs" / COMPLETED.name
    shutil.copytree(COMPLETED, run_dir)
    shutil.copytree(FAILED, run_dir / "imports" / "std--grant-scout")
    run = open_run(run_dir, now=LATER)
    assert [(i.import_handle, i.format, i.status) for i in run.imports] == [
        ("std--grant-scout", RunFormat.SKILL, RunStatus.FAILED)]
    assert [n.name for n in run.imports[0].nodes] == ["scout", "ranker", "writer"]
