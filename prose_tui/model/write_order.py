"""The order a run wrote its bindings in, by the run's own record (never file times).

:func:`ordered_bindings` (the bindings pane, ``show``, ``show --json``) and
:func:`newest_binding` (the value pane) both ask :func:`write_order`, once per live change
and once per history step. Reading the whole event list each time cost 160 ms per call at
100,000 events, so the events are indexed once by what they wrote (:class:`EventIndex`) and
the index grows with the list: a change costs the events it added, a history step (a prefix
of the same events) costs nothing. Plain data, no I/O, no Textual.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from prose_tui.model.binding import Binding, natural_key, write_sorted
from prose_tui.model.event import Event, EventKind
from prose_tui.model.run import Run
from prose_tui.model.statement import StatementState

__all__ = ["EventIndex", "binding_of_event", "binding_written_last", "newest_binding", "ordered_bindings", "write_order"]

_STATEMENT_ENDS = (EventKind.STATEMENT_COMPLETED, EventKind.STATEMENT_FAILED)


def binding_of_event(event: Event, bindings: Sequence[Binding]) -> Binding | None:
    """The existing binding a ``binding_written`` ``event`` wrote: the file its text names
    (``wrote bindings/parts__3.md``), then its name within the event's execution id, then its
    name in any scope (scoped bindings share a name: pass 1's ``parts`` is not pass 3's)."""
    written = [b for b in bindings if b.exists]
    for found in (next((b for b in written if f"/{b.path.name}" in event.text), None),
                  next((b for b in written if event.name in (b.name, b.path.stem)
                        and b.execution_id == event.execution_id), None),
                  next((b for b in written if event.name in (b.name, b.path.stem)
                        or (b.path.stem and b.path.stem in event.text)), None)):
        if found is not None:
            return found
    return None


def _add(table: dict, key: object, n: int) -> None:
    """Append position ``n`` to ``table[key]``: one int while there is one (most names end
    one statement), an ``array`` of them from the second on."""
    held = table.get(key)
    if held is None:
        table[key] = n
    elif isinstance(held, int):
        table[key] = array("q", (held, n))
    else:
        held.append(n)


def _pick(held: int | array[int] | None, limit: int, first: bool) -> int:
    """The earliest (``first``) or latest position in ``held`` below ``limit``; -1 for none."""
    if held is None:
        return -1
    if isinstance(held, int):
        return held if held < limit else -1
    stop = bisect_left(held, limit)
    if not stop:
        return -1
    return held[0] if first else held[stop - 1]


class EventIndex:
    """A run's events indexed by what they wrote, for :func:`write_order`.

    Statement ends (``statement_completed``/``statement_failed``, an event log's
    ``5-> linus ✓``) by name: ``unscoped`` for those without an execution id, ``scoped`` by
    (name, execution id) for the others, with ``scopes`` naming the execution ids seen per
    name; ``written``: the positions of ``binding_written`` events (narration, journals),
    matched to bindings lazily and kept while the bindings are the same. Positions are
    0-based and ascending; a key with one position holds the int (a log whose every step has
    its own name costs about 100 bytes an event, not 370).

    An index covers ``size`` events of the list it was built from and answers for any list
    that holds the same first ``size`` events (the same objects) or a prefix of them: the
    live list after it grew (:meth:`extend`), a history view as of a cursor (a slice).
    Lists are only ever changed at their end (a tail rolled back and parsed again) or
    replaced whole; a list whose first event or whose last indexed event is another object
    gets a new index.
    """

    __slots__ = ("events", "size", "head", "last", "unscoped", "scoped", "scopes", "written", "_matched_for",
                 "_matched", "_looked")

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.size = 0
        self.head: Event | None = None
        self.last: Event | None = None
        self.unscoped: dict[str, int | array[int]] = {}
        self.scoped: dict[tuple[str, int], int | array[int]] = {}
        self.scopes: dict[str, int | set[int]] = {}  # a name's execution ids: one int, a set from the second
        self.written: array[int] = array("q")
        self._matched_for: list[Binding] | None = None  # the bindings ``_matched`` was made for
        self._matched: list[tuple[int, int]] = []  # (position, binding index) per written event matched
        self._looked = 0  # written events looked at for ``_matched``
        self.extend(events)

    def continued_by(self, events: list[Event]) -> bool:
        """``events`` starts with every event indexed (the same objects)."""
        size = self.size
        return 0 < size <= len(events) and events[0] is self.head and events[size - 1] is self.last

    def prefix_of(self, events: list[Event]) -> bool:
        """``events`` is a prefix of the events indexed (a history view as of a cursor), and
        the list indexed still holds them."""
        n = len(events)
        return (0 < n < self.size and events[0] is self.head and events[n - 1] is self.events[n - 1]
                and self.continued_by(self.events))

    def extend(self, events: list[Event]) -> None:
        """Index ``events[self.size:]`` (``events`` continues the list indexed) and follow
        ``events`` from now on."""
        unscoped, scoped, scopes, written = self.unscoped, self.scoped, self.scopes, self.written
        for n in range(self.size, len(events)):
            event = events[n]
            kind = event.kind
            if kind is EventKind.BINDING_WRITTEN:
                written.append(n)
            elif kind in _STATEMENT_ENDS and (name := event.name):
                eid = event.execution_id
                if eid is None:
                    _add(unscoped, name, n)
                else:
                    _add(scoped, (name, eid), n)
                    seen = scopes.get(name)
                    if seen is None:
                        scopes[name] = eid
                    elif isinstance(seen, int):
                        if seen != eid:
                            scopes[name] = {seen, eid}
                    else:
                        seen.add(eid)
        self.events = events
        if events:
            self.head = events[0]
            self.size = len(events)
            self.last = events[-1]

    def place(self, bindings: Sequence[Binding], limit: int, first: bool) -> dict[int, int]:
        """Where each of ``bindings`` (by index) was written among the first ``limit`` events:
        the latest (or with ``first`` the earliest) ``binding_written`` event that names it,
        or statement end named like it (in its execution id, or without one) or like its
        contract service (any execution id); bindings no event places are absent."""
        order: dict[int, int] = {}
        unscoped, scoped, scopes = self.unscoped, self.scoped, self.scopes
        for i, b in enumerate(bindings):
            best = -1
            for key in {b.name, b.service or b.name}:
                found = [_pick(unscoped.get(key), limit, first)]
                if b.service == key:  # a contract's service: its statement in any scope
                    eids = scopes.get(key, ())
                    found += [_pick(scoped.get((key, eid)), limit, first)
                              for eid in ((eids,) if isinstance(eids, int) else eids)]
                elif b.execution_id is not None:
                    found.append(_pick(scoped.get((key, b.execution_id)), limit, first))
                for n in found:
                    if n >= 0 and (best < 0 or (n < best if first else n > best)):
                        best = n
            if best >= 0:
                order[i] = best
        if self.written:
            for n, i in self._written_matches(bindings):
                if n >= limit:
                    break
                if i not in order or (n < order[i] if first else n > order[i]):
                    order[i] = n
        return order

    def _written_matches(self, bindings: Sequence[Binding]) -> list[tuple[int, int]]:
        """(position, binding index) for each ``binding_written`` event that names one of
        ``bindings`` (:func:`binding_of_event`), ascending; kept while ``bindings`` is equal."""
        if self._matched_for is None or self._matched_for != list(bindings):
            self._matched_for = list(bindings)
            self._matched = []
            self._looked = 0
        if self._looked < len(self.written):
            index = {id(b): i for i, b in enumerate(bindings)}
            for n in self.written[self._looked:]:
                found = binding_of_event(self.events[n], bindings)
                if found is not None:
                    self._matched.append((n, index[id(found)]))
            self._looked = len(self.written)
        return self._matched


_KEPT = 2  # indexes kept: the run shown, and one more (the run shown before, a compared run)
_indexes: list[EventIndex] = []  # most recently used first
_lock = threading.Lock()  # the UI thread and the live worker may both ask


def _index_for(events: list[Event]) -> EventIndex:
    """The index answering for ``events`` (made, grown or reused)."""
    with _lock:
        for k, index in enumerate(_indexes):
            if index.continued_by(events):
                if index.events is not events or len(events) > index.size:
                    index.extend(events)
            elif index.events is events:  # the same list, changed at its end (a tail parsed again)
                index = EventIndex(events)
            elif index.prefix_of(events):
                return index
            else:
                continue
            del _indexes[k]
            _indexes.insert(0, index)
            return index
        index = EventIndex(events)
        _indexes.insert(0, index)
        del _indexes[_KEPT:]
        return index


def write_order(run: Run, *, first: bool = False) -> dict[int, int]:
    """Where each binding (by its index in ``run.bindings``) comes in the order the run wrote
    them, as the run records it: its latest ``binding_written`` event in ``run.events``
    (narration, journals) or the latest completed or failed statement named like it
    or its contract service (event logs), else the last entered trace line whose ``-->``
    annotation names its file (``state.md`` is written in execution order). With ``first``,
    the earliest such event or line instead (where a binding first appeared: a loop that
    rewrites it does not move it). A scoped binding the record does not name (``parts__41``
    when only ``parts__43`` is annotated) takes the place of its namesake: the same statement
    wrote it. Bindings the run does not place are absent. File times are no evidence: a copy
    or clone scrambles them. Cost: the events added since the last call on the same events
    (:class:`EventIndex`), then the bindings."""
    order: dict[int, int] = {}
    if not run.bindings:
        return order
    if run.events:
        order = _index_for(run.events).place(run.bindings, len(run.events), first)
    if not order:
        by_rel: dict[str, int] = {}
        prefix = f"{run.path.as_posix().rstrip('/')}/"  # not Path.relative_to: 0.1 s per 10,000 bindings
        for i, b in enumerate(run.bindings):
            if (text := b.path.as_posix()).startswith(prefix):
                by_rel[text[len(prefix):]] = i
        for n, line in enumerate(run.trace):
            if line.binding and line.state not in (None, StatementState.NEXT, StatementState.PENDING):
                i = by_rel.get(line.binding.removeprefix("./"), -1)
                if i >= 0 and (not first or i not in order):
                    order[i] = n
    return _namesakes(run.bindings, order) if 0 < len(order) < len(run.bindings) else order


def binding_written_last(events: list[Event], bindings: Sequence[Binding], upto: int) -> Binding | None:
    """The binding the latest ``binding_written`` event among ``events[:upto + 1]`` names
    (:func:`binding_of_event`), ``None`` when none names one of ``bindings``: the value a
    history step shows. Cost: the ``binding_written`` events looked at, not the events."""
    if not events or not bindings:
        return None
    index = _index_for(events)
    written = index.written
    for k in range(bisect_right(written, upto) - 1, -1, -1):
        found = binding_of_event(events[written[k]], bindings)
        if found is not None:
            return found
    return None


def _namesakes(bindings: list[Binding], order: dict[int, int]) -> dict[int, int]:
    """``order`` with each unplaced binding at the earliest place of a placed one of the same
    name and service in another scope (``parts__41`` where ``parts__43`` was written)."""
    at: dict[tuple[str | None, str], int] = {}
    for i, n in order.items():
        key = (bindings[i].service, bindings[i].name)
        at[key] = min(n, at.get(key, n))
    for i, b in enumerate(bindings):
        if i not in order and (b.service, b.name) in at:
            order[i] = at[(b.service, b.name)]
    return order


def ordered_bindings(run: Run) -> list[Binding]:
    """``run.bindings`` as a user reads them (the bindings pane, ``show``, ``show --json``):
    in the order the run first wrote them by its own record (:func:`write_order` with
    ``first``; the program's order for a snapshot's trace), the rest in the order the backend
    lists them (Index rows, table rows, receipts; natural order of the files otherwise). See
    :func:`prose_tui.model.binding.write_sorted`; file times play no part."""
    return write_sorted(run.bindings, write_order(run, first=True))


def newest_binding(run: Run, changed: set[Path] | None = None,
                   where: Callable[[Binding], bool] | None = None) -> Binding | None:
    """The readable binding ``run`` wrote last (among files in ``changed`` and bindings
    ``where`` accepts, when given): the one
    the latest write the run records places last (:func:`write_order`), then the highest
    execution id (ids grow as the run goes: pass 3's ``parts`` is newer than pass 1's), and
    only then the file's mtime and the name (natural order) to break ties. ``None`` when no
    binding is readable. The record is read (:func:`write_order`) only when it decides: a live
    change that wrote no binding (a snapshot rewrite: ``changed`` is ``state.md``), or wrote
    one, asks nothing of the 500-2,000 statements of its trace."""
    pool = [(i, b) for i, b in enumerate(run.bindings)
            if b.exists and not b.encrypted and (changed is None or b.path in changed) and (where is None or where(b))]
    if not pool:
        return None
    if len(pool) == 1 and pool[0][1].mtime is not None:
        return pool[0][1]
    order = write_order(run)
    candidates = [(i, b) for i, b in pool if b.mtime is not None or i in order]
    if not candidates:
        return None
    def rank(ib: tuple[int, Binding]) -> tuple[int, int, float]:
        i, b = ib
        return (order.get(i, -1), b.execution_id if b.execution_id is not None else -1, b.mtime or 0.0)

    # The name breaks ties only among those ranked first: its natural key, taken for every
    # binding, was half the cost (2-3 ms for 500 bindings, on each live change).
    ranked = [(rank(ib), ib[1]) for ib in candidates]
    best = max(r for r, _b in ranked)
    return max((b for r, b in ranked if r == best), key=lambda b: natural_key(b.name))
