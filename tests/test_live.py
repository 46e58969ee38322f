"""Live: the demo VM writes a run while the app watches, and the screen follows it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from app_helpers import make_app, wait_until

from prose_tui.backends import open_run
from prose_tui.demo import DemoVM
from prose_tui.tui.widgets.run_list import RunList
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def _clock():
    t = [START]

    def now():
        t[0] += timedelta(seconds=1)
        return t[0]

    return now


async def test_the_trace_follows_the_simulated_vm_step_by_step(tmp_path):
    vm = DemoVM(tmp_path, clock=_clock())
    steps = vm.steps()
    next(steps)  # the run folder and its first state.md exist before the app opens
    app = make_app(tmp_path, watch=True, now=START + timedelta(minutes=1))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        trace = app.explorer.query_one(TraceView)
        checked = 0
        for step in steps:
            expected = open_run(vm.run_dir, now=START + timedelta(minutes=1)).executing
            if expected is None:
                continue

            def shows_it(expected=expected):
                current = trace.lines[trace.cursor] if trace.lines else None
                return current is not None and (current.line, current.text) == (expected.line, expected.text)

            await wait_until(pilot, shows_it, what=f"the trace to follow '{step.description}'")
            checked += 1
            if checked >= 8:
                break
        assert checked >= 8
        assert app.explorer.query_one(RunList).runs[0].status.value == "running"


async def test_a_change_is_signalled_painted_only_after_a_frame_was_handed_out(tmp_path):
    """The live worker's later sinks (the journal) wait for the change on screen to be
    painted: their Python would hold the GIL the frame needs. In the explorer the frame that
    shows a change comes after the refresh Textual's ``call_after_refresh`` waits for (the
    trace tells its screen on its own next turn), so a signal sent after one refresh came
    before the frame, and the journal's record slowed that frame (snapshot-500's slow rounds
    of 41-72 ms). Every signal must follow a frame handed out after its change was shown."""
    vm = DemoVM(tmp_path, clock=_clock())
    steps = vm.steps()
    next(steps)
    app = make_app(tmp_path, watch=True, now=START + timedelta(minutes=1))
    frames = [0]  # frames handed to the display so far
    real_display = app._display

    def display(screen, renderable):
        frames[0] += 1
        return real_display(screen, renderable)

    app._display = display  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        inbox = app.explorer.feed.inbox
        assert inbox is not None
        shown: list[int] = []  # frames handed out when each change had been shown
        signalled: list[int] = []  # frames handed out when each change was signalled painted
        real_show, real_painted = inbox.show, inbox._painted_now

        def show(delta):
            real_show(delta)
            shown.append(frames[0])

        def painted(turn):
            signalled.append(frames[0])
            real_painted(turn)

        inbox.show = show
        inbox._painted_now = painted  # type: ignore[method-assign]
        for _ in range(6):
            next(steps)
            count = len(shown)
            await wait_until(pilot, lambda: len(shown) > count and len(signalled) >= len(shown),
                             what="the change to be shown and signalled painted")
        assert len(shown) >= 6
        assert all(s > f for f, s in zip(shown, signalled)), f"signalled before a frame: {list(zip(shown, signalled))}"


async def test_a_growing_binding_updates_in_place_and_marks_the_new_tail(tmp_path):
    vm = DemoVM(tmp_path, clock=_clock())
    steps = vm.steps()
    binding = None
    for _ in steps:
        found = sorted((vm.run_dir / "bindings").glob("*.md")) if (vm.run_dir / "bindings").exists() else []
        if found:
            binding = found[0]
            break
    assert binding is not None
    app = make_app(tmp_path, watch=True, now=START + timedelta(minutes=1))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        tree = app.explorer.query_one("#tree")
        assert tree.select_binding_path(binding)
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.target is not None and viewer.target.path == binding, what="the binding to show")
        before = viewer.text
        with open(binding, "a", encoding="utf-8") as fh:
            fh.write("\n\nA late addition from the session.\n")
        await wait_until(pilot, lambda: "late addition" in viewer.text, what="the value to update")
        assert viewer.text.startswith(before.rstrip("\n")[:40])
        assert viewer._new_from is not None and "late addition" in viewer.text[viewer._new_from:]
        assert "updated" in str(viewer.query_one("#value-head").render())
