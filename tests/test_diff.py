"""``prose-tui diff`` and :func:`compare_runs`: what changed between two runs (issue 14).

Two runs of one program are written here as a VM writing the compact event log would
(FORMATS.md, generation 2, with bracketed timestamps): A worked, B failed after a retry,
took four minutes longer at the draft and fetched a different pull request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, corpus_or_skip

from prose_tui.backends import open_run
from prose_tui.cli.main import main
from prose_tui.history import Journal, history_of
from prose_tui.history.compare import compare_runs, diff_text

GOOD = """# run:20260306-090000-aaaaaa triage.prose
1→ fetch ✓ [2026-03-06T09:00:05Z]
2a→ security ✓ [2026-03-06T09:00:20Z]
2b→ perf ✓ [2026-03-06T09:00:30Z]
4→ draft ✓ [2026-03-06T09:01:00Z]
5→ gate:ship ✓ [2026-03-06T09:01:10Z]
---end 2026-03-06T09:01:15Z
"""
BAD = """# run:20260307-090000-bbbbbb triage.prose
1→ fetch ✓ [2026-03-07T09:00:05Z]
2a→ security ✓ [2026-03-07T09:00:20Z]
2b→ perf ✓ [2026-03-07T09:00:30Z]
4→ draft ✗ timeout [2026-03-07T09:02:30Z]
4→ retry:2/3 [2026-03-07T09:02:31Z]
4→ draft ✗ timeout [2026-03-07T09:05:00Z]
5→ gate:ship ✗ rejected [2026-03-07T09:05:10Z]
---error 2026-03-07T09:05:15Z Draft failed after 2 attempts; not shipping.
"""


def binding(value: str) -> str:
    return f"# value\n\nkind: let\n\n---\n\n{value}"


def write_run(root: Path, run_id: str, state: str, bindings: dict[str, str], memory: str | None = None) -> Path:
    run = root / ".prose" / "runs" / run_id
    (run / "bindings").mkdir(parents=True)
    (run / "state.md").write_text(state, encoding="utf-8")
    for name, value in bindings.items():
        (run / "bindings" / f"{name}.md").write_text(binding(value), encoding="utf-8")
    (run / "program.prose").write_text("agent reviewer:\n  model: sonnet\n  persist: true\n\nlet fetch = session \"Fetch\"\n",
                                       encoding="utf-8")
    if memory is not None:
        (run / "agents" / "reviewer").mkdir(parents=True)
        (run / "agents" / "reviewer" / "memory.md").write_text(memory, encoding="utf-8")
    return run


@pytest.fixture
def two_runs(tmp_path):
    a = write_run(tmp_path, "20260306-090000-aaaaaa", GOOD,
                  {"fetch": "Pull request #218\nchanges eviction\n", "perf": "fine\n", "security": "no risk\n"},
                  memory="Prefers short comments.\n")
    b = write_run(tmp_path, "20260307-090000-bbbbbb", BAD,
                  {"fetch": "Pull request #219\nchanges eviction\nand logging\n", "security": "no risk\n", "draft": "half\n"},
                  memory="Prefers short comments.\nThe draft timed out twice.\n")
    return a, b


def compare(a: Path, b: Path):
    run_a, run_b = open_run(a), open_run(b)
    return compare_runs(run_a, history_of(run_a, journal=Journal()), run_b, history_of(run_b, journal=Journal()))


def test_statements_aligned_with_outcome_retries_and_durations(two_runs):
    c = compare(*two_runs)
    assert c.same_program and c.note == "two runs of triage.prose" and c.similarity == 1.0
    assert [p.a.label for p in c.statements if p.a] == ["1→ fetch", "2a→ security", "2b→ perf", "4→ draft", "5→ gate:ship"]
    changed = {p.a.label: p for p in c.changed_statements() if p.a}
    assert set(changed) == {"4→ draft", "5→ gate:ship"}
    draft = changed["4→ draft"]
    assert draft.changes == ["outcome", "retries", "slower"]
    assert (draft.a.outcome, draft.b.outcome, draft.a.attempts, draft.b.attempts) == ("completed", "failed", 1, 2)
    assert (draft.a.seconds, draft.b.seconds, draft.delta) == (30.0, 270.0, 240.0)
    assert draft.b.error == "timeout"
    assert changed["5→ gate:ship"].changes == ["outcome"] and changed["5→ gate:ship"].b.error == "rejected"


def test_status_failure_bindings_and_memory(two_runs):
    c = compare(*two_runs)
    assert (c.a.status.value, c.b.status.value) == ("completed", "failed") and c.status_changed
    assert c.failure_a is None and "rejected" in c.failure_b and "Draft failed after 2 attempts" in c.failure_b
    states = {d.name: d.state for d in c.bindings}
    assert states == {"fetch": "changed", "perf": "only_a", "security": "same", "draft": "only_b"}
    fetch = next(d for d in c.bindings if d.name == "fetch")
    assert "-Pull request #218" in fetch.diff and "+Pull request #219" in fetch.diff and "+and logging" in fetch.diff
    (reviewer,) = c.agents
    assert reviewer.memory is not None and reviewer.memory.state == "changed"
    assert "+The draft timed out twice." in reviewer.memory.diff
    assert c.summary() == "2 of 5 statements changed, 3 of 4 bindings differ, 1 agents differ, status completed → failed"


def test_cli_text_and_json(two_runs, capsys):
    a, b = two_runs
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "two runs of triage.prose" in out
    assert "outcome, retries, slower by 4m00s" in out
    assert "+Pull request #219" in out and "only in A" in out
    assert "security" not in out.split("bindings (")[1]  # an unchanged binding is not listed without --all
    assert main(["diff", "--all", str(a), str(b)]) == 0
    assert "security" in capsys.readouterr().out.split("bindings (")[1]
    assert main(["diff", "--json", str(a), str(b)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["same_program"] is True and data["b"]["status"] == "failed"
    draft = next(s for s in data["statements"] if s["a"] and s["a"]["text"] == "4→ draft")
    assert draft["changes"] == ["outcome", "retries", "slower"] and draft["delta_seconds"] == 240.0


def test_the_same_run_twice_has_no_changes(two_runs):
    c = compare(two_runs[1], two_runs[1])
    assert c.changed_statements() == [] and c.changed_bindings() == [] and not c.status_changed


def test_different_programs_compare_and_say_so(capsys):
    a = FIXTURES / "project" / ".prose" / "runs" / "20260228-090000-d4e5f6"
    b = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"
    c = compare(a, b)
    assert not c.same_program and c.note.startswith("different programs (kelp-page.prose and triage.prose)")
    assert all(set(p.changes) <= {"only_a", "only_b"} for p in c.statements)
    assert main(["diff", str(a), str(b)]) == 0
    assert "different programs" in capsys.readouterr().out


def test_a_changed_step_text_is_still_paired_by_step(tmp_path):
    a = write_run(tmp_path, "20260306-090000-aaaaaa", GOOD, {})
    b = write_run(tmp_path, "20260307-090000-bbbbbb", GOOD.replace("4→ draft ✓", "4→ write_draft ✓"), {})
    c = compare(a, b)
    (pair,) = c.changed_statements()
    assert pair.a.label == "4→ draft" and pair.b.label == "4→ write_draft" and pair.changes == ["text"]


def test_diff_text_is_bounded():
    lines = diff_text("a", "\n".join(str(i) for i in range(1000)), "b", "\n".join(str(i * 2) for i in range(1000)))
    assert len(lines) == 201 and lines[-1].startswith("… ") and lines[-1].endswith("more diff lines")


def test_not_a_run_is_one_line(tmp_path, capsys):
    assert main(["diff", str(tmp_path / "missing"), str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("prose-tui: ")


@pytest.mark.corpus
def test_real_runs_compare_without_error(capsys):
    corpus = corpus_or_skip()
    from prose_tui.backends import find_runs

    refs = [r for r in find_runs(corpus)][:6]
    if len(refs) < 2:
        pytest.skip(f"fewer than two runs in {corpus}")
    for left, right in zip(refs, refs[1:]):
        assert main(["diff", "--json", str(left.path), str(right.path)]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["a"]["path"] and data["b"]["path"] and isinstance(data["statements"], list)


# -- the compare view ---------------------------------------------------------------------------------
async def test_compare_view_from_the_palette(two_runs):
    from app_helpers import make_app, ready, wait_until
    from textual.widgets import DataTable, Static

    from prose_tui.tui.screens.compare import CompareScreen

    a, b = two_runs
    app = make_app(a.parent.parent.parent)

    def palette_offers(text: str) -> bool:
        lists = app.screen.query("OptionList")
        return bool(lists) and lists.first().option_count > 0 and text in str(lists.first().get_option_at_index(0).prompt)

    async with app.run_test(size=(130, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None and app.explorer.current_run.path == b,
                         what="the newest run (B) on screen")
        await pilot.press("ctrl+p", *"Compare with run")
        await wait_until(pilot, lambda: palette_offers("Compare with run"), what="the compare command")
        await pilot.press("enter")
        await wait_until(pilot, lambda: palette_offers(a.name), what="the other run offered")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.comparison is not None,
                         what="the comparison")
        screen = app.screen
        head = str(screen.query_one("#compare-head", Static).render())
        assert f"A {a.name}" in head and f"B {b.name}" in head and "two runs of triage.prose" in head
        table = screen.query_one("#statements", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[0] for r in rows] == ["4→ draft", "5→ gate:ship"]
        assert rows[0][3].startswith("outcome, retries, slower by 4m00s") and "B: timeout" in rows[0][3]
        await pilot.press("c")
        await wait_until(pilot, lambda: table.row_count == 5, what="every statement after c")
        diff = str(screen.query_one("#binding-diff", Static).render())
        assert "+Pull request #219" in diff
        await pilot.press("s")
        await wait_until(pilot, lambda: screen.comparison is not None and screen.comparison.a.path == b,
                         what="A and B swapped")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CompareScreen), what="back to the explorer")


def test_block_bindings_pair_across_execution_ids(tmp_path):
    from prose_tui.history.compare import pair_bindings
    from prose_tui.model import Binding

    a = [Binding("parts", tmp_path / "a41", execution_id=41), Binding("parts", tmp_path / "a42", execution_id=42),
         Binding("topic", tmp_path / "at")]
    b = [Binding("topic", tmp_path / "bt"), Binding("parts", tmp_path / "b57", execution_id=57),
         Binding("parts", tmp_path / "b58", execution_id=58), Binding("parts", tmp_path / "b59", execution_id=59)]
    pairs = [(x.path.name if x else None, y.path.name if y else None) for x, y in pair_bindings(a, b)]
    assert pairs == [("at", "bt"), ("a41", "b57"), ("a42", "b58"), (None, "b59")]


def test_two_sqlite_runs_compare_statements_and_values(tmp_path):
    from sqlite_fixture import build_sqlite_run

    good = build_sqlite_run(tmp_path / "good")
    bad = build_sqlite_run(tmp_path / "bad", failed=True)
    c = compare(good, bad)
    assert c.same_program and c.b.status.value == "failed" and "Context window exceeded" in (c.failure_b or "")
    assert any("outcome" in p.changes and p.b and p.b.outcome == "failed" for p in c.statements)
    assert all(d.state == "same" for d in c.bindings)


def _log_run(root: Path, run_id: str, lines: list[str]) -> Path:
    run_dir = root / ".prose" / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "state.md").write_text(f"# run:{run_id} land.prose\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return run_dir


def test_statements_align_by_content_so_an_insertion_is_one_insertion(tmp_path):
    """Issue 28: two runs of land.prose, B with a lint step inserted before e2e. Matched by
    step number, e2e was 'only in A' and 'only in B' and the gates 'text changed'."""
    a = _log_run(tmp_path / "a", "20260213-100000-aaaaaa", ["1→ fast ✓", "2→ e2e ✓", "3→ gate:e2e ✓ approved"])
    b = _log_run(tmp_path / "b", "20260214-100000-bbbbbb",
                 ["1→ fast ✓", "2→ lint ✓", "3→ e2e ✓", "4→ gate:e2e ✗ rejected", "5→ gate:smoke ✓ approved"])
    c = compare(a, b)
    pairs = [(p.a.content if p.a else None, p.b.content if p.b else None, p.changes) for p in c.statements]
    assert pairs == [
        ("fast", "fast", []),
        (None, "lint", ["only_b"]),
        ("e2e", "e2e", []),
        ("gate:e2e", "gate:e2e", ["outcome"]),
        (None, "gate:smoke", ["only_b"]),
    ]
