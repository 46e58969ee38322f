"""A watched 0.15 skill run's receipt ledgers are tailed (receipts.LedgerTail, skill_live.py):
an append is parsed alone and ends where a fresh read does; a half-written line waits for
its end; a truncated or replaced ledger is read again whole."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone

from conftest import FIXTURES

import prose_tui.backends.filesystem.live as fs_live
from prose_tui.backends import open_run
from prose_tui.backends.filesystem.backend import FilesystemBackend

MIXED = FIXTURES / "skill" / "mixed" / "runs" / "20260618-103045-9c8b7a"
LATER = datetime(2026, 11, 23, tzinfo=timezone.utc)


def _receipt(status: str, prev: str, content: str, fresh: int) -> str:
    return json.dumps({"node": "glossary", "status": status, "prev": prev, "cost": {"tokens_fresh": fresh, "tokens_reused": 0},
                       "content_hash": content}) + "\n"


def _shape(run):
    return (
        [(r.node, r.status, r.seq, r.hash) for r in run.receipts],
        [(n.name, n.status, n.receipts, n.tokens_fresh, n.chain_ok) for n in run.nodes],
        [(e.seq, e.kind, e.text, e.status) for e in run.events],
        {k: v for k, v in run.metrics.items() if k.startswith(("receipts", "tokens_"))},
        run.status, run.status_reason,
    )


def test_an_appended_receipt_is_parsed_alone_and_ends_where_a_fresh_read_does(tmp_path, monkeypatch):
    run_dir = tmp_path / "runs" / MIXED.name
    shutil.copytree(MIXED, run_dir)
    ledger = run_dir / "receipts" / "glossary.jsonl"
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=LATER)
    reads = []
    real = fs_live.load_run
    monkeypatch.setattr(fs_live, "load_run", lambda *a, **k: reads.append(a) or real(*a, **k))

    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(_receipt("failed", "sha256:g2", "sha256:g3", 700))
    delta = backend.apply(run, {ledger}, now=LATER)
    assert reads == [] and delta.run is run and not delta.reread
    assert [e.status for e in delta.events if e.name == "glossary"][-1:] == ["failed"]
    assert _shape(run) == _shape(open_run(run_dir, now=LATER))

    # Half of a line: nothing yet (no warning); its end: the receipt.
    line = _receipt("rendered", "sha256:g3", "sha256:g4", 900)
    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(line[:40])
    warnings = list(run.warnings)
    backend.apply(run, {ledger}, now=LATER)
    assert run.warnings == warnings
    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(line[40:])
    backend.apply(run, {ledger}, now=LATER)
    assert reads == []
    assert _shape(run) == _shape(open_run(run_dir, now=LATER))
    assert next(n for n in run.nodes if n.name == "glossary").receipts == 4


def test_a_truncated_or_replaced_ledger_is_read_again_whole(tmp_path):
    run_dir = tmp_path / "runs" / MIXED.name
    shutil.copytree(MIXED, run_dir)
    ledger = run_dir / "receipts" / "glossary.jsonl"
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=LATER)
    first = ledger.read_text(encoding="utf-8").splitlines(keepends=True)[0]
    ledger.write_text(first, encoding="utf-8")  # truncated to its first receipt
    backend.apply(run, {ledger}, now=LATER)
    assert next(n for n in run.nodes if n.name == "glossary").receipts == 1
    assert _shape(run) == _shape(open_run(run_dir, now=LATER))
    tmp = ledger.with_name(".glossary.tmp")
    tmp.write_text(first + _receipt("failed", "sha256:g1", "sha256:x2", 5), encoding="utf-8")
    os.replace(tmp, ledger)  # replaced (a new inode)
    backend.apply(run, {ledger}, now=LATER)
    assert next(n for n in run.nodes if n.name == "glossary").status == "failed"
    assert _shape(run) == _shape(open_run(run_dir, now=LATER))


def test_a_half_written_line_seen_on_opening_loses_its_warning_when_it_completes(tmp_path):
    run_dir = tmp_path / "runs" / MIXED.name
    shutil.copytree(MIXED, run_dir)
    ledger = run_dir / "receipts" / "glossary.jsonl"
    line = _receipt("rendered", "sha256:g3", "sha256:g4", 900)
    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(line[:40])  # the VM is half way through a line when the run is opened
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=LATER)
    half = [w for w in run.warnings if w.startswith("receipts/glossary.jsonl line")]
    assert half, run.warnings  # a whole read warns about the half line
    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(line[40:])
    backend.apply(run, {ledger}, now=LATER)
    assert not [w for w in run.warnings if w in half], run.warnings
    assert _shape(run) == _shape(open_run(run_dir, now=LATER))
    assert run.warnings == open_run(run_dir, now=LATER).warnings


def test_a_node_folder_linked_outside_the_run_stays_unread_after_an_append(tmp_path):
    """Containment (issue 29) holds for a ledger append as for a full read: a published
    node folder that is a symlink out of the run does not lend the node its ``.version``."""
    run_dir = tmp_path / "runs" / MIXED.name
    shutil.copytree(MIXED, run_dir)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / ".version").write_text("sha256:from-outside-the-run\n", encoding="utf-8")
    node_dir = run_dir / "world-model" / "glossary"
    shutil.rmtree(node_dir)
    node_dir.symlink_to(outside, target_is_directory=True)
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=LATER)
    opened = next(n for n in run.nodes if n.name == "glossary").version
    assert opened != "sha256:from-outside-the-run"

    ledger = run_dir / "receipts" / "glossary.jsonl"
    with open(ledger, "a", encoding="utf-8") as fh:
        fh.write(_receipt("failed", "sha256:g2", "sha256:g3", 700))
    delta = backend.apply(run, {ledger}, now=LATER)
    assert not delta.reread
    assert next(n for n in run.nodes if n.name == "glossary").version == opened
    assert _shape(run) == _shape(open_run(run_dir, now=LATER))
