"""Project files beside the runs: ``.prose/.env`` and ``.prose/state.json``.

seeds/filesystem.md, ``.prose/.env`` (KEY=VALUE); FORMATS.md, Dialects: "Project files"
(``state.json`` in several shapes).
"""

from __future__ import annotations

import json
from pathlib import Path

from dotenv import dotenv_values


def read_env(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a ``.env`` file (python-dotenv's rules); ``{}`` when unreadable."""
    try:
        return {k: v or "" for k, v in dotenv_values(path, encoding="utf-8").items()}
    except (OSError, UnicodeDecodeError, ValueError):
        return {}


def read_state_json(path: Path) -> dict[str, str]:
    """A flat view of ``.prose/state.json`` whatever its shape; ``{}`` when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting too deep to decode
        return {}
    if not isinstance(data, dict):
        return {"value": json.dumps(data)}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
