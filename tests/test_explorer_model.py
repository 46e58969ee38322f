"""The explorer model's decisions, without an app: what the value pane does after a change,
what a live delta touches, which lines the trace shows and where a line is in them, what
Enter on a call-stack frame opens. (The follow policy: tests/test_cursor_policy.py.)"""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES

from prose_tui.backends import open_run
from prose_tui.model import Binding, Delta, Frame, Run, RunFormat, RunStatus, StatementState, TraceLine
from prose_tui.viewmodel.explorer_model import ExplorerModel

RUN = Path("/runs/20260301-100000-a1b2c3")
EVENT_LOG_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"


def _binding(name: str, mtime: float, execution_id: int | None = None) -> Binding:
    return Binding(name=name, path=RUN / "bindings" / f"{name}.md", mtime=mtime, execution_id=execution_id)


def _run(*bindings: Binding, trace: list[TraceLine] | None = None) -> Run:
    return Run(id=RUN.name, path=RUN, status=RunStatus.RUNNING, bindings=list(bindings), trace=trace or [])


def test_a_newly_shown_run_shows_its_newest_binding():
    model = ExplorerModel()
    run = _run(_binding("a", 1.0), _binding("b", 2.0))
    touch = model.touch(run, None)
    change = model.value_after(touch, None, shown=None)
    assert change.action == "show" and change.binding is not None and change.binding.name == "b"


def test_live_a_new_write_replaces_the_value_while_the_viewer_follows_writes():
    model = ExplorerModel()
    a, b = _binding("a", 1.0), _binding("b", 2.0)
    model.touch(_run(a), None)
    run = _run(a, b)
    touch = model.touch(run, {b.path}, binding_only=True)
    assert touch.same and touch.live and touch.only_bindings
    change = model.value_after(touch, {b.path}, shown=a.path)
    assert change.action == "show" and change.binding == b
    model.viewer_follows_writes = False  # the user picked a value: it stays
    assert model.value_after(touch, {b.path}, shown=a.path).action == "keep"


def test_the_value_shown_is_read_again_when_its_file_changes():
    model = ExplorerModel()
    a = _binding("a", 1.0)
    model.touch(_run(a), None)
    model.viewer_follows_writes = False
    fresh = _binding("a", 5.0)
    touch = model.touch(_run(fresh), {a.path})
    change = model.value_after(touch, {a.path}, shown=a.path)
    assert change.action == "reload" and change.binding == fresh


def test_at_a_past_event_the_value_pane_keeps_its_moment():
    model = ExplorerModel()
    model.touch(_run(_binding("a", 1.0)), None)
    model.nav.cursor = 0  # the cursor frozen at a past event
    touch = model.touch(_run(_binding("a", 1.0), _binding("b", 2.0)), {RUN / "bindings" / "b.md"})
    assert model.value_after(touch, {RUN / "bindings" / "b.md"}, shown=None).action == "keep"


def test_a_delta_touches_the_shown_run_only_and_a_status_tick_only_its_header():
    model = ExplorerModel()
    shown = _run(trace=[TraceLine(line=1, text="let a = session", state=StatementState.EXECUTING)])
    model.show(shown)
    other = Run(id="other", path=Path("/runs/other"))
    assert model.apply(Delta(run=other, paths={other.path / "state.md"})) is None  # its run list row alone
    tick = model.apply(Delta(run=shown))
    assert tick is not None and tick.header_only
    wrote = model.apply(Delta(run=shown, paths={RUN / "state.md"}, trace_lines={0}))
    assert wrote is not None and not wrote.header_only and wrote.run is shown


def test_the_trace_repaints_in_place_only_live_and_on_the_runs_own_lines():
    model = ExplorerModel()
    lines = [TraceLine(line=1, text="let a = session", state=StatementState.EXECUTING)]
    run = _run(trace=lines)
    first = model.show(run).trace
    assert first is not None and first.new and first.lines is lines  # the run's own list, handed over
    lines.append(TraceLine(line=2, text="let b = session"))  # the live worker grows it in place
    change = model.apply(Delta(run=run, paths={RUN / "state.md"}, trace_lines={1}))
    assert change is not None and change.trace is not None
    assert not change.trace.new and change.trace.rows == {1}  # the rows the delta names, not the list
    nothing = model.apply(Delta(run=run, paths={RUN / "state.md"}, trace_lines=set()))
    assert nothing is not None and nothing.trace is None
    assert model.repaint().trace is None  # no delta since: the list the trace holds is as shown


def test_an_event_log_run_shows_its_program_and_L_switches_to_the_raw_log():
    run = open_run(EVENT_LOG_RUN)
    assert run.format is RunFormat.EVENT_LOG
    model = ExplorerModel()
    model.touch(run, None)
    program = model.trace_lines()
    assert model.line_of and program[0].text.startswith("# Triage")
    failed = next(t for t in run.trace if "rate limited" in t.text)  # a log line ...
    index = model.trace_index(failed.line, program)  # ... is found as the program line it annotates
    assert index is not None and "let draft" in program[index].text
    assert model.toggle_raw_log() and model.raw_log
    raw = model.trace_lines()
    assert not model.line_of and raw == run.trace
    assert model.trace_index(10_000, raw) is None


def test_L_does_nothing_for_a_run_without_an_event_log():
    model = ExplorerModel()
    model.touch(_run(), None)
    assert not model.toggle_raw_log() and not model.raw_log


def test_enter_on_a_frame_opens_its_newest_scoped_binding_and_its_block():
    model = ExplorerModel()
    assert model.frame_target(Frame(execution_id=7, block="review")) is None  # no run
    trace = [TraceLine(line=1, text="block review(findings):"), TraceLine(line=2, text="  let draft = session")]
    model.touch(_run(_binding("old", 1.0, 7), _binding("new", 2.0, 7), _binding("other", 3.0, 8), trace=trace), None)
    found = model.frame_target(Frame(execution_id=7, block="review"))
    assert found is not None
    newest, block = found
    assert newest is not None and newest.name == "new" and block is not None and block.line == 1
    assert model.frame_target(Frame(execution_id=9, block="missing")) == (None, None)


def test_a_trace_line_is_found_by_its_number_in_a_trace_with_or_without_gaps():
    """Where a failure is marked: a trace numbered 1, 2, 3... holds line n at n - 1 (looked at
    first: stepping through a failed 100,000-line run looked through it all each step); a
    trace with gaps (a program shown from its log) or with a number missing is looked through."""
    from prose_tui.model import TraceLine
    from prose_tui.viewmodel.explorer_model import _index_of_line

    dense = [TraceLine(line=i + 1, text=f"s{i}") for i in range(50)]
    gapped = [TraceLine(line=3 * i + 2, text=f"s{i}") for i in range(50)]
    for lines in (dense, gapped, dense[10:], []):
        for number in range(0, 160):
            want = next((i for i, t in enumerate(lines) if t.line == number), None)
            assert _index_of_line(lines, number) == want, (number, len(lines))
