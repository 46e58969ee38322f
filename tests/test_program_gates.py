"""An event log's steps matched to the program statements they executed (issue 28, part 3):
a gate by its condition or name, never by the log's line number."""

from __future__ import annotations

from prose_tui.backends.filesystem.eventlog import parse_event_log
from prose_tui.model import StatementState
from prose_tui.viewmodel.explorer_model import ExplorerModel
from prose_tui.viewmodel.program_trace import program_trace

PROGRAM = """\
# release.prose
let notes = session "Write the release notes"

gate **the notes are reviewed**:
  evidence: notes

let build = session "Build the release"

gate **all tests pass**:
  evidence: build

gate ship:
  on-reject: throw "not shipping"
"""


def _annotated(log: str):
    trace = parse_event_log(log).trace
    return trace, program_trace(trace, PROGRAM)


def _state(pt, line: int):
    return next(t.state for t in pt.lines if t.line == line)


def test_a_gate_step_with_its_condition_lands_on_that_gate():
    trace, pt = _annotated("# run:20260601-100000-abcdef release.prose\n1→ notes ✓\n2→ gate **all tests pass** ✗ rejected\n")
    assert pt is not None
    assert pt.line_of[2] == 9  # not line 4, the next gate after the last step
    assert _state(pt, 9) is StatementState.FAILED and _state(pt, 4) is None


def test_a_bare_gate_step_is_the_next_gate_after_the_last_step_and_a_named_one_its_gate():
    trace, pt = _annotated("# run:20260601-100000-abcdef release.prose\n1→ notes ✓\n2→ gate ✓ approved\n"
                           "3→ build ✓\n4→ gate:ship ✗ rejected\n")
    assert pt is not None
    assert (pt.line_of[2], pt.line_of[3], pt.line_of[4]) == (4, 7, 12)
    assert _state(pt, 12) is StatementState.FAILED and _state(pt, 9) is None


def test_a_log_line_matched_to_no_statement_is_not_put_on_the_program_line_of_its_number():
    from pathlib import Path

    from prose_tui.model import Run, RunFormat

    log = "# run:20260601-100000-abcdef release.prose\n1→ notes ✓\n2→ [vm-action] cleanup ✗ disk full\n"
    trace = parse_event_log(log).trace
    run = Run(id="20260601-100000-abcdef", path=Path("/nonexistent/run"), format=RunFormat.EVENT_LOG, trace=trace,
              program_text=PROGRAM)
    model = ExplorerModel()
    model.touch(run, None)
    lines = model.trace_lines()
    assert lines[1].text == 'let notes = session "Write the release notes"'
    assert model.trace_index(1, lines) == 1
    assert model.trace_index(2, lines) is None  # program line 2 is `let notes`, not what the log's line 2 did
