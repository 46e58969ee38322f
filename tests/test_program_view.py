"""An event-log run's program view costs what the log gained (issue 9): the program text
comes with the run (read by the backend, never by the view), and the annotation follows
the log by the lines a delta names; in any sequence of appends, in-place re-statements,
re-stated last lines and shrinks it equals annotating the whole log again."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prose_tui.backends import open_run
from prose_tui.backends.filesystem.backend import FilesystemBackend
from prose_tui.model import StatementState, TraceLine, assigned_name
from prose_tui.viewmodel import program_trace as pt
from prose_tui.viewmodel.explorer_model import ExplorerModel

EVENT_LOG_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"
PROGRAM = (EVENT_LOG_RUN / "program.prose").read_text(encoding="utf-8")
BODIES = ["fetch ✓", "fetch", "∥start security,perf", "security ✓", "perf ✗ x", "∥done", "block:review#7", "block:review#",
          "draft ✗ timeout", "retry:2/3", "draft", "#7 done", "#", "#9 done", "gate:ship ✗ rejected", "unknown ✓", "review"]
STATES = [None, StatementState.EXECUTING, StatementState.COMPLETE, StatementState.FAILED]

# The whole-log annotation as it was written before it was made incremental: the reference.
_LOG_STEP = re.compile(r"^\s*(?P<step>\d+[a-z]?)\s*→\s*(?P<body>.*)$")
_LOG_NAME = re.compile(r"^(?:block:)?(?P<name>[A-Za-z_][\w-]*)")


def reference(log, program):
    """Annotate ``program`` (the run's program text) from ``log`` (an event log's trace
    lines, FORMATS.md compact event log: ``4→ draft ✗ timeout``, ``2→ ∥start a,b``,
    ``3→ block:review#7``, ``3→ #7 done``).

    Each log step is matched to the program line that assigns its name (one
    ``assigned_name`` rule), ``do name(...)`` for a block call, or the next ``parallel``
    for ``∥start``/``∥done``; the line takes the state of the latest step on it and the
    step's text as its note. ``None`` when no step matches a line (the program is not the
    one the log ran)."""
    source = program.splitlines()
    out = [TraceLine(line=i + 1, text=text) for i, text in enumerate(source)]
    line_of: dict[int, int] = {}
    calls: dict[str, int] = {}
    parallel_at: int | None = None
    last = -1
    for t in log:
        m = _LOG_STEP.match(t.text)
        if not m:
            continue
        body = m.group("body").strip()
        target: int | None = None
        if body.startswith(("∥", "‖", "||")):
            if "start" in body or parallel_at is None:
                parallel_at = next((i for i in range(max(0, last), len(source)) if source[i].strip().startswith("parallel")),
                                   next((i for i, s in enumerate(source) if s.strip().startswith("parallel")), None))
            target = parallel_at
        elif body.startswith("#"):  # "#7 done": the block call returned
            eid = (body[1:].split() or [""])[0]  # (a bare "#" raised IndexError)
            target = calls.get(eid)
        elif body.startswith("retry:"):
            previous = line_of.get(_previous_line(log, t.line))
            target = previous - 1 if previous is not None else None
        elif body.startswith("gate:"):  # a gate is the next condition after the last step
            target = next((i for i in range(max(0, last), len(source)) if source[i].strip().startswith(("if ", "if**"))), None)
        elif nm := _LOG_NAME.match(body):
            name = nm.group("name")
            if body.startswith("block:"):
                target = next((i for i, s in enumerate(source) if s.strip().startswith(f"do {name}")), None)
                if target is not None and "#" in body and body.rsplit("#", 1)[1].split():  # ("block:x#" raised)
                    calls[body.rsplit("#", 1)[1].split()[0]] = target
            else:
                target = next((i for i, s in enumerate(source) if assigned_name(s) == name), None)
        if target is None:
            continue
        last = target
        line_of[t.line] = target + 1
        old = out[target]
        out[target] = TraceLine(line=old.line, text=old.text, state=t.state or old.state, note=t.text.strip(),
                                binding=t.binding or old.binding, attempt=t.attempt or old.attempt,
                                max_attempts=t.max_attempts or old.max_attempts, step=m.group("step"))
    if not line_of:
        return None
    return (out, line_of)


def _previous_line(log, line):
    before = [t.line for t in log if t.line < line and _LOG_STEP.match(t.text) and "retry:" not in t.text]
    return before[-1] if before else -1


def _line(number: int, body: str, state, binding=None) -> TraceLine:
    return TraceLine(line=number, text=f"{(number % 5) + 1}→ {body}", state=state, binding=binding)


OPS = st.lists(st.tuples(st.sampled_from(["append", "append", "state", "binding", "restate_last", "shrink"]),
                         st.integers(0, 60), st.sampled_from(BODIES), st.sampled_from(STATES)), max_size=30)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(st.tuples(st.sampled_from(BODIES), st.sampled_from(STATES)), max_size=10), ops=OPS)
def test_the_annotation_followed_change_by_change_equals_annotating_the_whole_log(first, ops):
    log = [_line(i + 1, body, state) for i, (body, state) in enumerate(first)]
    annotator = pt.ProgramAnnotator(PROGRAM)
    annotator.update(log, None)
    number = len(log)
    for op, at, body, state in ops:
        changed: set[int] = set()
        if op == "append" or not log:
            number += 1
            log.append(_line(number, body, state))
            changed.add(len(log) - 1)
        elif op == "state":  # the tail re-states a line in place (tail.py)
            i = at % len(log)
            log[i].state = state
            changed.add(i)
        elif op == "binding":  # a binding file arrived: the line is linked in place (live.py)
            i = at % len(log)
            log[i].binding = f"bindings/{body.split()[0]}.md"
            changed.add(i)
        elif op == "restate_last":  # a provisional last line completed: another object
            log[-1] = replace(log[-1], text=f"{(log[-1].line % 5) + 1}→ {body}", state=state)
            changed.add(len(log) - 1)
        else:
            del log[at % len(log):]
        before = list(annotator.lines)
        touched = annotator.update(log, changed)
        expected = reference(log, PROGRAM)
        if expected is None:
            assert not annotator.line_of
            continue
        assert (annotator.lines, annotator.line_of) == expected
        if touched is not None:  # it says which program lines changed
            assert {i for i, (a, b) in enumerate(zip(before, annotator.lines)) if a != b} <= touched


def test_an_append_maps_only_the_new_log_lines_and_the_view_reads_no_file(tmp_path, monkeypatch):
    run_dir = tmp_path / ".prose" / "runs" / EVENT_LOG_RUN.name
    shutil.copytree(EVENT_LOG_RUN, run_dir)
    state = run_dir / "state.md"
    text = state.read_text(encoding="utf-8")
    state.write_text(text[:text.index("---error")], encoding="utf-8")  # still running
    backend = FilesystemBackend()
    run = backend.open(run_dir)
    model = ExplorerModel()
    model.touch(run, None)
    program = model.trace_lines()
    assert model.line_of and program[0].text.startswith("# Triage")

    (run_dir / "program.prose").unlink()  # the view has the text the backend read with the run
    mapped: list[str] = []
    real = pt.ProgramAnnotator._target
    monkeypatch.setattr(pt.ProgramAnnotator, "_target", lambda self, t: mapped.append(t.text) or real(self, t))
    with open(state, "a", encoding="utf-8") as fh:
        fh.write("6→ fetch ✓\n")
    delta = backend.apply(run, {state})
    model.note_delta(delta)
    model.touch(delta.run, set(delta.paths))
    lines = model.trace_lines()
    assert mapped == ["6→ fetch ✓"]  # not the whole log again
    assert lines is program  # the same list, changed in place ...
    fetch = next(i for i, t in enumerate(lines) if assigned_name(t.text) == "fetch")
    assert model.lines_changed is not None and fetch in model.lines_changed  # ... where it changed
    assert lines[fetch].step == "6"
    assert (lines, model.line_of) == reference(run.trace, PROGRAM)


def test_a_run_read_in_full_carries_its_program_text():
    run = open_run(EVENT_LOG_RUN)
    assert run.program_text == PROGRAM


def test_failure_marks_follow_the_changed_lines_only(tmp_path, monkeypatch):
    from prose_tui.model import Binding, Run

    run = Run(id="r", path=tmp_path)
    failed = Binding(name="v3", path=tmp_path / "bindings" / "v3.md")
    failed.failure = "exit 1"
    run.bindings = [failed, Binding(name="v4", path=tmp_path / "bindings" / "v4.md")]
    run.trace = [TraceLine(line=i + 1, text=f"let v{i} = session: w", note="(complete)") for i in range(200)]
    marks = pt.FailureMarks()
    out, changed = marks.apply(run.trace, run, None)
    assert changed is None and out[3].failure == "exit 1" and out == pt.mark_failures(run.trace, run)
    looked: list[int] = []
    real = pt.FailureMarks._mark
    monkeypatch.setattr(pt.FailureMarks, "_mark", lambda self, t, *a: looked.append(t.line) or real(self, t, *a))
    run.trace[10] = TraceLine(line=11, text="let v3 = session: again", note="(complete)")
    run.trace.append(TraceLine(line=201, text="let v9 = session: w"))
    again, changed = marks.apply(run.trace, run, {10})
    assert again is out and changed == {10, 200}
    assert sorted(looked) == [11, 201]  # not the 200 lines again
    assert again == pt.mark_failures(run.trace, run) and again[10].failure == "exit 1"
