"""The trace shows the run's own trace list, which the live worker changes in place.

An event log's live apply appends to the run's list on the live worker's thread, and cuts a
half-written last line back before parsing it again, completed. The trace lays a list out (on
any thread: ``TraceLayout.of`` copies it first) and paints rows from it on the UI thread.
Lines appended while the list was laid out must still be shown (a 100,000-event log opened
while the VM writes: they were left off the screen until the next change); a row whose line
was cut back a moment must paint blank, not end the app with an IndexError.
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.widgets import trace_view
from prose_tui.tui.widgets.trace_view import TraceView


class TraceApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TraceView(id="trace")


def _lines(n: int) -> list[TraceLine]:
    return [TraceLine(line=i, text=f"{i}→ step_{i} ✓", state=StatementState.COMPLETE) for i in range(1, n + 1)]


def rendered(trace: TraceView) -> list[str]:
    return ["".join(seg.text for seg in trace.render_line(y)) for y in range(trace.scrollable_content_region.height)]


async def test_lines_appended_while_the_list_is_laid_out_are_shown(monkeypatch) -> None:
    app = TraceApp()
    async with app.run_test(size=(60, 12)) as pilot:
        trace = app.query_one(TraceView)
        trace.set_following(True)
        lines = _lines(500)
        laid_out = trace_view.TraceLayout.of

        def layout_while_the_vm_writes(of_lines, width):
            layout = laid_out(of_lines, width)
            # The live worker appends the VM's next event to the run's list meanwhile.
            of_lines.append(TraceLine(line=501, text="501→ verdict", state=StatementState.EXECUTING))
            return layout

        monkeypatch.setattr(trace_view.TraceLayout, "of", layout_while_the_vm_writes)
        trace.set_lines(lines)
        await pilot.pause()
        assert trace.row_count == 501
        assert trace.executing_index() == 500
        assert any("501→ verdict" in row for row in rendered(trace))


async def test_a_row_whose_line_was_cut_back_a_moment_paints_blank() -> None:
    app = TraceApp()
    async with app.run_test(size=(60, 12)) as pilot:
        trace = app.query_one(TraceView)
        trace.set_following(True)
        lines = _lines(39)
        trace.set_lines(lines)
        await pilot.pause()
        # The VM wrote half a line: the live worker parsed it and its delta reached the trace.
        lines.append(TraceLine(line=40, text="40→ step_40 verd", state=StatementState.EXECUTING))
        trace.lines_changed({39})
        # The rest of the line came: the worker cuts the half line back to parse it again,
        # and the UI thread paints in that moment (the interpreter passed to it).
        lines.pop()
        rows = rendered(trace)
        assert any("39→ step_39" in row for row in rows)
        assert not any("40→" in row for row in rows)
        lines.append(TraceLine(line=40, text="40→ step_40 verdict", state=StatementState.COMPLETE))
        trace.lines_changed({39})  # the delta of the completed line
        await pilot.pause()
        assert any("40→ step_40 verdict" in row for row in rendered(trace))
