"""One statement-name rule for every reader (issue 11, item 10)."""

import pytest

from prose_tui.model import assigned_name


@pytest.mark.parametrize(("text", "name"), [
    ("letter = session: writer", "letter"),
    ("output_file = session: x", "output_file"),
    ("inputs = 3", "inputs"),
    ("constant = 1", "constant"),
    ("let plan = session: captain", "plan"),
    ("  const draft = resume: writer  ", "draft"),
    ("output report = x", "report"),
    ("input topic = \"x\"", "topic"),
    ("x=1", "x"),
    ("session: scout", None),
    ("if a == b:", None),
    ("# let a = b", None),
])
def test_assigned_name(text, name):
    assert assigned_name(text) == name


def test_trace_enter_resolves_letter(tmp_path):
    """Enter on ``letter = …`` opens the binding ``letter`` (the old rule read ``ter``)."""
    from prose_tui.model import Binding, Run, RunFormat, RunStatus
    from prose_tui.tui.targets import resolve_trace_binding

    run = Run(id="r", path=tmp_path, format=RunFormat.SNAPSHOT, status=RunStatus.RUNNING)
    run.bindings = [Binding(name="letter", path=tmp_path / "bindings" / "letter.md"),
                    Binding(name="ter", path=tmp_path / "bindings" / "ter.md")]
    found = resolve_trace_binding(run, None, "letter = session: writer")
    assert found is not None and found.name == "letter"


@pytest.mark.parametrize("lines", [0, 1, 63, 64, 65, 300, 9_000])
def test_the_statement_a_run_is_at_is_its_last_executing_or_retrying_line(lines):
    """``executing_line`` looks through a long trace in slices; it finds what a look at every
    line from the end finds: the last line marked executing or retrying, or none."""
    import random

    from prose_tui.model.statement import StatementState, TraceLine, executing_line

    at = (StatementState.EXECUTING, StatementState.RETRYING)
    rng = random.Random(lines)
    for _ in range(40):
        trace = [TraceLine(i + 1, "x", rng.choice([None, StatementState.COMPLETE, StatementState.FAILED]))
                 for i in range(lines)]
        for i in rng.sample(range(lines), k=min(lines, rng.choice([0, 1, 2]))):
            trace[i].state = rng.choice(at)
        want = next((t for t in reversed(trace) if t.state in at), None)
        assert executing_line(trace) is want
