"""The event-log parser's shortcuts change no parsed result (issue 35).

``classify_line`` reads the common step line (``12→ name ✓ [10:00:12]``) in one match and
skips each rule whose regex cannot match a line; ``classify_line_by_rules`` applies the
rules one by one (FORMATS.md, Generations, 2. Compact event log), as the parser always did.
Every line of the real corpus (read in place; ``PROSE_TUI_CORPUS`` moves it), of the
repository's fixtures and of generated logs must classify the same both ways, field by
field; hand-written lines pin the values; and a log fed to the tail parser in chunks must
parse as the whole file does.
"""

from __future__ import annotations

import sys
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from test_live_tail import _log_key  # one field-by-field key for the log parses both files compare

from prose_tui.backends.common.text import decode
from prose_tui.backends.filesystem.eventlog import looks_like_event_log, parse_event_log
from prose_tui.backends.filesystem.eventlog_lines import (
    _FAST_STEP_RE,
    classify_line,
    classify_line_by_rules,
)
from prose_tui.backends.filesystem.eventlog_tail import EventLogTail
from prose_tui.model import EventKind, StatementState

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import EventLogWriter  # noqa: E402

BASE = date(2026, 1, 1)
K, S = EventKind, StatementState

# Lines near the fast shape that another rule owns, and lines of every other rule.
EDGE_LINES = [
    "1→ research ✓", "2→ gate:push ✗ rejected", "3→ if:true ✓", "3→ if:false ✓", "4→ loop ✓", "4→ Loop ✓",
    "4→ retry ✓", "4→ block ✓", "5→ warn ⚠", "5→ a ✓\ufe0f", "6→ x ✓ [25:00:00]", "6→ x ✓ [9:01]",
    "7→ x ✓ [2026-01-01T10:00:00Z]", "7→ x ✓ [2026-01-01T10:00:00+02:00]", "8→ let ✓", "8→ exec ✓",
    "9→ commit+tag+push ✓", "10→ 2 ✓", "11a.b→ x ✓ done", "12→ x ✓ done [10:00:00]", "12->  x ✓",
    " 12→ x ✓", "- 12→ x ✓", "12→ x  ✓", "12→ x ✓ ", "12→ x ✓ done now", "12→ x ✓ (note)", "12→ [tag] x ✓",
    "12→ x (ann) ✓", "12→ ✓", "12→ x", "12→ x ✓ [10:00:00] tail", "12→ x ✓ 2026-01-01T10:00:00Z",
    "2→ ∥start a,b", "2a→ a ✓ | 2b→ b ✗", "a ✓ | b ✗ (parallel)", "2→ ∥done", "4→ block:job#7", "4→ #7 done",
    "4→ #7 ✗ timeout", "5→ retry:2/3", "6→ loop:2/2 exit(**done**)", "7→ if(false) skipped", "⚠ disk nearly full",
    "---end 2026-03-01T09:05:00Z", "---error 2026-03-01T09:06:00Z boom", "---resume", "---test PASS",
    "---test FAIL (2/3 assertions)", "1→ researcher ∅ skipped", "1→ server ⇒ synth (delegate: req-001)",
    "1→ server ⟳ (resumed)", "1→ node ✗ missing-env:API_KEY", "The user paused here.", "x ✓", "12→ x ✓\r",
    "12→ x ✓ [10:00:00]\r\n", "١٢→ x ✓", "12→ K ✓", "12→ x ✓ [١٠:٠٠]",
]


def _key(info) -> tuple:
    return (info.text, info.step, info.state, info.note, info.time, info.recognised,
            [(i.kind, i.name, i.status, i.execution_id, i.note, i.state, i.attempt, i.max_attempts, i.tag,
              i.time, i.message) for i in info.items])


def _assert_same(lines) -> int:
    """Each line classifies alike both ways, with and without a run date; returns how many lines."""
    count = 0
    for line in lines:
        for base in (None, BASE):
            assert _key(classify_line(line, base)) == _key(classify_line_by_rules(line, base)), (line, base)
        count += 1
    return count


def _state_files(root: Path) -> list[Path]:
    return sorted(p for name in ("state.md", "vm.log.md") for p in root.rglob(name) if p.is_file())


def _assert_chunked_parse_is_whole(path: Path, data: bytes, chunk: int) -> None:
    """``EventLogTail.feed_bytes`` in ``chunk``-byte pieces (cut anywhere, a line's end
    arriving later) gives what ``parse_event_log`` gives the whole text. ``path`` is only
    named (nothing is read from it or written to it)."""
    tail = EventLogTail.start(path, path.name)
    for cut in [*range(chunk, len(data), chunk), len(data)]:
        tail.feed_bytes(data[tail.file.offset:cut], None)
    assert _log_key(tail.parser.finish()) == _log_key(parse_event_log(decode(data), source_name=path.name)), path


