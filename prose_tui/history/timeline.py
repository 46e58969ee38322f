"""The :class:`History` type (a run's events in order, where each points, where they came
from) and the histories kept for extension.

Below every module that builds a history: the log copy (:mod:`.stream`), the journal
replay (:mod:`.replay`) and the reconstruction (:mod:`.reconstruct`) all return a
``History``; :data:`KEPT` holds the last ones built, so a later change extends them
instead of building anew. No I/O, no Textual.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Hashable

from prose_tui.history.nodes import with_receipt_failures
from prose_tui.history.refs import EventRef, LineRefs
from prose_tui.model import Event, EventKind

__all__ = ["KEPT", "History", "KeptHistories"]

K = EventKind


@dataclass
class History:
    """A run's events in order, ``seq`` dense 0..n-1, and where they came from.

    ``origin`` is ``"log"``, ``"journal"`` or ``"reconstructed"``; ``note`` one sentence
    for the UI saying how far to trust the order. ``refs[i]`` says where ``events[i]``
    points (same length as ``events``; see :class:`EventRef`).
    """

    events: list[Event]
    origin: str
    note: str
    refs: list[EventRef] | LineRefs = field(default_factory=list)  # LineRefs: a log's (4 bytes each)
    # Events put before the first one since this history was built (older rows paged in):
    # a cursor on an event moves by as many to stay on it.
    prepended: int = 0

    def __post_init__(self) -> None:
        if len(self.refs) < len(self.events):
            self.refs = self.refs + [EventRef() for _ in range(len(self.events) - len(self.refs))]

    def failures(self) -> list[int]:
        """Indexes of events where the run went wrong: ``statement_failed``,
        ``run_errored`` and ``receipt_failed``. A failed attempt that the same statement got
        past later (a ``retry``, a new start, a completion, a later failure) is part of that
        retry, not a failure (see :meth:`retries`); so is a failed receipt the same node
        wrote another receipt after. A log line and a receipt reporting one node failure
        count once (see :func:`~prose_tui.history.nodes.with_receipt_failures`)."""
        out: list[int] = []
        for i, event in enumerate(self.events):
            if event.kind is K.RUN_ERRORED:
                out.append(i)
            elif event.kind is K.STATEMENT_FAILED and not self._retried(i):
                out.append(i)
        return with_receipt_failures(self.events, out)

    def retries(self) -> list[int]:
        """Indexes of ``retry`` events, in order."""
        return [i for i, e in enumerate(self.events) if e.kind is K.RETRY]

    def first_failure(self) -> int | None:
        """The first index of :meth:`failures`, or ``None`` for a run that did not fail."""
        failures = self.failures()
        return failures[0] if failures else None

    def revision_cursors(self) -> list[tuple[str, int]]:
        """Journal origin: ``(sha256, index)`` for each ``state.md`` revision in order, where
        ``index`` is the last event that revision's changes produced: the cursor at which
        :func:`~prose_tui.history.state_at` shows that revision exactly as it was seen.
        Empty for other origins."""
        out: list[tuple[str, int]] = []
        for i, ref in enumerate(self.refs):
            if ref.revision is None or ref.path is not None:
                continue
            if out and out[-1][0] == ref.revision and out[-1][1] == i - 1:
                out[-1] = (ref.revision, i)
            else:
                out.append((ref.revision, i))
        return out

    def same_statement(self, a: int, b: int) -> bool:
        """True when events ``a`` and ``b`` concern the same statement: the same step label
        and, where both name one, the same name (VMs reuse step numbers); without step
        labels, the same trace line."""
        ea, eb = self.events[a], self.events[b]
        if ea.step is not None or eb.step is not None:
            return ea.step == eb.step and (ea.name is None or eb.name is None or ea.name == eb.name)
        ta, tb = self.refs[a].trace_line, self.refs[b].trace_line
        return ta is not None and ta == tb

    def _retried(self, index: int) -> bool:
        """A failed attempt is not final when the same statement is retried, started
        again, completes or fails again later."""
        again = (K.RETRY, K.STATEMENT_STARTED, K.STATEMENT_COMPLETED, K.STATEMENT_FAILED)
        return any(self.events[j].kind in again and self.same_statement(index, j)
                   for j in range(index + 1, len(self.events)))


class KeptHistories:
    """The histories kept for extension, least recently used first dropped.

    Keys are ``(run path, origin)`` (``"log"``, ``"journal"``); values are what the builder
    of that origin keeps to extend its history (:mod:`.stream`'s log copy, :mod:`.replay`'s
    replay). At most ``size`` are kept (a history holds a whole run). Not locked: histories
    are built on one thread at a time (the UI's, or a headless command's).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        """What is kept under ``key``, or ``None``."""
        return self._kept.get(key)

    def keep(self, key: Hashable, value: Any) -> Any:
        """Keep ``value`` under ``key`` as the most recently used; returns ``value``."""
        self._kept[key] = value
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return value

    def touch(self, key: Hashable) -> None:
        """Mark ``key`` (kept) as the most recently used."""
        self._kept.move_to_end(key)


KEPT = KeptHistories(8)  # runs whose history is kept for extension
