"""A run's ``state.md`` as it is now, read once per (file, mtime, size).

The journal replay and the cursor compare the last journaled revision with the file as it
is now (:func:`current_state`). The journal, which reads each revision on the live worker,
hands what it read over (:func:`remember_current`), so a history built on the UI thread
does not read the file again, and the replay takes the newest revision's text from here
(:func:`newest_text`) instead of rebuilding and decoding it from the journal a second time.
Texts are decoded as the backends and the journal decode them (``common.text.decode``).
One entry per file, its newest text (an older one is never asked for again: the file has
changed), for the few files read lately; shared by threads under a lock held for dictionary
operations only. No Textual, no writes.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

from prose_tui.backends.common.text import decode, open_regular
from prose_tui.model import Run

__all__ = ["current_state", "newest_text", "remember_current", "sha256_of"]

_KEPT = 16  # files (runs' state.md), each with its newest text only
# path -> ((mtime, size) when read, (text, sha256)); issue 35: a text per file, not per revision
_CURRENT: OrderedDict[Path, tuple[tuple[float, int], tuple[str, str]]] = OrderedDict()
_CURRENT_LOCK = threading.Lock()  # the journal (live worker) and the UI thread both fill it


def sha256_of(data: bytes) -> str:
    """The sha256 (hex) a journal keys a ``state.md`` revision by: of the file's bytes."""
    return hashlib.sha256(data).hexdigest()


def current_state(run: Run) -> tuple[str | None, str | None]:
    """The run's ``state.md`` as it is now: ``(text, sha256 of its bytes)``, or ``(None, None)``.
    Kept per (file, mtime, size), so asking again about an unchanged file reads nothing."""
    if run.state_file is None:
        return None, None
    try:
        st = run.state_file.stat()
        stamp = (st.st_mtime, st.st_size)
        with _CURRENT_LOCK:
            known = _CURRENT.get(run.state_file)
        if known is not None and known[0] == stamp:
            return known[1]
        with open_regular(run.state_file, root=run.root) as fh:  # never a file outside the run
            data = fh.read()
    except OSError:
        return None, None
    return _remember(run.state_file, stamp, data, sha256_of(data))


def newest_text(path: Path, sha: str) -> str | None:
    """The decoded text kept for ``path`` when the newest revision read of it has sha256
    ``sha`` (a journal entry's ``sha256``), else ``None``. Neither reads nor decodes: the
    journal handed the text over when it recorded that revision (:func:`remember_current`)."""
    with _CURRENT_LOCK:
        known = _CURRENT.get(path)
    return known[1][0] if known is not None and known[1][1] == sha else None


def remember_current(path: Path, st: os.stat_result, data: bytes, sha: str) -> None:
    """``current_state`` of the file at ``path`` (``st`` its ``fstat`` when ``data`` was read)
    is ``data`` with sha256 ``sha``: the journal, which reads each revision on the live
    worker, tells it here so a history built on the UI thread does not read it again."""
    _remember(path, (st.st_mtime, st.st_size), data, sha)


def _remember(path: Path, stamp: tuple[float, int], data: bytes, sha: str) -> tuple[str, str]:
    value = (decode(data), sha)  # as the journal's revisions read back (StoredRevision.read)
    with _CURRENT_LOCK:
        _CURRENT[path] = (stamp, value)  # replaces the file's older text
        _CURRENT.move_to_end(path)
        while len(_CURRENT) > _KEPT:
            _CURRENT.popitem(last=False)
    return value
