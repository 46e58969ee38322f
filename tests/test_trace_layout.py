"""The trace's row layout (issue 11): annotations never cut, the row index exact.

``trace_layout`` is Textual-free: the row index is checked against a plain list under any
sequence of edits, wrapping against its contract (no row wider than asked, nothing lost).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from prose_tui.model import StatementState, TraceLine
from prose_tui.tui.widgets.trace_layout import (
    RIGHT_MARGIN,
    RowIndex,
    cells,
    note_rows,
    one_cell,
    rows_of,
    shown_code,
    shown_note,
    wrap,
)
from prose_tui.tui.widgets.trace_layout import measured, widest_code

S = StatementState
edits = st.lists(st.one_of(
    st.tuples(st.just("set"), st.integers(0, 60), st.integers(1, 5)),
    st.tuples(st.just("append"), st.integers(1, 5)),
    st.tuples(st.just("truncate"), st.integers(0, 60)),
), max_size=40)


@settings(max_examples=200, deadline=None)
@given(start=st.lists(st.integers(1, 5), max_size=60), edits=edits)
def test_row_index_matches_a_plain_list_under_any_edits(start, edits):
    rows = RowIndex()
    rows.reset(start)
    model = list(start)
    for edit in edits:
        if edit[0] == "set" and edit[1] < len(model):
            rows.set(edit[1], edit[2])
            model[edit[1]] = edit[2]
        elif edit[0] == "append":
            rows.append(edit[1])
            model.append(edit[1])
        elif edit[0] == "truncate":
            rows.truncate(edit[1])
            del model[edit[1]:]
    assert len(rows) == len(model) and rows.total == sum(model)
    row = 0
    for index, count in enumerate(model):
        assert rows.start(index) == row and rows.rows(index) == count
        for r in range(row, row + count):
            assert rows.find(r) == index
        row += count


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from("ab cdé漢字 -/()"), max_size=120), width=st.integers(2, 40))
def test_wrap_keeps_every_character_in_rows_no_wider_than_asked(text, width):
    rows = wrap(text, width)
    assert rows and all(cell_len(r) <= width for r in rows)
    assert "".join(rows).replace(" ", "") == text.replace(" ", "")


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from("1ab  ->#→✓x\t"), max_size=70), note=st.text(st.sampled_from("ab  #()-/✓"), max_size=90),
       state=st.sampled_from([None, S.COMPLETE, S.FAILED]), avail=st.integers(-1, 90))
def test_counted_rows_are_the_rows_drawn(text, note, state, avail):
    line = TraceLine(line=1, text=text, state=state, note=note or None)
    assert rows_of(line, avail) == 1 + (len(note_rows(line, avail)) if avail > 0 else 0)


NOTE = "--> bindings/features.md (complete)"
LINE = TraceLine(line=12, text="    features = session: scout", state=S.COMPLETE, note=NOTE)


def test_an_annotation_stands_beside_the_code_when_both_fit_else_wraps_under_it():
    room = len(shown_code(LINE)) + 2 + len(f"# {NOTE}") + RIGHT_MARGIN
    assert rows_of(LINE, room) == 1 and note_rows(LINE, room) == []
    narrow = note_rows(LINE, room - 1)
    assert narrow == ["      # --> bindings/features.md (complete)"]  # under the code, two further in
    tight = note_rows(LINE, 30)
    assert len(tight) == rows_of(LINE, 30) - 1 > 1
    assert all(cell_len(r) <= 30 - RIGHT_MARGIN for r in tight)
    assert " ".join(r.strip() for r in tight) == f"# {NOTE}"


def test_a_raw_event_log_line_shows_its_mark_and_note_once():
    line = TraceLine(line=11, text="4→ draft ✗ rate limited", state=S.FAILED, note="rate limited")
    assert shown_code(line) == "4→ draft rate limited" and shown_note(line) is None
    done = TraceLine(line=1, text="1-> fetch ✓ (cached)", state=S.COMPLETE, note="(cached)")
    assert shown_code(done) == "1-> fetch (cached)" and shown_note(done) is None
    # program text keeps its marks and its annotation, whatever it says
    code = TraceLine(line=3, text='let ok = session "print ✓"', state=S.COMPLETE, note="--> bindings/ok.md")
    assert shown_code(code) == code.text and shown_note(code) == "# --> bindings/ok.md"


# Characters a trace may hold: ASCII, an event log's arrows and marks, wide CJK, an emoji
# joined by a zero-width joiner, a variation selector, a tab, controls, a combining accent.
ODD = "ab 1-#→✓✗⊘漢字😀\u200d\ufe0f\t\x1b\x00é\u0301"


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text(st.sampled_from(ODD), max_size=30), max_size=12))
def test_cells_agree_with_rich_whatever_was_measured_before(texts):
    # The one-cell memo learns from every text measured: later answers must not drift.
    for text in texts + texts[::-1]:
        assert cells(text) == cell_len(text), repr(text)
        if one_cell(text, learn=True):
            assert cell_len(text) == len(text), repr(text)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.tuples(st.text(st.sampled_from("1234 ab_→✓✗⊘漢\t\x1b"), max_size=24),
                                st.sampled_from([None, *S])), max_size=30))
def test_the_widest_line_is_the_widest_measured_one_by_one(lines):
    trace = [TraceLine(line=i + 1, text=text, state=state) for i, (text, state) in enumerate(lines)]
    assert widest_code(trace) == max((measured(t) for t in trace), default=0)


def test_an_event_log_widest_line_does_not_count_the_mark_the_gutter_shows():
    trace = [TraceLine(line=1, text="12→ draft ✓", state=S.COMPLETE),
             TraceLine(line=2, text="3→ review ✗ timeout", state=S.FAILED),
             TraceLine(line=3, text="4→ ok ✓", state=None)]  # no state: the mark stays
    assert widest_code(trace) == len("3→ review timeout")
    assert widest_code(trace[:1]) == len("12→ draft")
    assert widest_code(trace[2:]) == len("4→ ok ✓")
