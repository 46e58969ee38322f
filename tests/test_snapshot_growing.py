"""A snapshot run that grows while it is watched (issue 35, item 1): what a rewrite keeps.

A VM rewrites ``state.md`` whole after each statement and the ``## Index`` gains a row per
statement, so the Index section is new text on every rewrite. Its unchanged rows are
read from the revision before, not parsed again; what the parser keeps between rewrites
(headers, trace annotations) is bounded by the run, not by how many rewrites were seen.
The parse through rewrites always equals a fresh parse of the text (``parse_snapshot``).
"""

from __future__ import annotations

import dataclasses

import prose_tui.backends.filesystem.snapshot_sections as sections
import prose_tui.backends.filesystem.snapshot_trace as snapshot_trace
from prose_tui.backends.filesystem.snapshot import parse_snapshot
from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_cached

HEADER = "| Name | Kind | Path | Execution ID |\n|---|---|---|---|\n"


def _row(i: int) -> str:
    return f"| value_{i:04d} | let | bindings/value_{i:04d}.md | (root) |\n"


def _state(k: int, rows: str, *, agents: str = "", updated: str | None = None, header: str = HEADER) -> str:
    trace = "".join(f"let value_{i:04d} = session: worker_{i % 7}".ljust(50) + f"# --> bindings/value_{i:04d}.md\n"
                    for i in range(k))
    return (f"# Execution State\n\nrun: 20260301-090000-c0ffee\nprogram: demo.prose\n"
            f"updated: {updated or f'2026-03-01T09:{k // 60:02d}:{k % 60:02d}Z'}\n\n"
            f"## Execution Trace\n\n```prose\n{trace}```\n\n"
            f"## Index\n\n### Bindings\n\n{header}{rows}\n{agents}"
            "## Call Stack\n\n| execution_id | block | depth | status |\n|---|---|---|---|\n| 1 | main | 0 | executing |\n")


def _same_as_a_fresh_parse(text: str, key: object) -> None:
    got, fresh = parse_snapshot_cached(text, key), parse_snapshot(text)
    for f in dataclasses.fields(fresh):
        assert getattr(got, f.name) == getattr(fresh, f.name), f"{f.name} differs from a fresh parse"


def test_a_growing_index_keeps_its_unchanged_rows_and_reads_only_the_new_one(tmp_path):
    """The Index of a growing run gains a row per rewrite: the rows it had are the previous
    revision's row objects (on the old code every row was parsed and made again)."""
    run = tmp_path / "run"
    before = parse_snapshot_cached(_state(40, "".join(_row(i) for i in range(40))), run)
    after = parse_snapshot_cached(_state(41, "".join(_row(i) for i in range(41))), run)
    assert after == parse_snapshot(_state(41, "".join(_row(i) for i in range(41))))
    assert len(after.binding_rows) == 41
    assert all(a is b for a, b in zip(after.binding_rows[:40], before.binding_rows)), \
        "an unchanged Index row was parsed and made again"
    assert after.binding_rows[40].get("name") == "value_0040"


def test_a_growing_run_parsed_through_its_rewrites_equals_a_fresh_parse_each_time(tmp_path):
    """Every kind of Index rewrite, one after another under one run: a row added, a row
    changed in place, rows removed, rows moved, short and long rows, inline markup (then
    markdown-it reads the table), a renamed column, an Agents table, the same line twice,
    and back; each revision read through the kept parse equals a fresh parse, field by field."""
    run = tmp_path / "run"
    rows = [_row(i) for i in range(30)]
    agents = "### Agents\n\n| Name | Model |\n|---|---|\n| scout | sonnet |\n\n"
    revisions = [
        "".join(rows),
        "".join(rows + [_row(30)]),
        "".join(rows[:10] + ["| value_0010 | let | bindings/other.md | 3 |\n"] + rows[11:] + [_row(30)]),
        "".join(rows[:5] + rows[20:]),
        "".join(rows[20:] + rows[:5]),
        "".join(rows[:5] + ["| short | let |\n", "| long | let | a.md | (root) | extra | more |\n"] + rows[5:]),
        "".join(rows[:5] + ["| `code` | let | *a*.md | (root) |\n"] + rows[5:]),
        "".join(rows),
        "".join(rows + [rows[3], rows[3]]),
        "".join(rows + [rows[3]]),
        "".join(rows),
        "",
        "".join(rows),
    ]
    for k, body in enumerate(revisions):
        _same_as_a_fresh_parse(_state(k, body), run)
    renamed = "| Binding | Kind | Path | Execution ID |\n|---|---|---|---|\n"
    _same_as_a_fresh_parse(_state(20, "".join(rows), header=renamed), run)  # same rows, other column names
    _same_as_a_fresh_parse(_state(21, "".join(rows)), run)
    _same_as_a_fresh_parse(_state(22, "".join(rows), agents=agents), run)
    _same_as_a_fresh_parse(_state(23, "".join(rows + [_row(31)]), agents=agents), run)
    # the same revisions under another key (the journal's replay) and none
    for key in (("journal", run), None):
        for k, body in enumerate(revisions):
            _same_as_a_fresh_parse(_state(k, body), key)


