"""The first steps back through a long failed run's history (issue 33: "the rest fills in
behind without holding keys"): what they used to do on the UI thread over every event or
line, done by the run's reader or limited to what may be the widest line."""

from __future__ import annotations

from app_helpers import long_event_log

from prose_tui.backends import open_run
from prose_tui.history.cursor import CursorMemo
from prose_tui.model import RunStatus, StatementState, TraceLine
from prose_tui.viewmodel.explorer_model import MEMO_AHEAD_EVENTS, ExplorerModel, prepare_read


def _count_builds(monkeypatch) -> list[bool]:
    """Every ``CursorMemo._build`` from now on (a pass over the whole history), as whether it
    ran on the UI (main) thread."""
    import threading

    built: list[bool] = []
    real = CursorMemo._build

    def counted(self):
        built.append(threading.current_thread() is threading.main_thread())
        return real(self)

    monkeypatch.setattr(CursorMemo, "_build", counted)
    return built


def test_a_long_failed_runs_reader_builds_the_index_its_first_step_back_uses(tmp_path, monkeypatch):
    """A failed log of 10,000 events or more is stepped through from its end: its reader
    builds the history's index (0.35-0.6 s of the UI thread at 100,000 events, at the first
    ``[``), and the steps back use it; a shorter or a running log's is built at its first step."""
    run_dir, n = long_event_log(tmp_path, "20260301-100000-f41100", 40 * MEMO_AHEAD_EVENTS)
    with open(run_dir / "state.md", "a", encoding="utf-8") as fh:
        fh.write(f"{n + 1}→ step_final ✗ failed: rate limited\n---error step_final failed\n")
    run = open_run(run_dir)
    assert run.status is RunStatus.FAILED and len(run.events) > MEMO_AHEAD_EVENTS
    prepared = prepare_read(run)
    assert prepared.memo is not None
    built = _count_builds(monkeypatch)
    model = ExplorerModel()
    model.show(run, prepared=prepared)
    last = model.nav.position
    for back in (1, 2, 3):
        assert model.nav.step(-1)
        view = model.view()
        assert model.nav.position == last - back and view is not run
    # three events back (the run's end, its failure, one more): no line has failed yet
    assert not [t for t in view.trace if t.state is StatementState.FAILED]
    assert built == [], "the first steps back built the history's index on the UI thread"


async def test_narrowing_the_widest_line_measures_what_may_be_widest_not_every_line():
    """A step back in a log whose lines grow longer (``99→``, ``100→``...) changes its widest
    line: the widest is found again among the lines whose length may reach it, not by
    measuring every line (20,000 here; 100,000 took 0.5 s of the second ``[``)."""
    from textual.app import App, ComposeResult

    import prose_tui.tui.widgets.trace_view as trace_view_module
    from prose_tui.tui.widgets.trace_layout import widest_code
    from prose_tui.tui.widgets.trace_view import TraceView

    class _Trace(App[None]):
        def compose(self) -> ComposeResult:
            yield TraceView()

    lines = [TraceLine(line=i, text=f"{i}→ step_{i}", state=StatementState.COMPLETE) for i in range(1, 20_001)]
    lines[-1] = TraceLine(line=20_000, text="20000→ step_20000 and a longer note of what failed",
                          state=StatementState.FAILED)
    narrower = list(lines)
    narrower[-1] = TraceLine(line=20_000, text="20000→ step_20000", state=StatementState.EXECUTING)
    app = _Trace()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(TraceView)
        view.set_lines(lines)
        await pilot.pause()
        asked: list[TraceLine] = []
        real = trace_view_module.measured

        def counted(line):
            asked.append(line)
            return real(line)

        trace_view_module.measured = counted
        try:
            view.set_lines(narrower)  # the same lines but the last: restated in place
        finally:
            trace_view_module.measured = real
        await pilot.pause()
        assert view._width == widest_code(narrower)
        assert len(asked) <= 50, f"{len(asked)} lines measured"


