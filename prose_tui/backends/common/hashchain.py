"""Canonical JSON and content hashes of hash-chained receipts.

The rule both chained ledgers write (openprose-0.15 reactor.md, FORMATS.md generation 8):
``content_hash = "<algorithm>:" + hex(digest(canonical(receipt without content_hash)))``,
where canonical JSON sorts object keys, has no whitespace (``{"k":v}``, ``[a,b]``), leaves
non-ASCII characters unescaped (UTF-8) and holds integers only.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "content_hash", "non_integers"]


def canonical_json(obj: Any, *, without: str | None = "content_hash") -> bytes:
    """``obj`` in canonical JSON, UTF-8; a dict's ``without`` key (default ``content_hash``)
    is left out. A float is written as Python writes it: the rule forbids floats, so a
    receipt holding one is at fault whatever this gives (see :func:`non_integers`).
    Raises ``ValueError`` for NaN or infinity."""
    if without is not None and isinstance(obj, dict) and without in obj:
        obj = {k: v for k, v in obj.items() if k != without}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def content_hash(obj: dict[str, Any], *, field: str = "content_hash", algorithm: str | None = None) -> str | None:
    """``"<algorithm>:<hex>"`` over ``obj``'s canonical JSON without ``field``. ``algorithm``
    defaults to the receipt's ``hash_algorithm``, else ``sha256``. ``None`` when the algorithm
    is not one ``hashlib`` knows, or the receipt cannot be canonical (NaN, infinity)."""
    name = algorithm if algorithm is not None else obj.get("hash_algorithm") or "sha256"
    if not isinstance(name, str):
        return None
    name = name.lower()
    if name not in hashlib.algorithms_available or name.startswith("shake_"):
        return None
    try:
        data = canonical_json(obj, without=field)
    except ValueError:
        return None
    return f"{name}:{hashlib.new(name, data).hexdigest()}"


def non_integers(obj: Any, path: str = "") -> list[str]:
    """Where ``obj`` holds a number that is not an integer (``usage.cost``), which canonical
    JSON forbids; ``[]`` when it holds none."""
    if isinstance(obj, float):
        return [path or "(top)"]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in non_integers(v, f"{path}.{k}" if path else str(k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in non_integers(v, f"{path}[{i}]")]
    return []
