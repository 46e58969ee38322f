"""PostgreSQL state (openprose-0.15 state/postgres.md): runs kept in a shared database.

:mod:`.url` finds the database and names it safely, :mod:`.connect` keeps a read-only
connection, :mod:`.source` lists and polls runs, :mod:`.run` reads one run,
:mod:`.rows` and :mod:`.tables` its parts, :mod:`.backend` is the backend protocol.
"""

from prose_tui.backends.postgres.connect import (
           DatabaseUnavailable,
           PgReader,
           QueryFailed,
)
from prose_tui.backends.postgres.source import PostgresSource, RunsChange
from prose_tui.backends.postgres.url import (
           DatabaseUrl,
           find_url,
           is_postgres_url,
           safe_label,
           split_run,
)

__all__ = ["DatabaseUnavailable", "DatabaseUrl", "PgReader", "PostgresSource", "QueryFailed", "RunsChange",
           "find_url", "is_postgres_url", "safe_label", "split_run"]
