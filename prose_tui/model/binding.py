"""Bindings: the named values a run produced (seeds/filesystem.md, bindings/)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from pathlib import Path

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key ordering digit runs by value: ``s2`` before ``s10``, ``parts__2`` before
    ``parts__10``; letters compare case-folded. Parts are tagged so a number and a word at
    the same place compare (a number first) instead of raising ``TypeError``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part.casefold())
                 for part in _DIGITS.split(text) if part)


def write_sorted(bindings: Sequence[Binding], placed: Mapping[int, int]) -> list[Binding]:
    """``bindings`` in the order the run wrote them, as far as it records it, in three bands:
    those ``placed`` (index in ``bindings`` -> where the run's record puts the write: an
    event's or a trace line's position) by that position, then the execution id (ids grow as
    the run goes); then those the backend ``listed`` (an Index row, a table row) by that;
    then the rest in natural order (``s2`` before ``s10``) of service, name and execution
    id. Never file times nor a folder's listing order: a clone or copy gives every file the
    same time, and filesystems list in different orders. A new list, deterministic."""
    def key(item: tuple[int, Binding]) -> tuple[Any, ...]:
        i, b = item
        eid = b.execution_id if b.execution_id is not None else -1
        if i in placed:
            return (0, placed[i], eid, b.listed if b.listed is not None else -1, i)
        if b.listed is not None:
            return (1, b.listed, eid, i)
        return (2, natural_key(b.service or ""), natural_key(b.name), eid, b.path.as_posix(), i)

    return [b for _i, b in sorted(enumerate(bindings), key=key)]


@dataclass(slots=True)
class Binding:
    """One binding file's metadata; its value is read on demand by the source.

    ``kind`` is input, output, let or const as written (``None`` when the file has no
    header). ``execution_id`` is ``None`` for root scope. ``value_offset`` is the byte
    offset where the value starts in ``path`` (after the ``---`` separator), so a view can
    show a window of a large value without reading the file whole. ``bytes`` is the file
    size. ``service`` is set for contract runs (``bindings/{service}/{name}.md``).
    ``exists`` is false for a binding the index names but whose file is missing.
    ``outside`` is true for a file that lies outside the run (a ``../`` or absolute path, a
    symlink resolving elsewhere: backends/common/contained.py): it is never read, its
    ``warning`` says "outside the run: not read" and ``bytes`` is 0.
    ``failure`` says what failed where the binding records it (a non-zero ``exit_code``
    field or line, an error line such as ``make: *** [all] Error 1``), else ``None``.
    ``listed`` is its place (0-based) in the run's own list of bindings where the backend
    reads one (a snapshot's Index row, a ``bindings`` table row in row order), else ``None``:
    the order the pane shows falls back to it (:func:`write_sorted`).
    """

    name: str
    path: Path
    kind: str | None = None
    execution_id: int | None = None
    source: str | None = None
    bytes: int = 0
    mtime: float | None = None
    value_offset: int = 0
    service: str | None = None
    exists: bool = True
    encrypted: bool = False
    fields: dict[str, str] | None = None
    warning: str | None = None
    outside: bool = False
    failure: str | None = None  # "exit 2 · make: *** [all] Error 2": a non-zero exit code or error line it records
    listed: int | None = None  # its row in the run's own listing (Index, bindings table), where there is one

    @property
    def scope(self) -> str:
        """``"root"`` or ``"execution N"``: the scope label a user reads."""
        return "root" if self.execution_id is None else f"execution {self.execution_id}"

    @property
    def anonymous(self) -> bool:
        """True for ``anon_NNN`` session outputs (seeds/filesystem.md, Anonymous Session Bindings)."""
        return self.name.startswith("anon_")