def test_a_watched_run_keeps_its_last_headers_not_one_per_rewrite(tmp_path):
    """The header (``updated:``) changes on every rewrite; the parser kept the last 512
    headers parsed, each a whole header of its own. Now the last few, however long the run
    is watched."""
    run = tmp_path / "run"
    body = "".join(_row(i) for i in range(3))
    for k in range(100):
        parse_snapshot_cached(_state(3, body, updated=f"2031-05-01T{k // 60:02d}:{k % 60:02d}:00Z"), run)
    held = [head for head in sections._heads if "updated: 2031-05-01T" in head]
    assert 0 < len(held) <= 16, f"{len(held)} headers of one run held after 100 rewrites"


def test_trace_annotations_kept_are_bounded_by_the_run_not_by_the_lines_ever_written():
    """A VM that writes a new line on each rewrite (a note, a counter) left every line's
    annotation in a cache of up to 50,000 lines, kept after the line was gone. Now the
    annotations kept follow the lines of the revisions kept, and each parse still equals
    a fresh one."""
    key = ("test-bounded-annotations", object())
    base = [f"let v{i} = session: worker".ljust(40) + f"# --> bindings/v{i}.md" for i in range(20)]
    # other tests' runs may be kept too: write more lines than all kept revisions have
    written = sum(len(b.raws) for b in snapshot_trace._bases.values()) + 3_000
    for k in range(written):
        content = "\n".join(base + [f"let note = session: tick   # <-- EXECUTING (tick {k})"]) + "\n"
        trace = snapshot_trace.annotate(content, key).trace()
        if k % 500 == 0:
            from prose_tui.backends.filesystem.snapshot import parse_trace_lines

            assert trace == parse_trace_lines(content)
    kept_lines = sum(len(b.raws) for b in snapshot_trace._bases.values())
    assert len(snapshot_trace._annotations) <= kept_lines + 1_024, \
        f"{len(snapshot_trace._annotations)} annotations kept for {kept_lines} lines of the kept revisions"
    ticks = sum(1 for raw, _ in snapshot_trace._annotations if raw.startswith("let note = session: tick"))
    assert ticks <= kept_lines + 1_024 < written, f"{ticks} of {written} lines written once are still kept"


def test_a_rewrite_names_the_missing_bindings_by_the_paths_it_had(tmp_path):
    """Bindings the Index names before their files exist are listed as missing; a rewrite
    listed them with a new path each (600 per rewrite of a 600-row run, every part interned
    by pathlib). Now a rewrite keeps their paths; a new row gets its own, and the listing
    is what a fresh read of the run gives."""
    from prose_tui.backends.filesystem.folder import load_run

    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text(_state(5, "".join(_row(i) for i in range(5))), encoding="utf-8")
    first = load_run(run_dir)
    (run_dir / "state.md").write_text(_state(6, "".join(_row(i) for i in range(6))), encoding="utf-8")
    (run_dir / "bindings" / "value_0002.md").write_text("done\n", encoding="utf-8")
    second = load_run(run_dir)
    by_name = {b.name: b for b in first.bindings}
    assert sorted((b.name, b.exists) for b in second.bindings) == [(f"value_{i:04d}", i == 2) for i in range(6)]
    for b in second.bindings:
        assert b.path == run_dir / "bindings" / f"{b.name}.md"
        if not b.exists and b.name in by_name:
            assert b.path is by_name[b.name].path, f"{b.name}: a new path for a binding still missing"
