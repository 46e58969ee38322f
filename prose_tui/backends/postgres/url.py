"""Where a PostgreSQL state database is (openprose-0.15 state/postgres.md).

The connection string is an opaque capability (state/postgres.md, Security Model): it is
never shown, logged or written into a message. :mod:`prose_tui.backends.common.dburl` holds
it (:class:`DatabaseUrl`) and is the one place its secrets are taken out of text
(:func:`redact`); this module re-exports those names and adds the lookup.

Lookup order (state/postgres.md, Environment Variable Precedence):
``OPENPROSE_POSTGRES_URL`` in ``<openprose-root>/.env``, then in the environment, then
``DATABASE_URL`` in the environment. ``OPENPROSE_POSTGRES_USER_URL`` (same order) names the
separate database a VM may keep user-scoped agents in (Project-Scoped and User-Scoped Agents).
"""

from __future__ import annotations

import os
from pathlib import Path

from prose_tui.backends.common.dburl import (
    SCHEMES,
    DatabaseUrl,
    is_postgres_url,
    redact,
    safe_label,
    split_run,
)

__all__ = ["FALLBACK_VARIABLE", "SCHEMES", "URL_VARIABLE", "USER_URL_VARIABLE", "DatabaseUrl", "find_url",
           "is_postgres_url", "redact", "safe_label", "split_run"]

URL_VARIABLE = "OPENPROSE_POSTGRES_URL"
USER_URL_VARIABLE = "OPENPROSE_POSTGRES_USER_URL"
FALLBACK_VARIABLE = "DATABASE_URL"


def _dotenv_files(project: Path | None) -> list[Path]:
    """``.env`` in ``project`` (a folder, or a file's folder) and each folder above it."""
    if project is None:
        return []
    try:
        folder = project.resolve()
    except OSError:
        return []
    if not folder.is_dir():
        folder = folder.parent
    return [f / ".env" for f in (folder, *folder.parents)]


def find_url(project: Path | None, *, variable: str = URL_VARIABLE,
             environ: dict[str, str] | None = None) -> DatabaseUrl | None:
    """The state database the VM of ``project`` would use, or ``None``.

    Looks for ``variable`` in the nearest ``.env`` at or above ``project`` that sets it, then in
    ``environ`` (default ``os.environ``), then (for the run database only) ``DATABASE_URL``
    in ``environ`` when it is a PostgreSQL URL. An unreadable ``.env`` is skipped.
    """
    env = os.environ if environ is None else environ
    for dotenv in _dotenv_files(project):
        if not dotenv.is_file():
            continue
        from dotenv import dotenv_values  # a project with a .env only (issue 33: start-up imports)

        try:
            values = dotenv_values(dotenv)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        value = values.get(variable)
        if value and is_postgres_url(value.strip()):
            return DatabaseUrl(value.strip(), f"{variable} in {dotenv}")
    value = env.get(variable)
    if value and is_postgres_url(value.strip()):
        return DatabaseUrl(value.strip(), f"{variable} in the environment")
    if variable == URL_VARIABLE:
        value = env.get(FALLBACK_VARIABLE)
        if value and is_postgres_url(value.strip()):
            return DatabaseUrl(value.strip(), f"{FALLBACK_VARIABLE} in the environment")
    return None
