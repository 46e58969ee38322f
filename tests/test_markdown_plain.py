"""The plain-text path of ``common.markdown.parse_document`` (issue 33): text it reads
without markdown-it gives the very ``Document`` markdown-it gives, and the usual shapes of
a snapshot's sections (the Index's tables, the Call Stack, the header) take that path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from prose_tui.backends.common.markdown import _plain_document, markdown_it_document, parse_document
from prose_tui.backends.filesystem.snapshot_sections import split_sections

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import huge_run  # noqa: E402

EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Lines at the edges of the plain path: what it must read as markdown-it does, and what it
# must leave to markdown-it (rules, setext underlines, fences, quotes, HTML, escapes, inline
# markup in cells, rows a table takes in, tables after a paragraph line).
LINES = [
    "", "   ", "# Execution State", "## Index", "### Bindings", "### Agents", "## Call Stack", "#### Deep",
    "## a ##", "#tag", "   ## indented", "##", "#######  seven", "##\tTabbed", "## Trailing   ",
    "| Name | Kind | Path | Execution ID |", "|------|------|------|--------------|", "|:--|--:|:-:|---|",
    "| value_00001 | let | bindings/value_00001.md | (root) |", "| a | b |", "|---|---|", "| x |", "|", "| |",
    "| a \\| b | c |", "| `code` | x |", "| *em* | y |", "| _a_ | b |", "| a_b | c__d |", "| [l](u) | &amp; |",
    "| a | b | c | d | e |", "|---|", " |---|", "|-|", "| a |b", "|a|b|c", "| 4 | step | 4 | executing |",
    "| execution_id | block | depth | status |", "|--------------|-------|-------|--------|", "| <b> | ~x~ |",
    "--- | ---", "a | b", "-|-", "(none)", "None", "Empty (root scope)", "text with | pipe", "**Status**: x",
    "run: 20260115-090000-abc", "updated: 2026-01-15T10:00:00Z", "- run: x", "1. item", "1.", "2) x",
    "10. x", "- item", "* item", "+ item", "- ", "-", "---", "===", "***", "- - -", "* * *", "  - nested",
    "    code", "> quote", "```", "```prose", "~~~", "<div>", "[ref]: /url", "- 1. x", "- # h", "\t tab",
    "Ünïcode prose", "_under_", "__init__", "'quoted'", "\"dq\"", "2026-01-15 a date", "x\\", "&nbsp;",
]
lines = st.lists(st.one_of(st.sampled_from(LINES), st.text(max_size=12),
                           st.tuples(st.sampled_from(LINES), st.text(max_size=6)).map("".join)), max_size=30)
documents = st.tuples(lines, st.sampled_from(["", "\n"])).map(lambda t: "\n".join(t[0]) + t[1])


@EXAMPLES
@given(documents)
@example("## Index\n\n### Bindings\n\n| Name | Path |\n|---|---|\n| a | bindings/a.md |\n\n### Agents\n\n| Name |\n|--|\n")
@example("## Call Stack\n\n| execution_id | block |\n|---|---|\n| 4 | step |\n| 3 |\n| 2 | a | extra |\n")
@example("# Execution State\n\nrun: x\n- status: running\n**updated**: y\n")
@example("(none)\n| a |\n|---|\n")
@example("- item\n| a |\n|---|\n")
@example("| a |\n|---|\n| b |\nparagraph taken in as a row\n")
@example("| a |\n|---|\n| b |\n- a list after the rows\n")
@example("## H\n| a | b |\n|---|---|\n| c |\n## Next\n")
def test_the_plain_path_gives_what_markdown_it_gives(text):
    plain = _plain_document(text)
    if plain is not None:
        assert plain == markdown_it_document(text)
    assert parse_document(text) == markdown_it_document(text)


def test_a_snapshots_usual_sections_take_the_plain_path(tmp_path):
    run = huge_run(tmp_path, bindings=300, trace_lines=20, agents=3, segments=0)
    text = (run / "state.md").read_text(encoding="utf-8")
    head, _, rest = text.partition("\n## Execution Trace")
    index = "## Index" + rest.split("## Index", 1)[1].split("\n## Call Stack", 1)[0]
    stack = "## Call Stack" + rest.split("## Call Stack", 1)[1]
    for part in (head, index, stack, "## Active Constructs\n\n(none)\n"):
        assert _plain_document(part) is not None, part[:200]
        assert _plain_document(part) == markdown_it_document(part)
    index_doc = _plain_document(index)
    assert index_doc is not None
    assert [c.title for c in index_doc.sections[0].children] == ["Bindings", "Agents"]
    assert len(index_doc.sections[0].children[0].tables[0].rows) == 300


def test_real_markdown_files_read_alike(corpus):
    """Every Markdown file of the real corpus, whole and cut at its ``##`` sections as the
    snapshot parser cuts it: the plain path, where it takes the text, gives what
    markdown-it gives (it leaves most whole files, with their fences, to markdown-it)."""
    taken = 0
    for path in sorted(corpus.rglob("*.md")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        split = split_sections(text)
        for part in [text, *([split[0], *split[1]] if split else [])]:
            plain = _plain_document(part)
            if plain is not None:
                taken += 1
                assert plain == markdown_it_document(part), path
    if taken == 0:
        pytest.skip("no corpus file has the plain shape")
