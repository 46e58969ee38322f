"""Per-statement receipt ledgers (FORMATS.md generation 8; issue 30, "a new format, added as one
folder"): the receipts are the run's history and cost, a failed receipt is the run's failure,
and the hash chain is verified, its problems shown, never fatal.

Runs are written in tmp_path by ``receipt_ledger_vm`` as that VM would write them; the live
one by a second process appending receipts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS as SHARED_CORPUS
from receipt_ledger_vm import RUN_ID, chain, control, receipt, write_anchor, write_ledger, write_run

from prose_tui.backends import backend_for, backend_of, find_runs, open_run
from prose_tui.cli.main import main as cli_main
from prose_tui.model import RunStatus

HERE = Path(__file__).resolve().parent


def _show(capsys, path: Path) -> dict:
    assert cli_main(["show", "--json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def _run_dir(tmp_path: Path) -> Path:
    return tmp_path / ".libretto" / "runs" / RUN_ID


def _lines(run_dir: Path) -> list[str]:
    return (run_dir / "receipts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)


# -- a healthy run -------------------------------------------------------------------------------


def test_a_healthy_run_shows_receipts_as_history_cost_and_a_good_chain(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    sealed = write_run(run_dir)
    detail = _show(capsys, run_dir)
    assert (detail["backend"], detail["format"]) == ("receipt-ledger", "receipt-ledger")
    assert detail["status"] == "completed" and "run_end receipt (line 11): outcome completed" in detail["status_reason"]
    assert detail["program"] == "examples/research.prose"
    assert detail["chain"] == {"ok": True, "checked": 11, "problems": [], "warnings": []}
    assert detail["warnings"] == []
    # one event per receipt, in ledger order, named by its statement
    assert [e["name"] for e in detail["events"]] == [r["statement_id"] for r in sealed]
    assert [e["kind"] for e in detail["events"]][5:7] == ["receipt_failed", "receipt_rendered"]
    texts = [e["text"] for e in detail["events"]]
    assert "s005.d1 rendered · discretion · **the draft is good enough** → true (branch then)" in texts[7]
    assert "s006 skipped" in texts[8] and "reused from 20260715-080000-ffffff/s006" in texts[8]
    assert "researcher" in texts[1] and "46,210 in / 1,840 out tokens (estimated)" in texts[1]
    # tokens per statement and per run, and how they were counted
    cost = detail["cost"]
    assert cost["tokens_fresh"] == sum(r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in sealed)
    assert cost["by_node"]["s004"] == {"tokens_fresh": 900 + 3000 + 1200, "tokens_reused": 0, "receipts": 2}
    assert cost["by_basis"]["unavailable"]["receipts"] == 4 and cost["by_basis"]["exact"]["tokens_fresh"] == 2880
    # the retried statement failed once and recovered: not the run's failure
    assert detail["failure"] is None
    assert [(f["statement"], f["error"], f["recovered"]) for f in detail["failures"]] == [
        ("s004", "Timeout: agent timed out after 300 s", True)]
    # the trace: one line per statement, its program line from state.md
    trace = {t["step"]: t for t in detail["trace"]}
    assert trace["s002"]["text"] == "s002  let research = session: researcher"
    assert trace["s002"]["binding"] == "bindings/research.md" and trace["s002"]["state"] == "complete"
    assert trace["s006"]["state"] == "skipped"
    assert detail["header"]["State backend"] == "filesystem" and detail["header"]["receipts"] == "11"
    assert any(s["title"] == "Discretion evaluation (s005.d1)" for s in detail["sections"])
    assert {b["name"] for b in detail["bindings"]} == {"research", "draft"}


def test_stepping_through_a_failed_ledger_tells_no_future(tmp_path, capsys) -> None:
    """As of its second receipt the run is running: its line is executing (run_start is no
    completed statement) and statements not reached show no note, so nothing tells of the
    failure to come (they showed today's receipts, tokens and the timeout)."""
    run_dir = _run_dir(tmp_path)
    write_run(run_dir, failed=True)
    assert cli_main(["show", "--json", "--at", "1", str(run_dir)]) == 0
    trace = {t["step"]: t for t in json.loads(capsys.readouterr().out)["trace"]}
    assert trace["run"]["state"] == "executing" and not trace["run"]["note"]
    assert trace["s002"]["state"] == "complete" and "46,210 in" in trace["s002"]["note"]
    assert trace["s004"]["state"] is None and not trace["s004"]["note"], trace["s004"]
    last = _show(capsys, run_dir)["events"]
    assert cli_main(["show", "--json", "--at", str(len(last) - 1), str(run_dir)]) == 0
    trace = {t["step"]: t for t in json.loads(capsys.readouterr().out)["trace"]}
    assert trace["run"]["state"] == "failed" and trace["s004"]["state"] == "failed"


def test_a_failed_receipt_is_the_runs_failure(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    write_run(run_dir, failed=True)
    detail = _show(capsys, run_dir)
    assert detail["status"] == "failed"
    assert detail["status_reason"].startswith("run_end receipt (line 8): outcome failed; s004 failed: Timeout")
    failure = detail["failure"]
    assert failure["statement"] == "s004" and failure["recovered"] is False
    assert "agent timed out after 300 s (retry 1)" in failure["error"]
    assert detail["events"][failure["event"]]["kind"] == "receipt_failed"
    assert detail["chain"]["ok"] is True


def test_the_runs_list_shows_ledger_runs_under_libretto_and_native_runs(tmp_path, capsys) -> None:
    write_run(_run_dir(tmp_path))
    bare = tmp_path / "tools" / "runs" / "nightly"
    write_ledger(bare, chain([control("run_start"), receipt("s001")]))
    write_anchor(bare, chain([control("run_start"), receipt("s001")]), status="running")
    hours_ago = (bare / "receipts.jsonl").stat().st_mtime - 3 * 3600
    os.utime(bare / "receipts.jsonl", (hours_ago, hours_ago))  # the VM stopped writing three hours ago
    assert cli_main(["runs", "--json", str(tmp_path)]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {RUN_ID, "nightly"}
    assert rows[RUN_ID]["status"] == "completed" and rows[RUN_ID]["format"] == "receipt-ledger"
    assert rows["nightly"]["status"] == "interrupted"  # no run_end receipt, nothing appended since
    assert "no run_end receipt after 2 receipts and nothing appended for 3 h" in rows["nightly"]["status_reason"]


def test_a_folder_with_only_run_json_and_receipts_jsonl_opens_as_a_run(tmp_path, capsys) -> None:
    run_dir = tmp_path / "20260716-093000-a1b2c3"
    write_run(run_dir, state_md=False, bindings=False)
    assert sorted(p.name for p in run_dir.iterdir()) == ["receipts.jsonl", "run.json"]
    assert backend_for(run_dir) is not None and backend_for(run_dir / "receipts.jsonl") is not None
    detail = _show(capsys, run_dir)
    assert detail["status"] == "completed" and detail["chain"]["ok"] is True
    trace = {t["step"]: t["text"] for t in detail["trace"]}
    assert trace["s002"] == "s002  session researcher" and trace["s007"] == "s007  block_call"


def test_a_run_without_run_end_goes_from_running_to_interrupted_when_nothing_arrives(tmp_path) -> None:
    from datetime import datetime, timedelta, timezone

    run_dir = tmp_path / "runs" / "quiet"
    sealed = chain([control("run_start"), receipt("s001")])
    write_ledger(run_dir, sealed)
    write_anchor(run_dir, sealed, status="running")
    seen = datetime.now(timezone.utc)
    run = open_run(run_dir, now=seen, observed=seen, stale_after=60)
    assert run.status is RunStatus.RUNNING and run.status_reason.startswith("receipts arriving: 2; the last s001 rendered")
    later = backend_of(run).status(run, now=seen + timedelta(hours=2), stale_after=60, observed=seen)
    assert later[0] is RunStatus.INTERRUPTED and "no run_end receipt after 2 receipts" in later[1]


# -- a broken chain: shown, never fatal -----------------------------------------------------------


def test_a_removed_receipt_breaks_the_link_after_it(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    sealed = write_run(run_dir)
    del sealed[4]  # the s003 join receipt
    (run_dir / "receipts.jsonl").write_text("".join(line for i, line in enumerate(_lines(run_dir)) if i != 4))
    write_anchor(run_dir, sealed)  # run.json rewritten to match: only the link can tell
    detail = _show(capsys, run_dir)
    chain_ = detail["chain"]
    assert chain_["ok"] is False and chain_["checked"] == 10
    assert len(chain_["problems"]) == 1
    assert chain_["problems"][0].startswith("line 5 (s004): prev sha256:")
    assert "is not line 4's content_hash" in chain_["problems"][0]
    assert detail["warnings"][0] == "chain broken: " + chain_["problems"][0]
    assert detail["status"] == "completed" and len(detail["events"]) == 10  # still read whole


def test_a_receipt_edited_after_it_was_written_does_not_recompute(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    write_run(run_dir)
    lines = _lines(run_dir)
    lines[1] = lines[1].replace('"input_tokens":46210', '"input_tokens":462')  # a cheaper-looking run
    (run_dir / "receipts.jsonl").write_text("".join(lines))
    chain_ = _show(capsys, run_dir)["chain"]
    assert chain_["ok"] is False
    assert [p.split(":")[0] for p in chain_["problems"]] == ["line 2 (s002)"]
    assert "does not recompute" in chain_["problems"][0] and "changed after it was written" in chain_["problems"][0]


def test_a_torn_last_line_is_a_warning_and_the_ledger_is_good_up_to_it(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    write_run(run_dir)
    with (run_dir / "receipts.jsonl").open("a") as fh:
        fh.write('{"agent":"worker","content_hash":"sha256:12')  # the crash came mid-append
    detail = _show(capsys, run_dir)
    assert detail["chain"]["ok"] is True and detail["chain"]["checked"] == 11
    assert detail["chain"]["warnings"] == [
        "the last line (12) of receipts.jsonl is not whole JSON: a crash mid-append? The ledger is read up to line 11"]
    assert detail["warnings"] == ["ledger: " + detail["chain"]["warnings"][0]]
    assert len(detail["events"]) == 11 and detail["status"] == "completed"


def test_an_anchor_one_receipt_behind_is_a_torn_write_warning(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    sealed = write_run(run_dir)
    write_anchor(run_dir, sealed[:-1])  # the receipt was appended, run.json not yet rewritten
    chain_ = _show(capsys, run_dir)["chain"]
    assert chain_["ok"] is True and chain_["problems"] == []
    assert chain_["warnings"][0].startswith("torn write: line 11")


def test_a_ledger_shorter_than_its_anchor_is_broken(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    write_run(run_dir)
    (run_dir / "receipts.jsonl").write_text("".join(_lines(run_dir)[:9]))  # cut short, consistently
    detail = _show(capsys, run_dir)
    assert detail["chain"]["ok"] is False and detail["chain"]["checked"] == 9
    assert detail["chain"]["problems"][0].startswith("the ledger holds 9 receipts but run.json anchors 11: cut short")
    assert detail["status"] == "completed"  # as run.json says, and the reason says what is missing
    assert detail["status_reason"] == "run.json/state.md say completed, but the ledger has no run_end receipt"


def test_a_hash_written_without_its_prefix_is_a_warning_when_it_recomputes(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    bare = [control("run_start"), receipt("s001")]
    sealed = chain(bare)
    sealed[1] = {**sealed[1], "content_hash": sealed[1]["content_hash"].removeprefix("sha256:")}
    write_ledger(run_dir, sealed)
    write_anchor(run_dir, sealed)
    chain_ = _show(capsys, run_dir)["chain"]
    assert chain_["ok"] is True
    assert chain_["warnings"] == ["line 2 (s001): content_hash is written without its algorithm prefix (sha256:); it recomputes"]


def test_garbage_lines_are_problems_not_tracebacks(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    write_run(run_dir)
    lines = _lines(run_dir)
    lines.insert(3, "\x1b[2J not a receipt\n")
    lines.insert(5, "[1, 2]\n")
    (run_dir / "receipts.jsonl").write_text("".join(lines))
    detail = _show(capsys, run_dir)
    problems = detail["chain"]["problems"]
    assert problems[0].startswith("line 4 is not a receipt (") and problems[1].startswith("line 6 is not a receipt (a JSON list)")
    assert detail["chain"]["checked"] == 11 and "␛[2J" in problems[0]  # no escape reaches a terminal


def test_escape_sequences_in_receipts_never_reach_the_terminal(tmp_path, capsys) -> None:
    run_dir = _run_dir(tmp_path)
    evil = chain([control("run_start"),
                  receipt("s001\u001b[2J", agent="\u001b[31mevil", status="failed",
                          error={"type": "X\u001b]0;pwned\u0007", "message": "bad\nnews", "retry_count": 0})])
    write_ledger(run_dir, evil)
    write_anchor(run_dir, evil, status="running", program="\u001b[5mblink.prose")
    assert cli_main(["show", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "␛[31mevil" in out
    detail = _show(capsys, run_dir)
    assert detail["failure"]["error"].startswith("X␛]0;pwned␇: bad news")
    assert detail["events"][1]["name"] == "s001␛[2J" and detail["chain"]["ok"] is True


# -- live: a second process appends -----------------------------------------------------------------


def _writer(run_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HERE / "receipt_ledger_vm.py"), "append", str(run_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _ask(writer: subprocess.Popen, line: str, until: int) -> None:
    assert writer.stdin is not None and writer.stdout is not None
    writer.stdin.write(line + "\n")
    writer.stdin.flush()
    while int(writer.stdout.readline()) < until:
        pass


def test_appended_receipts_are_parsed_incrementally(tmp_path) -> None:
    run_dir = tmp_path / "runs" / "live"
    writer = _writer(run_dir)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "1"
        run = open_run(run_dir)
        backend = backend_of(run)
        assert run.status is RunStatus.RUNNING and len(run.events) == 1
        changed = {run_dir / "receipts.jsonl", run_dir / "run.json"}
        for total in (4, 9):
            _ask(writer, f"more {total - len(run.receipts)}", total)
            first = run.events[0]
            delta = backend.apply(run, changed)
            assert not delta.reread and delta.run is run and run.events[0] is first  # appended, not re-read
            assert [e.name for e in delta.events] == [f"s{n:03d}" for n in range(len(run.events) - len(delta.events) + 1,
                                                                                 total + 1)]
            assert backend.chain(run).checked == total and backend.chain(run).ok
        _ask(writer, "end", 10)
        trace = run.trace
        delta = backend.apply(run, changed)
        assert run.status is RunStatus.COMPLETED and delta.status
        assert run.trace is trace and delta.trace_lines == {0}  # the run line, repainted in place
        fresh = open_run(run_dir)  # what a whole read gives is what the appends built
        assert [(t.text, t.note, t.state) for t in run.trace] == [(t.text, t.note, t.state) for t in fresh.trace]
        assert (run.metrics, run.sections) == (fresh.metrics, fresh.sections)
        report = backend.chain(run)
        assert (report.ok, report.checked, report.warnings) == (True, 10, ())
        assert os.path.getsize(run_dir / "receipts.jsonl") == backend._runs[run_dir].ledger.tail.end  # type: ignore[attr-defined]
    finally:
        writer.kill()
        writer.wait()


async def test_the_explorer_follows_a_live_ledger_and_shows_chain_problems(tmp_path) -> None:
    from app_helpers import make_app, settled, wait_until

    from prose_tui.tui.widgets.timeline import Timeline
    from prose_tui.tui.widgets.trace_view import TraceView

    run_dir = tmp_path / "runs" / "live"
    writer = _writer(run_dir)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "1"
        app = make_app(run_dir, watch=True)
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
            await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
            assert "receipt-ledger" in app.explorer.head_text.plain
            _ask(writer, "more 3", 4)

            def texts() -> list[str]:
                return [t.text for t in app.explorer.query_one(TraceView).lines]

            await wait_until(pilot, lambda: "s004  session worker" in texts(), what="the appended statements")
            assert texts()[:2] == ["run  control run_start", "s002  session worker"]
            await wait_until(pilot, lambda: [e.name for e in app.explorer.query_one(Timeline).events]
                             == ["run", "s002", "s003", "s004"], what="one history event per receipt")
            # a receipt edited behind the VM's back: the header warns at once
            lines = _lines(run_dir)
            (run_dir / "receipts.jsonl").write_text("".join([lines[0], lines[1].replace('"s002"', '"s099"'), *lines[2:]]))
            await wait_until(pilot, lambda: "⚠ chain broken: line 2 (s099)" in app.explorer.head_text.plain,
                             what="the chain warning in the run header")
            await settled(pilot, run_dir)
    finally:
        writer.kill()
        writer.wait()


# -- real ledgers, read in place ---------------------------------------------------------------------


# PROSE_TUI_LEDGER_CORPUS names a folder of real ledger runs; else the shared corpus (PROSE_TUI_CORPUS)
CORPUS = Path(os.environ.get("PROSE_TUI_LEDGER_CORPUS", str(SHARED_CORPUS))).resolve()


def _real_ledgers() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p.parent for p in CORPUS.rglob("receipts.jsonl") if p.is_file())


@pytest.mark.parametrize("run_dir", _real_ledgers() or [None], ids=lambda p: p.name if p else "none")
def test_real_ledgers_open_with_a_chain_verdict(run_dir, capsys) -> None:
    if run_dir is None:
        pytest.skip(f"no receipts.jsonl under {CORPUS} (set PROSE_TUI_LEDGER_CORPUS to a folder of real runs)")
    assert [r.path for r in find_runs(run_dir)] == [run_dir.resolve()]
    detail = _show(capsys, run_dir)
    assert detail["backend"] == "receipt-ledger"
    chain_ = detail["chain"]
    assert chain_ is not None and chain_["checked"] == len(detail["receipts"])
    assert chain_["ok"] is (not chain_["problems"])
    assert len(detail["events"]) == len(detail["receipts"])


def test_the_format_is_one_folder_that_imports_only_common_the_protocol_and_the_model() -> None:
    import grimp

    graph = grimp.build_graph("prose_tui")
    package = "prose_tui.backends.receipt_ledger"
    modules = graph.find_descendants(package) | {package}
    imported = {i for m in modules for i in graph.find_modules_directly_imported_by(m)} - modules
    assert all(i.startswith(("prose_tui.backends.common.", "prose_tui.model")) or i == "prose_tui.backends.protocol"
               for i in imported), sorted(imported)
    importers = {i for m in modules for i in graph.find_modules_that_directly_import(m)} - modules
    assert importers == set(), sorted(importers)  # the registry names it by entry, and nothing imports it
    from prose_tui.backends import registry

    assert "prose_tui.backends.receipt_ledger.backend:ReceiptLedgerBackend" in registry.BUILTIN


def test_show_at_the_failure_gives_each_statement_its_state_then(tmp_path, capsys) -> None:
    """``show --at N`` on a ledger run: every statement with a receipt by event N is in the
    state its receipt says (rendered -> complete, failed -> failed), the rest not yet run."""
    run_dir = _run_dir(tmp_path)
    write_run(run_dir, failed=True)
    failure = _show(capsys, run_dir)["failure"]
    assert cli_main(["show", "--json", "--at", str(failure["event"]), str(run_dir)]) == 0
    trace = {t["text"].split()[0]: t["state"] for t in json.loads(capsys.readouterr().out)["trace"]}
    assert trace["s002"] == "complete" and trace["s003"] == "complete"
    assert trace["s004"] == "failed"
