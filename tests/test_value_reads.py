"""The value pane reads off the UI thread (issue 9; a view never reads a file): a binding
file or a source's value is read in a worker thread while "reading…" shows, the app stays
responsive meanwhile, and a reader's failure is a warning line, never a traceback."""

from __future__ import annotations

import threading

from app_helpers import make_app, ready, wait_until
from conftest import FIXTURES

from prose_tui.backends.protocol import Value
from prose_tui.tui.targets import Target
from prose_tui.tui.widgets.value_viewer import ValueViewer

PROJECT = FIXTURES / "project"


async def test_a_value_is_read_in_a_worker_thread_while_reading_shows():
    app = make_app(PROJECT)
    release = threading.Event()
    readers: list[threading.Thread] = []

    def value() -> Value:
        readers.append(threading.current_thread())
        if threading.current_thread() is not threading.main_thread():
            release.wait(30)  # a slow database: the UI must not wait for it
        return Value(text="the slow value", note="from the database")

    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        viewer = app.explorer.query_one(ValueViewer)
        viewer.show_target(Target("binding", "slow", value=value, read=lambda: value().text or ""))
        assert readers == [] or readers[0] is not threading.main_thread()
        await wait_until(pilot, lambda: bool(readers), what="the reader to start")
        assert readers[0] is not threading.main_thread()
        assert viewer.reading and "reading…" in str(viewer.body.render_line(0).text)
        await pilot.press("2")  # the app answers keys while the value is being read
        assert app.explorer.active == 1
        release.set()
        await wait_until(pilot, lambda: not viewer.reading, what="the value to arrive")
        assert viewer.text == "the slow value" and viewer.note == "from the database"


async def test_a_reader_that_fails_shows_a_warning_not_a_traceback():
    app = make_app(PROJECT)

    def broken() -> str:
        raise ValueError("the connection was reset")

    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        viewer = app.explorer.query_one(ValueViewer)
        viewer.show_target(Target("binding", "broken", read=broken))
        await wait_until(pilot, lambda: not viewer.reading, what="the read to end")
        warning = str(viewer.query_one("#value-warning").render())
        assert "cannot read the value: the connection was reset" in warning
        assert viewer.text == "" and app.is_running


async def test_a_binding_the_live_worker_read_with_a_change_is_shown_without_reading_it(tmp_path, monkeypatch):
    import prose_tui.tui.widgets.value_viewer as value_viewer

    run_dir = tmp_path / ".prose" / "runs" / "20260301-120000-b1g000"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(
        "# Execution State\n\nrun: 20260301-120000-b1g000\nprogram: grow.prose\n\n## Execution Trace\n\n"
        "```prose\nlet notes = session \"Take notes\"  # <-- EXECUTING\n```\n", encoding="utf-8")
    binding = run_dir / "bindings" / "notes.md"
    binding.write_text("# notes\n\nkind: let\n\n---\n\nstart\n", encoding="utf-8")
    app = make_app(run_dir, watch=True)
    reads: list[str] = []
    real = value_viewer.read_target
    monkeypatch.setattr(value_viewer, "read_target", lambda target, **kw: reads.append(getattr(target, "title", None)) or real(target, **kw))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: "start" in viewer.text, what="the binding")
        reads.clear()
        with open(binding, "a", encoding="utf-8") as fh:
            fh.write("more from the session\n")
        await wait_until(pilot, lambda: "more from the session" in viewer.text, what="the value to update")
        assert reads == []  # the live worker's read was shown: none on the UI side
        assert viewer._new_from is not None
