"""Compact event-log parser (FORMATS.md, Generations 2-4 and the "Event-log dialects" bullet).

Unit tests use small logs written here as a VM following the format would; the corpus tests
read the real runs in place and compare with values read off the files by hand.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prose_tui.backends.filesystem.eventlog import (
    is_binding_event,
    looks_like_event_log,
    parse_event_log,
)
from prose_tui.model import EventKind, StatementState

K = EventKind
S = StatementState
HEADER = "# run:20260301-090000-c0ffee demo.prose\n"


def kinds(log):
    return [e.kind for e in log.events]


def one(body: str):
    """Parse a one-event log and return its only event and trace line."""
    log = parse_event_log(HEADER + body + "\n")
    assert len(log.events) == 1, log.events
    return log.events[0], log.trace[0]


# --- headers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "# run:20260301-090000-c0ffee demo.prose\n1→ a ✓\n",
        "# run: 20260301-090000-c0ffee demo.prose\n1→ a ✓\n",
        "# run:20260301-090000-c0ffee demo.prose\n\n1→ a ✓\n",
        "\n# run:20260301-090000-c0ffee   demo.prose  \n\n\n1→ a ✓\n",
    ],
)
def test_run_header_variants(text):
    log = parse_event_log(text)
    assert (log.run_id, log.program) == ("20260301-090000-c0ffee", "demo.prose")
    assert kinds(log) == [K.STATEMENT_COMPLETED]
    assert log.events[0].line == text.splitlines().index("1→ a ✓") + 1


def test_run_header_with_second_program_line():
    log = parse_event_log("# run:20260301-090000-c0ffee fix\nprogram: ~/progs/fix.md\n\n1-> a ✓\n")
    assert log.program == "fix"
    assert log.header["program"] == "~/progs/fix.md"
    assert len(log.events) == 1


def test_run_id_and_program_lines():
    log = parse_event_log("run_id: 20260301-090000-c0ffee\nprogram: demo.prose\n1→ a ✓\n")
    assert (log.run_id, log.program) == ("20260301-090000-c0ffee", "demo.prose")
    assert log.header == {"run_id": "20260301-090000-c0ffee", "program": "demo.prose"}


def test_three_line_header():
    text = "# OpenProse Execution Log\n# Program: demo.prose\n# Run: 20260301-090000-c0ffee\n\n1→ a ✓\n"
    log = parse_event_log(text)
    assert (log.run_id, log.program) == ("20260301-090000-c0ffee", "demo.prose")
    assert log.header["title"] == "OpenProse Execution Log"
    assert [e.line for e in log.events] == [5]


def test_truncated_id_and_header_only():
    log = parse_event_log("# run:20260301-090000- demo.prose\n")
    assert log.run_id == "20260301-090000-"
    assert log.events == [] and log.trace == [] and log.status is None
    assert any("truncated" in w for w in log.warnings)


def test_vm_log_bullets():
    text = "# VM Log\n\n- run_id: 20260301-090000-demo\n- source: /x/demo.prose.md\n- status: done\n"
    log = parse_event_log(text, source_name="vm.log.md")
    assert log.run_id == "20260301-090000-demo"
    assert log.header["source"] == "/x/demo.prose.md" and log.program == "/x/demo.prose.md"
    assert log.bullet_status == "done"
    assert log.status is None and log.events == []


def test_empty_text():
    log = parse_event_log("")
    assert log.events == [] and log.run_id is None and log.status is None


# --- steps and arrows ----------------------------------------------------------------------


@pytest.mark.parametrize("arrow", ["→", "->", " → ", " -> "])
def test_arrows(arrow):
    event, trace = one(f"1{arrow}draft ✓")
    assert (event.kind, event.step, event.name, event.status) == (K.STATEMENT_COMPLETED, "1", "draft", "ok")
    assert trace.state is S.COMPLETE and trace.step == "1"


def test_step_zero_and_repeated_steps():
    log = parse_event_log(HEADER + "0→ setup ✓\n2→ draft ✓\n2→ polish ✓\n")
    assert [e.step for e in log.events] == ["0", "2", "2"]
    assert [e.seq for e in log.events] == [0, 1, 2]
    assert [e.line for e in log.events] == [2, 3, 4]
    assert [t.line for t in log.trace] == [1, 2, 3]


def test_sub_steps_as_if_body():
    log = parse_event_log(HEADER + "4→ if: true\n4a→ notes ✓\n4b→ ✓\n")
    assert [(e.kind, e.step, e.name, e.status) for e in log.events] == [
        (K.STATEMENT_COMPLETED, "4", "if", "true"),
        (K.STATEMENT_COMPLETED, "4a", "notes", "ok"),
        (K.STATEMENT_COMPLETED, "4b", None, "ok"),
    ]


def test_parallel_start_and_done():
    log = parse_event_log(HEADER + "2→ ∥start left,right\n2a→ left ✓\n2b→ right ✓\n2→ ∥done\n")
    assert kinds(log) == [K.PARALLEL_STARTED, K.STATEMENT_COMPLETED, K.STATEMENT_COMPLETED, K.PARALLEL_JOINED]
    assert log.events[0].name == "left,right"
    assert [t.state for t in log.trace] == [S.COMPLETE] * 4


def test_open_parallel_branches_are_executing():
    log = parse_event_log(HEADER + "2→ ∥start left,right\n2a→ left\n2b→ right ✓\n")
    assert kinds(log) == [K.PARALLEL_STARTED, K.STATEMENT_STARTED, K.STATEMENT_COMPLETED]
    assert [t.state for t in log.trace] == [S.EXECUTING, S.EXECUTING, S.COMPLETE]


@pytest.mark.parametrize("prefix", ["3→ ", ""])
def test_one_line_parallel(prefix):
    log = parse_event_log(HEADER + prefix + "left ✓ | right ✗ timeout (parallel)\n")
    assert kinds(log) == [K.PARALLEL_STARTED, K.STATEMENT_COMPLETED, K.STATEMENT_FAILED, K.PARALLEL_JOINED]
    assert [e.name for e in log.events[1:3]] == ["left", "right"]
    assert log.events[2].status == "timeout"
    assert {e.line for e in log.events} == {2}
    assert len(log.trace) == 1 and log.trace[0].state is S.FAILED


def test_loop_iterations():
    log = parse_event_log(HEADER + "3→ loop:1/5\n3→ loop:2/5 exit(**all done**)\n")
    assert kinds(log) == [K.LOOP_ITERATION, K.LOOP_ITERATION]
    assert [e.status for e in log.events] == [None, "exit"]
    assert "2/5" in log.trace[1].note and "all done" in log.trace[1].note


def test_block_frames_and_scopes():
    text = HEADER + "4→ block:process#43\n4a→ block:inner#44\n4b→ item ✓\n4a→ #44 done\n4c→ tail\n"
    log = parse_event_log(text)
    assert kinds(log) == [K.FRAME_PUSHED, K.FRAME_PUSHED, K.STATEMENT_COMPLETED, K.FRAME_POPPED,
                          K.STATEMENT_STARTED]
    assert (log.events[0].name, log.events[0].execution_id) == ("process", 43)
    assert log.events[2].execution_id == 44  # statements carry the innermost open frame
    assert (log.events[3].name, log.events[3].execution_id) == ("inner", 44)
    assert log.events[4].execution_id == 43
    assert [(f.execution_id, f.block, f.depth, f.status) for f in log.call_stack] == [
        (43, "process", 1, "executing")
    ]


def test_nested_open_frames_innermost_first():
    log = parse_event_log(HEADER + "1→ block:outer#1\n2→ block:inner#2\n")
    assert [(f.execution_id, f.parent_id) for f in log.call_stack] == [(2, 1), (1, None)]


def test_pop_with_failure_mark():
    log = parse_event_log(HEADER + "1→ block:job#7\n1→ #7 ✗ timeout\n")
    assert (log.events[1].kind, log.events[1].name, log.events[1].status) == (K.FRAME_POPPED, "job", "timeout")
    assert log.trace[1].state is S.FAILED and log.call_stack == []


def test_pop_of_unknown_frame_warns():
    log = parse_event_log(HEADER + "5→ #99 done\n")
    assert kinds(log) == [K.FRAME_POPPED]
    assert any("#99" in w for w in log.warnings)


def test_retry_live_and_finished():
    live = parse_event_log(HEADER + "5→ fetch ✗ timeout\n5→ retry:2/3\n")
    assert kinds(live) == [K.STATEMENT_FAILED, K.RETRY]
    assert (live.trace[1].attempt, live.trace[1].max_attempts, live.trace[1].state) == (2, 3, S.RETRYING)
    assert live.events[1].status == "2/3"
    done = parse_event_log(HEADER + "5→ fetch ✗ timeout\n5→ retry:2/3\n5→ fetch ✓\n")
    assert done.trace[1].state is None and done.trace[1].attempt == 2


# --- outcomes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind", "status", "state"),
    [
        ("draft ✓", K.STATEMENT_COMPLETED, "ok", S.COMPLETE),
        ("review ✗ rejected", K.STATEMENT_FAILED, "rejected", S.FAILED),
        ("✗ timeout", K.STATEMENT_FAILED, "timeout", S.FAILED),
        ("review ✗", K.STATEMENT_FAILED, "failed", S.FAILED),
        ("later ⊘", K.STATEMENT_SKIPPED, "deferred", S.SKIPPED),
        ("later ⊘ deferred", K.STATEMENT_SKIPPED, "deferred", S.SKIPPED),
        ("lint ⚠ (2 style nits)", K.STATEMENT_COMPLETED, "warning", S.COMPLETE),
        ("lint ⚠️", K.STATEMENT_COMPLETED, "warning", S.COMPLETE),
    ],
)
def test_outcome_marks(body, kind, status, state):
    event, trace = one("1→ " + body)
    assert (event.kind, event.status, trace.state) == (kind, status, state)


@pytest.mark.parametrize(
    ("body", "kind", "status", "note"),
    [
        ("if(false) skip", K.STATEMENT_SKIPPED, "skip", "skip"),
        ("if: false (count==0)", K.STATEMENT_SKIPPED, "skip", "(count==0)"),
        ("if: true", K.STATEMENT_COMPLETED, "true", None),
        ("if(true)", K.STATEMENT_COMPLETED, "true", None),
    ],
)
def test_if_conditions(body, kind, status, note):
    event, trace = one("5→ " + body)
    assert (event.kind, event.name, event.status, trace.note) == (kind, "if", status, note)
    assert not is_binding_event(event)


@pytest.mark.parametrize(
    ("body", "kind", "name", "status", "note"),
    [
        ("gate ✓ (9/9 checks green)", K.STATEMENT_COMPLETED, "gate", "ok", "(9/9 checks green)"),
        ("gate:smoke ✓ approved", K.STATEMENT_COMPLETED, "gate:smoke", "approved", None),
        ("gate ✗ rejected", K.STATEMENT_FAILED, "gate", "rejected", None),
    ],
)
def test_gates(body, kind, name, status, note):
    event, trace = one("6→ " + body)
    assert (event.kind, event.name, event.status, trace.note) == (kind, name, status, note)
    assert not is_binding_event(event)


def test_tagged_and_annotated_steps():
    log = parse_event_log(
        HEADER
        + "1-> [input] topic ✓\n2-> [vm-action] OpenBranch ✓ (branch: try-1)\n"
        + "3-> critic (first pass) ✓ (kept two ideas)\n"
    )
    assert [e.name for e in log.events] == ["topic", "OpenBranch", "critic"]
    assert [t.note for t in log.trace] == [None, "(branch: try-1)", "(first pass) (kept two ideas)"]
    assert log.trace[0].text == "1-> [input] topic ✓"


def test_anonymous_dot_and_exec_names():
    log = parse_event_log(HEADER + "2→ ✓\n3→ .cache-stamp ✓\n4→ exec .cache-stamp ✓\n5→ let tally ✓\n")
    assert [e.name for e in log.events] == [None, ".cache-stamp", ".cache-stamp", "tally"]
    assert log.bindings == ["tally"]


def test_binding_names():
    log = parse_event_log(HEADER + "1→ outline ✓\n2→ anon_003 ✓\n3→ draft\n4→ check ✗\n5→ web-fetch ✓\n")
    assert log.bindings == ["outline", "anon_003"]
    assert [is_binding_event(e) for e in log.events] == [True, True, False, False, False]


def test_free_text_is_kept_as_note():
    log = parse_event_log(HEADER + "1→ draft ✓\nThe user asked to pause here.\n2→ polish ✓\n")
    assert kinds(log) == [K.STATEMENT_COMPLETED, K.NOTE, K.STATEMENT_COMPLETED]
    assert log.events[1].text == "The user asked to pause here."
    assert log.trace[1].state is None
    assert log.warnings == ["state.md line 3: unrecognised event, kept as a note"]


# --- terminators and status ----------------------------------------------------------------


def test_end_with_z_and_offset():
    utc = parse_event_log(HEADER + "1→ a ✓\n---end 2026-03-01T09:10:11Z\n")
    assert utc.status == "completed"
    assert utc.ended == datetime(2026, 3, 1, 9, 10, 11, tzinfo=timezone.utc)
    east = parse_event_log(HEADER + "1→ a ✓\n---end 2026-03-01T04:10:11-05:00\n")
    assert east.ended == datetime(2026, 3, 1, 4, 10, 11, tzinfo=timezone(timedelta(hours=-5)))
    assert east.ended == utc.ended
    assert kinds(east) == [K.STATEMENT_COMPLETED, K.RUN_ENDED]


def test_error_with_message():
    log = parse_event_log(HEADER + "1→ a ✓\n2→ gate ✗ rejected\n---error 2026-03-01T09:12:00Z Tests still red.\n")
    assert log.status == "failed"
    assert log.errored == datetime(2026, 3, 1, 9, 12, tzinfo=timezone.utc)
    assert log.error_message == "Tests still red."
    assert log.failing_event is log.events[1]
    assert log.ended is None


def test_error_after_started_step_marks_it_failed():
    log = parse_event_log(HEADER + "1→ a ✓\n2→ deploy\n---error 2026-03-01T09:12:00Z deploy hung\n")
    assert log.trace[1].state is S.FAILED
    assert log.failing_event is log.events[1]


def test_resume_then_end_last_terminator_wins():
    text = HEADER + "1→ a ✓\n---end 2026-03-01T09:00:00Z\n---resume\n2→ b ✓\n---end 2026-03-01T10:00:00Z\n"
    log = parse_event_log(text)
    assert log.status == "completed" and log.resumed == 1
    assert log.ended == datetime(2026, 3, 1, 10, tzinfo=timezone.utc)
    assert kinds(log).count(K.RUN_ENDED) == 2


def test_resume_last_means_running():
    log = parse_event_log(HEADER + "1→ a ✓\n---end 2026-03-01T09:00:00Z\n---resume\n2→ b\n")
    assert log.status is None and log.ended is None and log.resumed == 1
    assert log.trace[-1].state is S.EXECUTING


def test_started_step_states():
    running = parse_event_log(HEADER + "1→ a\n2→ b\n")
    assert kinds(running) == [K.STATEMENT_STARTED, K.STATEMENT_STARTED]
    assert [t.state for t in running.trace] == [None, S.EXECUTING]
    assert running.status is None
    ended = parse_event_log(HEADER + "1→ a\n---end 2026-03-01T09:00:00Z\n")
    assert ended.trace[0].state is None


def test_end_without_timestamp_still_completes():
    log = parse_event_log(HEADER + "1→ a ✓\n---end\n")
    assert log.status == "completed" and log.ended is None
    assert any("---end" in w for w in log.warnings)


def test_open_frames_at_end_by_status():
    failed = parse_event_log(HEADER + "1→ block:job#7\n---error 2026-03-01T09:00:00Z crashed\n")
    assert [(f.execution_id, f.status) for f in failed.call_stack] == [(7, "failed")]
    ended = parse_event_log(HEADER + "1→ block:job#7\n---end 2026-03-01T09:00:00Z\n")
    assert [(f.execution_id, f.status) for f in ended.call_stack] == [(7, None)]
    assert any("never returned" in w for w in ended.warnings)


def test_failing_event_only_for_failed_runs():
    log = parse_event_log(HEADER + "1→ fetch ✗ timeout\n1→ retry:2/3\n1→ fetch ✓\n---end 2026-03-01T09:00:00Z\n")
    assert log.failing_event is None


def test_warning_mark_without_step_or_subject_is_a_note():
    log = parse_event_log(HEADER + "1→ a ✓\n⚠ disk nearly full\n")
    assert kinds(log) == [K.STATEMENT_COMPLETED, K.NOTE]


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("1⟶ a ✅", K.STATEMENT_COMPLETED),
        ("1=> a ❌ crashed", K.STATEMENT_FAILED),
        ("1→ a ✔", K.STATEMENT_COMPLETED),
        ("1→ a ✘", K.STATEMENT_FAILED),
        ("1→ ‖start a,b", K.PARALLEL_STARTED),
        ("1→ ||done", K.PARALLEL_JOINED),
        ("1→ loop 3/4", K.LOOP_ITERATION),
        ("- 1→ a ✓", K.STATEMENT_COMPLETED),
    ],
)
def test_look_alike_marks_and_arrows(line, kind):
    event, _ = one(line)
    assert event.kind is kind


def test_stepless_statement_needs_one_token_subject():
    log = parse_event_log(HEADER + "draft ✓\nwe are all good ✓ now\n")
    assert kinds(log) == [K.STATEMENT_COMPLETED, K.NOTE]


# --- times, sniffing, encryption -----------------------------------------------------------


def test_event_times():
    log = parse_event_log(
        HEADER + "[09:01:03] 1→ a ✓\n2→ b ✓ 2026-03-01T09:02:00+01:00\n3→ c ✓\n"
    )
    assert log.events[0].time == datetime(2026, 3, 1, 9, 1, 3)
    assert log.events[1].time == datetime(2026, 3, 1, 9, 2, tzinfo=timezone(timedelta(hours=1)))
    assert log.events[2].time is None
    assert [e.name for e in log.events] == ["a", "b", "c"]


def test_one_digit_hour_clock_time():
    log = parse_event_log(HEADER + "[9:05] 1→ a ✓\n")
    assert log.events[0].time == datetime(2026, 3, 1, 9, 5)


def test_clock_time_without_run_date_is_none():
    log = parse_event_log("# run:demo x.prose\n[09:01:03] 1→ a ✓\n")
    assert log.events[0].time is None and log.events[0].name == "a"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# run:20260301-090000-c0ffee demo.prose\n", True),
        ("#run:x y\n1→ a ✓", True),
        ("run_id: abc\nprogram: p\n", True),
        ("# OpenProse Execution Log\n# Program: p\n# Run: r\n", True),
        ("# VM Log\n\n- run_id: r\n- status: complete\n", True),
        ("some title\n1-> a ✓\n", True),
        ("# Execution State\n\nrun: r\nprogram: p\n\n## Execution Trace\n", False),
        ("# OpenProse Execution Log\nno more\n", False),
        ("just prose about a run\n", False),
        ("", False),
    ],
)
def test_looks_like_event_log(text, expected):
    assert looks_like_event_log(text) is expected


def test_sops_prefix_is_skipped():
    text = '{\n\t"data": "ENC[AES256_GCM,data:xyz]",\n\t"sops": {\n\t\t"version": "3"\n\t}\n}\n7→ pack ✓\n---end 2026-03-01T09:00:00Z\n'
    assert looks_like_event_log(text)
    log = parse_event_log(text)
    assert log.encrypted_lines == 6
    assert kinds(log) == [K.STATEMENT_COMPLETED, K.RUN_ENDED]
    assert log.events[0].line == 7
    assert len(log.warnings) == 1 and "SOPS" in log.warnings[0]
    assert not looks_like_event_log(text.split("7→")[0])


# --- never raise ---------------------------------------------------------------------------

_FRAGMENTS = [
    "# run:", "run_id: x", "# VM Log", "- status: ok", "1→ ", "2a-> ", "0→", "∥start a,b", "∥done",
    "loop:2/5 exit(**x**)", "block:p#4", "#4 done", "retry:2/3", "✓", "✗ rejected", "⊘", "⚠",
    "if(false) skip", "if: true", "gate:g ✓ approved", "[input] ", "(note)", " | ", "(parallel)",
    "---end 2026-03-01T09:00:00Z", "---error 2026-13-45T99:99 boom", "---resume", "[12:61:03]",
    "{", '"sops": {', "}", "\n", "\n\n", "\r\n", "\u2028", "\x00",
]
_LOGISH = st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=8)), max_size=30).map("".join)
_QUICK = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _check_invariants(text: str) -> None:
    log = parse_event_log(text)
    looks_like_event_log(text)
    assert [e.seq for e in log.events] == list(range(len(log.events)))
    lines = [e.line for e in log.events]
    assert lines == sorted(lines)
    assert len(log.trace) == len(set(lines))
    assert log.status in ("completed", "failed", None)
    assert all(isinstance(w, str) for w in log.warnings)


@_QUICK
@given(st.text())
def test_never_raises_on_any_text(text):
    _check_invariants(text)


@_QUICK
@given(_LOGISH)
def test_never_raises_on_log_like_text(text):
    _check_invariants(text)


_N = 20_000
_PATHOLOGICAL = [
    "a: " + " " * _N + "x",
    "1→ a" + " " * _N + "x ✓",
    "a" + " " * _N + "x ✓",
    "1→ " + "(" * _N + " ✓",
    "# run:" + " " * _N + "x",
    "#" + " " * _N + ":",
    "1" * _N + "x",
    "1→ if(" + " " * _N + "x",
    "1→ loop" + " " * _N + "x",
    "1→ loop:1/2 " + "exit(" * (_N // 5),
    "1→ a ✓ | b" + " " * _N + "(parallel",
    "2026-01-01T10:00 " * (_N // 17),
    "-" * _N + "x",
]


@pytest.mark.parametrize("line", _PATHOLOGICAL, ids=range(len(_PATHOLOGICAL)))
def test_long_lines_are_fast(line):
    """No regex backtracks super-linearly: a 20k-character line parses in well under 1 s of CPU.

    Measured as this thread's CPU time, not the wall clock: a loaded machine (another process
    busy on the cores) does not change it, while one quadratic backtrack costs seconds of it."""
    started = time.thread_time()
    parse_event_log(HEADER + line + "\n")
    looks_like_event_log(line)
    assert time.thread_time() - started < 1.0


def test_many_frames_popped_out_of_order_is_fast():
    pushes = "".join(f"1→ block:b#{i}\n" for i in range(5000))
    pops = "".join(f"1→ #{i} done\n" for i in range(5000))
    started = time.thread_time()  # CPU time of this thread (see above), not the wall clock
    log = parse_event_log(HEADER + pushes + pops)
    assert time.thread_time() - started < 2.0
    assert log.call_stack == [] and log.warnings == []


def test_pop_of_outer_frame_leaves_inner_open():
    log = parse_event_log(HEADER + "1→ block:outer#1\n2→ block:inner#2\n3→ #1 done\n")
    assert [(f.execution_id, f.parent_id, f.depth) for f in log.call_stack] == [(2, 1, 2)]
    assert log.events[2].name == "outer"


# --- the real corpus -----------------------------------------------------------------------

YPI = "rawwerks__ypi/.prose/runs"
BASELINE = "apollostreetcompany__baseline/.prose/runs"
# (state file, number of events, final status), counted by hand from the files.
CORPUS_RUNS = [
    (f"{YPI}/20260213-064959-/state.md", 0, None),
    (f"{YPI}/20260213-064959-a606dc/state.md", 12, "completed"),
    (f"{YPI}/20260213-105319-63068c/state.md", 0, None),
    (f"{YPI}/20260213-105500-96b3cb/state.md", 4, "completed"),
    (f"{YPI}/20260213-113205-0fbf7c/state.md", 12, "completed"),
    (f"{YPI}/20260213-114401-818d0d/state.md", 3, None),
    (f"{YPI}/20260213-114703-24e632/state.md", 4, "failed"),
    (f"{YPI}/20260215-151623-7bfe31/state.md", 12, "completed"),
    # SOPS-encrypted blocks with plain events appended after them
    (f"{YPI}/20260213-115216-9afc66/state.md", 8, "completed"),
    (f"{YPI}/20260213-115457-2e6299/state.md", 1, None),
    (f"{YPI}/20260213-120945-ebec26/state.md", 8, "completed"),
    (f"{YPI}/20260213-123723-3ea75b/state.md", 10, "completed"),
    (f"{YPI}/20260215-065027-48dfb7/state.md", 6, "completed"),
    ("eksno__nix-config/.prose/runs/20260417-152853-710f25/state.md", 15, "completed"),
    ("LA3D__cogitarelink-fabric/experiments/node-rlm-fabric/.prose/runs/20260311-183500-5f7d2f/state.md",
     9, "completed"),
    *[(f"{BASELINE}/20260514-002532-{slug}/vm.log.md", 0, None)
      for slug in ("1-kill-gate", "2-offer-smoke-test", "3-brand-to-landing", "4-anti-slop-cleanup",
                   "5-landing-page-responsive")],
]


def _state_files(corpus: Path) -> list[Path]:
    return sorted([*corpus.rglob("state.md"), *corpus.rglob("vm.log.md")])


@pytest.mark.corpus
def test_corpus_every_state_file_parses(corpus):
    files = _state_files(corpus)
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        looks_like_event_log(text)
        parse_event_log(text, source_name=path.name)


@pytest.mark.corpus
@pytest.mark.parametrize(("rel", "count", "status"), CORPUS_RUNS, ids=[r[0].split("/")[-2] for r in CORPUS_RUNS])
def test_corpus_event_log_runs(corpus, rel, count, status):
    text = (corpus / rel).read_text(encoding="utf-8")
    assert looks_like_event_log(text)
    log = parse_event_log(text, source_name=Path(rel).name)
    assert len(log.events) == count
    assert log.status == status
    assert not any("unrecognised" in w for w in log.warnings)


@pytest.mark.corpus
def test_corpus_failed_run(corpus):
    log = parse_event_log((corpus / YPI / "20260213-114703-24e632/state.md").read_text(encoding="utf-8"))
    assert log.error_message == "Fix failing e2e tests before landing."
    assert log.errored == datetime(2026, 2, 13, 11, 48, 13, tzinfo=timezone(timedelta(hours=-5)))
    failing = log.failing_event
    assert failing is not None
    assert (failing.kind, failing.step, failing.name, failing.status, failing.line) == (
        K.STATEMENT_FAILED, "2", "gate", "rejected", 4)


@pytest.mark.corpus
def test_corpus_vm_log_bullet_status(corpus):
    for slug in ("1-kill-gate", "5-landing-page-responsive"):
        log = parse_event_log((corpus / BASELINE / f"20260514-002532-{slug}/vm.log.md").read_text(encoding="utf-8"))
        assert log.bullet_status == "complete"
        assert log.run_id == f"20260514-002532-{slug}"


@pytest.mark.corpus
def test_corpus_snapshots_and_fully_encrypted_are_not_event_logs(corpus):
    for rel in (
        "DoriniTT__PS-TEROS/.prose/runs/20260119-204900-a7b3c9/state.md",
        "cankocakulak__mood-flicker2/.prose/runs/state.md",
        f"{YPI}/20260213-120608-f0e627/state.md",
        f"{YPI}/20260213-121934-2a6fd3/state.md",
    ):
        assert not looks_like_event_log((corpus / rel).read_text(encoding="utf-8")), rel


def _corpus_texts() -> list[str]:
    from conftest import CORPUS

    if not CORPUS.is_dir():
        return []
    return [(CORPUS / rel).read_text(encoding="utf-8") for rel, _, _ in CORPUS_RUNS]


_TEXTS = _corpus_texts()
_needs_corpus = pytest.mark.skipif(not _TEXTS, reason="real corpus not found (set PROSE_TUI_CORPUS)")


@_needs_corpus
@pytest.mark.corpus
@_QUICK
@given(st.data())
def test_corpus_mutations_never_raise(data):
    text = data.draw(st.sampled_from(_TEXTS))
    lines = text.splitlines(keepends=True)
    how = data.draw(st.sampled_from(["truncate", "swap", "junk"]))
    if how == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    elif how == "swap" and len(lines) >= 2:
        i = data.draw(st.integers(0, len(lines) - 1))
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        text = "".join(lines)
    else:
        at = data.draw(st.integers(0, len(lines)))
        junk = data.draw(st.one_of(st.text(max_size=40), _LOGISH))
        text = "".join(lines[:at]) + junk + "\n" + "".join(lines[at:])
    _check_invariants(text)
