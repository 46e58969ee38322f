"""``show --json`` says what the chain check of a run's hash-chained ledger found (issue 30):
``chain: {ok, checked, problems, warnings}``, and ``null`` for a format that chains nothing."""

from __future__ import annotations

import json

from conftest import FIXTURES

from prose_tui.cli import main as cli

REACTOR = FIXTURES / "reactor"


def _show(capsys, path) -> dict:
    assert cli.main(["show", "--json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_healthy_reactor_ledger_reports_every_receipt_checked(capsys) -> None:
    detail = _show(capsys, REACTOR / "newsroom" / "state")
    chain = detail["chain"]
    assert chain["ok"] is True and chain["problems"] == [] and chain["warnings"] == []
    assert chain["checked"] == len(detail["receipts"]) > 0


def test_a_broken_reactor_chain_is_not_ok_and_says_where(capsys) -> None:
    chain = _show(capsys, REACTOR / "broken-chain")["chain"]
    assert chain["ok"] is False
    assert any(p.startswith("receipt #7 of responsibility.triage: prev is sha256:000000000000") for p in chain["problems"])
    assert any("receipt #10 of responsibility.triage: its content_hash" in p for p in chain["problems"])


def test_a_truncated_reactor_ledger_warns(capsys) -> None:
    chain = _show(capsys, REACTOR / "truncated")["chain"]
    assert chain["checked"] == 8
    assert any("receipts.json is not valid JSON" in w for w in chain["warnings"])


def test_a_format_without_a_ledger_has_chain_null(capsys) -> None:
    detail = _show(capsys, FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3")
    assert detail["chain"] is None
