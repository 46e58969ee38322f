"""A whole trace's layout gives way to live changes, and measures only the lines it needs (issue 33).

A long log's full read is laid out on the thread that read it (``TraceLayout.of``) while the
VM keeps appending; Python runs one thread at a time, so a pass over 100,000 lines in one go
(a sort, a scan, a loop without a look) held every live change behind it. Each pass now goes
a slice at a time with ``wait_turn`` between two (checked here by what the layout goes over
between two calls), and the result is the one worked out in one go.

The widest line's shortcut (measure lines widest first, stop at one no wider than the widest
measured) never stopped on an event log: a line's length counted the state mark the gutter
shows instead (``4→ draft ✓``), so every line was measured. It now stops after a line or two,
and finds what measuring every line finds.
"""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prose_tui.backends.common import foreground
from prose_tui.backends.common.foreground import background_read
from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.widgets import trace_layout
from prose_tui.tui.widgets.trace_layout import UNMEASURED, TraceLayout, measured, widest

S = StatementState
LONG = 100_000


def _log_lines(first: int, last: int, *, timed: bool = True, name: str = "step") -> list[TraceLine]:
    """An event log's lines as its parser gives them (FORMATS.md, compact event log)."""
    return [TraceLine(line=i, text=f"{i}→ {name}_{i} ✓" + (f" [09:{i // 60 % 60:02d}:{i % 60:02d}]" if timed else ""),
                      state=S.COMPLETE) for i in range(first, last + 1)]


def _program_lines(count: int) -> list[TraceLine]:
    """A program's lines with notes (some wrapping), string blocks, wide characters, states."""
    out = []
    for i in range(1, count + 1):
        note = ("--> bindings/" + "x" * (i % 70) + ".md (complete)") if i % 3 == 0 else None
        state = S.EXECUTING if i == count - 5 else (S.COMPLETE if i % 2 else (S.FAILED if i % 7 == 0 else None))
        text = f'{"  " * (i % 4)}let v{i} = session "step {i}{" 漢字" * (i % 5 == 0)}"' + ('  """' if i % 97 == 0 else "")
        out.append(TraceLine(line=i, text=text, state=state, note=note))
    return out


def _fields(layout: TraceLayout) -> dict:
    rows = layout.rows
    return {"rows": (list(rows._tree), rows.total), "sizes": list(layout.sizes), "widest": layout.widest,
            "widest_count": layout.widest_count, "blocks": layout.blocks, "block_open": layout.block_open,
            "live": layout.live, "open": layout.open, "has_state": layout.has_state, "avail": layout.avail}


