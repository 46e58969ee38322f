"""The history in the headless CLI: events in show --json, show --at N, errors."""

from __future__ import annotations

import json

from conftest import FIXTURES

from prose_tui.cli import main as cli

FAILED_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"


def test_show_json_lists_every_event_in_order(capsys):
    assert cli.main(["show", str(FAILED_RUN), "--json"]) == 0
    detail = json.loads(capsys.readouterr().out)
    events = detail["events"]
    assert [e["seq"] for e in events] == list(range(14))
    assert set(events[0]) == {"seq", "time", "kind", "step", "name", "status", "text"}
    assert events[6]["kind"] == "statement_failed" and events[7]["kind"] == "retry"
    assert events[-1]["kind"] == "run_errored" and events[-1]["time"].startswith("2026-03-05T12:09:30")
    assert detail["status"] == "failed" and detail["history"]["origin"] == "log"


def test_show_at_prints_the_state_as_of_that_event(capsys):
    assert cli.main(["show", str(FAILED_RUN), "--json", "--at", "6"]) == 0
    at = json.loads(capsys.readouterr().out)
    texts = [t["text"] for t in at["trace"]]
    assert texts[-1] == "4→ draft ✗ timeout" and not any("gate:ship" in t for t in texts)
    assert [f["block"] for f in at["call_stack"]] == ["review"]
    assert at["history"]["at"] == 6


def test_show_at_out_of_range_fails_with_one_line(capsys):
    assert cli.main(["show", str(FAILED_RUN), "--at", "99"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "14 events" in err[0]
