"""Run history: the ordered event stream, a cursor on it, the journal of watched runs.

No Textual here. ``history_of`` gives a run's :class:`History` (from its event log, the
journal prose-tui kept while watching, or a reconstruction from file times); ``state_at``
gives the run as of one event (``index_history`` builds its index for a long log off the UI
thread); ``failure_context`` what a failure had around it;
``Journal`` stores ``state.md`` revisions and file writes under the user state folder;
"""

from prose_tui.history.cursor import CursorMemo, index_history, state_at
from prose_tui.history.failure import FailureContext, failure_context, failure_events
from prose_tui.history.journal import Journal, JournalEntry
from prose_tui.history.stream import EventRef, History, events_json, history_of

__all__ = [
    "CursorMemo",
    "EventRef",
    "FailureContext",
    "History",
    "Journal",
    "JournalEntry",
    "events_json",
    "failure_context",
    "failure_events",
    "history_of",
    "index_history",
    "state_at",
]
