"""Run history: the ordered event stream, a cursor on it, the journal of watched runs.

No Textual here. ``history_of`` gives a run's :class:`History` (from its event log, the
journal prose-tui kept while watching, or a reconstruction from file times); ``state_at``
gives the run as of one event; ``failure_context`` what a failure had around it;
``Journal`` stores ``state.md`` revisions and file writes under the user state folder;
``record``/``main_record`` journal runs without a UI (``prose-tui record PATH``).
"""

from .cursor import state_at
from .failure import FailureContext, failure_context
from .journal import Journal, JournalEntry
from .record import main_record, record
from .stream import EventRef, History, events_json, history_of

__all__ = [
    "EventRef",
    "FailureContext",
    "History",
    "Journal",
    "JournalEntry",
    "events_json",
    "failure_context",
    "history_of",
    "main_record",
    "record",
    "state_at",
]
