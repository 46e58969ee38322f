"""A read that another read has made useless stops early (issues 33 and 35).

The run list's start-up summary of a long event log and the full read of the same run
(the user opened it meanwhile) would parse the file twice side by side. The caller that
starts the summary runs it inside :func:`superseded_by` with a flag; the caller that starts
the full read sets the flag; a long read calls :func:`check_superseded` between pieces of
work (``EventLogTail.feed_bytes``: every ``FEED_CHUNK`` bytes) and so stops at the next one
with :class:`ReadSuperseded`, leaving nothing kept. Reads outside :func:`superseded_by`
(a live update, a full read) are never stopped. The flag is per thread (a context
variable): one thread's summary is not stopped by another's flag.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ReadSuperseded", "check_superseded", "superseded_by"]

_FLAG: ContextVar[threading.Event | None] = ContextVar("prose_tui_read_superseded", default=None)


class ReadSuperseded(Exception):
    """The read was given up: another read of the same run takes its place."""


@contextmanager
def superseded_by(flag: threading.Event | None) -> Iterator[None]:
    """Run the block as a read that stops (:class:`ReadSuperseded`) once ``flag`` is set;
    ``None``: a read nothing stops."""
    token = _FLAG.set(flag)
    try:
        yield
    finally:
        _FLAG.reset(token)


def check_superseded() -> None:
    """Raise :class:`ReadSuperseded` when the read this thread runs was superseded
    (its :func:`superseded_by` flag is set); return at once otherwise."""
    flag = _FLAG.get()
    if flag is not None and flag.is_set():
        raise ReadSuperseded
