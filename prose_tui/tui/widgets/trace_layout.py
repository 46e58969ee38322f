"""Where each trace line goes on screen: rows per line, annotation placement, wrapping.

Textual-free, so it is tested on its own. A trace line is one *statement row* (gutter,
code) plus, when its annotation does not fit beside the code, *continuation rows* holding
the annotation wrapped under the code. ``RowIndex`` keeps the rows per line in a Fenwick
tree: row of a line, line at a row, a re-stated or appended line, all O(log n), 4 bytes
per line (an ``array('i')``), so a 100,000-line trace costs 400 KB here whatever the width.

Widths are terminal cells (``rich.cells``): wide characters count two.

``TraceLayout.of`` lays out a whole list on the thread that read it (a background read): its
passes over every line go a slice of ``SLICE`` lines at a time (one-by-one work in Python:
``EACH`` lines), and between two the read gives way to a live change on its way to the
screen (``foreground.wait_turn``, issue 33; a no-op on the UI thread).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from heapq import merge
from itertools import accumulate, compress, islice, repeat
from operator import add, and_, attrgetter, contains, gt, neg, not_, sub

from rich.cells import cell_len, chop_cells, get_character_cell_size

from prose_tui.backends.common.foreground import in_turns, turn_every, wait_turn
from prose_tui.backends.common.text import visible_name
from prose_tui.model import StatementState, TraceLine
from prose_tui.model.statement import STEP_RE, TERMINATOR_RE
from prose_tui.tui.highlight import highlight

SEPARATION = 2  # cells between the code and an annotation standing on the same row
RIGHT_MARGIN = 1  # cells kept free right of an annotation (off the scrollbar and border)
MIN_NOTE_WIDTH = 16  # a continuation row gives the annotation at least this many cells
NOTE_INDENT = 2  # continuation rows start this far right of the code's own indentation

# The marks an event log writes after a step's name (FORMATS.md, compact event log), by the
# state the parser gives the line: shown in the gutter, so not again in the text.
_LOG_MARKS = {StatementState.COMPLETE: "✓", StatementState.FAILED: "✗", StatementState.SKIPPED: "⊘"}
# A state mark as a word of its own, with the blanks before it (what the gutter shows instead).
_MARK_AFTER = {mark: re.compile(rf"\s+{re.escape(mark)}(?=\s|$)") for mark in _LOG_MARKS.values()}

# Lines a pass over a whole list hands to C at once, and lines worked out one by one in Python
# (2-4 µs each, a line of wide characters some 15, a highlighted one some 50), between two
# looks for a live change in flight (``foreground.wait_turn``): well under 2 ms each (2,048
# lines of the costliest pass, ``not_one_cell`` on lines of wide characters: about 1.5 ms),
# where a 100,000-line list held the interpreter 0.1-0.17 s in one go.
SLICE = 2048
EACH = 64
EACH_HIGHLIGHTED = 32


# Characters known to take one cell each: printable ASCII, and every printable character a
# measured line held that ``rich.cells`` gives one cell (``→``, ``✓``: an event log's lines).
# A line made of these alone is as many cells as it is long, which a set test tells without
# a lookup per character (a 100,000-line event log's widest line: 0.9 s of the UI thread
# measured through ``rich.cells``, 0.2-0.3 s so, see ``trace_view.widest_code``). Bounded
# (``ONE_CELL_MAX``): hostile text cannot grow it without end. A set is safe to test from
# any thread while another adds to it.
_ONE_CELL: set[str] = {chr(c) for c in range(0x20, 0x7F)}
ONE_CELL_MAX = 4096


def one_cell(text: str, *, learn: bool = False) -> bool:
    """Whether every character of ``text`` takes one cell (then ``len`` is its cells).
    ``learn``: characters not known yet are looked up (and kept) instead of answering no."""
    if _ONE_CELL.issuperset(text):
        return True
    if not learn:
        return False
    _learn(text)
    return _ONE_CELL.issuperset(text)


def _learn(text: str) -> None:
    # Joiners and variation selectors (which change their neighbours' widths) take no cell
    # of their own: never kept, so a text holding one is always measured by ``rich``.
    if len(_ONE_CELL) < ONE_CELL_MAX:
        for char in set(text).difference(_ONE_CELL):
            if char.isprintable() and get_character_cell_size(char) == 1:
                _ONE_CELL.add(char)


# (size of _ONE_CELL, a character not known to take one cell nor a line break, a text of
# known characters and line breaks alone)
_PATTERNS: tuple[int, re.Pattern[str], re.Pattern[str]] | None = None


def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    global _PATTERNS
    if _PATTERNS is None or _PATTERNS[0] != len(_ONE_CELL):
        known = "".join(re.escape(char) for char in sorted(_ONE_CELL))
        _PATTERNS = (len(_ONE_CELL), re.compile(f"[^{known}\\n]"), re.compile(f"[{known}\\n]*"))
    return _PATTERNS[1], _PATTERNS[2]


def not_one_cell(texts: list[str]) -> list[int]:
    """Indexes (ascending) of the ``texts`` holding a character that does not take exactly
    one cell: ``one_cell(texts[i], learn=True)`` is false for those alone. One scan of the
    texts joined, by a compiled character class, with a lookup per character not known
    yet, not a set test per text (100,000 event-log lines: about 15 ms against 100)."""
    if not texts:
        return []
    joined = "\n".join(texts)
    found: set[int] = set()
    if joined.count("\n") != len(texts) - 1:  # a text holding a line break (no cell)
        found.update(compress(range(len(texts)), map(contains, texts, repeat("\n"))))
    elif _patterns()[1].fullmatch(joined):
        return []  # every character known (the common case: one pass)
    starts = list(accumulate(map(add, map(len, texts), repeat(1)), initial=0))
    pos = 0
    while (match := _patterns()[0].search(joined, pos)) is not None:
        char = match.group()
        _learn(char)
        if char in _ONE_CELL:
            continue  # one cell after all: the pattern now takes it; search again from here
        index = bisect_right(starts, match.start()) - 1
        found.add(index)
        pos = starts[index + 1]  # on to the next text
    return sorted(found)


def cells(text: str) -> int:
    """Terminal cells ``text`` takes, as ``rich.cells.cell_len`` counts them (wide characters
    two, controls and joiners none); its length when every character is known to take one."""
    if _ONE_CELL.issuperset(text):
        return len(text)
    count = cell_len(text)
    _learn(text)
    return count


def shown_code(t: TraceLine) -> str:
    """The code part of one trace line as one row of cells: tabs expanded, every control as
    its picture, trailing blanks dropped. A line of an event log shown raw (``4→ draft ✗
    timeout``) loses the state mark the gutter already shows (``4→ draft timeout``)."""
    text = visible_name(t.text.expandtabs(4)).rstrip()
    mark = _LOG_MARKS.get(t.state) if t.state is not None else None
    if mark is not None and mark in text and STEP_RE.match(text):
        text = _MARK_AFTER[mark].sub("", text, count=1)
    return text


def one_cell_code_cells(t: TraceLine) -> int:
    """Cells of ``shown_code(t)`` for a line whose characters all take one cell (see
    ``one_cell``: no tab, no control), without building the shown text: its length less
    trailing blanks and the state mark dropped."""
    text = t.text.rstrip()
    mark = _LOG_MARKS.get(t.state) if t.state is not None else None
    if mark is not None and mark in text and STEP_RE.match(text):
        found = _MARK_AFTER[mark].search(text)
        if found is not None:
            return len(text) - (found.end() - found.start())
    return len(text)


def shown_note(t: TraceLine) -> str | None:
    """The annotation as shown (``# --> bindings/a.md (complete)``), ``None`` when the line
    has none or its text already says every word of it (an event-log line whose parser put
    part of the line in the note: ``3→ #7 done`` with note ``done``)."""
    note = t.note
    if not note or not note.strip():
        return None
    if (STEP_RE.match(t.text) or TERMINATOR_RE.match(t.text)) and all(w in t.text for w in note.split()):
        return None
    note = visible_name(note.expandtabs(4)).strip()
    return note if note.startswith("#") else f"# {note}"


def fits_beside(code_cells: int, note_cells: int, avail: int) -> bool:
    """Whether an annotation of ``note_cells`` stands on the code's row, right-aligned
    ``RIGHT_MARGIN`` cells from the edge of the ``avail`` cells right of the gutter."""
    return avail <= 0 or code_cells + SEPARATION + note_cells + RIGHT_MARGIN <= avail


def note_indent(code_indent: int, avail: int) -> int:
    """Cells before an annotation's continuation rows: under the code, indented a little,
    and never so far that fewer than ``MIN_NOTE_WIDTH`` cells are left."""
    return max(0, min(code_indent + NOTE_INDENT, avail - RIGHT_MARGIN - MIN_NOTE_WIDTH))


def wrap(text: str, width: int) -> list[str]:
    """``text`` in rows of at most ``width`` cells: broken at spaces where it can be, a word
    longer than a row cut across rows. Never an empty list; ``width`` below 2 counts as 2
    (a wide character takes two cells)."""
    width = max(2, width)
    if cells(text) <= width:
        return [text]
    rows: list[str] = []
    row, row_cells = "", 0
    for word in text.split(" "):
        word_cells = cells(word)
        joined = row_cells + 1 + word_cells if row else word_cells
        if joined <= width:
            row, row_cells = (f"{row} {word}" if row else word), joined
            continue
        if row:
            rows.append(row)
        if word_cells <= width:
            row, row_cells = word, word_cells
        else:
            *whole, row = chop_cells(word, width)
            rows.extend(whole)
            row_cells = cells(row)
    rows.append(row)
    return rows


def note_rows(t: TraceLine, avail: int) -> list[str]:
    """The annotation of ``t`` on continuation rows at ``avail`` cells (right of the gutter),
    indentation included; ``[]`` when it has none or it stands beside the code."""
    note = shown_note(t)
    if note is None:
        return []
    code = shown_code(t)
    if fits_beside(cells(code), cells(note), avail):
        return []
    indent = note_indent(len(code) - len(code.lstrip(" ")), avail)
    return [" " * indent + row for row in wrap(note, avail - indent - RIGHT_MARGIN)]


def rows_of(t: TraceLine, avail: int) -> int:
    """Screen rows line ``t`` takes at ``avail`` cells: 1, plus its continuation rows.

    The same answer as ``1 + len(note_rows(t, avail))``; plain ASCII program lines (the
    common case) are counted from lengths, without building the rows."""
    note, text = t.note, t.text
    if not note or avail <= 0:
        return 1
    if not (text.isascii() and note.isascii() and text.isprintable() and note.isprintable()):
        return 1 + len(note_rows(t, avail))  # measured as shown
    if len(text) + SEPARATION + len(note) + 2 + RIGHT_MARGIN <= avail:
        return 1  # fits beside however it is shown (the common case)
    if STEP_RE.match(text) or TERMINATOR_RE.match(text):
        return 1 + len(note_rows(t, avail))  # a log line: its note may be left out
    note = note.strip()
    if not note:
        return 1
    if not note.startswith("#"):
        note = f"# {note}"
    code = text.rstrip()
    if fits_beside(len(code), len(note), avail):
        return 1
    width = max(2, avail - note_indent(len(code) - len(code.lstrip(" ")), avail) - RIGHT_MARGIN)
    return 2 if len(note) <= width else 1 + _ascii_rows(note, width)


def _ascii_rows(text: str, width: int) -> int:
    """``len(wrap(text, width))`` for printable ASCII ``text``, from lengths alone."""
    count, row = 0, 0  # rows done; cells of the row being filled (0: none yet)
    for word in text.split(" "):
        size = len(word)
        joined = row + 1 + size if row else size
        if joined <= width:
            row = joined
            continue
        if row:
            count += 1
        if size <= width:
            row = size
        else:
            pieces = -(-size // width)
            count += pieces - 1
            row = size - (pieces - 1) * width
    return count + 1


class RowIndex:
    """Rows per line (1 + continuation rows) with their prefix sums (a Fenwick tree).

    ``start(i)`` is line ``i``'s first row, ``find(row)`` the line shown at ``row``;
    ``set``/``append``/``truncate`` keep both in O(log n).
    """

    def __init__(self) -> None:
        self._tree = array("i", [0])
        self.total = 0

    def __len__(self) -> int:
        return len(self._tree) - 1

    def reset(self, counts: Iterable[int]) -> None:
        """Rows per line for every line, in order (O(n), in C, by ``in_turns``: node ``i`` holds
        the rows of lines ``i - lowbit(i)`` to ``i - 1``, a difference of two prefix sums)."""
        prefix = [0]
        counted = iter(counts)
        while True:
            wait_turn()
            piece = list(islice(counted, SLICE))
            if not piece:
                break
            prefix.extend(islice(accumulate(piece, initial=prefix[-1]), 1, None))
        n = len(prefix) - 1
        tree = array("i", [0])
        for start, stop in in_turns(n, SLICE):
            nodes = range(start + 1, stop + 1)
            starts = map(sub, nodes, map(and_, nodes, map(neg, nodes)))  # i - lowbit(i)
            tree.extend(map(sub, prefix[start + 1:stop + 1], map(prefix.__getitem__, starts)))
        self._tree = tree
        self.total = prefix[n]

    def reset_ones(self, n: int) -> None:
        """``reset`` with one row for each of ``n`` lines: node ``i`` holds ``lowbit(i)``."""
        tree = array("i", [0])
        for start, stop in in_turns(n, SLICE):
            nodes = range(start + 1, stop + 1)
            tree.extend(map(and_, nodes, map(neg, nodes)))
        self._tree = tree
        self.total = n

    def _prefix(self, i: int) -> int:
        """Rows of lines ``0..i-1``."""
        tree, total = self._tree, 0
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    def start(self, index: int) -> int:
        """First row of line ``index`` (``total`` past the end)."""
        return self._prefix(min(max(0, index), len(self)))

    def rows(self, index: int) -> int:
        return self._prefix(index + 1) - self._prefix(index)

    def set(self, index: int, count: int) -> None:
        delta = count - self.rows(index)
        if not delta:
            return
        self.total += delta
        tree, i, n = self._tree, index + 1, len(self)
        while i <= n:
            tree[i] += delta
            i += i & -i

    def append(self, count: int) -> None:
        i = len(self._tree)
        # node i covers lines (i - lowbit(i), i]: this line plus the ones before it in range
        self._tree.append(count + self._prefix(i - 1) - self._prefix(i - (i & -i)))
        self.total += count

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` lines."""
        if n < len(self):
            del self._tree[n + 1:]
            self.total = self._prefix(n)

    def find(self, row: int) -> int:
        """The line shown at ``row`` (0 before the start, the last line past the end)."""
        n = len(self)
        if n == 0:
            return 0
        pos, rest = 0, max(0, row)
        step = 1 << n.bit_length()
        tree = self._tree
        while step:
            nxt = pos + step
            if nxt <= n and tree[nxt] <= rest:
                pos = nxt
                rest -= tree[nxt]
            step >>= 1
        return min(pos, n - 1)


# -- a whole list laid out at once (a run's full read, on the thread that read it) ---------------

# A statement's state as a small number (0: none), found by the id of its (singleton) member:
# ``Enum.__hash__`` is Python code, an id's is not; and a small number is no new object (a
# list of 100,000 ids took 2-3 ms to free, in one go).
_STATE_CODE = {id(state): code for code, state in enumerate((None, *StatementState))}
_NO_STATE = 0
END_CODES = frozenset(_STATE_CODE[id(s)] for s in (None, StatementState.COMPLETE, StatementState.SKIPPED,
                                                     StatementState.FAILED))
LIVE_CODES = frozenset(_STATE_CODE[id(s)] for s in (StatementState.EXECUTING, StatementState.RETRYING))


def _state_codes(lines: list[TraceLine]) -> Iterator[int]:
    """The code (``_STATE_CODE``) of each line's state."""
    return map(_STATE_CODE.__getitem__, map(id, map(_STATE, lines)))


def _release(values: list) -> None:
    """Empty ``values`` a slice at a time (a whole list of 100,000 numbers: 2-3 ms to free)."""
    while values:
        wait_turn()
        del values[-SLICE:]


_TEXT, _STATE, _NOTE = attrgetter("text"), attrgetter("state"), attrgetter("note")
UNMEASURED = -1


def _code_cells(t: TraceLine) -> int:
    text = t.text
    if text.isascii() and text.isprintable():
        return len(text.rstrip())
    return cells(shown_code(t))


def widest_code(lines: list[TraceLine]) -> int:
    """Cells of the widest code among ``lines`` (what the trace scrolls across), O(lines).
    A line of one-cell characters (nearly all) is measured by its length: a 100,000-event
    log took 0.9 s of the UI thread measured through ``rich.cells``, 0.2-0.3 s so."""
    return widest(lines, array("i"))


def widest(lines: list[TraceLine], sizes: array) -> int:
    """``widest_code``, filling ``sizes`` with each line's cells, or ``UNMEASURED`` for a line
    of one-cell characters that cannot be wider than the widest (by its length, or by a
    tighter bound, ``_bounds``, when its length is more than the widest).

    Lines holding a character of another width are measured, then the longest line; the
    others widest bound first, until one's bound is no more than the widest measured. A
    100,000-line event log whose lines grow longer (``99→``, ``100→``) was measured line by
    line: 0.4-0.9 s of the UI thread when a whole read replaced the first screen; a line or
    two now (a bound is exact for a line without trailing blanks, its state mark left out)."""
    texts: list[str] = []
    states: list[int] = []
    for start, stop in in_turns(len(lines), SLICE):
        piece = lines[start:stop]
        texts.extend(map(_TEXT, piece))
        states.extend(_state_codes(piece))
    return _widest(lines, texts, states, sizes)


# The least a state mark the shown code drops takes: a blank and the mark.
_MARK_DROP = 1 + min(map(len, _LOG_MARKS.values()))
# By the code of a line's state (``_STATE_CODE``), whether a one-cell text (blanks stripped
# from its end) is a step line for sure (decimal digits, then the arrow: ``STEP_RE``, whose
# ``.*$`` then matches, as a one-cell text holds no line break) holding the state's mark as
# a word of its own (a blank before it, a blank or the end after it): then its shown code
# drops at least ``_MARK_DROP`` cells (``_MARK_AFTER``). One match in C: about 0.2 µs.
_MARK_DROPPED = {_STATE_CODE[id(state)]: re.compile(rf"[0-9]+→.* {re.escape(mark)}(?: |\Z)").match
                 for state, mark in _LOG_MARKS.items()}


def _bounds(texts: list[str], states: list[int]) -> list[int]:
    """The most cells each text's shown code can take when every character of it takes one
    (``one_cell_code_cells``), ``states`` the codes of the lines' states: its length less
    trailing blanks, less a blank and the state mark where the shown code drops it for sure
    (``_MARK_DROPPED``: an event log's ``4→ draft ✓ [10:02:11]``, 19 cells, not 21). In C but
    for one subtraction per such line (about 0.5 µs a line against 2-4 to measure it);
    meaningless for other texts (they are measured)."""
    stripped = list(map(str.rstrip, texts))
    bounds = list(map(len, stripped))
    for code, dropped in _MARK_DROPPED.items():
        picked = list(compress(range(len(texts)), map(code.__eq__, states)))
        for i in compress(picked, map(dropped, map(stripped.__getitem__, picked))):
            bounds[i] -= _MARK_DROP
    return bounds


def _widest(lines: list[TraceLine], texts: list[str], states: list[int], sizes: array) -> int:
    """``widest`` given the lines' texts and the codes of their states (``_STATE_CODE``)."""
    count = len(lines)
    sizes.extend(array("i", [UNMEASURED]) * count)
    odd: list[int] = []
    lengths: list[int] = []  # a one-cell text's length: the most cells its shown code takes
    for start, stop in in_turns(count, SLICE):
        piece = texts[start:stop]
        odd.extend(map(add, not_one_cell(piece), repeat(start)))
        lengths.extend(map(len, piece))
    most = 0
    for i in turn_every(odd, EACH):
        size = sizes[i] = measured(lines[i])
        most = max(most, size)
        lengths[i] = UNMEASURED  # measured: out of the walks below
    # The longest one-cell line first: often the widest, and then none is longer.
    at = _first_most(lengths)
    if at >= 0 and lengths[at] > most:
        size = sizes[at] = measured(lines[at])
        most = max(most, size)
        lengths[at] = UNMEASURED
    # The lines longer than that (an event log's: each as long as the widest with its state
    # mark), widest bound first, until a bound is no more than the widest measured.
    longer: list[int] = []
    for start, stop in in_turns(count, SLICE):
        longer.extend(compress(range(start, stop), map(gt, lengths[start:stop], repeat(most))))
    bounds: list[int] = []  # of ``longer[k]``
    for start, stop in in_turns(len(longer), SLICE):
        picked = longer[start:stop]
        bounds.extend(_bounds(list(map(texts.__getitem__, picked)), list(map(states.__getitem__, picked))))
    top = _first_most(bounds)
    if top >= 0 and bounds[top] > most:
        size = sizes[longer[top]] = measured(lines[longer[top]])
        most = max(most, size)
        bounds[top] = UNMEASURED
    wider = [sorted(compress(range(start, stop), map(gt, bounds[start:stop], repeat(most))),
                    key=bounds.__getitem__, reverse=True) for start, stop in in_turns(len(bounds), SLICE)]
    for k in turn_every(merge(*wider, key=bounds.__getitem__, reverse=True), EACH):
        if bounds[k] <= most:
            break  # this line and every one after it: one-cell, at most ``most`` cells
        size = sizes[longer[k]] = measured(lines[longer[k]])
        most = max(most, size)
    _release(longer)
    return most


def _first_most(values: list[int]) -> int:
    """The index of the first of the greatest of ``values`` (by ``in_turns``), -1 for none."""
    most, at = UNMEASURED, -1
    for start, stop in in_turns(len(values), SLICE):
        here = max(values[start:stop])
        if here > most:
            most, at = here, values.index(here, start, stop)
    return at


def measured(t: TraceLine) -> int:
    """Cells of line ``t``'s code as shown (``widest_code``'s measure)."""
    return one_cell_code_cells(t) if one_cell(t.text, learn=True) else _code_cells(t)


def gutter_cells(count: int) -> int:
    """Cells of the gutter (line number, state glyph) of a trace of ``count`` lines."""
    return len(str(count)) + 3


def settle_blocks(lines: list[TraceLine], blocks: list[int], block_open: dict[int, bool], start: int) -> dict[int, bool]:
    """Whether a triple-quoted block is open after each line holding one (``blocks``: their
    indexes, ascending), from index ``start`` on; ``block_open`` is what was known before
    (kept for the lines before ``start``). Returns the new mapping."""
    pos = bisect_left(blocks, start)
    state = block_open.get(blocks[pos - 1], False) if pos > 0 else False
    settled = {i: block_open[i] for i in blocks[:pos] if i in block_open}
    for i in turn_every(blocks[pos:], EACH_HIGHLIGHTED):
        _, state = highlight(shown_code(lines[i]), state)
        settled[i] = state
    return settled


@dataclass(slots=True)
class TraceLayout:
    """What ``TraceView`` keeps per line of a list it shows, worked out for the whole list at
    once: rows per line at ``avail`` cells (``RowIndex``), each line's code cells (``sizes``,
    ``UNMEASURED`` where not needed) and the widest (``widest``, ``widest_count`` lines that
    wide), the lines holding triple quotes (``blocks``) and whether a block is open after
    each (``block_open``), the indexes executing or retrying (``live``) or not ended
    (``open``), whether any line has a state (``has_state``).

    ``of`` makes one on any thread: a run's full read is laid out on the thread that read it,
    for the width the trace had then (``content_width``), and the UI thread only takes it
    (``TraceView.set_lines``): a 100,000-event log took it 0.1-0.25 s of the UI thread, a live
    change waiting behind (issue 33). ``lines`` is the list as it was laid out (a copy: the
    run's own list may grow or change in place meanwhile; the taker compares the two)."""

    lines: list[TraceLine]
    content_width: int
    avail: int
    rows: RowIndex
    sizes: array
    widest: int
    widest_count: int
    blocks: list[int]
    block_open: dict[int, bool]
    live: set[int]
    open: set[int]
    has_state: bool

    @classmethod
    def of(cls, lines: list[TraceLine], content_width: int) -> TraceLayout:
        """``lines`` laid out for a trace ``content_width`` cells wide (0 or less: not sized
        yet, every line one row), O(lines), largely in C, a slice at a time (``in_turns``,
        ``each``): in a background read, a live change goes first between two (100,000 lines
        held the interpreter 0.15-0.2 s in one go, issue 33)."""
        lines = list(lines)  # the list as it is now, whatever another thread does to it
        count = len(lines)
        avail = content_width - gutter_cells(count) if content_width > 0 else -1
        texts: list[str] = []
        states: list[int] = []  # codes (``_STATE_CODE``)
        blocks: list[int] = []
        noted: list[int] = []
        for start, stop in in_turns(count, SLICE):
            piece, indexes = lines[start:stop], range(start, stop)
            texts.extend(map(_TEXT, piece))
            blocks.extend(compress(indexes, map(contains, texts[start:stop], repeat('"""'))))
            states.extend(_state_codes(piece))
            noted.extend(compress(indexes, map(_NOTE, piece)))
        sizes = array("i")
        most = _widest(lines, texts, states, sizes)
        rows = RowIndex()
        if noted and avail > 0:
            counts = array("i", [1]) * count
            for i in turn_every(noted, EACH):
                counts[i] = rows_of(lines[i], avail)
            rows.reset(counts)
            _release(noted)
        else:
            rows.reset_ones(count)
        live: set[int] = set()
        unended: set[int] = set()
        has_state = False
        widest_count = 0
        for start, stop in in_turns(count, SLICE):
            codes, indexes = states[start:stop], range(start, stop)
            live.update(compress(indexes, map(LIVE_CODES.__contains__, codes)))
            unended.update(compress(indexes, map(not_, map(END_CODES.__contains__, codes))))
            has_state = has_state or not all(map(_NO_STATE.__eq__, codes))
            widest_count += sizes[start:stop].count(most)
        return cls(lines=lines, content_width=content_width, avail=avail, rows=rows, sizes=sizes, widest=most,
                   widest_count=widest_count, blocks=blocks, block_open=settle_blocks(lines, blocks, {}, 0),
                   live=live, open=unended, has_state=has_state)
