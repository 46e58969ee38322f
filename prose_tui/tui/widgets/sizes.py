"""A byte count as the panes show it (the value viewer's title, the context strip's binding)."""

from __future__ import annotations


def human_size(n: float) -> str:
    """``812 B``, ``1.4 KiB``, ``3.0 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