def test_a_background_layout_of_100000_lines_gives_way_every_slice(monkeypatch) -> None:
    # A program's lines, then an event log's (wider than any of them, the state mark left out).
    lines = [*_program_lines(LONG // 2), *_log_lines(10_001, 10_000 + LONG // 2, name="a_step_named_to_be_wider_than_any_program_line")]
    gone_over: dict[str, int] = {}  # lines each kind of work went over since the last wait_turn
    most: dict[str, int] = {}
    waits = 0

    def went(what: str, size: int) -> None:
        gone_over[what] = gone_over.get(what, 0) + size
        most[what] = max(most.get(what, 0), gone_over[what])

    def counted(what: str, real, size=lambda *args: 1):
        def call(*args):
            went(what, size(*args))
            return real(*args)
        return call

    def wait_turn() -> None:
        nonlocal waits
        waits += 1
        gone_over.clear()

    monkeypatch.setattr(trace_layout, "wait_turn", wait_turn, raising=False)
    monkeypatch.setattr(foreground, "wait_turn", wait_turn)  # (``in_turns``, ``turn_every``)
    for name in ("_TEXT", "_STATE", "_NOTE", "measured", "rows_of", "highlight"):
        monkeypatch.setattr(trace_layout, name, counted(name, getattr(trace_layout, name)))
    for name in ("not_one_cell", "_bounds"):
        if hasattr(trace_layout, name):  # (``_bounds``: the shortcut's, since the early stop works)
            monkeypatch.setattr(trace_layout, name, counted(name, getattr(trace_layout, name), lambda texts, *_: len(texts)))
    with background_read():
        layout = TraceLayout.of(lines, 120)
    assert layout.rows.total > LONG and layout.widest == len("60000→ a_step_named_to_be_wider_than_any_program_line_60000 [09:00:00]")
    assert layout.blocks  # the work was done
    assert waits >= 8 * LONG // 8192, f"{waits} looks for a live change over {LONG:,} lines"  # each pass, in slices
    assert {"_TEXT", "_STATE", "_NOTE", "not_one_cell", "_bounds", "rows_of", "highlight"} <= most.keys()
    assert trace_layout.SLICE <= 8192 and trace_layout.EACH <= 512  # about 1-2 ms of work each
    slice_work = {what: size for what, size in most.items() if what not in ("measured", "rows_of", "highlight")}
    assert max(slice_work.values()) <= trace_layout.SLICE, most  # handed to C a slice at a time
    assert most["rows_of"] <= trace_layout.EACH and most.get("measured", 0) <= trace_layout.EACH, most
    assert most["highlight"] <= trace_layout.EACH_HIGHLIGHTED, most


def test_a_layout_in_slices_is_the_layout_in_one_go(monkeypatch) -> None:
    lines = [*_program_lines(700), *_log_lines(1, 300),
             TraceLine(line=1001, text="\t1→ tab\x1b ✓ 😀", state=S.COMPLETE, note="# é\u0301 " * 9)]
    whole = _fields(TraceLayout.of(lines, 90))
    for name, size in (("SLICE", 5), ("EACH", 3), ("EACH_HIGHLIGHTED", 2)):
        monkeypatch.setattr(trace_layout, name, size)
    with background_read():
        sliced = _fields(TraceLayout.of(lines, 90))
    assert sliced == whole


@pytest.mark.parametrize("timed", [True, False], ids=["stamped", "bare"])
def test_an_event_logs_widest_line_is_found_measuring_a_line_or_two(monkeypatch, timed) -> None:
    lines = _log_lines(92_000, 99_999, timed=timed)  # a first screen: lines of one length
    count = 0
    real = trace_layout.measured

    def counting(t: TraceLine) -> int:
        nonlocal count
        count += 1
        return real(t)

    monkeypatch.setattr(trace_layout, "measured", counting)
    sizes = array("i")
    assert widest(lines, sizes) == len("99999→ step_99999" + (" [09:39:39]" if timed else ""))
    assert count <= 2, f"{count} of {len(lines)} lines measured"
    assert sorted(set(sizes)) in ([UNMEASURED, max(sizes)], [max(sizes)])


# Texts a trace may hold, built to trip a shortcut: step lines with and without their state's
# mark as a word (at the end, inside, glued to a word, twice, after several blanks), lines
# that look like steps but are not (``1 ✓``, ``a1→``, ``->``), wide characters, an emoji with
# a joiner and a variation selector, tabs, controls, trailing blanks.
_PIECES = ["1", "23", "4a", "→", "->", " ", "  ", " ✓", " ✗", " ⊘", "✓", " ✓ ", "x", "step", "漢", "😀\u200d😀",
           "\ufe0f", "\t", "\x1b", "é\u0301", "[09:00:00]", "#"]


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(st.tuples(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join),
                                st.sampled_from([None, *S])), min_size=1, max_size=40))
def test_the_widest_line_is_what_measuring_every_line_finds(lines) -> None:
    trace = [TraceLine(line=i + 1, text=text, state=state) for i, (text, state) in enumerate(lines)]
    sizes = array("i")
    most = widest(trace, sizes)
    every = [measured(t) for t in trace]
    assert most == max(every)
    for size, whole, t in zip(sizes, every, trace):
        assert size in (whole, UNMEASURED), repr(t.text)
        assert size != UNMEASURED or whole <= most, repr(t.text)


def test_a_widest_line_with_its_mark_kept_is_found_among_lines_whose_mark_goes() -> None:
    # Same lengths; only the first line's mark stays (not a step line, or the mark is glued).
    for kept in ("1 step_1 ✓ [09:00:01]", "1→ step_1 ✓[09:00:01]", "x1→ step ✓ [09:00:01]"):
        trace = [TraceLine(line=1, text=kept, state=S.COMPLETE), *_log_lines(2, 9)]
        assert widest(trace, array("i")) == len(kept)
