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