def test_every_corpus_line_classifies_as_its_rules_say(corpus):
    files = _state_files(corpus)
    assert files, f"no state.md or vm.log.md below {corpus}"
    lines = [ln for p in files for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    assert _assert_same(lines) == len(lines)


def test_every_corpus_event_log_parses_alike_whole_and_in_chunks(corpus):
    logs = [p for p in _state_files(corpus) if looks_like_event_log(decode(p.read_bytes()))]
    assert logs, f"no event log below {corpus}"
    for path in logs:
        data = path.read_bytes()
        if EventLogTail.start(path, path.name).parser.supports(decode(data[:4096])):
            _assert_chunked_parse_is_whole(path, data, 97)


def test_every_fixture_line_classifies_as_its_rules_say():
    files = _state_files(FIXTURES)
    assert files
    _assert_same(ln for p in files for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip())


def test_generated_logs_with_edge_lines_parse_alike_whole_and_in_chunks(tmp_path):
    writer = EventLogWriter(tmp_path)
    writer.append(3000)
    with open(writer.state, "a", encoding="utf-8") as fh:
        fh.write("\n".join(EDGE_LINES) + "\n")
    writer.append(500)
    data = writer.state.read_bytes()
    _assert_same(decode(data).splitlines()[1:])
    for chunk in (1, 4096 + 7, len(data)):
        if chunk == 1:  # byte by byte: every line provisional first; the edge lines suffice
            _assert_chunked_parse_is_whole(writer.state, ("# run:20260101-000000-abc123 x\n" + "\n".join(EDGE_LINES)).encode(), chunk)
        else:
            _assert_chunked_parse_is_whole(writer.state, data, chunk)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(_FAST_STEP_RE, fullmatch=True))
def test_any_line_of_the_fast_shape_classifies_as_its_rules_say(line):
    _assert_same([line])


PIECES = ["1→", "2a→", " 3->", "- 4→", "||", "|", "∥start", "‖done", "loop:2/3", "block:x#4", "#4", "retry:1/2",
          "if(true)", "if:", "false", "✓", "✗", "⊘", "⚠", "✅", "\ufe0f", "(", ")", "[", "]", "[10:00:07]",
          "(9:01)", "2026-01-01T10:00:00Z", "2026-01-01", "10:00", "@", "let", "x", "gate:go", "done", "∅", "⇒", "⟳",
          "missing-env:A", "---", "--test", "-", "end", "K", "ſ", "İ", "\u00a0", "\t", "١٢"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=7), st.sampled_from(["", " ", "  "]))
def test_any_line_of_pieces_classifies_as_its_rules_say(pieces, sep):
    _assert_same([sep.join(pieces)])


@pytest.mark.parametrize(("line", "expected"), [
    ("7→ step_7 ✓ [10:00:07]", ("7", K.STATEMENT_COMPLETED, "step_7", "ok", S.COMPLETE, None, datetime(2026, 1, 1, 10, 0, 7))),
    ("2→ gate:push ✗ rejected", ("2", K.STATEMENT_FAILED, "gate:push", "rejected", S.FAILED, None, None)),
    ("3→ if:true ✓", ("3", K.STATEMENT_COMPLETED, "if", "true", S.COMPLETE, "✓", None)),
    ("4→ loop ✓", ("4", K.STATEMENT_COMPLETED, "loop", "ok", S.COMPLETE, None, None)),
    ("5→ warn ⚠", ("5", K.STATEMENT_COMPLETED, "warn", "warning", S.COMPLETE, None, None)),
    ("6→ x ✓ [25:00:00]", ("6", K.STATEMENT_COMPLETED, "x", "ok", S.COMPLETE, None, None)),
    ("6→ x ✓ [9:01]", ("6", K.STATEMENT_COMPLETED, "x", "ok", S.COMPLETE, None, datetime(2026, 1, 1, 9, 1))),
    ("7→ x ⊘ [2026-01-01T10:00:00Z]",
     ("7", K.STATEMENT_SKIPPED, "x", "deferred", S.SKIPPED, None, datetime(2026, 1, 1, 10, tzinfo=timezone.utc))),
    ("8→ let ✓", ("8", K.STATEMENT_COMPLETED, "let", "ok", S.COMPLETE, None, None)),
    ("12→ x ✓ done now", ("12", K.STATEMENT_COMPLETED, "x", "ok", S.COMPLETE, "done now", None)),
    ("11a.b→ x ✓ done", ("11a.b", K.STATEMENT_COMPLETED, "x", "done", S.COMPLETE, None, None)),
])
def test_step_lines_say_what_the_format_says(line, expected):
    info = classify_line(line, BASE)
    (item,) = info.items
    assert (info.step, item.kind, item.name, item.status, info.state, info.note, info.time) == expected
    assert info.recognised and item.time == info.time


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?", fullmatch=True))
def test_a_clock_time_is_never_an_iso_datetime(token):
    """``parse_timestamp`` puts a clock-shaped token on the run date without asking
    ``fromisoformat`` first: it must refuse every such token (the old order asked it)."""
    with pytest.raises(ValueError):
        datetime.fromisoformat(token.strip())
