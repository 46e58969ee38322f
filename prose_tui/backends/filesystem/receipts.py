"""A 0.15 skill run's receipt ledger: ``receipts/{node}.jsonl``, one chain per node.

Source: openprose-0.15 ``state/filesystem.md`` (receipts/, The Commit-and-Sign Protocol) and
``concepts/reactor.md`` (The receipt: ``node``, ``status``, ``prev``, ``fingerprints``,
``semantic_diff``, ``cost``, ``wake``). A VM writes these lines by hand, so every field is
optional and read tolerantly (a ``{node}.json`` holding one array is read too): ``cost.tokens.{fresh,reused}`` (the Reactor's shape) or
``cost.tokens_fresh``/``cost.fresh``; the content hash as ``content_hash``/``hash``/``id``;
the published version as ``version``/``content_address``, else the ``@atomic`` fingerprint;
the time as ``at``/``time``/``timestamp``/``ts``/``created_at``. A line that is not a JSON
object is skipped with a warning naming its file and line; nothing raises.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun, run_root
from prose_tui.backends.common.text import open_regular
from prose_tui.backends.filesystem.tail import Change, FileTail
from prose_tui.model import Receipt

__all__ = ["Ledger", "LedgerTail", "read_ledgers", "receipt_from"]

MAX_LEDGER_BYTES = 16 * 1024 * 1024
_TIME_KEYS = ("at", "time", "timestamp", "ts", "created_at", "committed_at")
_HASH_KEYS = ("content_hash", "hash", "id", "receipt_hash")
_VERSION_KEYS = ("version", "content_address", "world_model_version")


@dataclass(slots=True)
class Ledger:
    """Every node's receipts, each node's in ledger order; ``order`` the node names as found
    (sorted file names). ``warnings`` are sentences naming the file and line."""

    by_node: dict[str, list[Receipt]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def receipts(self) -> list[Receipt]:
        """All receipts: by time where every receipt has one, else node by node."""
        out = [r for node in self.order for r in self.by_node[node]]
        if out and all(r.time is not None for r in out):
            out.sort(key=lambda r: _sort_key(r.time))
        return out


def _sort_key(when: datetime | None) -> float:
    if when is None:
        return 0.0
    try:
        return when.timestamp()
    except (OverflowError, OSError, ValueError):
        return 0.0


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value.replace(",", "").strip()))
        except ValueError:
            return 0
    return 0


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        return None


def _tokens(cost: Any) -> tuple[int, int, str | None]:
    """``(fresh, reused, surprise_cause)`` from a receipt's ``cost`` in any shape seen."""
    if not isinstance(cost, dict):
        return 0, 0, None
    tokens = cost.get("tokens")
    cause = cost.get("surprise_cause")
    cause = str(cause) if cause not in (None, "") else None
    if isinstance(tokens, dict):
        return _int(tokens.get("fresh")), _int(tokens.get("reused")), cause
    fresh = cost.get("tokens_fresh", cost.get("fresh", tokens if isinstance(tokens, (int, float)) else 0))
    reused = cost.get("tokens_reused", cost.get("reused", 0))
    return _int(fresh), _int(reused), cause


def _failure_reason(data: dict[str, Any]) -> str | None:
    diff = data.get("semantic_diff")
    if isinstance(diff, dict):
        reason = diff.get("failure_reason") or diff.get("error")
        if reason:
            return str(reason)
    for key in ("failure_reason", "error"):
        if data.get(key):
            return str(data[key])
    return None


def receipt_from(data: dict[str, Any], node: str, seq: int) -> Receipt:
    """One parsed receipt line as a :class:`Receipt` (``node`` from the file name when the
    line names none). Never raises for a ``dict``."""
    fresh, reused, cause = _tokens(data.get("cost"))
    wake = data.get("wake")
    wake_source = wake.get("source") if isinstance(wake, dict) else wake
    version = next((str(data[k]) for k in _VERSION_KEYS if k in data and data[k]), None)
    prints = data.get("fingerprints")
    if version is None and isinstance(prints, dict) and prints.get("@atomic"):
        version = str(prints["@atomic"])
    when = None
    for key in _TIME_KEYS:
        if key in data and (when := _time(data[key])) is not None:
            break
    prev = data.get("prev")
    return Receipt(
        node=str(data.get("node") or node),
        status=str(data.get("status") or "unknown"),
        seq=seq,
        time=when,
        hash=next((str(data[k]) for k in _HASH_KEYS if data.get(k)), None),
        prev=str(prev) if prev else None,
        version=version,
        wake=str(wake_source) if wake_source else None,
        tokens_fresh=fresh,
        tokens_reused=reused,
        surprise_cause=cause,
        failure_reason=_failure_reason(data),
        fields=data,
    )


