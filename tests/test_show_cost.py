"""What showing one live change costs on the UI thread (issues 9 and 13, third pass showcost):
the first change after opening a run lays nothing out, and the bindings tree takes a new
binding or agent segment in place, ending as a fresh tree would be."""

from __future__ import annotations

from app_helpers import make_app, settled, wait_until
from textual.screen import Screen

from prose_tui.tui.widgets.run_header import RunHeader
from prose_tui.tui.widgets.trace_view import TraceView

RUN_ID = "20260115-090000-4f2a1c"


def _event_log(root, events: int):
    run = root / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    state = run / "state.md"
    lines = [f"# run:{RUN_ID} long.prose\n"] + [f"{i}→ step_{i} ✓ [09:00:{i:02d}]\n" for i in range(1, events + 1)]
    state.write_text("".join(lines), encoding="utf-8")
    return state


async def test_the_first_live_change_after_opening_a_run_lays_nothing_out(tmp_path, monkeypatch):
    # Opened weeks after its last change, the run is "interrupted" with a reason that takes
    # two rows; its first live change makes it "running" with a one-row reason. The header
    # keeps its rows (a blank one) instead of laying the whole screen out.
    state = _event_log(tmp_path, 20)
    layouts: list[str] = []
    real = Screen._refresh_layout

    def counting(self, *args, **kwargs):
        layouts.append(type(self).__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counting)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching"), what="the watcher")
        await settled(pilot)
        header = explorer.query_one(RunHeader)
        assert "interrupted" in header.shown.plain
        rows = header.size.height
        assert rows >= 3  # the badge line and a reason of two rows
        trace = explorer.query_one(TraceView)
        layouts.clear()
        with open(state, "a", encoding="utf-8") as fh:
            fh.write("21→ step_21 ✓ [09:00:21]\n22→ live_marker\n")
        await wait_until(pilot, lambda: any("live_marker" in line.text for line in trace.lines), what="the append")
        await wait_until(pilot, lambda: "running" in header.shown.plain, what="the header to say running")
        await settled(pilot)
        assert layouts == []
        assert header.size.height == rows  # the shorter text is padded, not re-laid out
        assert header.render_line(0).text.strip().startswith("●")  # the new text is what is painted
