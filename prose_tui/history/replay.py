"""A watched snapshot run's history, replayed from the journal prose-tui kept (origin "journal").

Each journaled ``state.md`` revision, parsed by the run's backend
(``HistorySource.revision``), is diffed against the one before
(:func:`~prose_tui.history.transitions.snapshot_events`); binding and segment writes
become ``binding_written`` / ``agent_segment`` events, in the order they were seen. A
replay is kept per run and extended by the entries journaled since (``journal_replay``).
The run's ``state.md`` as it is now (:func:`~.current.current_state`) closes the replay.
No Textual, no writes.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prose_tui.backends.common.bindings import name_and_scope
from prose_tui.backends.protocol import HistorySource, Revision
from prose_tui.history.current import current_state, newest_text
from prose_tui.history.refs import EventRef, run_relative
from prose_tui.history.sources import source_of
from prose_tui.history.timeline import KEPT, History
from prose_tui.history.transitions import snapshot_events
from prose_tui.model import Event, EventKind, Run

if TYPE_CHECKING:  # pragma: no cover
    from prose_tui.history.journal import Journal, JournalEntry

__all__ = ["current_state", "journal_history", "journal_replay"]

K = EventKind


# A replay is extended entry by entry and keeps only the last revision's parse; these keep
# a few more (by content hash), for a replay started again (another Journal, a run whose
# kept replay was dropped). Small on purpose: a parse holds the whole run (issue 35).
_PARSE_CACHE: OrderedDict[str, Revision] = OrderedDict()
_DIFF_CACHE: OrderedDict[tuple, list] = OrderedDict()
_PARSES_KEPT = 4
_DIFFS_KEPT = 256  # a revision's events: a few hundred bytes


def _remember(cache: OrderedDict, key, value):
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > (_PARSES_KEPT if cache is _PARSE_CACHE else _DIFFS_KEPT):
        cache.popitem(last=False)
    return value


def _parsed_revision(source: HistorySource, sha: str | None, text: str, key: Hashable | None = None) -> Revision:
    if sha is not None and sha in _PARSE_CACHE:
        _PARSE_CACHE.move_to_end(sha)
        return _PARSE_CACHE[sha]
    snap = source.revision(text, key)
    return _remember(_PARSE_CACHE, sha, snap) if sha is not None else snap


def _revision_changes(prev_sha: str | None, previous: Revision | None, sha: str | None,
                      snap: Revision, when) -> list:
    key = (prev_sha, sha, when)
    if sha is not None and key in _DIFF_CACHE:
        return _DIFF_CACHE[key]
    changes = snapshot_events(previous, snap, when)
    if not changes:
        changes = [(Event(0, K.NOTE, "state.md rewritten; no statement changed", time=when), None)]
    return _remember(_DIFF_CACHE, key, changes) if sha is not None else changes


class _Replay:
    """Journal entries replayed so far (see :func:`journal_history`), extended entry by entry."""

    def __init__(self, run_dir: Path, source: HistorySource | None) -> None:
        self.run_dir = run_dir
        self.source = source  # parses the revisions (the run's backend's); None: none can be
        self.events: list[Event] = []
        self.refs: list[EventRef] = []
        self.previous: Revision | None = None
        self.revision: str | None = None
        self.consumed = 0
        self.first: JournalEntry | None = None

    def add(self, event: Event, ref: EventRef) -> None:
        event.seq = len(self.events)
        self.events.append(event)
        self.refs.append(ref)

    def feed(self, entries: list[JournalEntry]) -> None:
        for entry in entries:
            rel = run_relative(entry.path, self.run_dir)
            if entry.kind == "state":
                if entry.stored is None or entry.sha256 == self.revision or self.source is None:
                    continue  # a revision too large to keep, the same one journaled twice, or unreadable
                # The newest revision is the text the journal handed over when it recorded it
                # (decoded once); an older one is read back from the journal folder, not kept.
                text = newest_text(entry.path, entry.sha256) if entry.sha256 is not None else None
                if text is None:
                    text = entry.text
                if text is None:
                    continue  # lost (a pack cut short, a revision file removed)
                # parsed against the revision before (unchanged trace lines are reused)
                snap = _parsed_revision(self.source, entry.sha256, text, ("journal", self.run_dir))
                changes = _revision_changes(self.revision, self.previous, entry.sha256, snap, entry.time)
                self.revision = entry.sha256
                for event, line in changes:
                    self.add(replace(event), EventRef(trace_line=line, revision=self.revision))
                self.previous = snap
            elif entry.kind == "binding":
                name, eid = name_and_scope(Path(rel).stem)
                self.add(Event(0, K.BINDING_WRITTEN, f"wrote {rel}", time=entry.time, name=name, execution_id=eid),
                         EventRef(path=entry.path, revision=self.revision))
            elif entry.kind == "segment":
                agent = entry.path.parent.name
                number = re.search(r"-(\d+)\.md$", entry.path.name)
                self.add(Event(0, K.AGENT_SEGMENT, f"wrote {rel}", time=entry.time, name=agent,
                               status=number.group(1) if number else None),
                         EventRef(path=entry.path, revision=self.revision))
            elif entry.kind == "removed":
                self.add(Event(0, K.NOTE, f"removed {rel}", time=entry.time, name=Path(rel).stem),
                         EventRef(path=entry.path, revision=self.revision))
        self.consumed += len(entries)

    def history(self, run: Run) -> History:
        note = "replayed from the journal prose-tui kept while watching; times are when changes were seen"
        events, refs = list(self.events), list(self.refs)
        current, current_sha = current_state(run)
        if current is not None and self.previous is not None and self.source is not None \
                and current_sha != self.revision:
            snap = _parsed_revision(self.source, current_sha, current)
            when = datetime.fromtimestamp(run.state_mtime).astimezone() if run.state_mtime else None
            tail = snapshot_events(self.previous, snap, when)
            if not tail:
                tail = [(Event(0, K.NOTE, "state.md rewritten; no statement changed", time=when), None)]
            for event, line in tail:
                event.seq = len(events)
                events.append(event)
                refs.append(EventRef(trace_line=line, revision=current_sha))
            note += "; state.md changed after the journal ends, the last step is the file as it is now"
        return History(events, "journal", note, refs)


def journal_history(run: Run, entries: list[JournalEntry]) -> History:
    """Replay journal ``entries`` (oldest first) of ``run`` into a :class:`History`.

    When the run's current ``state.md`` is not the last journaled revision (it changed
    while nobody watched), the difference is appended as if seen now, and the note says so.
    """
    replay = _Replay(run.path, source_of(run))
    replay.feed(entries)
    return replay.history(run)


def journal_replay(run: Run, journal: Journal, entries: list[JournalEntry]) -> History:
    """``journal_history`` that replays only the entries added since the last call."""
    key = (run.path, "journal")
    replay = KEPT.get(key)
    if not isinstance(replay, _Replay) or replay.consumed > len(entries) or (entries and replay.first is not entries[0]):
        replay = KEPT.keep(key, _Replay(run.path, source_of(run)))
        replay.first = entries[0] if entries else None
    replay.feed(entries[replay.consumed:])
    KEPT.touch(key)
    return replay.history(run)