def read_ledgers(run_dir: Path, files: dict[str, _Place] | None = None, root: Path | None = None) -> Ledger:
    """Every ``receipts/*.jsonl`` of the run at ``run_dir`` (sorted by node name).

    A file that lies outside ``root`` (default: ``run_dir`` resolved; a symlink to a file
    elsewhere) is not read: a warning says "receipts/{name}: outside the run: not read".

    Each file is read up to :data:`MAX_LEDGER_BYTES` (a warning says when one was cut).
    A receipt's ``seq`` is its 0-based place in its node's chain. ``files``, when given,
    receives where each ``.jsonl`` file's reading stands (what :class:`LedgerTail`
    carries on from).
    """
    ledger = Ledger()
    folder = run_dir / "receipts"
    root = root or run_root(run_dir)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith((".jsonl", ".json")) and not n.startswith("."))
    except OSError:
        return ledger
    for name in names:
        _read_file(ledger, folder, name, files, root)
    return ledger


@dataclass(slots=True)
class _Place:
    """Where a tailed ledger file's reading stands: ``tail`` after its last complete line,
    ``lines`` complete lines read, ``provisional`` receipts parsed from a last line that has
    no newline yet (dropped and parsed again when more bytes arrive), ``half_warning`` the
    warning a whole read gave a half-written last line (taken back when the line completes)."""

    tail: FileTail
    lines: int = 0
    provisional: int = 0
    half_warning: str | None = None


def _read_file(ledger: Ledger, folder: Path, name: str, files: dict[str, _Place] | None, root: Path | None) -> None:
    """Read ``folder/name`` whole into its node's chain (emptied first), only below ``root``."""
    path = folder / name
    node = name.rsplit(".", 1)[0]
    try:
        with open_regular(path, root=root) as fh:
            st = os.fstat(fh.fileno())
            data = fh.read(MAX_LEDGER_BYTES + 1)
    except OutsideRun:
        ledger.warnings.append(f"receipts/{name}: {OUTSIDE_RUN}")
        return
    except OSError as exc:
        ledger.warnings.append(f"cannot read receipts/{name}: {exc.strerror or exc}")
        return
    cut = len(data) > MAX_LEDGER_BYTES
    if cut:
        ledger.warnings.append(f"receipts/{name} is over {MAX_LEDGER_BYTES // 2**20} MiB; only its start was read")
        data = data[:MAX_LEDGER_BYTES]
    chain = ledger.by_node.setdefault(node, [])
    chain.clear()
    if node not in ledger.order:
        ledger.order.append(node)
        ledger.order.sort()
    if name.endswith(".json") and data.decode("utf-8", errors="replace").lstrip().startswith("["):
        _read_array(data.decode("utf-8", errors="replace"), name, node, chain, ledger.warnings)  # one array
        return
    if files is None or cut or not name.endswith(".jsonl"):
        _read_lines(data.decode("utf-8", errors="replace"), name, node, chain, ledger.warnings, 1)
        return
    place = _Place(FileTail(path))
    _feed(place, data, st, name, node, chain, ledger.warnings, whole=True)
    files[name] = place


def _feed(place: _Place, data: bytes, st: os.stat_result | None, name: str, node: str, chain: list[Receipt],
          warnings: list[str], *, whole: bool = False) -> None:
    """Parse ``data`` (the bytes after ``place``) into ``chain``: complete lines for good, a
    last line without its newline provisionally (when it is already a JSON object). A
    half-written last line is warned about on a ``whole`` read (as ``read_ledgers`` does)
    and read again when its end arrives."""
    if place.provisional:
        del chain[len(chain) - place.provisional:]
        place.provisional = 0
    end = data.rfind(b"\n") + 1
    if end and place.half_warning is not None:
        # The half-written line warned about has its end now: it is read below (and warned
        # about again only if it is still not a JSON object).
        if place.half_warning in warnings:
            warnings.remove(place.half_warning)
        place.half_warning = None
    if end:
        text = data[:end].decode("utf-8", errors="replace")
        _read_lines(text, name, node, chain, warnings, place.lines + 1)
        place.lines += text.count("\n")
        place.tail.advance(end, st, data)
    elif st is not None and place.tail.inode is None:
        place.tail.advance(0, st)
    rest = data[end:].decode("utf-8", errors="replace").strip()
    if rest:
        try:
            parsed = json.loads(rest)
        except ValueError:
            if whole:
                place.half_warning = f"receipts/{name} line {place.lines + 1}: not a JSON object, skipped"
                warnings.append(place.half_warning)
            return  # half written: read again when its end arrives
        if isinstance(parsed, dict):
            chain.append(receipt_from(parsed, node, len(chain)))
            place.provisional = 1


