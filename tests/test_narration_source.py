"""In-context narration (seeds/in-context.md) read as a Run: marker files, stdin text, transcripts, live tail."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.backends.narration.parse import (
    NarrationIndex,
    NarrationTail,
    binding_value,
    load_narration,
    parse_narration_text,
    sniff_narration,
)
from prose_tui.model import Backend, EventKind, RunFormat, RunStatus, StatementState

FIXTURES = Path(__file__).parent / "fixtures" / "narration"


def kinds(run, kind):
    return [e for e in run.events if e.kind is kind]


# --- detection ----------------------------------------------------------------------------------


def test_sniff_recognises_narration_by_content(tmp_path: Path) -> None:
    for name in ("bracket.md", "emoji.md", "compact.md", "transcript.jsonl"):
        assert sniff_narration(FIXTURES / name), name
    renamed = tmp_path / "notes.txt"
    renamed.write_bytes((FIXTURES / "transcript.jsonl").read_bytes())
    assert sniff_narration(renamed)
    plain = tmp_path / "readme.md"
    plain.write_text("# A project\n\nSome prose. ✅ done.\n1. first\n")
    assert not sniff_narration(plain)
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}}) + "\n")
    assert not sniff_narration(chat)
    assert not sniff_narration(tmp_path / "missing.md")


# --- bracket markers ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bracket():
    return load_narration(FIXTURES / "bracket.md")


def test_bracket_run_is_running_at_the_combine_step(bracket) -> None:
    assert bracket.backend is Backend.NARRATION and bracket.format is RunFormat.NARRATION
    assert bracket.program == "review.prose"
    assert bracket.status is RunStatus.RUNNING
    assert bracket.executing is not None and "Combine parts" in bracket.executing.text
    assert bracket.warnings == []
    assert bracket.header["last_failure"] == "Session failed: test runner timed out"


def test_bracket_call_stack_follows_frame_markers(bracket) -> None:
    assert [(f.execution_id, f.block, f.status) for f in bracket.call_stack] == [(1, "split", "executing")]
    pushed = [(e.name, e.execution_id) for e in kinds(bracket, EventKind.FRAME_PUSHED)]
    popped = [(e.name, e.execution_id) for e in kinds(bracket, EventKind.FRAME_POPPED)]
    assert pushed == [("split", 1), ("split", 2)] and popped == [("split", 2)]


def test_bracket_bindings_keep_values_and_scope(bracket) -> None:
    assert binding_value(bracket, "parts", 2) == "[part A1]"
    assert binding_value(bracket, "parts", 1) == "[part A, part B]"
    assert binding_value(bracket, "parts") is None  # no root-scope 'parts'
    assert binding_value(bracket, "notes") == "three annotated findings, reviewed"
    by = {(b.name, b.execution_id): b for b in bracket.bindings}
    assert by[("notes", None)].kind == "let"  # a reassignment keeps the declared kind
    assert by[("budget", None)].kind == "const" and by[("budget", None)].fields["value"] == "{tokens: 20000}"
    assert by[("summary", None)].kind == "output"
    assert by[("topic", None)].kind == "input" and by[("topic", None)].fields["value"] == "widget checkout"
    assert by[("security", None)].fields["value"] == "No findings"
    assert by[("parts", 2)].path == FIXTURES / "bracket.md"


def test_bracket_constructs_parallel_loop_try(bracket) -> None:
    assert len(kinds(bracket, EventKind.PARALLEL_STARTED)) == 1 and len(kinds(bracket, EventKind.PARALLEL_JOINED)) == 1
    assert [e.status for e in kinds(bracket, EventKind.LOOP_ITERATION)] == ["1/3", "2/3"]
    failed = kinds(bracket, EventKind.STATEMENT_FAILED)
    assert [e.name for e in failed] == ['session "Run the test suite"']
    states = {t.text.strip(): t.state for t in bracket.trace}
    assert states['session "Run the test suite"'] is StatementState.FAILED
    assert states['session "Summarise the failure" with context: err'] is StatementState.COMPLETE
    assert states["try block"] is StatementState.COMPLETE
    notes = {e.name for e in kinds(bracket, EventKind.NOTE)}
    assert {"try", "catch", "finally", "flow", "pipeline", "callstack"} <= notes
    assert bracket.constructs == []


def test_bracket_import_with_inputs_and_outputs(bracket) -> None:
    (lint,) = bracket.imports
    assert lint.import_handle == "lint" and lint.program == "@acme/lint-rules"
    assert lint.status is RunStatus.COMPLETED
    assert lint.header["fetching_from"] == "https://p.prose.md/@acme/lint-rules"
    assert [(b.name, b.kind, b.fields["value"]) for b in lint.bindings] == [
        ("repo", "input", "acme/widgets"),
        ("rules", "output", "no-unused-vars, eqeqeq"),
        ("severity", "output", "warn"),
    ]
    assert [e.kind for e in bracket.events if e.name == "lint"] == [EventKind.IMPORT_ENTERED, EventKind.IMPORT_LEFT]


def test_callstack_snapshot_replaces_the_stack() -> None:
    run = parse_narration_text(
        "[CallStack] Current stack (depth: 3):\n"
        "execution_id: 5 | block: process | depth: 3 | status: executing\n"
        "execution_id: 3 | block: process | depth: 2 | status: waiting\n"
        "execution_id: 1 | block: outer | depth: 1 | status: waiting\n"
        "[Binding] let x = \"deep\" (execution_id: 3)\n"
    )
    assert [(f.execution_id, f.block, f.depth, f.status, f.parent_id) for f in run.call_stack] == [
        (5, "process", 3, "executing", 3),
        (3, "process", 2, "waiting", 1),
        (1, "outer", 1, "waiting", None),
    ]
    assert binding_value(run, "x", 5) == "deep"


# --- emoji and compact ----------------------------------------------------------------------------


def test_emoji_run_completes_with_retries_and_a_caught_failure() -> None:
    run = load_narration(FIXTURES / "emoji.md")
    assert run.status is RunStatus.COMPLETED and run.header["markers"] == "emoji"
    assert [e.status for e in kinds(run, EventKind.RETRY)] == ["1/3", "2/3"]
    publish = next(t for t in run.trace if "Publish" in t.text)
    assert publish.state is StatementState.COMPLETE and publish.attempt == 2 and publish.max_attempts == 3
    assert binding_value(run, "research") == "Solid electrolytes trade conductivity for safety"
    assert binding_value(run, "supply") == "Lithium metal supply is the bottleneck"
    assert [e.status for e in kinds(run, EventKind.LOOP_ITERATION)] == ["1/3", "2/3"]
    assert [a.name for a in run.agents] == ["researcher"] and run.agents[0].details["model"] == "sonnet"
    assert all(t.state is not StatementState.EXECUTING for t in run.trace)


def test_compact_run_fails_with_the_error_line() -> None:
    run = load_narration(FIXTURES / "compact.md")
    assert run.status is RunStatus.FAILED and run.status_reason.endswith("verification failed after rollback")
    assert [e.name for e in kinds(run, EventKind.PARALLEL_STARTED)] == ["build,test,lint"]
    assert [e.status for e in kinds(run, EventKind.LOOP_ITERATION)] == ["1/3", "2/3"]
    assert [(e.kind, e.execution_id) for e in run.events if e.kind in (EventKind.FRAME_PUSHED, EventKind.FRAME_POPPED)] == [
        (EventKind.FRAME_PUSHED, 7),
        (EventKind.FRAME_POPPED, 7),
    ]
    migrate = next(t for t in run.trace if "Migrate" in t.text)
    assert migrate.state is StatementState.FAILED and migrate.note == "timeout"
    assert [e.status for e in kinds(run, EventKind.RETRY)] == ["2/3"]
    assert {e.name for e in kinds(run, EventKind.NOTE)} >= {"try", "catch", "finally"}
    assert next(t for t in run.trace if t.text == "announce").state is StatementState.SKIPPED
    assert [e.status for e in kinds(run, EventKind.STATEMENT_SKIPPED)] == ["deferred"]


# --- transcripts and standard input ---------------------------------------------------------------


def test_transcript_reads_assistant_text_only_with_times() -> None:
    run = load_narration(FIXTURES / "transcript.jsonl")
    assert run.program == "summarise.prose" and run.status is RunStatus.RUNNING
    assert run.header["source_kind"] == "transcript"
    assert [b.name for b in run.bindings] == ["notes"]  # the tool result's "[Binding]" is not narration
    assert binding_value(run, "notes") == "Meeting notes condensed"
    assert run.warnings == ["line 7 of transcript.jsonl is not valid JSON; skipped."]
    assert run.started is not None and run.started.isoformat() == "2026-04-02T09:00:05+00:00"
    assert run.executing is not None and "Email the summary" in run.executing.text
    assert run.events[-1].line == 9


def test_standard_input_text_and_jsonl() -> None:
    text = (FIXTURES / "bracket.md").read_text(encoding="utf-8")
    run = parse_narration_text(text)
    assert run.id == "stdin" and str(run.path) == "<stdin>"
    assert len(run.events) == len(load_narration(FIXTURES / "bracket.md").events)
    jsonl = parse_narration_text((FIXTURES / "transcript.jsonl").read_text(encoding="utf-8"))
    assert [b.name for b in jsonl.bindings] == ["notes"]


def test_unreadable_and_empty_inputs_give_warnings(tmp_path: Path) -> None:
    missing = load_narration(tmp_path / "gone.md")
    assert missing.warnings and "could not be read" in missing.warnings[0]
    empty = tmp_path / "empty.md"
    empty.write_text("")
    assert "no narration markers" in load_narration(empty).warnings[0]
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(b"{\x00\xff\xfe garbage\n" * 3)
    assert load_narration(binary).events == []


def test_index_reports_progress_and_parses_lazily(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_text("".join(f"[Position] Statement {i}: session \"s{i}\"\n[Success] ok\n" for i in range(1, 3001)))
    calls: list[tuple[int, int]] = []
    index = NarrationIndex(path, progress=lambda done, total: calls.append((done, total)))
    assert len(index) == 6000 and calls[-1] == (path.stat().st_size, path.stat().st_size)
    head = index.load(stop=100)
    assert len(head.trace) == 50 and head.header["parsed_lines"] == "100/6000"
    snapshots = list(index.load_progressively(chunk_lines=2500))
    assert [len(s.trace) for s in snapshots] == [1250, 2500, 3000]
    assert "parsed_lines" not in snapshots[-1].header


# --- live tail ------------------------------------------------------------------------------------


def _assistant(text: str) -> str:
    return json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}) + "\n"


def test_tail_sees_appends_from_a_writer_thread(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    path.write_text(_assistant("[Program] Program Start: live.prose"))
    tail = NarrationTail(path)
    assert [e.kind for e in tail.poll()] == [EventKind.NOTE]
    assert tail.poll() == []

    def writer() -> None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(_assistant("[Position] Statement 1: session \"One\""))
            fh.write('{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "te')  # half a line

    t = threading.Thread(target=writer)
    t.start()
    t.join()
    assert [e.kind for e in tail.poll()] == [EventKind.STATEMENT_STARTED]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('xt", "text": "[Success] Session complete"}]}}\n')
    assert [e.kind for e in tail.poll()] == [EventKind.STATEMENT_COMPLETED]
    assert tail.run.trace[0].state is StatementState.COMPLETE


def test_tail_starts_over_after_truncation_or_replacement(tmp_path: Path) -> None:
    path = tmp_path / "live.md"
    path.write_text("[Position] Statement 1: session \"A\"\n[Success] done\n")
    tail = NarrationTail(path)
    assert len(tail.poll()) == 2
    path.write_text("[Position] Statement 1: session \"B\"\n")  # truncated and rewritten in place
    events = tail.poll()
    assert tail.resets == 1 and [e.kind for e in events] == [EventKind.STATEMENT_STARTED]
    replacement = tmp_path / "new.md"
    replacement.write_text("[Position] Statement 1: session \"B\"\n[Success] done\n[Program] Program Complete\n")
    os.replace(replacement, path)
    events = tail.poll()
    assert tail.resets == 2 and len(events) == 3 and tail.run.status is RunStatus.COMPLETED
    path.unlink()
    assert tail.poll() == []


# --- robustness -----------------------------------------------------------------------------------

MARKERY = st.sampled_from(
    ["[Position] ", "[Binding] ", "[Frame+] ", "[Frame-] ", "[CallStack] ", "[Parallel] ", "[Loop] ", "[Import] ",
     "[Input] ", "[Output] ", "[Warning] ", "[Success] ", "[Program] ", "📦 ", "📍 ", "⚠️ ", "🔄 ", "1→ ", "∥ ",
     "loop:", "#3 ", "try→ ", "---error ", "execution_id: ", " = ", "(execution_id: 2)", "Iteration 2 of 3",
     "Entering block: x", "Exiting block", "Parallel complete:", "- a = ", "Registered as: ", "Passing inputs:",
     "Received outputs:", "retry 2 of 3", "retry:1/2", "✗ ", "✓", "\n"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(MARKERY, st.text(max_size=20)), max_size=40))
def test_parser_never_raises_on_marker_soup(parts: list[str]) -> None:
    run = parse_narration_text("".join(parts))
    assert [e.seq for e in run.events] == list(range(len(run.events)))
    assert all(w.endswith(".") for w in run.warnings)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_parser_never_raises_on_arbitrary_text(text: str) -> None:
    parse_narration_text(text)
    parse_narration_text('{"type": "assistant"}\n' + text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_files_of_arbitrary_bytes_load(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "x.jsonl"
    path.write_bytes(data)
    sniff_narration(path)
    load_narration(path)
    NarrationTail(path).poll()


def test_open_loop_and_parallel_state_is_shown_mid_run() -> None:
    run = parse_narration_text(
        "[Position] Statement 1: loop until **done** (max: 5)\n"
        "[Loop] Starting loop until **done** (max: 5)\n"
        "[Loop] Iteration 2 of max 5\n"
        "[Position] Statement 2: parallel block\n"
        "[Parallel] Entering parallel block (2 branches, strategy: all)\n"
        "- north: complete\n"
        "- south: pending\n"
    )
    titles = [c.title for c in run.constructs]
    assert titles[0].startswith("Parallel") and titles[1].startswith("Loop")
    assert run.constructs[0].items == ["north: complete", "south: pending"]
    assert run.constructs[1].items == ["iteration 2/5"]


def test_transcript_with_a_first_line_longer_than_the_sniff_window(tmp_path: Path) -> None:
    path = tmp_path / "session.log"
    big = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 400_000}})
    path.write_text(big + "\n" + _assistant("[Program] Program Start: long.prose\n[Position] Statement 1: session \"A\""))
    assert sniff_narration(path)
    assert load_narration(path).program == "long.prose"
