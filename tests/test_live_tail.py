"""Tailing: applied as deltas, any sequence of appends, truncations, replacements and
rewrites ends in the same run and history as a fresh open (issue 9)."""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prose_tui.backends import open_run
from prose_tui.backends.common.text import decode
from prose_tui.backends.filesystem.eventlog import parse_event_log
from prose_tui.backends.filesystem.eventlog_tail import EventLogTail
from prose_tui.history import history_of
from prose_tui.live.workspace import Workspace
from prose_tui.model import Run

HEADER = "# run:20260301-090000-c0ffee demo.prose\n"
LINES = [
    "1→ research ✓", "2→ ∥start a,b", "2a→ a", "2a→ a ✓", "2b→ b ✗ timeout", "2→ ∥done", "3→ write",
    "3→ write ✓", "4→ block:job#7", "4a→ item ✓", "4→ #7 done", "5→ fetch ✗ timeout", "5→ retry:2/3",
    "6→ loop:1/2", "6→ loop:2/2 exit(**done**)", "7→ if: true", "⚠ disk nearly full", "The user paused here.",
    "---end 2026-03-01T09:05:00Z", "---error 2026-03-01T09:06:00Z boom", "---resume", "", "   ",
    "program: other.prose", "8→ [12:01:03] stamped ✓", "9-> ascii ✓", "x\r", "\u00e9t\u00e9 ✓",
]
NOW = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _log_key(log) -> tuple:
    return (
        [(e.seq, e.kind, e.text, e.time, e.step, e.name, e.status, e.line, e.execution_id) for e in log.events],
        [(t.line, t.text, t.state, t.note, t.attempt, t.max_attempts, t.step) for t in log.trace],
        [(f.execution_id, f.block, f.depth, f.status, f.parent_id) for f in log.call_stack],
        log.header, log.program, log.run_id, log.status, log.ended, log.errored, log.error_message,
        log.warnings, log.bindings, log.bullet_status,
    )


@FAST
@given(lines=st.lists(st.sampled_from(LINES), max_size=25), cuts=st.lists(st.integers(0, 2000), max_size=6),
       header=st.booleans())
def test_a_log_fed_in_any_chunks_parses_as_the_whole_file(lines, cuts, header):
    data = ((HEADER if header else "") + "\n".join(lines)).encode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.md"
        path.write_bytes(data)
        tail = EventLogTail.start(path, "state.md")
        for cut in sorted({min(c, len(data)) for c in cuts} | {len(data)}):
            if cut >= tail.file.offset:
                tail.feed_bytes(data[tail.file.offset:cut], None)
        assert _log_key(tail.parser.finish()) == _log_key(parse_event_log(decode(data)))


def _run_key(run: Run) -> tuple:
    return (
        run.format, run.status, run.status_reason, run.program, run.header, run.warnings, run.end_marker,
        run.error_marker, run.updated,
        [(e.seq, e.kind, e.text, e.step, e.name, e.status, e.line, e.execution_id) for e in run.events],
        [(t.line, t.text, t.state, t.note, t.binding) for t in run.trace],
        [(f.execution_id, f.block, f.status) for f in run.call_stack],
        sorted((str(b.path), b.exists) for b in run.bindings),
    )


def _history_key(run: Run) -> list:
    history = history_of(run)
    return [(e.seq, e.kind, e.text, e.step, e.status, r.trace_line) for e, r in zip(history.events, history.refs)]


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.sampled_from(LINES), min_size=1, max_size=4), st.booleans()),
        st.tuples(st.just("truncate"), st.lists(st.sampled_from(LINES), max_size=3), st.booleans()),
        st.tuples(st.just("replace"), st.lists(st.sampled_from(LINES), max_size=6), st.booleans()),
        st.tuples(st.just("rewrite"), st.lists(st.sampled_from(LINES), min_size=1, max_size=6), st.booleans()),
        st.tuples(st.just("snapshot"), st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5),
                  st.booleans()),
        st.tuples(st.just("binding"), st.sampled_from(["write", "a", "stamped"]), st.booleans()),
    ),
    min_size=1,
    max_size=10,
)


def _snapshot(names: list[str], executing: bool) -> str:
    body = [f"let {n}{i} = session \"{n}\"  # (complete)" for i, n in enumerate(names[:-1])]
    body.append(f"session \"{names[-1]}\"  # <-- EXECUTING" if executing else f"session \"{names[-1]}\"  # (complete)")
    return "## Execution Trace\n```prose\n" + "\n".join(body) + "\n```\n"


@FAST
@given(ops=ops, batch=st.integers(1, 3))
def test_any_sequence_of_changes_applied_as_deltas_ends_as_a_fresh_open(tmp_path, ops, batch):
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    run_dir = root / ".prose" / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    state = run_dir / "state.md"
    state.write_text(HEADER + "1→ research ✓\n")
    ws = Workspace(root, clock=lambda: NOW)
    ws.scan(first=run_dir)
    history_of(ws.runs[run_dir])  # the history is kept and extended from here on
    pending: set[Path] = set()
    for n, (op, what, flag) in enumerate(ops, start=1):
        ending = "\n" if flag else ""
        if op == "append":
            with open(state, "ab") as fh:
                fh.write(("\n".join(what) + ending).encode("utf-8"))
        elif op == "truncate":
            state.write_bytes((HEADER + "\n".join(what) + ending).encode("utf-8"))
        elif op == "replace":
            tmp = run_dir / ".state.tmp"
            tmp.write_text(HEADER + "\n".join(what) + ending)
            os.replace(tmp, state)
        elif op == "rewrite":  # same bytes up to the end, changed in place: a new inode is not a given
            text = state.read_bytes()
            fresh = (HEADER + "\n".join(what) + "\n").encode("utf-8")
            fresh = (fresh * (len(text) // max(len(fresh), 1) + 1))[:max(len(text), len(fresh))]
            with open(state, "r+b") as fh:
                fh.write(fresh)
        elif op == "snapshot":
            state.write_text(_snapshot(what, flag))
        else:
            path = run_dir / "bindings" / f"{what}.md"
            if flag:
                path.write_text(f"# {what}\n\nkind: let\n\n---\n\nvalue\n")
            elif path.exists():
                path.unlink()
            pending.add(path)
            continue
        pending.add(state)
        if n % batch == 0 or n == len(ops):
            ws.apply(pending)
            pending = set()
    if pending:
        ws.apply(pending)
    live = ws.runs[run_dir]
    fresh = open_run(run_dir, now=NOW, observed=ws.observed.get(run_dir))
    assert _run_key(live) == _run_key(fresh)
    assert _history_key(live) == _history_key(fresh)
