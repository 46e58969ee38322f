"""One failure model for every backend (issue 28, part 1): what failed, where and why.

``show --json`` gives ``failure`` (the failure that ended the run, or null) and
``failures`` (every failed attempt, in history order), each ``{statement, line, error,
attempt, event, recovered}``, and a failed run's ``status_reason`` names its error. The
runs here are written as the VMs of each dialect write them (FORMATS.md; seeds/; the
openprose-0.15 specs); the real corpus is read in place and skipped when absent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_fixture import build_sqlite_run

from prose_tui.backends.loader import open_run
from prose_tui.demo.simulator import write_history_runs
from prose_tui.history import history_of, state_at
from prose_tui.history.failure import failure_events
from prose_tui.model import RunStatus

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"
KEYS = {"statement", "line", "error", "attempt", "event", "recovered"}


def show(path: Path) -> dict:
    """``prose-tui show --json PATH`` as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "prose_tui", "show", "--json", str(path)], capture_output=True,
                          text=True, check=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    shown = json.loads(done.stdout)
    for f in [shown["failure"], *shown["failures"]]:
        assert f is None or set(f) == KEYS, f
    return shown


def _run(tmp_path: Path, run_id: str, files: dict[str, str]) -> Path:
    run_dir = tmp_path / ".prose" / "runs" / run_id
    for name, text in files.items():
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(text, encoding="utf-8")
    return run_dir


# -- the dialects ------------------------------------------------------------------------

def test_the_demos_failed_snapshot_names_its_error_statement_and_last_attempt(tmp_path):
    """``status: failed``, the statement left at ``<-- RETRYING (attempt 3/3)`` and a
    ``## Error`` section: the failure is that statement's third attempt, with the error."""
    _done, failed = write_history_runs(tmp_path)
    shown = show(failed)
    assert shown["status"] == "failed"
    assert "403 Forbidden: credentials expired" in shown["status_reason"]
    failure = shown["failure"]
    assert failure["statement"] == 'session "Publish the site to the docs bucket"'
    assert failure["line"] == 3 and failure["attempt"] == "3/3" and failure["recovered"] is False
    assert "403 Forbidden: credentials expired" in failure["error"]
    assert shown["events"][failure["event"]]["kind"] == "run_errored"
    assert shown["failures"] == [failure]


def test_a_snapshot_annotation_and_a_failure_section_are_one_failure(tmp_path):
    run_dir = _run(tmp_path, "20260402-080000-aa11bb", {"state.md": (
        "# Execution State\n\nrun: 20260402-080000-aa11bb\nprogram: deploy.prose\nstarted: 2026-04-02T08:00:00Z\n"
        "updated: 2026-04-02T08:04:00Z\n\n## Execution Trace\n\n```prose\n"
        'let image = session "Build the image"      # --> bindings/image.md (complete)\n'
        'let pushed = session "Push the image"      # <-- FAILED: registry unreachable\n'
        'session "Announce the release"             # [...next...]\n```\n\n'
        "## Failure\n\nThe registry at reg.example.test did not answer within 60 s.\n")})
    shown = show(run_dir)
    assert shown["status"] == "failed"
    assert "registry unreachable" in shown["status_reason"]
    failure = shown["failure"]
    assert failure["statement"] == 'let pushed = session "Push the image"'
    assert failure["line"] == 2
    assert "registry unreachable" in failure["error"] and "did not answer within 60 s" in failure["error"]
    assert len(shown["failures"]) == 1


def test_an_event_log_lists_every_attempt_and_ends_on_the_gate_with_the_error_line(tmp_path):
    run_dir = _run(tmp_path, "20260305-120000-f0f0f0", {"state.md": (
        "# run:20260305-120000-f0f0f0 release.prose\n1→ notes ✓\n2→ upload ✗ 502 bad gateway\n2→ retry:2/3\n"
        "2→ upload ✓\n3→ gate:publish ✗ rejected\n---error 2026-03-05T12:09:30-05:00 the release gate said no\n")})
    shown = show(run_dir)
    assert shown["status"] == "failed"
    first, last = shown["failures"]
    assert (first["statement"], first["error"], first["attempt"], first["recovered"]) == (
        "upload", "502 bad gateway", "1/3", True)
    assert last == shown["failure"]
    assert last["statement"] == "gate:publish" and last["recovered"] is False
    assert last["error"] == "rejected — the release gate said no"
    assert shown["events"][last["event"]]["text"] == "3→ gate:publish ✗ rejected"


