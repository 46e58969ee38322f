"""backends.common: the canonical JSON a chained receipt is hashed over (FORMATS.md generation 8)
and the append-only JSON Lines tail (a live read costs what was appended)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from prose_tui.backends.common.hashchain import canonical_json, content_hash, non_integers
from prose_tui.backends.common.jsonl import JsonlTail


def test_canonical_form_sorts_keys_has_no_whitespace_and_keeps_utf8() -> None:
    receipt = {"prev": None, "b": [1, {"z": "é", "a": True}], "content_hash": "sha256:x"}
    assert canonical_json(receipt) == '{"b":[1,{"a":true,"z":"é"}],"prev":null}'.encode()
    expected = "sha256:" + hashlib.sha256(canonical_json(receipt)).hexdigest()
    assert content_hash(receipt) == expected
    assert content_hash({**receipt, "hash_algorithm": "no-such-hash"}) is None
    assert non_integers({"usage": {"input_tokens": 1.5, "n": [2, 0.5]}}) == ["usage.input_tokens", "usage.n[1]"]


def test_tail_reads_appends_holds_a_torn_line_and_sees_a_rewrite(tmp_path: Path) -> None:
    ledger = tmp_path / "receipts.jsonl"
    ledger.write_bytes(b'{"n":1}\n{"n":2}')
    tail = JsonlTail(ledger)
    first = tail.read()
    assert first is not None and [(x.number, x.value) for x in first.lines] == [(1, {"n": 1}), (2, {"n": 2})]
    assert not any(x.floats for x in first.lines)
    with ledger.open("ab") as fh:
        fh.write(b'\n{"n":3.5}\n{"n":')
    grown = tail.read()
    assert grown is not None and [x.number for x in grown.lines] == [3] and grown.lines[0].floats
    assert grown.torn is not None and grown.torn.number == 4
    with ledger.open("ab") as fh:
        fh.write(b"4}\n")
    done = tail.read()
    assert done is not None and [(x.number, x.value) for x in done.lines] == [(4, {"n": 4})] and done.torn is None
    ledger.write_bytes(b'{"n":9}\n')
    assert tail.read() is None  # rewritten, not appended: read it whole again


def test_tail_takes_a_same_size_edit_for_a_rewrite(tmp_path: Path) -> None:
    ledger = tmp_path / "receipts.jsonl"
    ledger.write_bytes(b'{"n":1}\n{"n":2}\n')
    tail = JsonlTail(ledger)
    assert tail.read() is not None
    ledger.write_bytes(b'{"n":7}\n{"n":2}\n')  # an earlier line edited in place, the size kept
    os.utime(ledger, ns=(tail.mtime_ns + 10**9, tail.mtime_ns + 10**9))
    assert tail.read() is None
