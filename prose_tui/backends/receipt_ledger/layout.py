"""Which files make a receipt-ledger run folder (FORMATS.md generation 8)."""

from __future__ import annotations

import json
from pathlib import Path

from prose_tui.backends.common.contained import run_root
from prose_tui.backends.common.text import open_regular

RECEIPTS = "receipts.jsonl"
ANCHOR = "run.json"
STATE = "state.md"
BINDINGS = "bindings"
RUN_VERSIONS = ("openprose.run.v1", "libretto.run.v1")
RECEIPT_VERSIONS = ("openprose.receipt.v1", "libretto.receipt.v1")
MAX_ANCHOR_BYTES = 64 * 1024


def run_dir_of(path: Path) -> Path | None:
    """The run folder ``path`` is (or whose ``receipts.jsonl``, ``run.json`` or ``state.md``
    it is), when that folder holds a receipt ledger or a ``run.json`` of the ledger's
    contract (a run that has not appended its first receipt yet); else ``None``."""
    folder = path.parent if path.is_file() else path
    if path.is_file() and path.name not in (RECEIPTS, ANCHOR, STATE):
        return None
    if (folder / RECEIPTS).is_file():
        return folder
    anchor = folder / ANCHOR
    if anchor.is_file():
        data, _problem = read_anchor(anchor)
        if isinstance(data, dict) and data.get("v") in RUN_VERSIONS:
            return folder
    return None


def read_anchor(path: Path) -> tuple[object, str | None]:
    """``run.json`` parsed (``None`` and why when it cannot be read or is not JSON; a file
    over 64 KiB is not an anchor). Never raises."""
    try:
        with open_regular(path, root=run_root(path.parent)) as fh:
            raw = fh.read(MAX_ANCHOR_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"run.json could not be read: {exc.strerror or exc}"
    if len(raw) > MAX_ANCHOR_BYTES:
        return None, "run.json is over 64 KiB: not read as the ledger's anchor"
    try:
        return json.loads(raw), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"run.json is not valid JSON ({exc})"