def test_a_0_12_front_matter_error_and_its_error_file_name_the_failure(tmp_path):
    """A 0.12-0.14 ``vm.log.md``: front matter ``status: failed`` / ``error:``, no
    ``---error``, and ``workspace/searcher/__error.md`` saying why."""
    run_dir = _run(tmp_path, "20260512-101500-0c0d0e", {
        "vm.log.md": ("---\nstatus: failed\nerror: searcher.AllCallsFailed\nstarted: 2026-05-12T10:15:00Z\n---\n"
                      "# run:20260512-101500-0c0d0e lit-review\n1→ [input] question ✓\n2→ planner ✓\n"
                      "3→ searcher ✗ AllCallsFailed\n"),
        "workspace/searcher/__error.md": ("# Error: AllCallsFailed\n\nEvery search call answered 429 (rate limited) "
                                          "three times; no sources were gathered.\n")})
    shown = show(run_dir)
    assert shown["status"] == "failed"
    assert "searcher.AllCallsFailed" in shown["status_reason"]
    assert "Every search call answered 429" in shown["status_reason"]
    failure = shown["failure"]
    assert failure["statement"] == "searcher" and failure["line"] == 3
    assert "searcher.AllCallsFailed" in failure["error"] and "answered 429" in failure["error"]


def test_a_0_15_failed_receipt_gives_its_failure_reason_once():
    shown = show(FIXTURES / "skill" / "failed" / "runs" / "20260703-140210-d4e5f6")
    failure = shown["failure"]
    assert failure["statement"] == "ranker"
    assert failure["error"].count("Every call the scout published closed") == 1
    assert len(shown["failures"]) == 1  # the log line and the receipt are one failure


def test_sqlite_error_message_and_a_recovered_retry(tmp_path):
    shown = show(build_sqlite_run(tmp_path, failed=True) / "state.db")
    flaky, chunk = shown["failures"]
    assert (flaky["statement"], flaky["error"], flaky["recovered"]) == (
        'let flaky = session "Flaky API"', "Connection timeout after 30s", True)
    assert chunk == shown["failure"]
    assert (chunk["statement"], chunk["error"]) == ('let result = session "Process chunk"', "Context window exceeded")


def test_a_narration_warning_is_a_failed_attempt():
    shown = show(FIXTURES / "narration" / "bracket.md")
    [warning] = shown["failures"]
    assert warning["statement"] == 'session "Run the test suite"'
    assert warning["error"] == "test runner timed out"


def test_a_reactor_failed_receipt_that_a_later_render_recovered():
    ledger = CORPUS / "reactor" / "monorepo-ci"
    if not (ledger / "receipts.json").is_file():
        pytest.skip(f"the Reactor corpus is not at {ledger}")
    shown = show(ledger)
    assert shown["failure"] is None
    [failed] = shown["failures"]
    assert failed["statement"] == "test.pkg-api" and failed["recovered"] is True
    assert failed["error"] == "no failure_reason recorded"
    assert shown["events"][failed["event"]]["kind"] == "receipt_failed"


# -- a property: the state at a failure's event is failed -----------------------------------