async def test_a_long_traces_widest_line_is_found_again_apart_from_the_step_that_dropped_it():
    """A step back at the end of a 100,000-event log drops its widest lines: finding the
    widest again over every line's bound took 0.1-0.2 s of the step. The step keeps the
    width it had (an upper bound: the scroll may reach a few blank cells further for a
    moment) and the widest is found in a worker; once in, it is the widest of the lines
    shown, and a step made meanwhile gets its own."""
    import threading

    from textual.app import App, ComposeResult

    import prose_tui.tui.widgets.trace_view as trace_view_module
    from prose_tui.tui.widgets.trace_layout import widest_code
    from prose_tui.tui.widgets.trace_view import WIDEST_APART, TraceView

    from app_helpers import wait_until

    class _Trace(App[None]):
        def compose(self) -> ComposeResult:
            yield TraceView()

    n = WIDEST_APART + 500
    lines = [TraceLine(line=i, text=f"{i}→ step_{i}", state=StatementState.COMPLETE) for i in range(1, n + 1)]
    lines[-1] = TraceLine(line=n, text=f"{n}→ step_{n} and a longer note of what failed", state=StatementState.FAILED)
    app = _Trace()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(TraceView)
        view.set_lines(lines)
        await pilot.pause()
        wide = view._width
        threads: list[bool] = []
        real = trace_view_module.widest

        def counted(*args):
            threads.append(threading.current_thread() is threading.main_thread())
            return real(*args)

        trace_view_module.widest = counted
        try:
            for cut in (1, 2):  # two steps back, the second before the first's widest is in
                view.set_lines(lines[:-cut])
                assert view._width == wide, "the step waited for the widest line"
            await wait_until(pilot, lambda: not view.widest_pending, what="the widest found apart")
        finally:
            trace_view_module.widest = real
        assert view._width == widest_code(lines[:-2]) < wide
        assert threads and not any(threads), "the widest was found on the UI thread"
        assert view.virtual_size.width == view._gutter + view._width


def test_events_appended_while_the_cursor_stands_back_do_not_index_the_log_again(tmp_path, monkeypatch):
    """A long log followed live, the cursor stepped back: each event the VM appends used to
    index the whole log again on the UI thread before the frame (0.4-0.6 s an event at
    100,000). The index catches up with what was appended; the run as of the cursor is
    still what it was, and stepping forward reaches the new events."""
    from app_helpers import FIXED_NOW, vm_appends

    from prose_tui.backends.filesystem.backend import FilesystemBackend
    from prose_tui.history import history_of, state_at
    from prose_tui.model import Part

    run_dir, n = long_event_log(tmp_path, "20260301-100000-f41101", 2 * MEMO_AHEAD_EVENTS)
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=FIXED_NOW)
    model = ExplorerModel()
    model.show(run)
    for _ in range(3):
        assert model.nav.step(-1)
    before = model.view()
    cursor = model.nav.position
    built = _count_builds(monkeypatch)
    state = run_dir / "state.md"
    for k in range(1, 6):
        vm_appends(state, f"{n + k}→ live_{k} ✓ [10:00:{k:02d}]\n")
        delta = backend.apply(run, {state: Part.STATE}, now=FIXED_NOW)
        assert delta.run is run  # grown in place, as the live worker grows it
        model.apply(delta)
        assert model.nav.position == cursor and len(model.nav.events) == n + k
        view = model.view()
        assert view.trace == before.trace and view.status is before.status
    assert built == [], f"the log was indexed again {len(built)} times for 5 appended events"
    monkeypatch.undo()
    assert model.nav.step(4)
    assert model.view().trace == state_at(run, history_of(run), cursor + 4).trace


async def test_the_first_move_through_a_long_logs_history_waits_for_its_index_not_the_keys(tmp_path, monkeypatch):
    """A long log that did not fail has no history index until the user first steps back
    (it would cost every shown run 0.25 KB an event). Built at that key on the UI thread, it
    held every key and frame for 0.8-1 s at 100,000 events. It is built in a worker, the
    status line says so, and the moves asked meanwhile are made in order once it is in."""

    from app_helpers import make_app, settled, wait_until

    run_dir, n = long_event_log(tmp_path, "20260301-100000-f41102", 40 * MEMO_AHEAD_EVENTS)
    built = _count_builds(monkeypatch)  # per build: on the UI thread
    app = make_app(tmp_path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.loaded_run is not None and len(explorer.nav.events) == n,
                         what="the whole log read")
        await settled(pilot)
        assert explorer.model.index_wanted() == n
        for _ in range(3):  # three steps back, asked before the index is in
            explorer.action_history_step(-1)
        assert explorer.indexing and explorer.nav.live, "a step moved before its index was in"
        assert "indexing" in explorer.panes.w.status.shown.plain
        await wait_until(pilot, lambda: not explorer.indexing, what="the index built")
        assert explorer.nav.position == n - 4  # live was the last event: three steps back
        assert built == [False], f"index builds, on the UI thread or not: {built}"
        assert "indexing" not in explorer.panes.w.status.shown.plain
        explorer.action_history_step(-1)  # the next step: at once, with the index built
        assert not explorer.indexing and explorer.nav.position == n - 5
