"""Errors a backend raises through the protocol, defined where every backend may import them
without importing the loader (which imports particular backends)."""

from __future__ import annotations

__all__ = ["NotARunError"]


class NotARunError(ValueError):
    """The path exists but holds no run; the message is one line a user can act on."""
