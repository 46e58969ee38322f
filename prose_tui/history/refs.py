"""Where each event of a history points (``EventRef``), and a compact list of them for logs.

A log's history (``History.origin == "log"``) points each event at a trace line only, and
a long run has one per event: ``LineRefs`` keeps those as 4 bytes each (an ``array('i')``)
instead of an ``EventRef`` object each (about 70 bytes; issue 9's memory target is 1 KB
per event in all). It behaves as a list of ``EventRef``: an item read is made on the spot,
an item written must say nothing but a trace line.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload


@dataclass(slots=True)
class EventRef:
    """Where one event of a :class:`~prose_tui.history.timeline.History` points, beside the
    :class:`Event` itself.

    ``trace_line`` is the 1-based ``TraceLine.line`` of the statement it concerns in the
    run's trace (``None`` when none). ``path`` is the absolute binding or segment file a
    ``binding_written``/``agent_segment``/``removed`` note concerns (journal and
    reconstructed origins). ``revision`` is the sha256 (hex) of the ``state.md`` revision
    current *after* this event (journal origin; ``None`` elsewhere).
    """

    trace_line: int | None = None
    path: Path | None = None
    revision: str | None = None


_NONE = 0  # trace lines are 1-based: 0 stands for "no line"


def _packed(ref: EventRef) -> int:
    if ref.path is not None or ref.revision is not None:
        raise ValueError("a log history's refs hold trace lines only (no path, no revision)")
    line = ref.trace_line
    if line is not None and line <= 0:
        raise ValueError(f"trace lines are 1-based, not {line}")
    return _NONE if line is None else line


def _ref(line: int) -> EventRef:
    return EventRef(trace_line=None if line == _NONE else line)


class LineRefs(MutableSequence[EventRef]):
    """A list of ``EventRef`` that each name a trace line only (or none), stored as an
    ``array('i')``. Writing a ref with a ``path`` or ``revision`` raises ``ValueError``."""

    __slots__ = ("_lines",)

    def __init__(self, lines: Iterable[int | None] = ()) -> None:
        self._lines = array("i", (_NONE if t is None else t for t in lines))

    def extend_lines(self, lines: Iterable[int | None]) -> None:
        """Append a ref per trace line in ``lines`` (``None``: no line); what ``LineRefs(lines)``
        holds, built a slice at a time by a caller that gives way between slices."""
        self._lines.extend(_NONE if t is None else t for t in lines)

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> EventRef: ...

    @overload
    def __getitem__(self, index: slice) -> list[EventRef]: ...

    def __getitem__(self, index: int | slice) -> EventRef | list[EventRef]:
        if isinstance(index, slice):
            return [_ref(t) for t in self._lines[index]]
        return _ref(self._lines[index])

    @overload
    def __setitem__(self, index: int, value: EventRef) -> None: ...

    @overload
    def __setitem__(self, index: slice, value: Iterable[EventRef]) -> None: ...

    def __setitem__(self, index: int | slice, value: EventRef | Iterable[EventRef]) -> None:
        if isinstance(index, slice):
            assert not isinstance(value, EventRef)
            self._lines[index] = array("i", (_packed(r) for r in value))
        else:
            assert isinstance(value, EventRef)
            self._lines[index] = _packed(value)

    def __delitem__(self, index: int | slice) -> None:
        del self._lines[index]

    def insert(self, index: int, value: EventRef) -> None:
        self._lines.insert(index, _packed(value))

    def append(self, value: EventRef) -> None:
        self._lines.append(_packed(value))

    def __iter__(self) -> Iterator[EventRef]:
        return (_ref(t) for t in self._lines)

    def packed(self) -> array:
        """A copy of each ref's ``trace_line`` as an ``array('i')``, 0 for none (4 bytes each)."""
        return array("i", self._lines)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineRefs):
            return self._lines == other._lines
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    def __add__(self, other: Iterable[EventRef]) -> list[EventRef]:
        return [*self, *other]

    def __repr__(self) -> str:
        return f"LineRefs({[None if t == _NONE else t for t in self._lines]!r})"


def run_relative(path: Path, run_dir: Path) -> str:
    """``path`` relative to ``run_dir`` as a POSIX string (``bindings/x.md``), comparing
    resolved paths when the plain ones differ (a run reached through a link); ``path``
    itself (POSIX) when it is outside the run. Never raises."""
    try:
        return path.relative_to(run_dir).as_posix()
    except ValueError:
        try:
            return path.resolve().relative_to(run_dir.resolve()).as_posix()
        except (ValueError, OSError):
            return path.as_posix()
