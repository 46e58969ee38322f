"""Pilot tests for issue 11's trace, history, footer and value outcomes at 80x24 and 120x40.

Annotations are never cut and horizontal scrolling leaves the gutter; a raw event log shows
each glyph once; history rows show dates where not today, durations on their own row; the
footer has no stray cell; the compact layout says the status once; a Value's note is drawn.
Runs are written here (never copied from the corpus).
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from app_helpers import make_app, ready, settled, wait_until
from conftest import FIXTURES

from prose_tui.tui.widgets.context_strip import ContextStrip
from prose_tui.tui.widgets.status_line import StatusLine
from prose_tui.tui.widgets.timeline import Timeline
from prose_tui.tui.widgets.trace_view import TraceView
from prose_tui.tui.widgets.value_viewer import ValueViewer

SIZES = [(80, 24), (120, 40)]
RUN_ID = "20260301-100000-facade"
FAILED_LOG = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"
NEWSROOM = FIXTURES / "reactor" / "newsroom"

TRACE = '''\
agent scout:                                                # [registered]
  model: sonnet

let changes = session: scout                                # --> bindings/changes.md (complete)
  prompt: "Collect the changes merged since the last release, grouped by the area of the product they touch"
parallel:                                                   # (executing)
  features = session "List the new features with one example each"   # --> bindings/features.md (complete)
  fixes = session: scout                                    # <-- RETRYING (attempt 2/3)
let summary = session "Summarise the release"               # [...next...]
'''


def write_snapshot_run(root: Path) -> Path:
    run_dir = root / ".prose" / "runs" / RUN_ID
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(
        f"# Execution State\n\nrun: {RUN_ID}\nprogram: release.prose\nstarted: 2026-03-01T10:00:00Z\n"
        f"updated: 2026-03-01T10:07:00Z\n\n## Execution Trace\n\n```prose\n{TRACE}```\n", encoding="utf-8")
    for name in ("changes", "features"):
        (run_dir / "bindings" / f"{name}.md").write_text(
            f"# {name}\n\nkind: let\n\nsource:\n```prose\nlet {name} = session: scout\n```\n\n---\n\nThe {name}.\n",
            encoding="utf-8")
    return run_dir


def rendered(trace: TraceView) -> list[str]:
    """The trace's rows on screen, as text."""
    return ["".join(seg.text for seg in trace.render_line(y)) for y in range(trace.scrollable_content_region.height)]


def rows_of_line(trace: TraceView, index: int) -> list[str]:
    """The screen rows line ``index`` takes (its code row and any continuation rows)."""
    top = trace.scroll_offset.y
    first, last = trace.row_of(index), trace.row_of(index + 1)
    rows = rendered(trace)
    assert top <= first and last <= top + len(rows), "the line is on screen"
    return rows[first - top:last - top]


