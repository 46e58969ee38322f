"""Run history (issue 3): the event stream of every source, the run as of a cursor, jump to failure.

Event-log runs of the real corpus are read in place; small logs and snapshot runs are written
here the way a VM following FORMATS.md / seeds/filesystem.md would write them.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from prose_tui.backends import open_run
from prose_tui.history import events_json, failure_context, history_of, state_at
from prose_tui.model import EventKind, RunStatus, StatementState

K = EventKind
S = StatementState
HERE = Path(__file__).resolve().parent
YPI = "rawwerks__ypi/.prose/runs"
FAILED_RUN = f"{YPI}/20260213-114703-24e632"
PARALLEL_RUN = f"{YPI}/20260213-113205-0fbf7c"
NEVER_WATCHED = HERE / "fixtures/project/.prose/runs/20260228-090000-d4e5f6"


def write_run(root: Path, log: str, program: str | None = None, bindings: dict[str, str] | None = None) -> Path:
    run_dir = root / ".prose" / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(log, encoding="utf-8")
    if program is not None:
        (run_dir / "program.prose").write_text(program, encoding="utf-8")
    for name, value in (bindings or {}).items():
        (run_dir / "bindings" / f"{name}.md").write_text(
            f"# {name}\n\nkind: let\n\nsource:\n```prose\nlet {name} = session\n```\n\n---\n\n{value}\n", encoding="utf-8")
    return run_dir


def trace_pairs(run) -> list[tuple[str, S | None]]:
    return [(t.text, t.state) for t in run.trace]


# --- event-log runs of the corpus ------------------------------------------------------------


@pytest.mark.corpus
def test_failed_corpus_run_points_at_the_rejected_gate(corpus):
    run = open_run(corpus / FAILED_RUN)
    history = history_of(run)
    assert history.origin == "log"
    assert [e.seq for e in history.events] == [0, 1, 2, 3]
    assert history.failures() == [2, 3]
    first = history.first_failure()
    assert (history.events[first].kind, history.events[first].name, history.events[first].status) == (
        K.STATEMENT_FAILED, "gate", "rejected")
    assert history.events[3].kind is K.RUN_ERRORED
    assert history.retries() == []


@pytest.mark.corpus
def test_failed_corpus_run_as_of_each_event(corpus):
    run = open_run(corpus / FAILED_RUN)
    history = history_of(run)
    before = state_at(run, history, 1)
    assert trace_pairs(before) == [("1→ fast ✓", S.COMPLETE), ("2→ e2e ✓", S.COMPLETE)]
    assert before.status is RunStatus.RUNNING and before.error_marker is None
    assert sorted(b.name for b in before.bindings) == ["e2e", "fast"]
    first = state_at(run, history, 0)
    assert [b.name for b in first.bindings] == ["fast"]
    assert first.bindings[0] is next(b for b in run.bindings if b.name == "fast")
    at_gate = state_at(run, history, 2)
    assert at_gate.trace[-1].state is S.FAILED and at_gate.status is RunStatus.FAILED  # issue 28: the status as of N
    end = state_at(run, history, 3)
    assert end.status is RunStatus.FAILED and trace_pairs(end) == trace_pairs(run)


@pytest.mark.corpus
def test_failure_context_of_the_corpus_gate(corpus):
    run = open_run(corpus / FAILED_RUN)
    history = history_of(run)
    ctx = failure_context(run, history, history.first_failure())
    assert ctx.statement is not None and ctx.statement.text == "2→ gate ✗ rejected"
    assert ctx.error == "rejected — Fix failing e2e tests before landing."  # issue 28: why, not only the outcome
    assert ctx.retries == []
    # the gate's program block says "evidence: e2e"
    assert [b.name for b in ctx.context_bindings] == ["e2e"]
    errored = failure_context(run, history, 3)
    assert errored.statement is not None and errored.statement.text == "2→ gate ✗ rejected"
    assert errored.error == "rejected — Fix failing e2e tests before landing."


@pytest.mark.corpus
def test_parallel_corpus_run_branches_started_not_joined(corpus):
    run = open_run(corpus / PARALLEL_RUN)
    history = history_of(run)
    texts = [e.text for e in history.events]
    cursor = texts.index("3b→ agents_md ✓")
    at = state_at(run, history, cursor)
    assert trace_pairs(at)[2:] == [
        ("3→ ∥start system_prompt,agents_md,readme", S.EXECUTING),
        ("3a→ system_prompt ✓", S.COMPLETE),
        ("3b→ agents_md ✓", S.COMPLETE),
    ]
    assert "readme" not in {b.name for b in at.bindings}
    joined = state_at(run, history, texts.index("3→ ∥done"))
    assert joined.trace[2].state is S.COMPLETE and joined.trace[-1].text == "3→ ∥done"
    assert "readme" in {b.name for b in joined.bindings}
    # live: the end of the stream is the run as loaded, and the input never named in the log
    # is there from the start
    assert trace_pairs(state_at(run, history, len(texts) - 1)) == trace_pairs(run)
    assert "insight" in {b.name for b in state_at(run, history, 0).bindings}


@pytest.mark.corpus
def test_every_event_log_run_of_the_corpus_scrubs_without_error(corpus):
    runs = sorted({p.parent for p in [*corpus.rglob("state.md"), *corpus.rglob("vm.log.md")]})
    seen = 0
    for path in runs:
        run = open_run(path)
        if not run.events:
            continue
        history = history_of(run)
        assert len(history.events) == len(run.events) and history.origin == "log"
        assert [e.seq for e in history.events] == list(range(len(run.events)))
        for cursor in range(len(history.events)):
            at = state_at(run, history, cursor)
            assert len(at.events) == cursor + 1
            assert len(at.trace) <= len(run.trace)
        seen += 1
    assert seen >= 10


def test_state_at_does_not_change_the_run(tmp_path):
    run_dir = write_run(tmp_path, "# run:20260301-090000-c0ffee demo.prose\n1→ a ✓\n2→ b\n", bindings={"a": "A"})
    run = open_run(run_dir)
    before = (trace_pairs(run), [b.name for b in run.bindings], run.status, list(run.events))
    history = history_of(run)
    state_at(run, history, 0)
    assert (trace_pairs(run), [b.name for b in run.bindings], run.status, list(run.events)) == before
    with pytest.raises(IndexError):
        state_at(run, history, 2)
    with pytest.raises(IndexError):
        state_at(run, history, -2)


def test_call_stack_from_block_frames(tmp_path):
    log = (
        "# run:20260301-090000-c0ffee recurse.prose\n"
        "1→ data ✓\n"
        "2→ block:process#1\n"
        "3→ parts ✓\n"
        "4→ block:process#2\n"
        "5→ result ✓\n"
        "4→ #2 done\n"
        "6→ result ✓\n"
        "2→ #1 done\n"
        "---end 2026-03-01T09:10:00Z\n"
    )
    run = open_run(write_run(tmp_path, log))
    history = history_of(run)

    def stack(cursor):
        return [(f.execution_id, f.block, f.parent_id) for f in state_at(run, history, cursor).call_stack]

    assert stack(0) == []
    assert stack(1) == [(1, "process", None)]
    assert stack(3) == [(2, "process", 1), (1, "process", None)]
    assert stack(5) == [(1, "process", None)]  # #2 returned
    assert stack(7) == []
    assert state_at(run, history, 4).trace[-1].text == "5→ result ✓"
    assert state_at(run, history, 3).status is RunStatus.RUNNING
    assert state_at(run, history, 8).status is RunStatus.COMPLETED


RETRY_LOG = (
    "# run:20260301-090000-c0ffee report.prose\n"
    "1→ research ✓\n"
    "2→ outline ✓\n"
    "3→ draft ✗ timeout\n"
    "3→ retry:2/3\n"
    "3→ draft ✗ timeout\n"
    "3→ retry:3/3\n"
    "3→ draft ✗ model refused\n"
    "---error 2026-03-01T09:05:00Z draft failed after 3 attempts\n"
)
RETRY_PROGRAM = (
    "let research = session \"Research the topic\"\n"
    "let outline = session \"Outline the report\"\n"
    "let draft = session \"Write the report\"\n"
    "  retry: 3\n"
    "  context: { research, outline }\n"
    "output report = draft\n"
)


def test_retries_then_failure_with_context(tmp_path):
    run = open_run(write_run(tmp_path, RETRY_LOG, RETRY_PROGRAM, {"research": "R", "outline": "O"}))
    history = history_of(run)
    # failed attempts that were retried count as retries, not failures
    assert history.retries() == [3, 5]
    assert history.failures() == [6, 7]
    ctx = failure_context(run, history, history.first_failure())
    assert ctx.statement is not None and ctx.statement.text == "3→ draft ✗ model refused"
    assert ctx.error == "model refused"
    assert [e.status for e in ctx.retries] == ["2/3", "3/3"]
    assert [b.name for b in ctx.context_bindings] == ["research", "outline"]
    assert all(b.exists for b in ctx.context_bindings)
    final = failure_context(run, history, 7)
    assert final.error == "model refused — draft failed after 3 attempts"
    assert state_at(run, history, 3).trace[-1].state is S.RETRYING


def test_failure_context_without_context_lines_uses_bindings_written_before(tmp_path):
    program = "let a = session \"A\"\nlet b = session \"B\"\n"
    log = "# run:20260301-090000-c0ffee ab.prose\n1→ a ✓\n2→ b ✗ crashed\n---error 2026-03-01T09:05:00Z boom\n"
    run = open_run(write_run(tmp_path, log, program, {"a": "A"}))
    history = history_of(run)
    ctx = failure_context(run, history, history.first_failure())
    assert [b.name for b in ctx.context_bindings] == ["a"]
    assert ctx.error == "crashed"


def test_events_json_shape(tmp_path):
    run = open_run(write_run(tmp_path, RETRY_LOG))
    rows = events_json(history_of(run))
    assert [r["seq"] for r in rows] == list(range(8))
    assert set(rows[0]) == {"seq", "time", "kind", "step", "name", "status", "text"}
    assert rows[3] == {"seq": 3, "time": None, "kind": "retry", "step": "3", "name": None, "status": "2/3",
                       "text": "3→ retry:2/3"}
    assert rows[-1]["kind"] == "run_errored" and rows[-1]["time"] == "2026-03-01T09:05:00+00:00"


# --- snapshot runs never watched: reconstructed ---------------------------------------------


def copy_never_watched(tmp_path: Path, order: list[str]) -> Path:
    """The fixture run, with binding files timed one minute apart in ``order``."""
    run_dir = tmp_path / ".prose" / "runs" / NEVER_WATCHED.name
    shutil.copytree(NEVER_WATCHED, run_dir)
    base = datetime(2026, 2, 28, 9, 0, tzinfo=timezone.utc).timestamp()
    for i, name in enumerate(order):
        os.utime(run_dir / "bindings" / f"{name}.md", (base + 60 * i, base + 60 * i))
    return run_dir


def test_never_watched_snapshot_run_is_reconstructed_in_binding_time_order(tmp_path):
    # tone was written before facts although the trace lists facts first
    order = ["topic", "draft", "tone", "facts", "guide", "anon_001"]
    run = open_run(copy_never_watched(tmp_path, order))
    history = history_of(run)
    assert history.origin == "reconstructed"
    assert "reconstructed" in history.note and "approximate" in history.note
    written = [e.name for e in history.events if e.kind is K.BINDING_WRITTEN]
    assert written == order
    times = [e.time for e in history.events if e.kind is K.BINDING_WRITTEN]
    assert times == sorted(times) and times[0] == datetime(2026, 2, 28, 9, 0, tzinfo=timezone.utc)
    kinds = [e.kind for e in history.events]
    # the parallel joins after both branches, the run ends last
    assert kinds.index(K.PARALLEL_JOINED) > max(i for i, e in enumerate(history.events) if e.name in ("facts", "tone"))
    assert kinds[-1] is K.RUN_ENDED
    assert history.failures() == []


def test_reconstructed_state_shows_later_statements_as_not_yet_run(tmp_path):
    order = ["topic", "draft", "tone", "facts", "guide", "anon_001"]
    run = open_run(copy_never_watched(tmp_path, order))
    history = history_of(run)
    tone_written = next(i for i, e in enumerate(history.events) if e.kind is K.BINDING_WRITTEN and e.name == "tone")
    at = state_at(run, history, tone_written)
    by_text = {t.text.strip().split(" = ")[0]: t.state for t in at.trace if t.state is not None}
    assert by_text["input topic: \"kelp forests\""] is S.COMPLETE
    assert by_text["let draft"] is S.COMPLETE
    assert by_text["tone"] is S.EXECUTING  # its output is being written
    assert by_text["parallel:"] is S.EXECUTING  # a branch has begun
    assert by_text["facts"] is S.NEXT
    assert by_text["output guide"] is S.PENDING
    assert sorted(b.name for b in at.bindings) == ["draft", "tone", "topic"]
    assert at.status is RunStatus.RUNNING
    done = state_at(run, history, tone_written + 1)
    assert {t.text.strip().split(" = ")[0]: t.state for t in done.trace}["tone"] is S.COMPLETE
    assert trace_pairs(state_at(run, history, len(history.events) - 1)) == trace_pairs(run)


def test_reconstructed_frames_from_scoped_bindings_and_failure_at_a_retry(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-beef00"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(
        "# Execution State\n\nrun: 20260301-100000-beef00\nprogram: split.prose\nstatus: failed\n\n"
        "## Execution Trace\n\n```prose\n"
        "block process(chunk):\n"
        "  let parts = session \"Split\"                # --> bindings/parts__1.md\n"
        "let notes = session \"Gather notes\"            # --> bindings/notes.md\n"
        "let draft = do process(notes)                  # (complete)\n"
        "session \"Publish\"                            # <-- RETRYING (attempt 3/3)\n"
        "  context: { draft, notes }\n"
        "```\n\n## Error\n\nthe bucket refused the upload (403)\n",
        encoding="utf-8")
    base = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc).timestamp()
    for i, name in enumerate(["notes", "parts__1", "parts__2", "draft"]):
        path = run_dir / "bindings" / f"{name}.md"
        path.write_text(f"# {name}\nkind: let\n---\nvalue {i}\n", encoding="utf-8")
        os.utime(path, (base + 60 * i, base + 60 * i))
    run = open_run(run_dir)
    history = history_of(run)
    assert history.origin == "reconstructed"
    kinds = [(e.kind, e.execution_id) for e in history.events if e.kind in (K.FRAME_PUSHED, K.FRAME_POPPED)]
    assert kinds == [(K.FRAME_PUSHED, 1), (K.FRAME_POPPED, 1), (K.FRAME_PUSHED, 2), (K.FRAME_POPPED, 2)]
    inside = next(i for i, e in enumerate(history.events) if e.kind is K.BINDING_WRITTEN and e.name == "parts"
                  and e.execution_id == 2)
    assert [(f.execution_id, f.block) for f in state_at(run, history, inside).call_stack] == [(2, "process")]
    assert history.failures() == [len(history.events) - 1]
    ctx = failure_context(run, history, history.first_failure())
    assert ctx.statement is not None and ctx.statement.text.strip() == 'session "Publish"'
    assert ctx.error == "the bucket refused the upload (403)"
    assert [e.status for e in ctx.retries] == ["3/3"]
    assert [b.name for b in ctx.context_bindings] == ["draft", "notes"]


# --- other sources: SQLite and narration ------------------------------------------------------


def test_sqlite_run_history_and_cursor(tmp_path):
    import sqlite_fixture

    run = open_run(sqlite_fixture.build_sqlite_run(tmp_path, failed=True))
    history = history_of(run)
    assert history.origin == "log" and len(history.events) == len(run.events)
    # the flaky statement failed once and was retried to success: a retry, not a failure
    assert len(history.retries()) == 2
    failures = history.failures()
    assert len(failures) == 1 and history.events[failures[0]].kind is K.STATEMENT_FAILED
    ctx = failure_context(run, history, failures[0])
    assert ctx.statement is not None and "Process chunk" in ctx.statement.text
    assert ctx.error == "Context window exceeded"
    pushes = [i for i, e in enumerate(history.events) if e.kind is K.FRAME_PUSHED]
    outer = state_at(run, history, pushes[0])
    assert [f.block for f in outer.call_stack] == ["process"]
    inner = state_at(run, history, pushes[1])
    assert [(f.execution_id, f.parent_id) for f in inner.call_stack] == [(12, 10), (10, None)]
    first = state_at(run, history, 0)
    assert first.trace[0].state is S.EXECUTING and all(t.state is None for t in first.trace[1:])


def test_narration_failure_context(tmp_path):
    run = open_run(HERE / "fixtures" / "narration" / "bracket.md")
    history = history_of(run)
    assert history.origin == "log"
    index = history.first_failure()
    ctx = failure_context(run, history, index)
    assert ctx.statement is not None and ctx.statement.text == 'session "Run the test suite"'
    assert ctx.statement.state is S.FAILED
    assert ctx.error == "Session failed: test runner timed out"
    at = state_at(run, history, index)
    assert [t.state for t in at.trace[index_of(at, ctx.statement.line) + 1:]] == [None] * (
        len(at.trace) - index_of(at, ctx.statement.line) - 1)


def index_of(run, line: int) -> int:
    return next(i for i, t in enumerate(run.trace) if t.line == line)


def test_history_package_does_not_import_textual():
    import subprocess
    import sys

    code = "import sys, prose_tui.history; print(any(m == 'textual' or m.startswith('textual.') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_a_copied_trace_line_keeps_every_field():
    """``history.cursor`` copies trace lines field by field (for speed): a field added to
    ``TraceLine`` and not copied would vanish from every past moment."""
    import dataclasses as dc

    from prose_tui.history.cursor import copy_run
    from prose_tui.model import Run, StatementState, TraceLine

    values = {"line": 7, "text": "  let x = session: a", "state": StatementState.RETRYING, "note": "n",
              "binding": "bindings/x.md", "attempt": 2, "max_attempts": 3, "step": "4a", "failure": "exit 1"}
    assert {f.name for f in dc.fields(TraceLine)} == set(values), "a TraceLine field the cursor does not copy"
    line = TraceLine(**values)
    copied = copy_run(Run(id="r", path=Path("r"), trace=[line])).trace[0]
    assert copied == line and copied is not line


def test_a_step_in_a_long_log_folds_its_events_to_what_a_parse_of_the_prefix_gives(tmp_path, monkeypatch):
    """Past ``REPARSE_LINES`` a history step folds the events instead of parsing the log
    again up to the cursor (which held the UI for seconds per step at 100,000 events): the
    trace states it gives are the parse's, retries and failures included."""
    from prose_tui.backends import open_run
    from prose_tui.backends.filesystem import history as fs_history
    from prose_tui.history import history_of, state_at

    run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-10n9a0"
    run_dir.mkdir(parents=True)
    lines = []
    for i in range(1, 3_001):
        if i % 97 == 0:
            lines += [f"{i}→ step_{i} ✗ timeout", f"{i}→ retry:2/3", f"{i}→ step_{i} ✓"]
        else:
            lines.append(f"{i}→ step_{i} ✓")
    (run_dir / "state.md").write_text("# run:20260301-100000-10n9a0 long.prose\n" + "\n".join(lines) + "\n", encoding="utf-8")
    run = open_run(run_dir)
    history = history_of(run)
    cursors = [10, 95 * 1, 291, 1_500, len(history.events) - 2]
    monkeypatch.setattr(fs_history, "REPARSE_LINES", 10**9)
    parsed = [[t.state for t in state_at(run, history, c).trace] for c in cursors]
    monkeypatch.setattr(fs_history, "REPARSE_LINES", 100)
    folded = [[t.state for t in state_at(run, history, c).trace] for c in cursors]
    for c, p, f in zip(cursors, parsed, folded):
        shown = [s for s in p if s is not None]
        assert f[: len(p)] == p and all(s is None for s in f[len(p):]), f"cursor {c}: {len(shown)} states differ"
