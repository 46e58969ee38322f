"""A snapshot's ``## Execution Trace`` block annotated against the revision before it.

A VM rewrites ``state.md`` whole on every step (seeds/filesystem.md, the VM Update
Protocol), but from one revision to the next only a few trace lines change (the
executing marker moves, a line completes, lines are appended). :func:`annotate` compares
the block's lines with the previous revision's (same index, then the common prefix and
suffix when lines were inserted or removed) and annotates only the lines that differ
(``annotations.split_annotation``); every other line is the previous revision's
:class:`~prose_tui.model.TraceLine` object itself, so comparing two revisions' traces
costs an identity check per line. A triple-quoted string opened or closed by a changed
line re-annotates the lines after it until the string state agrees with the previous
revision again.

``TraceLine`` objects produced here are shared between revisions: they must not be
changed in place (replace a list item instead).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from itertools import compress
from operator import is_not, ne

from prose_tui.backends.common.annotations import split_annotation
from prose_tui.model import TraceLine

_BASES_KEPT = 16  # previous revisions kept (one per run parsed lately; each holds its raw lines)
# Annotations kept by (raw line, in-string state), newest last: as many as the kept
# revisions have lines, and this many more (lines a VM wrote once, e.g. an executing
# marker that moved on). Bounded by the runs, not by how long they were watched: a fixed
# 50,000 held ~20 MB of lines a long-watched VM had written once (issue 35).
_LINES_SPARE = 256
_LINES_KEPT = 50_000  # and never more than this

_annotations: OrderedDict[tuple[str, bool], tuple] = OrderedDict()
_bases: OrderedDict[object, TraceParse] = OrderedDict()
_base_lines = 0  # lines of the revisions in _bases
_lock = threading.Lock()


@dataclass(slots=True)
class TraceParse:
    """One revision's trace block: ``raws`` the lines as written, ``lines`` their
    annotations (one per raw line, trailing blank lines included), ``after`` the
    triple-quoted-string state after each line."""

    raws: list[str]
    lines: list[TraceLine]
    after: list[bool]

    def trace(self) -> list[TraceLine]:
        """The trace as ``snapshot.parse_trace_lines`` gives it (trailing blank lines
        without a note dropped); a new list each call."""
        lines = self.lines
        end = len(lines)
        while end and not lines[end - 1].text.strip() and lines[end - 1].note is None:
            end -= 1
        return lines[:end]


def _annotate(raw: str, in_string: bool, number: int) -> tuple[TraceLine, bool]:
    key = (raw, in_string)
    with _lock:
        hit = _annotations.get(key)
        if hit is not None:
            _annotations.move_to_end(key)
    if hit is None:
        ann, after = split_annotation(raw, in_string)
        hit = (ann.text, ann.state, ann.note, ann.binding, ann.attempt, ann.max_attempts, after)
        with _lock:
            _annotations[key] = hit
            if len(_annotations) > min(_base_lines + _LINES_SPARE, _LINES_KEPT):
                _annotations.popitem(last=False)
    text, state, note, binding, attempt, max_attempts, after = hit
    return TraceLine(line=number, text=text, state=state, note=note, binding=binding, attempt=attempt,
                     max_attempts=max_attempts), after


def _renumbered(old: TraceLine, number: int) -> TraceLine:
    return TraceLine(line=number, text=old.text, state=old.state, note=old.note, binding=old.binding,
                     attempt=old.attempt, max_attempts=old.max_attempts)


def _fresh(raws: list[str]) -> TraceParse:
    lines: list[TraceLine] = []
    after: list[bool] = []
    state = False
    for number, raw in enumerate(raws, start=1):
        line, state = _annotate(raw, state, number)
        lines.append(line)
        after.append(state)
    return TraceParse(raws, lines, after)


def _same_length(raws: list[str], base: TraceParse) -> TraceParse:
    """Lines replaced in place: annotate the ones that differ (and those after a changed
    string state until it agrees again)."""
    old_raws, old_lines, old_after = base.raws, base.lines, base.after
    lines, after = list(old_lines), list(old_after)
    todo = list(compress(range(len(raws)), map(ne, raws, old_raws)))
    n = len(raws)
    at = 0
    i = todo[0] if todo else n
    while i < n:
        line, state = _annotate(raws[i], after[i - 1] if i else False, i + 1)
        old = old_lines[i]
        lines[i] = old if line == old else line
        after[i] = state
        while at < len(todo) and todo[at] <= i:
            at += 1
        if state != old_after[i] and i + 1 < n:
            i += 1  # the string state after this line changed: the next line reads differently
        else:
            i = todo[at] if at < len(todo) else n
    return TraceParse(raws, lines, after)


def _reshaped(raws: list[str], base: TraceParse) -> TraceParse:
    """Lines inserted or removed: the common prefix is kept, the common suffix renumbered
    (annotated again only where the string state before it differs), the middle annotated."""
    old_raws, old_lines, old_after = base.raws, base.lines, base.after
    n, m = len(raws), len(old_raws)
    k = min(n, m)
    prefix = next(compress(range(k), map(ne, raws, old_raws)), k)
    suffix = next(compress(range(k - prefix), map(ne, reversed(raws), reversed(old_raws))), k - prefix)
    lines = old_lines[:prefix]
    after = old_after[:prefix]
    state = after[-1] if after else False
    for i in range(prefix, n - suffix):
        line, state = _annotate(raws[i], state, i + 1)
        lines.append(line)
        after.append(state)
    for j in range(suffix):
        oi, ni = m - suffix + j, n - suffix + j
        if state == (old_after[oi - 1] if oi else False):
            lines.append(_renumbered(old_lines[oi], ni + 1))
            state = old_after[oi]
        else:
            line, state = _annotate(raws[ni], state, ni + 1)
            lines.append(line)
        after.append(state)
    return TraceParse(raws, lines, after)


def annotate(content: str, key: object = None) -> TraceParse:
    """The trace block ``content`` (a fence's content) annotated; ``key`` names whose
    revisions these are (a run folder): the last revision parsed under the same key is the
    base unchanged lines are taken from. Equals ``snapshot.parse_trace_lines(content)``
    line for line (``TraceParse.trace``)."""
    raws = content.splitlines()
    with _lock:
        base = _bases.get(key)
    if base is None:
        parsed = _fresh(raws)
    elif len(raws) == len(base.raws):
        parsed = _same_length(raws, base)
    else:
        parsed = _reshaped(raws, base)
    global _base_lines
    with _lock:
        replaced = _bases.get(key)
        _bases[key] = parsed
        _bases.move_to_end(key)
        _base_lines += len(raws) - (len(replaced.raws) if replaced is not None else 0)
        while len(_bases) > _BASES_KEPT:
            _base_lines -= len(_bases.popitem(last=False)[1].raws)
        while len(_annotations) > min(_base_lines + _LINES_SPARE, _LINES_KEPT):
            _annotations.popitem(last=False)  # a run dropped or shorter: its lines go too
    return parsed


def changed_lines(old: list[TraceLine], new: list[TraceLine]) -> set[int] | None:
    """Indexes of ``new`` whose line differs from ``old``'s (lines past ``old``'s end
    included); ``None`` when ``new`` is shorter (a view redraws everything). Lines shared
    between the two lists cost an identity check."""
    if len(new) < len(old):
        return None
    candidates = compress(range(min(len(old), len(new))), map(is_not, old, new))
    changed = {i for i in candidates if old[i] != new[i]}
    changed.update(range(len(old), len(new)))
    return changed
