"""History of runs made of nodes and receipts (openprose-0.15 skill runs, Reactor state dirs):
the cursor, the failures (x/X/!), what a failure had around it, and the headless report.

Fixtures: tests/fixtures/skill/ and tests/fixtures/reactor/ (written by hand / by make.py as
a VM or the Reactor would); the real Reactor corpus is read in place (PROSE_TUI_REACTOR_CORPUS,
default ../shared/corpus/reactor) and skipped, saying where it was looked for, when absent.
Expected values come from the files themselves (receipts.json, receipts/*.jsonl, __error.md).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from collections import Counter
from contextlib import redirect_stdout
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES

from prose_tui.backends import open_run
from prose_tui.cli.main import main as cli_main
from prose_tui.history import failure_context, history_of, state_at
from prose_tui.model import EventKind, RunStatus, StatementState

K = EventKind
S = StatementState
SKILL = FIXTURES / "skill"
COMPLETED = SKILL / "completed" / "runs" / "20260702-091500-a1b2c3"
FAILED = SKILL / "failed" / "runs" / "20260703-140210-d4e5f6"
FRONT = SKILL / "frontmatter" / "runs" / "20260709-071500-e1f2a3"
NEWSROOM = FIXTURES / "reactor" / "newsroom"
NEWSROOM_LEDGER = NEWSROOM / "state" / "receipts.json"
LATER = datetime.now(timezone.utc) + timedelta(days=2)  # long after any file time: quiescent
ROOT = Path(__file__).resolve().parent.parent
REACTOR_CORPUS = Path(os.environ.get("PROSE_TUI_REACTOR_CORPUS", ROOT.parent / "shared" / "corpus" / "reactor")).resolve()
FULL_REASON = "no-eligible-calls: Every call the scout published closed before the run date (2026-07-03)."


def _cli(*args: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(list(args)) == 0
    return out.getvalue()


def _show_json(*args: str) -> dict:
    return json.loads(_cli("show", "--json", *args))


def _index(history, kind: EventKind, name: str | None = None, nth: int = 0) -> int:
    found = [i for i, e in enumerate(history.events) if e.kind is kind and (name is None or e.name == name)]
    return found[nth]


# -- skill runs: the cursor ---------------------------------------------------------------------


def test_both_input_lines_of_step_1_are_done_mid_run():
    run = open_run(COMPLETED, now=LATER)
    history = history_of(run)
    assert [history.refs[i].trace_line for i in (0, 1)] == [1, 2]  # two lines share step 1
    at = state_at(run, history, _index(history, K.PARALLEL_STARTED))
    assert [t.text for t in at.trace[:2]] == ["1→ [input] question ✓", "1→ [input] prior ✓"]
    assert [t.state for t in at.trace[:2]] == [S.COMPLETE, S.COMPLETE]
    assert at.trace[-1].text.startswith("3→ ∥start") and at.trace[-1].state is S.EXECUTING
    assert at.status is RunStatus.RUNNING


def test_skill_nodes_as_of_a_middle_event():
    run = open_run(COMPLETED, now=LATER)
    history = history_of(run)
    at = state_at(run, history, _index(history, K.RECEIPT_RENDERED, "critic"))
    nodes = {n.name: n for n in at.nodes}
    assert (nodes["researcher"].status, nodes["researcher"].receipts, nodes["researcher"].tokens_fresh) == (
        "rendered", 1, 18250)
    assert (nodes["critic"].status, nodes["critic"].tokens_fresh, nodes["critic"].tokens_reused) == (
        "rendered", 6400, 2100)
    assert nodes["critic"].version == "sha256:7c6a180b36896a0a8c02787eeafb0e4c0000000000000000000000000000beef"
    for later in ("fact-checker", "synthesizer"):
        assert (nodes[later].status, nodes[later].receipts, nodes[later].version) == (None, 0, None)
    assert [r.node for r in at.receipts] == ["researcher", "critic"]
    assert at.metrics["tokens_fresh"] == 18250 + 6400
    # published world models of nodes that had not rendered yet are not there yet
    assert {b.service for b in at.bindings} == {"caller", "researcher", "critic"}
    # the live run is untouched
    assert {n.name: n.status for n in run.nodes}["synthesizer"] == "rendered"
    assert run.metrics["tokens_fresh"] == 18250 + 6400 + 9100


# -- skill runs: failures -------------------------------------------------------------------------


def test_failed_skill_run_has_one_failure_for_the_node_and_one_for_the_run():
    run = open_run(FAILED, now=LATER)
    history = history_of(run)
    failures = history.failures()
    assert [history.events[i].kind for i in failures] == [K.RECEIPT_FAILED, K.RUN_ERRORED]
    assert all(history.events[i].kind is not K.STATEMENT_FAILED for i in failures)  # the short ✗ line


def test_bang_on_the_failed_skill_run_lands_on_the_receipt_with_the_full_text():
    run = open_run(FAILED, now=LATER)
    history = history_of(run)
    first = history.first_failure()
    assert first is not None and history.events[first].kind is K.RECEIPT_FAILED
    ctx = failure_context(run, history, first)
    assert ctx.node == "ranker"
    assert ctx.error == FULL_REASON
    assert ctx.statement is not None and ctx.statement.text == "3→ ranker ✗ no-eligible-calls"
    assert ctx.retries == []
    assert [(b.service, b.name) for b in ctx.context_bindings] == [("scout", "calls")]  # what ranker reads


def test_run_error_of_a_skill_run_names_the_node_failure_text():
    run = open_run(FAILED, now=LATER)
    history = history_of(run)
    ctx = failure_context(run, history, history.failures()[-1])
    assert ctx.node == "ranker" and FULL_REASON in (ctx.error or "")


def test_equal_texts_keep_the_receipt_and_a_node_without_producers_reads_the_caller():
    run = open_run(FRONT, now=LATER)
    history = history_of(run)
    assert [history.events[i].kind for i in history.failures()] == [K.RECEIPT_FAILED]
    ctx = failure_context(run, history, history.failures()[0])
    assert ctx.error == "missing-env:OPENWEATHER_API_KEY"
    assert [(b.service, b.name) for b in ctx.context_bindings] == [("caller", "harbour")]


def test_a_nodes_error_file_and_program_notes_are_those_of_then():
    run = open_run(FAILED, now=LATER)
    history = history_of(run)
    before = state_at(run, history, _index(history, K.RECEIPT_RENDERED, "scout"))
    assert not any(s.title.startswith("Error: ranker") for s in before.sections)
    program = next(s.text for s in before.sections if s.title.startswith("Program (nodes of"))
    assert "ranker ← scout    # no receipt yet" in program
    after = state_at(run, history, history.first_failure() or 0)
    assert any(s.title.startswith("Error: ranker") for s in after.sections)
    program = next(s.text for s in after.sections if s.title.startswith("Program (nodes of"))
    assert f"ranker ← scout    # failed · 1 receipt · {FULL_REASON}" in program


def test_without_a_log_the_node_lines_follow_the_cursor(tmp_path):
    run_dir = tmp_path / "runs" / FAILED.name
    shutil.copytree(FAILED, run_dir)
    (run_dir / "vm.log.md").unlink()
    run = open_run(run_dir, now=LATER)
    history = history_of(run)
    assert [e.kind for e in history.events] == [K.RECEIPT_FAILED, K.RECEIPT_RENDERED]  # receipts by node name
    at = state_at(run, history, 0)
    assert [(t.text, t.state, t.note) for t in at.trace] == [
        ("scout", S.PENDING, "no receipt yet"),
        ("ranker ← scout", S.FAILED, f"failed · 1 receipt · {FULL_REASON}"),
        ("writer ← ranker", S.PENDING, "no receipt yet"),
    ]
    assert history.failures() == [0]
    assert failure_context(run, history, 0).error == FULL_REASON


def _retried_run(tmp_path: Path, last: str) -> Path:
    """The failed fixture, where ranker failed twice (a rendered attempt first) then ``last``."""
    run_dir = tmp_path / "runs" / FAILED.name
    shutil.copytree(FAILED, run_dir)
    receipts = [
        {"node": "ranker", "status": "rendered", "fingerprints": {"@atomic": "sha256:rank-0"},
         "cost": {"tokens": {"fresh": 100, "reused": 0}}, "content_hash": "sha256:ranker-0"},
        {"node": "ranker", "status": "failed", "prev": "sha256:ranker-0", "semantic_diff": {"failure_reason": "timeout"},
         "cost": {"tokens": {"fresh": 200, "reused": 0}}, "content_hash": "sha256:ranker-1"},
        {"node": "ranker", "status": "failed", "prev": "sha256:ranker-1",
         "semantic_diff": {"failure_reason": "rate-limited"}, "cost": {"tokens": {"fresh": 300, "reused": 0}},
         "content_hash": "sha256:ranker-2"},
        {"node": "ranker", "status": last, "prev": "sha256:ranker-2",
         "semantic_diff": {"failure_reason": "no-eligible-calls"} if last == "failed" else {},
         "fingerprints": {"@atomic": "sha256:rank-3"} if last == "rendered" else {},
         "cost": {"tokens": {"fresh": 400, "reused": 0}}, "content_hash": "sha256:ranker-3"},
    ]
    (run_dir / "receipts" / "ranker.jsonl").write_text("".join(json.dumps(r) + "\n" for r in receipts))
    outcome = "✗ no-eligible-calls\n---error 2026-07-03T14:09:55Z no-eligible-calls" if last == "failed" else (
        "✓ rendered\n---end 2026-07-03T14:09:55Z")
    (run_dir / "vm.log.md").write_text(
        "# run:20260703-140210-d4e5f6 grant-scout\nroot: grants/grant-scout\n\n1→ [input] topic ✓\n"
        "2→ scout ✓ rendered\n3→ ranker ✓ rendered\n3→ ranker ✗ timeout\n3→ ranker ✗ rate-limited\n"
        f"3→ ranker {outcome}\n")
    if last != "failed":
        (run_dir / "workspace" / "ranker" / "__error.md").unlink()
    return run_dir


def test_failed_attempts_before_a_failed_receipt_are_its_retries(tmp_path):
    run = open_run(_retried_run(tmp_path, "failed"), now=LATER)
    history = history_of(run)
    failures = history.failures()
    receipt_failures = [i for i in failures if history.events[i].kind is K.RECEIPT_FAILED]
    assert len(receipt_failures) == 1 and not any(history.events[i].kind is K.STATEMENT_FAILED for i in failures)
    ctx = failure_context(run, history, receipt_failures[0])
    assert [r.kind for r in ctx.retries] == [K.RECEIPT_FAILED, K.RECEIPT_FAILED]
    assert ["timeout" in ctx.retries[0].text, "rate-limited" in ctx.retries[1].text] == [True, True]
    assert ctx.event not in ctx.retries and ctx.error is not None and ctx.error.startswith("no-eligible-calls")
    # the node as of its failure: four receipts, the last failed, the version the last rendered one
    at = state_at(run, history, receipt_failures[0])
    ranker = next(n for n in at.nodes if n.name == "ranker")
    assert (ranker.status, ranker.receipts, ranker.tokens_fresh) == ("failed", 4, 1000)


def test_failed_attempts_a_node_got_past_are_not_failures(tmp_path):
    run = open_run(_retried_run(tmp_path, "rendered"), now=LATER)
    history = history_of(run)
    assert history.failures() == []
    middle = _index(history, K.RECEIPT_FAILED, "ranker", nth=1)
    at = state_at(run, history, middle)
    ranker = next(n for n in at.nodes if n.name == "ranker")
    assert (ranker.status, ranker.receipts, ranker.failure_reason) == ("failed", 3, "rate-limited")
    assert ranker.version == "sha256:rank-0"
    assert "node ranker failed: rate-limited" in at.status_reason


# -- Reactor state dirs ----------------------------------------------------------------------------


def test_reactor_failure_is_the_last_receipt_of_the_failing_node():
    run = open_run(NEWSROOM, now=LATER)
    history = history_of(run)
    ledger = json.loads(NEWSROOM_LEDGER.read_text())
    failed = [i for i, r in enumerate(ledger) if r["status"] == "failed"]
    assert history.failures() == failed
    ctx = failure_context(run, history, failed[0])
    assert ctx.node == "responsibility.summary"
    assert ctx.error == ledger[failed[0]]["semantic_diff"]["failure_reason"]
    assert ctx.statement is not None and ctx.statement.step == "responsibility.summary"
    assert ctx.statement.state is S.FAILED
    assert [b.name for b in ctx.context_bindings] == ["responsibility.triage", "responsibility.summary"]


def _expected_nodes(ledger: list[dict], upto: int) -> dict[str, tuple[str, int, int, int]]:
    out: dict[str, tuple[str, int, int, int]] = {}
    for r in ledger[: upto + 1]:
        _, count, fresh, reused = out.get(r["node"], ("", 0, 0, 0))
        out[r["node"]] = (r["status"], count + 1, fresh + r["cost"]["tokens"]["fresh"],
                          reused + r["cost"]["tokens"]["reused"])
    return out


def _check_nodes_at(run, history, ledger: list[dict], cursor: int) -> None:
    at = state_at(run, history, cursor)
    want = _expected_nodes(ledger, cursor)
    got = {n.name: (n.status, n.receipts, n.tokens_fresh, n.tokens_reused) for n in at.nodes if n.receipts}
    assert got == want
    assert all(n.status is None for n in at.nodes if n.name not in want)
    states = {t.step: t.state for t in at.trace}
    for n in at.nodes:
        expected = {"rendered": S.COMPLETE, "skipped": S.SKIPPED, "failed": S.FAILED}.get(n.status or "", S.PENDING)
        assert states[n.name] is expected, n.name
    failing = [name for name, (status, *_rest) in want.items() if status == "failed"]
    assert at.status is (RunStatus.FAILED if failing else RunStatus.RUNNING)
    assert len(at.receipts) == cursor + 1


def test_reactor_nodes_as_of_a_middle_event():
    run = open_run(NEWSROOM, now=LATER)
    history = history_of(run)
    ledger = json.loads(NEWSROOM_LEDGER.read_text())
    middle = len(ledger) // 2
    _check_nodes_at(run, history, ledger, middle)
    at = state_at(run, history, middle)
    summary = next(n for n in at.nodes if n.name == "responsibility.summary")
    assert summary.status == "rendered" and summary.failure_reason is None
    assert summary.version == ledger[3]["fingerprints"]["@atomic"]
    line = next(t for t in at.trace if t.step == "responsibility.summary")
    assert line.note is not None and line.note.startswith("rendered · 1 receipt · 420 fresh / 120 reused tokens")
    assert at.status is RunStatus.RUNNING and "receipts arriving" in at.status_reason
    assert run.status is RunStatus.FAILED  # the live run is untouched


def test_show_at_json_has_the_node_statuses_of_then():
    ledger = json.loads(NEWSROOM_LEDGER.read_text())
    middle = len(ledger) // 2
    detail = _show_json("--at", str(middle), str(NEWSROOM))
    assert detail["status"] == "running"
    want = _expected_nodes(ledger, middle)
    assert {n["name"]: n["status"] for n in detail["nodes"] if n["receipts"]} == {k: v[0] for k, v in want.items()}
    assert detail["cost"]["receipts"] == middle + 1
    assert detail["cost"]["tokens_fresh"] == sum(r["cost"]["tokens"]["fresh"] for r in ledger[: middle + 1])
    failed = next(i for i, r in enumerate(ledger) if r["status"] == "failed")
    detail = _show_json("--at", str(failed), str(NEWSROOM))
    assert detail["status"] == "failed"
    assert {n["name"]: n["status"] for n in detail["nodes"]}["responsibility.summary"] == "failed"


def test_show_at_json_of_a_skill_run_has_its_nodes_then():
    history = history_of(open_run(COMPLETED, now=LATER))
    at = _index(history, K.RECEIPT_SKIPPED, "fact-checker")
    detail = _show_json("--at", str(at), str(COMPLETED))
    assert {n["name"]: n["status"] for n in detail["nodes"]} == {
        "researcher": "rendered", "critic": "rendered", "fact-checker": "skipped", "synthesizer": None}
    assert [t["state"] for t in detail["trace"][:2]] == ["complete", "complete"]


# -- the explorer: ! on a failed skill run --------------------------------------------------------


async def test_bang_in_the_explorer_shows_the_failed_receipt_with_its_text():
    from app_helpers import make_app, ready

    from prose_tui.tui.widgets.timeline import Timeline
    from prose_tui.tui.widgets.trace_view import TraceView
    from prose_tui.tui.widgets.value_viewer import ValueViewer

    app = make_app(FAILED)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await pilot.press("exclamation_mark")
        timeline = app.explorer.query_one(Timeline)
        assert timeline.events[timeline.cursor].kind is K.RECEIPT_FAILED
        viewer = app.explorer.query_one(ValueViewer)
        assert viewer.target.title.startswith("Failure at event")
        assert FULL_REASON in viewer.text and "calls" in viewer.text
        trace = app.explorer.query_one(TraceView)
        assert trace.lines[trace.cursor].text == "3→ ranker ✗ no-eligible-calls"


# -- the headless report --------------------------------------------------------------------------


def test_show_prints_the_nodes_table_and_cost():
    out = _cli("show", str(NEWSROOM))
    ledger = json.loads(NEWSROOM_LEDGER.read_text())
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if "NODE" in line and "RECEIPTS" in line and "PRODUCERS" in line)
    rows = {line.split()[1]: line.split() for line in lines[head + 1: head + 6]}
    count = Counter(r["node"] for r in ledger)
    assert set(rows) == set(count)
    summary = rows["responsibility.summary"]
    assert summary[0] == "✗" and summary[2] == "failed" and summary[3] == str(count["responsibility.summary"])
    assert summary[4].startswith("sha256:") and summary[4].endswith("…")
    assert summary[5:8] == ["680", "240", "responsibility.triage"]
    assert "responsibility.summary failed: postcondition unmet: ### Maintains.headline is empty" in out
    fresh = sum(r["cost"]["tokens"]["fresh"] for r in ledger)
    reused = sum(r["cost"]["tokens"]["reused"] for r in ledger)
    assert f"{fresh:,} fresh + {reused:,} reused tokens over {len(ledger)} receipts" in out


def test_show_prints_text_from_the_run_literally(tmp_path):
    run_dir = tmp_path / "runs" / FAILED.name
    shutil.copytree(FAILED, run_dir)
    (run_dir / "workspace" / "ranker" / "__error.md").write_text("# Error: [bold]no-calls[/bold]\n\n[red]none[/red] open\n")
    out = _cli("show", str(run_dir))
    below_the_table = [line for line in out.splitlines() if line.startswith("ranker failed: ")]
    assert below_the_table == ["ranker failed: no-eligible-calls — [bold]no-calls[/bold]: [red]none[/red] open"]


def test_show_at_a_middle_event_prints_the_nodes_of_then():
    out = _cli("show", "--at", "2", str(FAILED))
    row = next(line for line in out.splitlines() if line.split()[:2] == ["·", "ranker"])
    assert row.split()[2:4] == ["—", "0"]


# -- the real Reactor corpus ------------------------------------------------------------------------


def corpus_dirs() -> list:
    if not REACTOR_CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"Reactor corpus not found at {REACTOR_CORPUS} (set PROSE_TUI_REACTOR_CORPUS)"))]
    found = sorted(p.parent for p in REACTOR_CORPUS.rglob("receipts.json"))
    return [pytest.param(d, id=str(d.relative_to(REACTOR_CORPUS))) for d in found]


@pytest.mark.parametrize("state_dir", corpus_dirs())
def test_corpus_failures_and_nodes_at_a_middle_event(state_dir: Path) -> None:
    ledger = json.loads((state_dir / "receipts.json").read_text(encoding="utf-8"))
    run = open_run(state_dir, now=LATER)
    history = history_of(run)
    last = {r["node"]: (i, r["status"]) for i, r in enumerate(ledger)}
    assert history.failures() == sorted(i for i, status in last.values() if status == "failed")
    _check_nodes_at(run, history, ledger, len(ledger) // 2)
    failed = [i for i, r in enumerate(ledger) if r["status"] == "failed"]
    for i in failed[:3]:  # right after a failed receipt, the node is failing and so is the run
        _check_nodes_at(run, history, ledger, i)
        ctx = failure_context(run, history, i)
        assert ctx.node == ledger[i]["node"] and ctx.error
        assert ctx.event not in ctx.retries
