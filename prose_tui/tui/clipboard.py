"""Copying out through OSC 52 (``App.copy_to_clipboard``): works over SSH, and in tmux with
``set-clipboard on``. What is copied is cut to ``CLIPBOARD_LIMIT`` bytes (terminals and tmux
refuse or truncate larger OSC 52 payloads); the notification says what was copied, its
size, and whether it was cut.
"""

from __future__ import annotations

from textual.app import App

from prose_tui.backends.common.text import decode
from prose_tui.remote import shown

CLIPBOARD_LIMIT = 1024 * 1024  # bytes of UTF-8 text, before base64


def human_size(n: int) -> str:
    """``n`` bytes as "512 B", "12.3 KiB", "1.0 MiB"."""
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def cut_to_limit(text: str, limit: int | None = None) -> tuple[str, int, bool]:
    """``text`` cut to ``limit`` (default ``CLIPBOARD_LIMIT``) UTF-8 bytes at a character
    boundary: (text, full size, cut)."""
    limit = CLIPBOARD_LIMIT if limit is None else limit
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text, len(data), False
    return decode(data[:limit]).rstrip("\ufffd"), len(data), True


def copy_text(app: App, what: str, text: str, *, size: int | None = None, cut: bool = False,
              limit: int | None = None) -> str:
    """Put ``text`` on the clipboard and notify; ``what`` names it ("the value of result").

    ``size``/``cut`` describe a value already cut by its reader (its full size); otherwise
    ``text`` is cut here. Returns the notification's message."""
    limit = CLIPBOARD_LIMIT if limit is None else limit
    text = shown(text)  # a remote run: the host's paths, never the local copy's
    text, full, cut_here = cut_to_limit(text, limit)
    full = size if size is not None else full
    cut = cut or cut_here
    app.copy_to_clipboard(text)
    copied = len(text.encode("utf-8"))
    if cut:
        message = (f"Copied the first {human_size(copied)} of {what} ({human_size(full)} in all): "
                   f"cut to the {human_size(limit)} clipboard limit")
        app.notify(message, title="Copied (cut)", severity="warning", markup=False)
    else:
        message = f"Copied {what} ({human_size(copied)})"
        app.notify(message, title="Copied", markup=False)
    return message
