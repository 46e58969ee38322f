"""A long log's full read is swapped in without holding the UI thread (issue 33).

A long event log opens on its tail; its whole read (seconds at 100,000 events) then replaces
it. Swapping that read in built its history, measured and laid out every trace line and
worked out every step's duration on the UI thread, in one turn (0.3-0.4 s at 100,000 events,
a live change written meanwhile waiting behind it). The thread that read the run now does
that work before handing the run over, and the UI thread takes it: the checks below are on
which thread does the work over the whole log, and on the result being the one the UI thread
would have worked out itself, also when the run grew or changed after it was prepared.
"""

from __future__ import annotations

import threading
from pathlib import Path

from textual.app import App, ComposeResult

from prose_tui.backends.filesystem.backend import FilesystemBackend
from prose_tui.backends.filesystem.folder import TAIL_FIRST_OVER
from prose_tui.history import stream
from prose_tui.history.stream import history_of, keep_prepared, prepare_history
from prose_tui.model import Part, StatementState, TraceLine
from prose_tui.tui.widgets import timeline as timeline_module
from prose_tui.tui.widgets import trace_layout, trace_view
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_layout import TraceLayout
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.viewmodel.explorer_model import trace_as_shown
from prose_tui.viewmodel import steps as steps_module
from prose_tui.viewmodel.program_trace import ProgramAnnotator
from prose_tui.viewmodel.statement_clock import StatementClock
from tests.app_helpers import FIXED_NOW, long_event_log, make_app, settled, vm_appends, wait_until

RUN_ID = "20260301-090000-5a4b11"


def _long_log(tmp_path: Path) -> tuple[Path, int]:
    """A compact event log over the first-screen size, a time on every event; its event count."""
    return long_event_log(tmp_path, RUN_ID, TAIL_FIRST_OVER + 32 * 1024)


