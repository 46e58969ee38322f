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
    note_rows,
    rows_of,
    shown_code,
    shown_note,
    wrap,
)

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