def _read_lines(text: str, name: str, node: str, chain: list[Receipt], warnings: list[str], first: int) -> None:
    for number, raw in enumerate(text.splitlines(), start=first):
        if not raw.strip():
            continue
        try:
            parsed = json.loads(raw)
        except ValueError:
            # the last line may be half written while the VM appends
            warnings.append(f"receipts/{name} line {number}: not a JSON object, skipped")
            continue
        if not isinstance(parsed, dict):
            warnings.append(f"receipts/{name} line {number}: not a JSON object, skipped")
            continue
        chain.append(receipt_from(parsed, node, len(chain)))


@dataclass(slots=True)
class LedgerTail:
    """A run's ledger kept current by reading only what was appended to each
    ``receipts/{node}.jsonl`` (as event logs are tailed): ``files`` say where each file's
    reading stands; a truncated, replaced or rewritten file (inode, size, the hash of the
    bytes before the offset: ``FileTail``) is read again whole, a ``.json`` array always."""

    run_dir: Path
    ledger: Ledger
    files: dict[str, _Place] = field(default_factory=dict)
    root: Path | None = None  # files are read only below it (the run's root)

    @classmethod
    def read(cls, run_dir: Path, root: Path | None = None) -> LedgerTail:
        files: dict[str, _Place] = {}
        root = root or run_root(run_dir)
        return cls(run_dir, read_ledgers(run_dir, files, root), files, root)

    def update(self, names: set[str]) -> bool:
        """Bring the ledger up to date with the files ``names`` (``{node}.jsonl`` or
        ``.json``); True when a chain changed."""
        folder = self.run_dir / "receipts"
        changed = False
        for name in sorted(names):
            node = name.rsplit(".", 1)[0]
            place = self.files.get(name)
            if not (folder / name).exists():
                changed |= self.ledger.by_node.pop(node, None) is not None
                if node in self.ledger.order:
                    self.ledger.order.remove(node)
                self.files.pop(name, None)
                continue
            if place is None:
                self._whole(folder, name)
                changed = True
                continue
            try:
                change, st, data = place.tail.look(MAX_LEDGER_BYTES)
                if change is Change.SAME:
                    continue
            except OSError:
                continue
            if change is Change.RESET:
                self._whole(folder, name)
                changed = True
                continue
            chain = self.ledger.by_node.setdefault(node, [])
            before = [id(r) for r in chain]
            _feed(place, data, st, name, node, chain, self.ledger.warnings)
            changed |= [id(r) for r in chain] != before
        return changed

    def _whole(self, folder: Path, name: str) -> None:
        files: dict[str, _Place] = {}
        _read_file(self.ledger, folder, name, files, self.root or run_root(self.run_dir))
        self.files.pop(name, None)
        if name in files:
            self.files[name] = files[name]


def _read_array(text: str, name: str, node: str, chain: list[Receipt], warnings: list[str]) -> None:
    try:
        items = json.loads(text)
    except ValueError:
        warnings.append(f"receipts/{name} is not a JSON array; skipped")
        return
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict):
            chain.append(receipt_from(item, node, len(chain)))
        else:
            warnings.append(f"receipts/{name} item {index + 1}: not a JSON object, skipped")


def chain_break(chain: list[Receipt]) -> str | None:
    """Where a node's chain breaks: the first receipt whose ``prev`` is not the hash of the
    one before it (checked only where both hashes were written), or a first receipt with a
    ``prev``. ``None`` when intact."""
    for index, receipt in enumerate(chain):
        if index == 0:
            continue
        before = chain[index - 1]
        if before.hash and receipt.prev and receipt.prev != before.hash:
            return f"receipt {index + 1} points to {receipt.prev[:19]}…, not to receipt {index}"
        if before.hash and not receipt.prev:
            return f"receipt {index + 1} has no prev pointer"
    return None
