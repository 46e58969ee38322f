"""A long event log shown from its tail is followed live while the whole log is read (issue 33).

A log over 256 KiB (some 8,000 events) first shows its header and last 64 KiB, then the whole
log once it is parsed: seconds at 100,000 events, minutes at 1,000,000. The first screen was
static until then (no watch began before every run was read), so the events a VM wrote in
those seconds waited for the whole read. Now the tail the first screen parsed goes on from
where it stopped: appended lines are parsed alone, numbered as in the whole log, and shown
at once.
"""

from __future__ import annotations

import threading
from pathlib import Path

from prose_tui.backends.filesystem import backend as backend_module
from prose_tui.backends.filesystem.backend import FilesystemBackend
from prose_tui.backends.filesystem.folder import TAIL_FIRST_OVER, load_run
from prose_tui.model import Part
from prose_tui.tui.widgets.trace_view import TraceView
from tests.app_helpers import FIXED_NOW, long_event_log, make_app, settled, vm_appends, wait_until

RUN_ID = "20260301-090000-7a11f5"


def _long_log(tmp_path: Path) -> tuple[Path, int]:
    """A compact event log just over the first-screen size, a block opened early and still open."""
    return long_event_log(tmp_path, RUN_ID, TAIL_FIRST_OVER + 16 * 1024, first=("1→ block:research#7\n",))


def _shown(run) -> list[tuple[int, str, object]]:
    return [(t.line, t.text, t.state) for t in run.trace]


def test_a_first_screen_grows_as_the_whole_read_would_show_the_log(tmp_path) -> None:
    run_dir, n = _long_log(tmp_path)
    backend = FilesystemBackend()
    first = backend.open_first_screen(run_dir, now=FIXED_NOW)
    assert first is not None and any("still loading" in w for w in first.warnings)
    shown = len(first.trace)
    state = run_dir / "state.md"
    vm_appends(state, f"{n + 1}→ draft ✓ [10:00:00]\n{n + 2}→ revi")  # the last line half written
    delta = backend.apply(first, {state: Part.STATE}, now=FIXED_NOW)
    assert delta.run is first and delta.trace_lines  # followed in place, not read again
    vm_appends(state, f"ew ✗ timeout [10:00:02]\n{n + 3}→ review ✓ [10:00:09]\n")
    backend.apply(first, {state: Part.STATE}, now=FIXED_NOW)
    whole = load_run(run_dir, now=FIXED_NOW)
    # The same lines as the whole read's end, numbered as in the whole log, with their states.
    assert _shown(first)[-(shown + 3):] == _shown(whole)[-(shown + 3):]
    assert [e.line for e in first.events[-4:]] == [e.line for e in whole.events[-4:]]
    assert (first.status, first.updated) == (whole.status, whole.updated)
    assert first.call_stack == [] and whole.call_stack  # a block opened before the tail is not guessed at
    assert any("still loading" in w for w in first.warnings)


def _last_line(trace: TraceView) -> tuple[int, str] | None:
    """The trace's last line as (number, text), or ``None`` for an empty trace."""
    return (trace.lines[-1].line, trace.lines[-1].text) if trace.lines else None


async def test_the_explorer_shows_new_events_while_the_whole_log_is_still_read(tmp_path, monkeypatch) -> None:
    run_dir, n = _long_log(tmp_path)
    whole_read = threading.Event()
    load = backend_module.load_run

    def held_load_run(*args, **kwargs):
        whole_read.wait()  # the whole log is parsed only once the new events were seen
        return load(*args, **kwargs)

    monkeypatch.setattr(backend_module, "load_run", held_load_run)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)

        try:
            await wait_until(pilot, lambda: (_last_line(trace) or (0, ""))[1].startswith(f"{n}→"),
                             what="the first screen (the log's last event)")
            assert "still loading" in str(app.explorer.query_one("#run-head").render())
            vm_appends(run_dir / "state.md", f"{n + 1}→ verdict ✓ [10:00:00]\n")
            await wait_until(pilot, lambda: _last_line(trace) == (n + 1, f"{n + 1}→ verdict ✓ [10:00:00]"),
                             what="the event the VM appended, shown while the whole log is read")
            assert "still loading" in str(app.explorer.query_one("#run-head").render())
        finally:
            whole_read.set()
        await settled(pilot)
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text.startswith("1→ block:research#7"),
                         what="the whole log shown")
        assert _last_line(trace) == (n + 1, f"{n + 1}→ verdict ✓ [10:00:00]")
        assert "still loading" not in str(app.explorer.query_one("#run-head").render())


async def test_events_written_while_the_whole_log_is_read_are_shown_after_it(tmp_path, monkeypatch) -> None:
    """The whole read parses the log as it was when it began; events the VM appends before it
    is swapped in were shown on the first screen (followed live) and must stay shown after the
    swap, with nothing else written (a run that ends then would never show its last events)."""
    run_dir, n = _long_log(tmp_path)
    parsed, swap = threading.Event(), threading.Event()
    load = backend_module.load_run

    def load_run_then_wait(*args, **kwargs):
        run = load(*args, **kwargs)  # the whole log as it is now
        parsed.set()
        swap.wait()  # the VM appends before this read is swapped in
        return run

    monkeypatch.setattr(backend_module, "load_run", load_run_then_wait)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        trace = app.explorer.query_one(TraceView)

        appended = (n + 1, f"{n + 1}→ verdict ✓ [10:00:00]")
        try:
            await wait_until(pilot, parsed.is_set, what="the whole log parsed, not yet swapped in")
            await wait_until(pilot, lambda: app.explorer.feed.watcher_state.startswith("watching"),
                             what="the first screen followed (the watches in place)")
            vm_appends(run_dir / "state.md", appended[1] + "\n")
            await wait_until(pilot, lambda: _last_line(trace) == appended, what="the appended event on the first screen")
        finally:
            swap.set()
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text.startswith("1→ block:research#7"),
                         what="the whole log shown")
        await settled(pilot)
        assert _last_line(trace) == appended
