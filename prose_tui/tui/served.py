"""The explorer served to a web browser (``prose-tui serve``): read-only unless allowed.

``prose-tui serve`` tells each explorer it starts how it is served through the environment
variable :data:`SERVED_ENV`: ``read-only`` (the default) or ``read-write`` (``--allow-write``).
Read-only, the explorer writes nothing on the server's disk on a browser user's say-so: an
export becomes a download in the browser (``App.deliver_text``), and Mission Control's
controls, the editor and "keep theme" (which writes the config file) are refused with a
notification that names ``--allow-write``. Reading is unchanged. The terminal app is never
read-only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App

__all__ = ["READ_ONLY", "READ_WRITE", "SERVED_ENV", "is_read_only", "read_only_message", "refuse_if_read_only",
           "served_read_only"]

SERVED_ENV = "PROSE_TUI_SERVED"
READ_ONLY = "read-only"
READ_WRITE = "read-write"


def served_read_only(environ: Mapping[str, str] | None = None) -> bool:
    """True when :data:`SERVED_ENV` says the explorer is served read-only. Any value but
    ``read-write`` counts as read-only (a typo never opens writes); unset or empty: False."""
    value = (os.environ if environ is None else environ).get(SERVED_ENV, "").strip().lower()
    return bool(value) and value != READ_WRITE


def is_read_only(app: App) -> bool:
    """True for an app served read-only (its ``read_only`` attribute)."""
    return bool(getattr(app, "read_only", False))


def read_only_message(what: str) -> str:
    """The one-line refusal for ``what`` (e.g. "The editor") in a read-only served explorer."""
    return (f"{what} is off: this explorer is served read-only (prose-tui serve). "
            "Whoever started the server can allow it with --allow-write.")


def refuse_if_read_only(app: App, what: str) -> bool:
    """When ``app`` is read-only, notify :func:`read_only_message` for ``what`` and return
    True; otherwise return False and do nothing."""
    if not is_read_only(app):
        return False
    app.notify(read_only_message(what), title="Read-only", severity="warning", markup=False, timeout=8)
    return True