async def test_the_whole_log_is_prepared_by_its_reader_not_the_ui_thread(tmp_path, monkeypatch) -> None:
    run_dir, n = _long_log(tmp_path)
    calls: list[tuple[str, int, int]] = []  # (what, thread, how many lines or events it went over)

    def record(owner: object, name: str, size) -> None:
        real = getattr(owner, name)

        def recorded(*args, **kwargs):
            calls.append((name, threading.get_ident(), size(*args, **kwargs)))
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, recorded)

    # The work per event or line of a new read: its history's trace lines, each line's
    # measure (the widest), each step's duration, the statements' times.
    record(stream, "_log_trace_lines", lambda run, events: len(events))
    record(trace_layout, "not_one_cell", lambda texts: len(texts))
    if hasattr(trace_view, "not_one_cell"):
        record(trace_view, "not_one_cell", lambda texts: len(texts))
    record(steps_module, "gaps_from", lambda events, start: len(events) - start)  # Steps.of
    record(timeline_module, "gaps_from", lambda events, start: len(events) - start)  # the widget's own
    record(StatementClock, "count", lambda clock, events, end: min(end, len(events)) - clock.done)  # (advance too)

    app = make_app(tmp_path, watch=True)
    ui = threading.get_ident()  # the app runs on the test's own thread and loop
    async with app.run_test(size=(200, 50)) as pilot:
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text.startswith("1→ step_1 "),
                         what="the whole log shown")
        await settled(pilot)
        vm_appends(run_dir / "state.md", f"{n + 1}→ verdict ✓ [10:00:00]\n")
        await wait_until(pilot, lambda: trace.lines[-1].text == f"{n + 1}→ verdict ✓ [10:00:00]",
                         what="an event the VM appended after the whole read, shown")
        history = app.explorer.query_one(Timeline)
        await wait_until(pilot, lambda: len(history.events) == n + 1, what="the appended event in the history")
        assert [t.line for t in trace.lines] == list(range(1, n + 2))
        assert trace.row_count == n + 1 and trace.executing_index() is None
    went_over: dict[tuple[str, int], int] = {}  # lines or events each thread went over, by work (in slices)
    for what, thread, size in calls:
        went_over[what, thread] = went_over.get((what, thread), 0) + size
    whole = [(what, size) for (what, thread), size in went_over.items() if size > n // 2]
    on_ui = [(what, size) for (what, thread), size in went_over.items() if size > n // 2 and thread == ui]
    assert {what for what, _ in whole} >= {"_log_trace_lines", "not_one_cell", "gaps_from", "count"}, whole
    assert not on_ui, f"the UI thread went over the whole log of {n} events: {on_ui}"


def _lines(count: int, *, width: int = 30) -> list[TraceLine]:
    out = []
    for i in range(1, count + 1):
        note = ("--> bindings/" + "x" * (i % width) + ".md (complete)") if i % 3 == 0 else None
        state = StatementState.EXECUTING if i == count - 5 else (StatementState.COMPLETE if i % 2 else None)
        text = f'{"  " * (i % 4)}let v{i} = session "step {i}"' + ('  """' if i % 97 == 0 else "")
        out.append(TraceLine(line=i, text=text, state=state, note=note))
    return out


class _Two(App):
    def compose(self) -> ComposeResult:
        yield TraceView(id="prepared")
        yield TraceView(id="here")


def _screen(trace: TraceView) -> list[str]:
    height = trace.scrollable_content_region.height
    return [trace.render_line(y).text for y in range(height)]


async def test_a_layout_prepared_before_the_run_grew_shows_what_laying_it_out_here_shows() -> None:
    app = _Two()
    async with app.run_test(size=(70, 30)) as pilot:
        prepared, here = app.query_one("#prepared", TraceView), app.query_one("#here", TraceView)
        await pilot.pause()
        read = _lines(400)
        layout = TraceLayout.of(read, prepared.content_width or prepared.scrollable_content_region.width)
        # Since it was laid out: the run's own list grew, its executing line completed, a
        # line got a longer annotation, and the next one runs.
        read[-6] = TraceLine(line=395, text=read[-6].text, state=StatementState.COMPLETE, note="done")
        read[10] = TraceLine(line=11, text=read[10].text, state=StatementState.COMPLETE,
                             note="--> bindings/" + "long" * 30 + ".md (complete)")
        read += [TraceLine(line=401, text='let last = session "x" """', state=StatementState.EXECUTING)]
        prepared.set_lines(read, layout)
        here.set_lines(read)
        await pilot.pause()
        assert layout.lines == []  # taken: a second use lays the list out again
        for view in (prepared, here):
            assert view.executing_index() == 400 and view.cursor == 400
        assert prepared.row_count == here.row_count > len(read)
        assert prepared.virtual_size == here.virtual_size
        assert [prepared.row_of(i) for i in range(len(read))] == [here.row_of(i) for i in range(len(read))]
        assert _screen(prepared) == _screen(here)
        prepared.move_cursor(10)
        here.move_cursor(10)
        await pilot.pause()
        assert _screen(prepared) == _screen(here)


def test_a_history_prepared_apart_is_extended_by_what_the_run_appended_since(tmp_path) -> None:
    run_dir, n = _long_log(tmp_path)
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=FIXED_NOW)
    prepared = prepare_history(run)
    assert prepared is not None and len(prepared.history.events) == n
    vm_appends(run_dir / "state.md", f"{n + 1}→ draft ✓ [10:00:00]\n{n + 2}→ review ✓ [10:00:09]\n")
    backend.apply(run, {run_dir / "state.md": Part.STATE}, now=FIXED_NOW)  # grows in place
    keep_prepared(run, prepared)
    history = history_of(run)
    assert history is prepared.history  # extended, not built again
    fresh = stream._fresh_log(run, list(run.events)).history
    assert [(e.seq, e.kind, e.text, e.line) for e in history.events] == \
        [(e.seq, e.kind, e.text, e.line) for e in fresh.events]
    assert [r.trace_line for r in history.refs] == [r.trace_line for r in fresh.refs]
    assert len(history.events) == n + 2


async def test_a_long_log_with_its_program_shows_the_program_as_annotated_on_the_spot(tmp_path, monkeypatch) -> None:
    """The program annotated from the whole log (mapped by the reader over the log as it was
    read, not on the UI thread) is the one annotating the run's own log here gives, also
    after the VM appended."""
    run_dir, n = _long_log(tmp_path)
    mapped: list[tuple[int, int]] = []  # (thread, log lines mapped in one go)
    real_map = ProgramAnnotator._map

    def recorded_map(annotator, start):
        if not reference:
            mapped.append((threading.get_ident(), len(annotator.log or []) - start))
        return real_map(annotator, start)

    monkeypatch.setattr(ProgramAnnotator, "_map", recorded_map)
    reference: list[bool] = []  # non-empty while the test annotates the log itself
    (run_dir / "program.prose").write_text("".join(f"let step_{k} = session: worker\n" for k in range(1, 301)),
                                           encoding="utf-8")
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        await wait_until(pilot, lambda: explorer.model.loaded_run == run_dir and explorer.model.line_of,
                         what="the whole log's program view")
        await settled(pilot)

        def shown() -> list[tuple]:
            return [(t.line, t.text, t.state, t.note) for t in trace.lines]

        def annotated_here() -> list[tuple]:
            reference.append(True)
            try:
                return [(t.line, t.text, t.state, t.note) for t in trace_as_shown(app.workspace.runs[run_dir])]
            finally:
                reference.clear()

        assert len(explorer.model.run.trace) == n and len(trace.lines) == 300
        assert shown() == annotated_here()
        vm_appends(run_dir / "state.md", f"{n + 1}→ step_7 ✗ timeout [10:00:00]\n")
        await wait_until(pilot, lambda: len(explorer.model.run.trace) == n + 1, what="the appended step read")
        await wait_until(pilot, lambda: trace.lines[6].state is StatementState.FAILED, what="step_7 shown failed")
        await settled(pilot)
        assert shown() == annotated_here()
    ui = threading.get_ident()
    assert any(size >= n and thread != ui for thread, size in mapped)
    assert not [size for thread, size in mapped if size > n // 2 and thread == ui], "the UI thread mapped the whole log"


async def test_an_event_appended_while_the_whole_log_was_read_stays_on_screen(tmp_path, monkeypatch) -> None:
    """An event the VM appends after the whole read has read the file, but before that read
    takes the first screen's place, reaches the first screen live; the whole read then
    catches up with it, so it does not vanish when the read is swapped in."""
    from prose_tui.backends.filesystem import backend as backend_module

    run_dir, n = _long_log(tmp_path)
    state = run_dir / "state.md"
    app = make_app(tmp_path, watch=True)
    workspace = app.workspace
    tail_has_it = threading.Event()
    apply = workspace.apply

    def applied(paths):
        result = apply(paths)
        kept = workspace.runs.get(run_dir)
        if kept is not None and kept.trace and kept.trace[-1].text.startswith(f"{n + 1}→"):
            tail_has_it.set()
        return result

    monkeypatch.setattr(workspace, "apply", applied)
    load = backend_module.load_run
    appended: list[bool] = []

    def load_then_append(*args, **kwargs):
        run = load(*args, **kwargs)
        if not appended and len(run.trace) >= n:  # the whole read, parsed, not handed over yet
            appended.append(True)
            vm_appends(state, f"{n + 1}→ verdict ✓ [10:00:00]\n")
            tail_has_it.wait(60)  # the live worker follows the first screen still kept
        return run

    monkeypatch.setattr(backend_module, "load_run", load_then_append)
    async with app.run_test(size=(120, 40)) as pilot:
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text.startswith("1→ step_1 "),
                         what="the whole log shown")
        await settled(pilot)
        assert appended and tail_has_it.is_set()
        assert trace.lines[-1].text == f"{n + 1}→ verdict ✓ [10:00:00]"
        assert len(app.explorer.model.run.trace) == n + 1


async def test_a_whole_read_that_cannot_be_shown_is_said_and_the_app_goes_on(tmp_path, monkeypatch) -> None:
    """A fault in showing the whole read (a bug, a run no view expected) is a warning on
    screen; the explorer keeps the first screen and goes on, instead of ending with a
    traceback and losing the user's place."""
    from prose_tui.tui.screens import explorer_panes

    _long_log(tmp_path)
    show_run = explorer_panes.Panes.show_run
    failed: list[bool] = []

    def show_run_once_failing(self, run, *args, **kwargs):
        if not failed and run.trace and run.trace[0].text.startswith("1→"):  # the whole read, not the tail
            failed.append(True)
            raise ValueError("a fault in showing the run")
        return show_run(self, run, *args, **kwargs)

    monkeypatch.setattr(explorer_panes.Panes, "show_run", show_run_once_failing)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: any("a fault in showing the run" in m for m in app.notified),
                         what="the fault said on screen")
        assert app.is_running
        assert app.explorer.query_one(TraceView).lines  # the first screen is still shown
        await pilot.press("k")  # and the app still answers keys
        assert app.is_running
