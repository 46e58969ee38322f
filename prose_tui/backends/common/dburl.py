"""Database URLs and the one place their secrets are taken out of text (issue 29).

A PostgreSQL connection string is an opaque capability (openprose-0.15 state/postgres.md,
Security Model): it is never shown, logged or written into a message or a file. This module
is the lowest layer that knows it, so every layer can use it without importing a backend:

* :class:`DatabaseUrl` holds a connection string; its ``repr``/``str`` show the safe
  :attr:`~DatabaseUrl.label` (``db@host:port``) and where it came from, never the string;
* :func:`redact` is what every message, log line, exception text and state file passes
  through: it takes out the given connection strings and, in any text, the user and
  password of every ``postgres(ql)://`` URL (also as ``Path()`` mangles it,
  ``postgresql:/user:pw@…``) and every ``password=…``;
* :class:`Target` is what a command was pointed at: a path, or a database (and one run of
  it, ``URL#RUN_ID``); :func:`parse_target` reads one from the command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

__all__ = ["REDACTED", "SCHEMES", "DatabaseUrl", "Target", "is_postgres_url", "parse_target", "redact",
           "safe_label", "split_run"]

SCHEMES = ("postgresql://", "postgres://")
REDACTED = "***"

# A database URL's scheme and, when present, its "user:password@" (or "user@") part. The
# slashes may be one (``Path("postgresql://u:p@h")`` prints ``postgresql:/u:p@h``) to three.
# The userinfo runs to the first "@" before any "/", whitespace or quote: a password with a
# raw "/" is not a valid URL, and libpq reads it the same way.
_USERINFO = re.compile(r"(?i)\b(postgres(?:ql)?:/{1,3})([^/@\s'\"<>]*:[^@\s'\"<>]*)@")
# "password=…" as libpq keyword conninfo or a URL query parameter has it (quoted or not).
_PASSWORD_KEY = re.compile(r"(?i)\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'\"]+)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_postgres_url(text: str) -> bool:
    """True when ``text`` is a ``postgresql://`` or ``postgres://`` URL (case-insensitive)."""
    return text[:13].lower().startswith(SCHEMES)


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
    return _CONTROL.sub("?", label)


def _secrets_of(url: str) -> list[str]:
    """The strings of ``url`` that must not appear in text, longest first: the whole string,
    its ``user:password@host`` part and its password (as written, decoded and encoded)."""
    found: set[str] = {url}
    try:
        parts = urlsplit(url)
        if parts.password:
            password = unquote(parts.password)
            found |= {parts.password, password, quote(password, safe="")}
        if parts.netloc and "@" in parts.netloc:
            found.add(parts.netloc)
    except ValueError:
        pass
    match = _USERINFO.search(url)  # also when urlsplit gave up (a malformed port, say)
    if match and ":" in match.group(2):
        found.add(match.group(2).split(":", 1)[1])
    return sorted((s for s in found if len(s) >= 3), key=len, reverse=True)


def redact(text: str, *urls: str | DatabaseUrl | None) -> str:
    """``text`` with no database secret left in it: each of ``urls`` (connection strings or
    :class:`DatabaseUrl`) replaced by its label, their passwords by ``***``; then, for any
    URL in the text, its ``user:password@`` part by ``***@``, and any ``password=…`` value
    by ``***``. Everything else is kept, so a message stays readable. Never raises.

    Use it on whatever may hold a URL before it is printed, logged or stored (an exception
    from the driver, argparse's message echoing argv, a path built from the command line)."""
    for url in urls:
        if url is None:
            continue
        secret, label = (url.secret, url.label) if isinstance(url, DatabaseUrl) else (url, safe_label(url))
        for part in _secrets_of(secret):
            text = text.replace(part, label if part == secret else REDACTED)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _PASSWORD_KEY.sub(lambda m: m.group(1) + REDACTED, text)


@dataclass(frozen=True, slots=True)
class DatabaseUrl:
    """A connection string and where it came from. ``repr`` and ``str`` never show it:
    they show :attr:`label` and :attr:`origin` (e.g. ``"OPENPROSE_POSTGRES_URL in ./.env"``).
    Only the driver's ``connect`` reads :attr:`secret`."""

    secret: str
    origin: str = "command line"

    @property
    def label(self) -> str:
        """``db@host:port`` (see :func:`safe_label`)."""
        return safe_label(self.secret)

    def __repr__(self) -> str:
        return f"DatabaseUrl({self.label!r}, from {self.origin})"

    __str__ = __repr__


def split_run(target: str) -> tuple[str, str | None]:
    """``URL#run-id`` as ``(URL, run-id)``; ``(URL, None)`` without a ``#``. A password holding
    ``#`` must be percent-encoded in a URL anyway (RFC 3986), so the last ``#`` is the split."""
    if "#" in target:
        url, run_id = target.rsplit("#", 1)
        return url, unquote(run_id) or None
    return target, None


@dataclass(frozen=True, slots=True)
class Target:
    """What a command was pointed at: a path on disk (``database`` is ``None``), or a
    PostgreSQL database alone (``path`` is ``None``), with ``run_id`` when the URL named
    one run (``URL#RUN_ID``). ``str`` is safe to print: the path, or ``db@host#run``."""

    path: Path | None = None
    database: DatabaseUrl | None = None
    run_id: str | None = None

    def __str__(self) -> str:
        if self.database is None:
            return str(self.path)
        return self.database.label + (f"#{self.run_id}" if self.run_id else "")


def parse_target(text: str | Path, origin: str = "command line") -> Target:
    """A command's ``PATH`` or ``URL[#RUN_ID]`` argument as a :class:`Target`: a
    ``postgresql://``/``postgres://`` URL names that database alone (and a run of it after
    ``#``), anything else a path (``-`` too: stdin). Usable as an argparse ``type``."""
    if isinstance(text, Path):
        return Target(path=text)
    if is_postgres_url(text.strip()):
        url, run_id = split_run(text.strip())
        return Target(database=DatabaseUrl(url, origin), run_id=run_id)
    return Target(path=Path(text))
