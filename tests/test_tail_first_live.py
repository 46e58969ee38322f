"""A long event log shown from its tail is followed live while the whole log is read (issue 33).

A log over 256 KiB (some 8,000 events) first shows its header and last 64 KiB, then the whole
log once it is parsed: seconds at 100,000 events, minutes at 1,000,000. The first screen was
static until then (no watch began before every run was read), so the events a VM wrote in
those seconds waited for the whole read. Now the tail the first screen parsed goes on from
where it stopped: appended lines are parsed alone, numbered as in the whole log, and shown
at once.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from prose_tui.backends.filesystem import backend as backend_module
from prose_tui.backends.filesystem.backend import FilesystemBackend
from prose_tui.backends.filesystem.folder import TAIL_FIRST_OVER, load_run
from prose_tui.model import Part
from prose_tui.tui.widgets.trace_view import TraceView
from tests.app_helpers import FIXED_NOW, make_app, settled, wait_until

RUN_ID = "20260301-090000-7a11f5"


def _long_log(tmp_path: Path) -> tuple[Path, int]:
    """A compact event log (FORMATS.md, Generations 2-4) just over the first-screen size, as a
    VM appends it: a header, then one line per event, a block opened early and still open."""
    run = tmp_path / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    lines = [f"# run:{RUN_ID} long.prose\n", "1→ block:research#7\n"]
    size, n = sum(map(len, lines)), 1
    while size <= TAIL_FIRST_OVER + 16 * 1024:
        n += 1
        line = f"{n}→ step_{n} ✓ [09:{n // 60 % 60:02d}:{n % 60:02d}]\n"
        lines.append(line)
        size += len(line.encode("utf-8"))
    (run / "state.md").write_text("".join(lines), encoding="utf-8")
    return run, n


def _vm_appends(state: Path, text: str) -> None:
    """A second process appends ``text`` to ``state``, as the VM does."""
    code = "import sys; f = open(sys.argv[1], 'a', encoding='utf-8'); f.write(sys.argv[2]); f.close()"
    subprocess.run([sys.executable, "-c", code, str(state), text], check=True)


def _shown(run) -> list[tuple[int, str, object]]:
    return [(t.line, t.text, t.state) for t in run.trace]


def test_a_first_screen_grows_as_the_whole_read_would_show_the_log(tmp_path) -> None:
    run_dir, n = _long_log(tmp_path)
    backend = FilesystemBackend()
    first = backend.open_first_screen(run_dir, now=FIXED_NOW)
    assert first is not None and any("still loading" in w for w in first.warnings)
    shown = len(first.trace)
    state = run_dir / "state.md"
    _vm_appends(state, f"{n + 1}→ draft ✓ [10:00:00]\n{n + 2}→ revi")  # the last line half written
    delta = backend.apply(first, {state: Part.STATE}, now=FIXED_NOW)
    assert delta.run is first and delta.trace_lines  # followed in place, not read again
    _vm_appends(state, f"ew ✗ timeout [10:00:02]\n{n + 3}→ review ✓ [10:00:09]\n")
    backend.apply(first, {state: Part.STATE}, now=FIXED_NOW)
    whole = load_run(run_dir, now=FIXED_NOW)
    # The same lines as the whole read's end, numbered as in the whole log, with their states.
    assert _shown(first)[-(shown + 3):] == _shown(whole)[-(shown + 3):]
    assert [e.line for e in first.events[-4:]] == [e.line for e in whole.events[-4:]]
    assert (first.status, first.updated) == (whole.status, whole.updated)
    assert first.call_stack == [] and whole.call_stack  # a block opened before the tail is not guessed at
    assert any("still loading" in w for w in first.warnings)


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

        def last_line() -> tuple[int, str] | None:
            return (trace.lines[-1].line, trace.lines[-1].text) if trace.lines else None

        try:
            await wait_until(pilot, lambda: (last_line() or (0, ""))[1].startswith(f"{n}→"),
                             what="the first screen (the log's last event)")
            assert "still loading" in str(app.explorer.query_one("#run-head").render())
            _vm_appends(run_dir / "state.md", f"{n + 1}→ verdict ✓ [10:00:00]\n")
            await wait_until(pilot, lambda: last_line() == (n + 1, f"{n + 1}→ verdict ✓ [10:00:00]"),
                             what="the event the VM appended, shown while the whole log is read")
            assert "still loading" in str(app.explorer.query_one("#run-head").render())
        finally:
            whole_read.set()
        await settled(pilot)
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text.startswith("1→ block:research#7"),
                         what="the whole log shown")
        assert last_line() == (n + 1, f"{n + 1}→ verdict ✓ [10:00:00]")
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

        def last_line() -> tuple[int, str] | None:
            return (trace.lines[-1].line, trace.lines[-1].text) if trace.lines else None

        appended = (n + 1, f"{n + 1}→ verdict ✓ [10:00:00]")
        try:
            await wait_until(pilot, parsed.is_set, what="the whole log parsed, not yet swapped in")
            await wait_until(pilot, lambda: app.explorer.feed.watcher_state.startswith("watching"),
                             what="the first screen followed (the watches in place)")
            _vm_appends(run_dir / "state.md", appended[1] + "\n")
            await wait_until(pilot, lambda: last_line() == appended, what="the appended event on the first screen")
        finally:
            swap.set()
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text.startswith("1→ block:research#7"),
                         what="the whole log shown")
        await settled(pilot)
        assert last_line() == appended
