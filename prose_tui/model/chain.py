"""What checking a run's hash-chained ledger found (``RunBackend.chain``).

A ledger whose entries each carry the hash of the one before (Reactor's ``receipts.json``,
openprose-0.15 reactor.md; the statement-receipt ledger ``receipts.jsonl``, FORMATS.md
generation 8) can be checked link by link. ``show --json`` gives this object as
``chain: {"ok": bool, "checked": int, "problems": [str], "warnings": [str]}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ChainReport:
    """The outcome of checking one ledger's chain.

    ``ok`` is true when no problem was found (warnings allowed); ``checked`` how many entries
    were checked (recomputed hash and ``prev`` link); ``problems`` one line per break (a
    broken link, a tampered entry, a ledger shorter than its anchor); ``warnings`` one line
    per thing that does not break the chain but a user should know (a torn last line: the
    ledger is good up to it). Never raised: a bad ledger is reported, not fatal.
    """

    ok: bool
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        """The ``show --json`` shape: ``{"ok", "checked", "problems", "warnings"}``."""
        return {"ok": self.ok, "checked": self.checked, "problems": list(self.problems),
                "warnings": list(self.warnings)}
