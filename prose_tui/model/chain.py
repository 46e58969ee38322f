"""The verdict on a hash-chained ledger: what ``prose-tui show --json`` gives as ``chain``.

Ledgers that chain their receipts by content hash (openprose-0.15 reactor.md ``receipts.json``;
FORMATS.md generation 8 ``receipts.jsonl`` with its ``run.json`` anchor) are checked by
their backend while it reads them; this is what the check found. Plain data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChainReport"]


@dataclass(frozen=True, slots=True)
class ChainReport:
    """One ledger's chain check.

    ``checked`` counts the receipts whose ``content_hash`` was recomputed and whose ``prev``
    link was followed. ``problems`` are breaks, one sentence each (a link that does not
    match, a receipt whose hash does not recompute, a ledger shorter than its anchor);
    ``warnings`` are faults the ledger is still good up to (a torn last line, an anchor one
    receipt behind after a crash mid-append). ``ok`` is true when there are no problems:
    warnings alone leave the chain ok. Consistency only: nothing in these ledgers is signed.
    """

    ok: bool
    checked: int
    problems: tuple[str, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, Any]:
        """``{"ok": bool, "checked": int, "problems": [str], "warnings": [str]}``."""
        return {"ok": self.ok, "checked": self.checked, "problems": list(self.problems),
                "warnings": list(self.warnings)}
