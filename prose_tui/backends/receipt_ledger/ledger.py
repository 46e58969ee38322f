"""``receipts.jsonl`` read and its chain verified (FORMATS.md generation 8, The chain).

``content_hash = "sha256:" + hex(sha256(canonical(receipt without content_hash)))``
(``backends.common.hashchain``); line 1 has ``prev: null`` and line N's ``prev`` is line N-1's
``content_hash``; ``run.json``'s ``receipt_count`` and ``ledger_head`` anchor the end.
Consistency only: nothing is signed. What the check finds:

* problems (the chain is broken): a ``prev`` that is not the previous receipt's hash, a
  receipt whose hash does not recompute (edited after it was written), a receipt without a
  hash, a number that is not an integer (the canonical form has none), a whole line that is
  not a JSON object, a ledger shorter than its anchor or any other disagreement with it;
* warnings (the ledger is good up to them): a last line that is not whole JSON (a crash
  mid-append), an anchor exactly one receipt behind (a torn write: the receipt was appended
  and the crash came before ``run.json`` was rewritten), no ``run.json`` at all, a hash
  algorithm or contract version this reader does not know.

:class:`Ledger` is the per-run reading state: :meth:`Ledger.read` parses what was appended
since the last read and checks it, so following a live run costs what it appended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prose_tui.backends.common.hashchain import content_hash, non_integers
from prose_tui.backends.common.jsonl import JsonlLine, JsonlTail
from prose_tui.backends.common.text import visible_name
from prose_tui.backends.receipt_ledger.layout import RECEIPT_VERSIONS
from prose_tui.model import ChainReport

MAX_PROBLEMS = 100  # chain problems kept per ledger (the count goes on)


def short(value: object) -> str:
    """A hash for a sentence: ``sha256:0123456789ab…``; ``null`` for ``None``."""
    if not isinstance(value, str):
        return "null" if value is None else repr(value)
    head, sep, tail = visible_name(value).partition(":")
    return f"{head}:{tail[:12]}…" if sep and len(tail) > 12 else f"{head}{sep}{tail}"


@dataclass(frozen=True, slots=True)
class Entry:
    """One receipt as read: its line in the file and the object written."""

    line: int
    fields: dict[str, Any]
    floats: bool = False  # holds a number that is not an integer

    @property
    def statement(self) -> str:
        sid = self.fields.get("statement_id")
        return visible_name(" ".join(sid.split())) if isinstance(sid, str) and sid.strip() else "?"


@dataclass(slots=True)
class Anchor:
    """``run.json`` as last read: ``fields`` (``{}`` when absent or unreadable), and
    ``problem`` saying why it could not be used."""

    fields: dict[str, Any] = field(default_factory=dict)
    present: bool = False
    problem: str | None = None


@dataclass(slots=True)
class Ledger:
    """The reading state of one ``receipts.jsonl``: the tail, each receipt's stored hash in
    order, the problems and warnings found so far, and the torn last line if any."""

    tail: JsonlTail
    hashes: list[str | None] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # each receipt's line in the file
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    warnings: list[str] = field(default_factory=list)
    torn: JsonlLine | None = None
    run_id: str | None = None  # the first receipt's run_id: the others should match

    @classmethod
    def at(cls, path: Path, root: Path | None) -> Ledger:
        return cls(JsonlTail(path, root=root))

    def read(self) -> list[Entry] | None:
        """The receipts appended since the last read, checked; ``None`` when the file was
        rewritten (start a new :class:`Ledger`). Raises ``OSError``."""
        got = self.tail.read()
        if got is None:
            return None
        if got.lines or got.torn is not None or self.torn is not None:
            self.torn = got.torn
        out: list[Entry] = []
        for line in got.lines:
            if line.error is not None or not isinstance(line.value, dict):
                what = line.error or f"a JSON {type(line.value).__name__}"
                self._problem(f"line {line.number} is not a receipt ({what}): {visible_name(line.text[:80])}")
                continue
            entry = Entry(line.number, line.value, line.floats)
            self._check(entry)
            out.append(entry)
        return out

    @property
    def checked(self) -> int:
        return len(self.hashes)

    def _problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append("… more chain problems not listed")

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def _check(self, entry: Entry) -> None:
        obj, n = entry.fields, entry.line
        where = f"line {n} ({entry.statement})"
        stored = obj.get("content_hash")
        computed = content_hash(obj)
        if not isinstance(stored, str):
            self._problem(f"{where}: no content_hash")
        elif computed is None:
            self._warn(f"{where}: hash_algorithm {visible_name(repr(obj.get('hash_algorithm'))[:40])} is not one this reader knows; "
                       "its content_hash is not checked")
        elif ":" not in stored and computed.partition(":")[2] == stored.lower():
            self._warn(f"{where}: content_hash is written without its algorithm prefix "
                       f"({computed.partition(':')[0]}:); it recomputes")
        elif computed != stored:
            self._problem(f"{where}: content_hash {short(stored)} does not recompute ({short(computed)}): "
                          "the receipt was changed after it was written")
        if entry.floats and (floats := non_integers(obj)):
            self._problem(f"{where}: {', '.join(floats[:3])} is not an integer; the canonical form holds "
                          "integers only")
        prev = obj.get("prev")
        if not self.hashes:
            if prev is not None:
                self._problem(f"{where}: prev is {short(prev)}, but the first receipt's prev is null "
                              "(receipts before it are missing?)")
        elif prev != self.hashes[-1]:
            self._problem(f"{where}: prev {short(prev)} is not line {self.lines[-1]}'s content_hash "
                          f"{short(self.hashes[-1])}: a receipt was removed, inserted or reordered")
        version = obj.get("v")
        if version not in RECEIPT_VERSIONS:
            self._warn(f"{where}: contract version {visible_name(repr(version)[:60])} is not one this reader knows "
                       f"({', '.join(RECEIPT_VERSIONS)}); read as v1")
        run_id = obj.get("run_id")
        if self.run_id is None and isinstance(run_id, str):
            self.run_id = run_id
        elif isinstance(run_id, str) and run_id != self.run_id:
            self._warn(f"{where}: run_id {visible_name(repr(run_id)[:60])} is not the ledger's "
                       f"({visible_name(repr(self.run_id)[:60])})")
        self.hashes.append(stored if isinstance(stored, str) else computed)
        self.lines.append(n)

    def anchored(self, anchor: Anchor) -> tuple[list[str], list[str]]:
        """``(problems, warnings)`` of the ledger's end against ``anchor`` (``run.json``)."""
        if anchor.problem is not None:
            return [], [f"{anchor.problem}: the ledger's end is not anchored"]
        if not anchor.present:
            return [], ["no run.json: the ledger's end is not anchored (a ledger cut short would not show)"]
        count, head = anchor.fields.get("receipt_count"), anchor.fields.get("ledger_head")
        if not isinstance(count, int) or isinstance(count, bool):
            return [], [f"run.json's receipt_count is {count!r}, not a number: the ledger's end is not anchored"]
        n = len(self.hashes)

        def head_of(k: int) -> str | None:
            return self.hashes[k - 1] if 0 < k <= n else None

        if n == count and head == head_of(n):
            return [], []
        if n == count + 1 and head == head_of(count):
            return [], [f"torn write: line {self.lines[-1]} ({self._sid(-1)}) was appended after run.json was "
                        f"last written (receipt_count {count}): a crash before run.json was updated, or a write "
                        "in progress; the ledger is good up to it"]
        if n < count:
            return [f"the ledger holds {n} receipt{'s' if n != 1 else ''} but run.json anchors {count}: "
                    f"cut short (ledger_head {short(head)})"], []
        if n == count:
            return [f"run.json's ledger_head {short(head)} is not the last receipt's content_hash "
                    f"{short(head_of(n))}"], []
        return [f"the ledger holds {n} receipts but run.json anchors {count} (ledger_head {short(head)}): "
                "receipts were added without anchoring them"], []

    def _sid(self, index: int) -> str:
        return f"receipt {len(self.hashes) + index + 1 if index < 0 else index + 1}"

    def report(self, anchor: Anchor) -> ChainReport:
        """The chain check as of the last read (``show --json``'s ``chain``)."""
        end_problems, end_warnings = self.anchored(anchor)
        problems = [*self.problems, *end_problems]
        warnings = list(self.warnings)
        if self.torn is not None:
            warnings.insert(0, f"the last line ({self.torn.number}) of receipts.jsonl is not whole JSON: a crash "
                               f"mid-append? The ledger is read up to line {self.torn.number - 1}")
        warnings.extend(end_warnings)
        return ChainReport(ok=not problems, checked=self.checked, problems=tuple(problems), warnings=tuple(warnings))
