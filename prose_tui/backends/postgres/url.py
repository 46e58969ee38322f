"""Where a PostgreSQL state database is, and how to name it without giving away its secret.

The connection string is an opaque capability (openprose-0.15 state/postgres.md, Security
Model): it is never shown, logged or written into a message. Everything a user sees names
the database by :func:`safe_label` (``db@host:port``), and every error text that came from
the driver passes through :func:`scrub` first.

Lookup order (state/postgres.md, Environment Variable Precedence):
``OPENPROSE_POSTGRES_URL`` in ``<openprose-root>/.env``, then in the environment, then
``DATABASE_URL`` in the environment. ``OPENPROSE_POSTGRES_USER_URL`` (same order) names the
separate database a VM may keep user-scoped agents in (Project-Scoped and User-Scoped Agents).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from dotenv import dotenv_values

URL_VARIABLE = "OPENPROSE_POSTGRES_URL"
USER_URL_VARIABLE = "OPENPROSE_POSTGRES_USER_URL"
FALLBACK_VARIABLE = "DATABASE_URL"
SCHEMES = ("postgresql://", "postgres://")
_REDACTED = "***"


def is_postgres_url(text: str) -> bool:
    """True when ``text`` is a ``postgresql://`` or ``postgres://`` URL (case-insensitive)."""
    return text[:13].lower().startswith(SCHEMES)


@dataclass(frozen=True, slots=True)
class DatabaseUrl:
    """A connection string and where it came from. ``repr`` and ``str`` never show it:
    they show :attr:`label` and :attr:`origin` (e.g. ``"OPENPROSE_POSTGRES_URL in ./.env"``)."""

    secret: str
    origin: str = "command line"

    @property
    def label(self) -> str:
        return safe_label(self.secret)

    def __repr__(self) -> str:
        return f"DatabaseUrl({self.label!r}, from {self.origin})"

    __str__ = __repr__


def safe_label(url: str) -> str:
    """``db@host:port`` for a connection string (``host`` ``localhost`` when it names none,
    ``:port`` only when it names one). Never includes user or password; a string that cannot
    be parsed gives ``"postgres (unparsable URL)"``. Never raises."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
        db = unquote(parts.path.lstrip("/")) or ""
    except ValueError:
        return "postgres (unparsable URL)"
    if not host:  # postgresql:///db?host=/var/run/postgresql
        match = re.search(r"[?&]host=([^&]*)", parts.query)
        host = unquote(match.group(1)) if match else "localhost"
    where = f"{host}:{port}" if port else host
    label = f"{db}@{where}" if db else where
    return re.sub(r"[\x00-\x1f\x7f]", "?", label)


def scrub(text: str, url: str) -> str:
    """``text`` with the connection string, its password and user:password part replaced by
    ``***`` (also percent-encoded and decoded forms). For driver messages before display."""
    secrets: set[str] = {url}
    try:
        parts = urlsplit(url)
        if parts.password:
            secrets |= {parts.password, unquote(parts.password), quote(unquote(parts.password), safe="")}
        if parts.netloc:
            secrets.add(parts.netloc)
    except ValueError:
        pass
    for secret in sorted((s for s in secrets if len(s) >= 3), key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    # A driver might quote any other "password=..." it saw in a keyword conninfo.
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1" + _REDACTED, text, flags=re.IGNORECASE)


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


def split_run(target: str) -> tuple[str, str | None]:
    """``URL#run-id`` as ``(URL, run-id)``; ``(URL, None)`` without a ``#``. A password holding
    ``#`` must be percent-encoded in a URL anyway (RFC 3986), so the last ``#`` is the split."""
    if "#" in target:
        url, run_id = target.rsplit("#", 1)
        return url, unquote(run_id) or None
    return target, None
