"""Project files beside the runs: ``.prose/.env`` and ``.prose/state.json``.

seeds/filesystem.md, ``.prose/.env`` (KEY=VALUE); FORMATS.md, Dialects: "Project files"
(``state.json`` in several shapes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from prose_tui.backends.common.dburl import REDACTED, redact

SECRET_KEY = re.compile(r"(?i)(pass|secret|token|key|auth|credential|cookie|dsn|url|private)")
"""Names of ``.env`` variables whose values are never shown: ``OPENPROSE_POSTGRES_URL``,
``API_KEY``, ``GITHUB_TOKEN`` and the like (a ``.env`` is where a project keeps its secrets)."""


def read_env(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a ``.env`` file (python-dotenv's rules); ``{}`` when unreadable."""
    from dotenv import dotenv_values  # only when a .env is read (start-up, issue 33)

    try:
        return {k: v or "" for k, v in dotenv_values(path, encoding="utf-8").items()}
    except (OSError, UnicodeDecodeError, ValueError):
        return {}


def shown_env(values: dict[str, str]) -> dict[str, str]:
    """``values`` (a ``.env``'s pairs) as they may be shown or exported: the value of every
    variable whose name looks secret (:data:`SECRET_KEY`) replaced by ``***``, and any
    database URL's password taken out of the rest (:func:`~prose_tui.backends.common.dburl.redact`)."""
    return {k: REDACTED if SECRET_KEY.search(k) else redact(v) for k, v in values.items()}


def read_state_json(path: Path) -> dict[str, str]:
    """A flat view of ``.prose/state.json`` whatever its shape; ``{}`` when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting too deep to decode
        return {}
    if not isinstance(data, dict):
        return {"value": json.dumps(data)}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
