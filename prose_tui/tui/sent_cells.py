"""Frames that send the terminal only what it does not show already (issue 33, bytes on the link).

Textual repaints a widget whole when it is refreshed whole, and sends every cell of every
region it repainted: the trace moving its cursor sent all its rows, the status line told
the same text sent its row again. Over SSH those bytes are what a user waits for. Here the
app keeps, per screen row, the pieces ("chops": one widget's cells on that row) it last
sent, and drops from each partial update (``ChopsUpdate``) the pieces the terminal already
shows, cell for cell, so a frame costs the rows that changed, as curses' screen diff does.

Only whole pieces are kept and compared; a piece sent cut (a partly repainted widget), or
one overlapping others sent since, is forgotten. A full repaint (``LayoutUpdate``: a new
screen size or layout), a new screen size or the app's return from a suspension (an editor
run in the terminal) forget everything: the next frame sends what it covers."""

from __future__ import annotations

from rich.segment import Segment
from textual._compositor import ChopsUpdate, CompositorUpdate
from textual.geometry import Size
from textual.strip import Strip

# A piece ending in a run of blanks sends one blank and ECH (erase characters, ``CSI n X``:
# the cells take the current background, the cursor stays) for the rest: a trace row of
# 30 characters in an 80-cell pane was 46 styled spaces more. Every terminal Textual
# supports erases with the background set (``bce``, as xterm, VTE, tmux, kitty, Windows
# Terminal do); False sends the spaces.
ERASE = True
ERASE_FROM = 8  # blanks at the end of a piece from which ECH is shorter


class SentCells:
    """What this app last sent to each terminal row: ``{y: {x: (end, strip)}}``, cells
    ``x`` to ``end`` (exclusive) showing ``strip``."""

    def __init__(self) -> None:
        self._rows: dict[int, dict[int, tuple[int, Strip]]] = {}
        self._size: Size | None = None
        self.dropped = 0  # pieces not sent (for tests and measurements)

    def forget(self) -> None:
        """The terminal may show anything (a full repaint, an editor run in it)."""
        self._rows.clear()

    def filter(self, update: CompositorUpdate, size: Size) -> CompositorUpdate | None:
        """``update`` without what the terminal shows already; ``None`` when nothing is left.
        ``size``: the screen's size (a new one forgets everything)."""
        if size != self._size:
            self._size = size
            self.forget()
        if not isinstance(update, ChopsUpdate):
            self.forget()  # a full repaint: every row sent whole, not as the pieces kept here
            return update
        chops = list(update.chops)
        spans: list[tuple[int, int, int]] = []
        rows = self._rows
        starts: dict[int, set[int]] = {}  # row -> where its spans start
        for y, x1, _x2 in update.spans:
            starts.setdefault(y, set()).add(x1)
        for y, x1, x2 in update.spans:
            line = chops[y]
            ends = update.chop_ends[y]
            sent = rows.setdefault(y, {})
            copy: dict[int, Strip | None] | None = None
            drawn = False
            for end, (x, strip) in zip(ends, line.items()):
                if strip is None or end <= x1:
                    continue  # not drawn by this span
                if x >= x2:
                    # Textual moves the cursor to a piece starting where the span ends and
                    # draws none of it (an empty crop): 9 bytes a row for nothing.
                    if x == x2 and x2 not in starts[y]:  # (not when another span draws it)
                        if copy is None:
                            copy = dict(line)
                        copy[x] = None
                    continue
                whole = x >= x1 and end <= x2
                had = sent.get(x)
                if whole and had is not None and had[0] == end and (had[1] is strip or had[1] == strip):
                    if copy is None:
                        copy = dict(line)
                    copy[x] = None  # the terminal shows it already
                    self.dropped += 1
                    continue
                drawn = True
                if whole and ERASE:
                    erased = _erased(strip)
                    if erased is not strip:
                        if copy is None:
                            copy = dict(line)
                        copy[x] = erased
                # Cells x .. min(end, x2) are written (Textual draws a piece cut at the
                # span's start from the piece's own start): pieces kept there are gone.
                stop = min(end, x2)
                for kx in [kx for kx, (kend, _) in sent.items() if kx < stop and kend > x]:
                    del sent[kx]
                if end <= x2:
                    sent[x] = (end, strip)
            if copy is not None:
                chops[y] = copy
            if drawn:
                spans.append((y, x1, x2))
        if not spans:
            return None
        return ChopsUpdate(chops, spans, update.chop_ends)


def _erased(strip: Strip) -> Strip:
    """``strip`` with its trailing blanks sent as one blank and ECH (``strip`` itself when
    it has not enough of them, or their style draws on blanks: underline, reverse...)."""
    segments = strip._segments
    if not segments:
        return strip
    text, style, control = segments[-1]
    if control or len(text) < ERASE_FROM or text.strip(" "):
        return strip
    if style is not None and (style.underline or style.reverse or style.strike or style.overline
                              or style.underline2 or style.link or style.blink or style.blink2):
        return strip
    # The erase goes inside the style's codes, so the cells take its background.
    return Strip([*segments[:-1], Segment(f" \x1b[{len(text) - 1}X", style)], strip.cell_length)