_STEP = st.sampled_from(["ok", "fail", "retry-ok", "retry-fail"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEP, min_size=1, max_size=6), errored=st.booleans())
def test_the_state_at_a_failures_event_is_failed(tmp_path_factory, steps, errored):
    lines = ["# run:20260601-090000-abcdef prop.prose"]
    for n, kind in enumerate(steps, start=1):
        if kind == "ok":
            lines.append(f"{n}→ s{n} ✓")
        elif kind == "fail":
            lines.append(f"{n}→ s{n} ✗ boom {n}")
        else:
            lines += [f"{n}→ s{n} ✗ flaky {n}", f"{n}→ retry:2/2",
                      f"{n}→ s{n} ✓" if kind == "retry-ok" else f"{n}→ s{n} ✗ flaky again {n}"]
    if errored:
        lines.append("---error 2026-06-01T09:05:00Z gave up")
    run_dir = tmp_path_factory.mktemp("prop") / "20260601-090000-abcdef"
    run_dir.mkdir()
    (run_dir / "state.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = open_run(run_dir)
    history = history_of(run)
    failures = failure_events(run, history)
    for f in failures:
        assert f.event is not None
        assert state_at(run, history, f.event).status is RunStatus.FAILED, (f, lines)
    if run.status is RunStatus.FAILED:
        assert any(not f.recovered for f in failures) or errored


# -- times keep the run's own offset (issue 28, part 5) ------------------------------------------

def test_a_log_stamped_at_minus_five_hours_starts_in_that_offset_and_before_it_ends(tmp_path):
    """The run id's wall clock is the VM's, whose stamps say -05:00: read as UTC, the run
    started five hours after its ---error."""
    run_dir = _run(tmp_path, "20260213-114703-5d5d5d", {"state.md": (
        "# run:20260213-114703-5d5d5d land.prose\n1→ fast ✓\n2→ gate ✗ rejected\n"
        "---error 2026-02-13T11:48:13-05:00 Fix the e2e tests first.\n")})
    shown = show(run_dir)
    assert shown["started"] == "2026-02-13T11:47:03-05:00"
    assert shown["updated"] == "2026-02-13T11:48:13-05:00"


def test_a_run_never_ends_before_it_starts(tmp_path):
    """A first stamp earlier than the id's time (the id named after the first write, or by
    another clock) is the start."""
    run_dir = _run(tmp_path, "20260213-120000-6e6e6e", {"state.md": (
        "# run:20260213-120000-6e6e6e late.prose\n1→ fetch ✓\n"
        "---end 2026-02-13T11:59:40Z\n")})
    shown = show(run_dir)
    from datetime import datetime
    assert datetime.fromisoformat(shown["started"]) <= datetime.fromisoformat(shown["updated"])


# -- ! and x/X agree on every backend (issue 28, part 2) -------------------------------------------

def _failed_runs(tmp_path: Path) -> list[Path]:
    _done, demo = write_history_runs(tmp_path / "demo")
    old = _run(tmp_path / "old", "20260512-101500-0c0d0e", {
        "vm.log.md": ("---\nstatus: failed\nerror: searcher.AllCallsFailed\n---\n"
                      "# run:20260512-101500-0c0d0e lit-review\n1→ planner ✓\n2→ searcher ✗ AllCallsFailed\n")})
    runs = [demo, old, build_sqlite_run(tmp_path / "sqlite", failed=True) / "state.db",
            FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3",
            FIXTURES / "skill" / "failed" / "runs" / "20260703-140210-d4e5f6",
            FIXTURES / "skill" / "frontmatter" / "runs" / "20260709-071500-e1f2a3",
            FIXTURES / "narration" / "bracket.md", FIXTURES / "narration" / "compact.md"]
    for extra in (CORPUS / "reactor" / "monorepo-ci", CORPUS / "real" / "rawwerks__ypi" / ".prose" / "runs"
                  / "20260213-114703-24e632"):
        if extra.exists():  # the corpus, read in place when it is there
            runs.append(extra)
    return runs


def test_bang_lands_where_x_can_and_every_failure_is_reachable(tmp_path):
    from prose_tui.viewmodel.explorer_model import ExplorerModel

    for path in _failed_runs(tmp_path):
        run = open_run(path)
        model = ExplorerModel()
        model.touch(run, None)
        model.load_history()
        problems = set(model.nav.problems())
        target = model.failure_event()
        assert target is not None, path
        assert target in problems, (path, target)  # x/X stop where ! goes
        assert model.first_failure().moved and model.failure_at_cursor() is not None, path
        for f in model.failures():
            assert f.event in problems, (path, f)  # a recovered failure is reachable with x/X too


# -- history at event N: the newest binding by scope (issue 28) ------------------------------------

def test_at_each_write_the_newest_binding_is_the_file_just_written_not_a_namesake(tmp_path):
    """The demo writes parts__1, parts__2, parts__3 (one per block pass): at the event that
    wrote pass 3's, the newest binding is pass 3's, not pass 1's."""
    from datetime import datetime, timezone

    from prose_tui.demo.simulator import write_demo_project
    from prose_tui.viewmodel.explorer_model import ExplorerModel

    run = open_run(write_demo_project(tmp_path, clock=lambda: datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)))
    model = ExplorerModel()
    model.touch(run, None)
    model.load_history()
    writes = [(i, e) for i, e in enumerate(model.nav.events) if e.kind.value == "binding_written"]
    assert any("parts__3" in e.text for _i, e in writes)
    for i, event in writes:
        model.nav.move_to(i)
        newest = model.newest_binding_now()
        assert newest is not None and f"/{newest.path.name}" in event.text, (i, event.text, newest)