def screen_lines(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


async def open_trace(pilot, app) -> TraceView:
    await ready(pilot)
    await pilot.press("2")
    trace = app.explorer.query_one(TraceView)
    await wait_until(pilot, lambda: bool(trace.lines) and trace.has_focus, what="the trace with lines and focus")
    return trace


@pytest.mark.parametrize("size", SIZES)
async def test_annotations_are_never_cut_and_horizontal_scroll_keeps_the_gutter(tmp_path, size):
    write_snapshot_run(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        trace = await open_trace(pilot, app)
        width = trace.scrollable_content_region.width
        digits = len(str(len(trace.lines)))
        gutter = digits + 3  # number, space, glyph, space
        noted = [i for i, t in enumerate(trace.lines) if t.note]
        assert len(noted) == 6
        wrapped = 0
        for index in noted:
            t = trace.lines[index]
            trace.scroll_to(y=trace.row_of(index), animate=False)
            await pilot.pause()
            rows = rows_of_line(trace, index)
            assert rows[0].startswith(f"{t.line:>{digits}} ")  # the gutter: line number, glyph
            assert all(len(r) <= width for r in rows)
            shown = " ".join(" ".join(r.split()) for r in rows)
            assert f"# {t.note}" in shown, (t.note, rows)  # the whole annotation, not cut
            assert all(r[:gutter].strip() == "" for r in rows[1:])  # continuation rows: gutter blank
            wrapped += len(rows) > 1
        # Annotations keep their state's colour wherever they stand.
        trace.scroll_to(y=trace.row_of(noted[1]), animate=False)
        await pilot.pause()
        segments = [seg for y in range(trace.scrollable_content_region.height) for seg in trace.render_line(y)]
        note = [seg for seg in segments if "-->" in seg.text]
        assert note and all(seg.style is not None and seg.style.color not in (None, trace.rich_style.color) for seg in note)
        # The retrying line says which attempt, whole, wherever it stands.
        retrying = next(i for i, t in enumerate(trace.lines) if "RETRYING" in (t.note or ""))
        assert trace.lines[retrying].note.endswith("(attempt 2/3)")
        assert wrapped >= 1  # some annotation needs a row of its own (the features line)

        # Horizontal scroll: the long prompt line moves, the gutter and annotations do not.
        long_line = next(i for i, t in enumerate(trace.lines) if "grouped by the area" in t.text)
        trace.set_following(False)
        trace.scroll_to(y=trace.row_of(long_line) - 1, animate=False)
        await pilot.pause()
        before = {i: rows_of_line(trace, i) for i in (long_line - 1, long_line)}
        await pilot.press("l", "l", "l", "l", "l")
        await wait_until(pilot, lambda: trace.scroll_offset.x > 0, what="the trace to scroll right")
        after = {i: rows_of_line(trace, i) for i in (long_line - 1, long_line)}
        assert after[long_line][0][:gutter] == before[long_line][0][:gutter] == f"{trace.lines[long_line].line:>{digits}}   "
        assert after[long_line][0][gutter:] != before[long_line][0][gutter:]  # the code moved
        noted_rows = after[long_line - 1]  # "let changes = ..." and its annotation
        assert noted_rows[0][:gutter] == before[long_line - 1][0][:gutter] == f"{digits * ' '}4 ✓ "[-gutter:]
        assert "# --> bindings/changes.md (complete)" in " ".join(" ".join(r.split()) for r in noted_rows)


@pytest.mark.parametrize("size", SIZES)
async def test_the_raw_event_log_shows_each_glyph_and_note_once(size):
    app = make_app(FAILED_LOG)
    async with app.run_test(size=size) as pilot:
        trace = await open_trace(pilot, app)
        await pilot.press("L")  # the raw log (the program is shown annotated by default)
        await wait_until(pilot, lambda: trace.lines and trace.lines[0].text == "1→ fetch ✓", what="the raw log")
        trace.set_following(False)
        trace.scroll_to(y=0, animate=False)
        await pilot.pause()
        by_text = {t.text: i for i, t in enumerate(trace.lines)}
        fetch = " ".join(rows_of_line(trace, by_text["1→ fetch ✓"]))
        assert fetch.count("✓") == 1 and "1→ fetch" in fetch
        draft = " ".join(rows_of_line(trace, by_text["4→ draft ✗ rate limited"]))
        assert draft.count("✗") == 1 and draft.count("rate limited") == 1
        done = " ".join(rows_of_line(trace, by_text["3→ #7 done"]))
        assert done.count("done") == 1 and done.count("✓") == 1


LOG = '''\
# run:20260228-235900-da7e00 span.prose
1→ fetch ✓ [23:59:10]
2→ draft ✓ [23:59:50]
3→ publish ✓ [2026-03-01T00:00:20Z]
---end 2026-03-01T00:01:00Z
'''


def timeline_rows(timeline: Timeline) -> list[str]:
    return ["".join(seg.text for seg in timeline.render_line(y)) for y in range(timeline.scrollable_content_region.height)]


@pytest.mark.parametrize("size", SIZES)
async def test_history_rows_show_the_date_where_not_today_and_durations_on_their_own_row(tmp_path, size):
    run_dir = tmp_path / ".prose" / "runs" / "20260228-235900-da7e00"
    run_dir.mkdir(parents=True)
    (run_dir / "state.md").write_text(LOG, encoding="utf-8")
    app = make_app(tmp_path)  # the clock says 2026-03-01 10:08 UTC
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.press("6")
        timeline = app.explorer.query_one(Timeline)
        await wait_until(pilot, lambda: len(timeline.events) >= 4 and timeline.scrollable_content_region.height > 4,
                         what="the history on screen")
        timeline.scroll_to(y=0, animate=False)
        await pilot.pause()
        rows = timeline_rows(timeline)
        fetch, draft, publish = (next(r for r in rows if step in r) for step in ("1→ fetch", "2→ draft", "3→ publish"))
        when = {name: row.split("✓", 1)[0] for name, row in (("fetch", fetch), ("draft", draft), ("publish", publish))}
        assert "02-28 23:59:10" in when["fetch"] and "02-28 23:59:50" in when["draft"]  # yesterday: with its date
        assert "00:00:20" in when["publish"] and "03-01" not in when["publish"]  # today: the time only
        # fetch took 40 s (until draft), draft 30 s: each on its own row, beside its bar
        assert "+40s █" in fetch and "+30s" in draft and "+40s" not in draft


@pytest.mark.parametrize("size", SIZES)
async def test_footer_has_no_stray_cell_and_the_status_is_said_once(size):
    app = make_app(FIXTURES / "project")
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        lines = screen_lines(app)
        footer = lines[-1].rstrip()
        assert footer.endswith("^p Command palette"), footer
        run = app.explorer.current_run
        reason = run.status_reason
        assert reason and len(reason) > 40  # long enough to be cut on a status line
        status = app.explorer.query_one(StatusLine).shown.plain
        strip = app.explorer.query_one(ContextStrip)
        if strip.display:  # 80x24: the strip says the status with the whole reason, the status line not
            assert reason in " ".join(" ".join(strip.shown.plain.split("\n")).split())
            assert "RETRYING" not in status and "running" not in status
            assert sum(line.count("● running ·") for line in lines) == 1
        else:  # 120x40: no strip; the header says the whole reason
            assert size == (120, 40)
            header = " ".join(app.explorer.head_text.plain.split())
            assert reason in header


@pytest.mark.parametrize("size", SIZES)
async def test_a_values_note_is_drawn_under_the_value_head(size):
    app = make_app(NEWSROOM)
    async with app.run_test(size=size) as pilot:
        trace = await open_trace(pilot, app)
        trace.set_following(False)
        index = next(i for i, t in enumerate(trace.lines) if "responsibility.digest" in t.text)
        trace.move_cursor(index)
        await pilot.press("enter")
        viewer = app.explorer.query_one(ValueViewer)
        await wait_until(pilot, lambda: viewer.target is not None and viewer.text, what="the world model in the Value pane")
        await settled(pilot)
        note = viewer.query_one("#value-note")
        assert viewer.note.startswith("world model of responsibility.digest · version sha256:")
        assert note.display and note.region.height >= 1
        region = note.region
        shown = " ".join(line[region.x:region.right].strip() for line in screen_lines(app)[region.y:region.bottom])
        assert shown.startswith("world model of responsibility.digest · version sha256:"), shown


NEVER_WATCHED = FIXTURES / "project" / ".prose" / "runs" / "20260228-090000-d4e5f6"


@pytest.mark.parametrize("size", SIZES)
async def test_a_reconstructed_time_is_marked_where_it_is_shown(tmp_path, size):
    run_dir = tmp_path / ".prose" / "runs" / NEVER_WATCHED.name
    shutil.copytree(NEVER_WATCHED, run_dir)
    base = datetime(2026, 2, 28, 9, 0, tzinfo=timezone.utc).timestamp()
    for i, name in enumerate(["topic", "draft", "tone", "facts", "guide", "anon_001"]):
        os.utime(run_dir / "bindings" / f"{name}.md", (base + 60 * i, base + 60 * i))
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.nav.history is not None and explorer.nav.events, what="the history")
        assert explorer.nav.history.origin == "reconstructed"
        timed = next(i for i, e in enumerate(explorer.nav.events) if e.time is not None)
        await pilot.press("left_curly_bracket", *["right_square_bracket"] * timed)
        await wait_until(pilot, lambda: explorer.nav.position == timed, what="the cursor on a timed event")
        status = explorer.query_one(StatusLine).shown.plain
        assert f"as of event {timed} of 0–" in status and "≈2026-02-28 09:0" in status
        strip = explorer.query_one(ContextStrip)
        if strip.display:  # 80x24: the strip's "at event N · time" too
            assert f"at event {timed} · ≈2026-02-28 09:0" in strip.shown.plain
        await pilot.press("6")
        timeline = explorer.query_one(Timeline)
        await wait_until(pilot, lambda: timeline.scrollable_content_region.height > 2, what="the history pane")
        rows = timeline_rows(timeline)
        assert any(row.lstrip().startswith(f"{timed} ≈02-28 09:0") for row in rows), rows


async def test_the_footer_says_when_it_shows_the_focused_panes_keys():
    """``KeyFooter.up_to_date`` (the screenshot script's ready signal) holds only once the
    footer on screen has the keys of the pane now focused."""
    from prose_tui.tui.widgets.key_footer import KeyFooter

    app = make_app(FIXTURES / "project")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        footer = app.screen.query_one(KeyFooter)
        await wait_until(pilot, lambda: footer.up_to_date, what="the footer's keys")
        assert "Raw/Markdown" not in screen_lines(app)[-1]
        await pilot.press("5")  # the value pane: its own keys (r for raw / Markdown)
        await wait_until(pilot, lambda: footer.up_to_date and app.focused is app.explorer.query_one(ValueViewer),
                         what="the value pane focused and its keys in the footer")
        assert "Raw/Markdown" in screen_lines(app)[-1]


async def footer_item(pilot, key: str):
    """The footer once its keys are on screen, and the item of ``key`` (its cells in the row)."""
    from prose_tui.tui.widgets.key_footer import KeyFooter

    await ready(pilot)
    footer = pilot.app.screen.query_one(KeyFooter)
    await wait_until(pilot, lambda: footer.up_to_date and key in footer.keys, what="the footer's keys")
    return footer, next(item for item in footer._items if item.key == key)


async def test_a_key_clicked_in_the_footer_is_that_key_pressed():
    from prose_tui.tui.widgets.key_footer import KeyFooter

    app = make_app(FIXTURES / "project")
    async with app.run_test(size=(120, 40)) as pilot:
        footer, zoom = await footer_item(pilot, "z")
        row = screen_lines(app)[-1]
        assert row[zoom.start:zoom.end] == "z Zoom"
        await pilot.click(KeyFooter, offset=(zoom.start + 2, 0))
        await wait_until(pilot, lambda: app.explorer.zoomed, what="the zoom clicked in the footer")


async def test_the_footer_key_under_the_mouse_is_highlighted():
    from prose_tui.tui.widgets.key_footer import KeyFooter

    app = make_app(FIXTURES / "project")
    async with app.run_test(size=(120, 40)) as pilot:
        footer, zoom = await footer_item(pilot, "z")

        def style_at(x: int):
            strip = list(app.screen._compositor.render_strips())[-1]
            cells = 0
            for segment in strip:
                if cells <= x < cells + segment.cell_length:
                    return segment.style
                cells += segment.cell_length
            return None

        before = style_at(zoom.start + 2)
        await pilot.hover(KeyFooter, offset=(zoom.start + 2, 0))
        await wait_until(pilot, lambda: style_at(zoom.start + 2) != before, what="the hovered key highlighted")
        other = next(item for item in footer._items if item.key != "z")
        assert style_at(other.start + 2).bgcolor != style_at(zoom.start + 2).bgcolor


async def test_keys_that_do_not_fit_the_footer_are_left_out_whole():
    """80 columns do not hold every key: the last ones are left out whole (not cut), and
    the command palette key stays at the right edge."""
    from prose_tui.tui.widgets.key_footer import KeyFooter

    app = make_app(FIXTURES / "project")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        footer = app.screen.query_one(KeyFooter)
        await wait_until(pilot, lambda: footer.up_to_date, what="the footer's keys")
        wide = footer.keys
        await pilot.resize_terminal(80, 24)
        # The app's size changes at once; the footer's at the screen's (debounced) layout.
        await wait_until(pilot, lambda: footer.size.width == 80 and footer.up_to_date,
                         what="the footer laid out and painted at 80 columns")
        row = screen_lines(app)[-1]
        narrow = footer.keys
        assert narrow[-1] == wide[-1] == "ctrl+p" and row.rstrip().endswith("^p Command palette")
        assert len(narrow) < len(wide) and narrow[:-1] == wide[:len(narrow) - 1]
        for item in footer._items:
            assert row[item.start:item.end].strip().endswith(item.description)


async def test_a_taller_or_shorter_screen_keeps_the_painted_lines(tmp_path):
    """A painted line depends on the width its annotation may take, not on the height: a
    height change (the footer settling after the open, a terminal resized) keeps the lines
    painted, so the next live change paints only what it changed, not every visible line."""
    write_snapshot_run(tmp_path)
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settled(pilot)
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: len(trace._cache) == len(trace.lines), what="the trace painted")
        before = dict(trace._cache)
        await pilot.resize_terminal(120, 36)
        await wait_until(pilot, lambda: trace.size.height < 40 and app.screen.size.height == 36, what="the resize")
        await settled(pilot)
        assert all(trace._cache.get(i) is p for i, p in before.items()), "the same painted lines, not painted again"
        wide = trace.size.width
        await pilot.resize_terminal(100, 36)  # narrower: annotations may take other rows
        # The app's size changes at once, the screen's and the trace's at the (debounced) layout.
        await wait_until(pilot, lambda: app.screen.outer_size.width == 100 and trace.size.width < wide,
                         what="the narrower screen laid out")
        await settled(pilot)
        assert all(trace._cache.get(i) is not p for i, p in before.items()), "painted again for the new width"


async def test_the_trace_shown_and_unfollowed_at_once_keeps_its_cursor_in_view():
    """At 80x24 one pane shows at a time: ``2`` then ``f`` typed at once show the trace and
    stop following before the trace had its size and scrolled to its executing line. Its
    cursor must be on screen all the same, not left where the hidden pane was scrolled."""
    app = make_app(FIXTURES / "project")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        trace = app.explorer.query_one(TraceView)
        await pilot.press("1", "j")  # the older run, chosen from the run list
        await settled(pilot)
        await pilot.press("2", "f")
        await wait_until(pilot, lambda: trace.has_focus and not trace.following and trace.size.height > 0,
                         what="the trace shown, not following")
        await settled(pilot)  # fails naming the cursor's row when it is out of view
        top, height = round(trace.scroll_offset.y), trace.scrollable_content_region.height
        assert top <= trace.row_of(trace.cursor) < top + height
