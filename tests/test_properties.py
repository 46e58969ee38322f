"""Property-based tests: every parser entry point on arbitrary text and bytes, and on
mutations of the real corpus files (truncated anywhere, lines swapped, junk inserted).

The contract under test is the one each parser documents: it never raises on any input;
what it cannot read becomes a sentence in ``warnings`` (or a ``Binding.warning``), and no
C0/C1 control character reaches display text. Python warnings are errors in this file, so
a parser that "only" warns through ``warnings.warn`` fails too.

The corpus is read in place (``corpus`` fixture) and mutated in memory or in ``tmp_path``;
nothing from it is copied into the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlite_fixture import build_sqlite_run

from prose_tui.backends import NotARunError, open_run
from prose_tui.backends.common.agents import read_segment
from prose_tui.backends.common.annotations import classify, split_annotation
from prose_tui.backends.common.bindings import parse_binding_head, read_binding
from prose_tui.backends.common.markdown import parse_document
from prose_tui.backends.common.project import read_env, read_state_json
from prose_tui.backends.common.text import decode, read_window, visible
from prose_tui.backends.filesystem.eventlog import parse_event_log
from prose_tui.backends.filesystem.snapshot import parse_snapshot, parse_trace_lines
from prose_tui.backends.narration.parse import (
    NarrationTail,
    load_narration,
    parse_narration_text,
    sniff_narration,
)
from prose_tui.backends.sqlite.run import load_sqlite_run
from prose_tui.model import Run, StatementState

pytestmark = pytest.mark.filterwarnings("error", "ignore::hypothesis.errors.HypothesisWarning")

# PROSE_TUI_EXAMPLES=2000 runs a deep search; the default keeps this file under ~20 s.
SCALE = int(os.environ.get("PROSE_TUI_EXAMPLES", "0")) or None
FAST = settings(max_examples=SCALE or 80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILES = settings(max_examples=(SCALE or 120) // 4, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Any C0/C1 control except newline and tab: what must never reach display text.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Pieces of every format, so generated text reaches the parsers' deeper rules, not just
# their "unrecognised line" fallbacks.
FRAGMENTS = [
    "# Execution State", "## Execution Trace", "## Index", "### Bindings", "### Agents", "## Call Stack",
    "## Active Constructs", "### Parallel p1", "```prose", "```", "~~~", "| name | kind | path |", "|---|---|---|",
    "| research | let | bindings/research.md |", "| execution_id | block | depth | status |", "| 43 | process | 2 | executing |",
    "run: 20260101-120000-abc123", "program: x.prose", "started: 2026-01-01T12:00:00Z", "updated: 2026-13-45T99:99",
    "status: COMPLETED", "let x = session \"a\"  # --> bindings/x.md", "session \"b\"  # <-- EXECUTING",
    "  # <-- RETRYING (attempt 2/3)", "# [not yet entered]", "# [...next...]", "✓ DONE", '"""', "  # (complete - APPROVED)",
    "# run:20260101-120000-abc123 x.prose", "# run:", "1→ research ✓", "2→ ∥start a,b", "2a→ a ✓", "2b→ b ✗ timeout",
    "2→ ∥done", "3→ loop:2/5 exit(**done**)", "4→ block:process#43", "4→ #43 done", "5→ retry:2/3", "5→ ✗ timeout",
    "0-> x", "a ✓ | b ✓ (parallel)", "if(false) skip", "gate:review ✓ approved", "[12:01:03] 6→ y ✓",
    "---end 2026-01-01T12:05:00Z", "---error 2026-01-01T12:05:00+02:00 boom", "---resume", "---", "---end",
    "[Program] x.prose", "[Position] 3: let x = session", "[Binding] x = \"v\"", "[Frame+] execution_id: 5, block: b",
    "[Frame-] execution_id: 5", "[CallStack]", "execution_id: 5 | block: b | depth: 1", "[Input] Inputs received:",
    "topic = t", "[Parallel] Parallel complete:", "- a = 1", "[Loop] iteration 2/3", "[Import] Importing:",
    "Registered as: h", "📋 Program x", "📍 Position 2", "📦 Binding y = 1", "[Success]", "[Warning] w",
    "kind: let", "binding: input", "execution_id: 43", "source:", "source: caller", "# research",
    '{"data": "ENC[AES256_GCM,data:abc,iv:x]", "sops": {"v": 1}}', "\x1b[31mred\x1b[0m", "[bold red]x[/]", "\x00",
    '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"[Position] 1: x"}]}}',
]

lines = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(max_size=30),
        st.tuples(st.sampled_from(FRAGMENTS), st.text(max_size=12)).map("".join),
        st.tuples(st.text(max_size=12), st.sampled_from(FRAGMENTS)).map(lambda t: f"{t[0]}  {t[1]}"),
    ),
    max_size=40,
)
documents = st.one_of(st.text(max_size=400), lines.map("\n".join), lines.map("\r\n".join))
blobs = st.one_of(st.binary(max_size=600), documents.map(lambda s: s.encode("utf-8", "surrogatepass")))


def _assert_run_shape(run: Run) -> None:
    assert isinstance(run, Run)
    assert all(isinstance(w, str) and w for w in run.warnings)
    for line in run.trace:
        assert isinstance(line.text, str)
        assert line.state is None or isinstance(line.state, StatementState)


# -- text: decode / visible --------------------------------------------------------------------------
@FAST
@given(st.binary(max_size=500))
@example(b"\x1b[31mred\x1b[0m\x00\x07\r\x9b2J")
@example("\u0085\u009b[2J".encode())  # C1 controls as UTF-8: NEL, CSI
def test_decode_never_lets_a_control_character_through(data):
    out = decode(data)
    assert not CONTROL.search(out)
    # Every line of the input is still a line of the output (nothing swallowed).
    assert out.count("\n") == data.replace(b"\r\n", b"\n").count(b"\n")


@FAST
@given(st.lists(st.sampled_from([b"a", b"\n", b"\t", b"\r", b"\r\n", b"\x00", b"\x1b", b"\x7f", "é".encode(),
                                 "→".encode(), "".encode(), b"\xc2", b"\x80", b"\x9f", b"\xff"]),
                max_size=40).map(b"".join) | st.binary(max_size=300))
@example("→ step_1 é".encode())
@example(b"plain ascii\n\tindented\n")
def test_decode_is_visible_of_the_utf8_text(data):
    """``decode`` returns plain text as decoded without the regular expression's pass (a
    shortcut): the same text as making the decoded text visible, byte for byte."""
    assert decode(data) == visible(data.decode("utf-8", errors="replace"))


@FAST
@given(st.text(max_size=300))
def test_visible_keeps_printable_text_and_pictures_controls(text):
    out = visible(text)
    assert not CONTROL.search(out)
    plain = text.replace("\r\n", "\n")
    if not CONTROL.search(plain):
        assert out == plain
    assert len(out) == len(plain)  # one picture per control character, nothing dropped


@FAST
@given(st.text(max_size=100))
def test_visible_name_is_one_line_with_no_control_characters(name):
    from prose_tui.backends.common.text import visible_name

    out = visible_name(name)
    assert len(out) == len(name) and "\n" not in out and "\t" not in out and not CONTROL.search(out)


@FAST
@given(data=st.binary(max_size=3000), offset=st.integers(-5, 4000), max_bytes=st.integers(1, 2000), tail=st.booleans())
def test_read_window_reads_at_most_its_window(tmp_path_factory, data, offset, max_bytes, tail):
    path = tmp_path_factory.mktemp("w") / "value.md"
    path.write_bytes(data)
    text, size, cut = read_window(path, offset=offset, max_bytes=max_bytes, tail=tail)
    assert size == len(data)
    assert not CONTROL.search(text)
    start = offset if 0 <= offset <= size else 0
    assert cut == (size - start > max_bytes)
    # Decoding never produces more characters than bytes read.
    assert len(text) <= min(max_bytes, size - start)


# -- state.md: snapshot, annotations, Markdown structure -------------------------------------------------
@FAST
@given(documents)
@example("## Execution Trace\n```prose\n" + "x  # <-- EXECUTING\n" * 3)  # unclosed fence
@example("> " * 200 + "## Execution Trace")
@example("- " * 300 + "x")
@example("## Index\n### Bindings\n| name |\n|---|\n" + "| a | b | c | d |\n" * 5)
def test_parse_snapshot_never_raises(text):
    state = parse_snapshot(text)
    assert all(isinstance(w, str) and w for w in state.warnings)
    assert [t.line for t in state.trace] == list(range(1, len(state.trace) + 1))
    for row in state.binding_rows:
        assert row.get("name")
    # Frames are innermost first.
    depths = [f.depth or 0 for f in state.call_stack]
    assert depths == sorted(depths, reverse=True)


@FAST
@given(documents)
def test_parse_document_sections_come_from_the_text(text):
    doc = parse_document(text)
    source_lines = text.splitlines()
    for block in doc.sections:
        assert block.lines == source_lines[block.start:block.end]
        for child in block.children:
            assert block.start <= child.start <= child.end <= block.end


@FAST
@given(line=st.one_of(st.text(max_size=80), st.tuples(st.text(max_size=20), st.sampled_from(FRAGMENTS)).map("  ".join)),
       in_string=st.booleans())
@example(line='let x = "a # b"  # --> bindings/x.md', in_string=False)
@example(line='"""  # <-- EXECUTING', in_string=True)
def test_split_annotation_text_is_the_start_of_the_line(line, in_string):
    ann, still_open = split_annotation(line, in_string)
    assert isinstance(still_open, bool)
    assert line.startswith(ann.text)
    if ann.note is not None:
        assert ann.note and ann.note in line
        assert ann.state == classify(ann.note)
    else:
        assert ann.state is None and ann.binding is None
    if ann.binding is not None:
        assert ann.binding.startswith("bindings/") and ann.binding in line
    if ann.attempt is not None:
        assert ann.max_attempts is not None


@FAST
@given(documents)
def test_parse_trace_lines_one_line_per_source_line(text):
    out = parse_trace_lines(text)
    assert [t.line for t in out] == list(range(1, len(out) + 1))
    assert len(out) <= len(text.splitlines())


# -- event logs ---------------------------------------------------------------------------------------
@FAST
@given(documents, st.sampled_from(["state.md", "vm.log.md"]))
@example("# run:x\n" + "1→ block:b#1\n" * 500 + "---end", "state.md")
@example("# run:x\n" + "(" * 5000 + "\n1→ " + "∥" * 3000, "vm.log.md")
def test_parse_event_log_never_raises_or_gives_up(text, name):
    log = parse_event_log(text, source_name=name)
    # The parser has a safety net that turns an exception into this warning; reaching it is a bug.
    assert not any("parsing stopped early" in w for w in log.warnings), log.warnings
    assert [e.seq for e in log.events] == list(range(len(log.events)))
    assert [t.line for t in log.trace] == list(range(1, len(log.trace) + 1))
    assert log.status in (None, "completed", "failed")
    nonblank = sum(1 for ln in text.splitlines() if ln.strip())
    assert len(log.trace) <= nonblank


# -- bindings and segments -------------------------------------------------------------------------------
@FAST
@given(documents)
@example("---\n" + "a: [" * 200 + "\n---\nvalue")  # YAML front matter that YAML rejects
@example("---\n!!python/object/apply:os.system ['true']\n---\n")  # no code runs: safe loading
def test_parse_binding_head_never_raises(head):
    fields, source, offset, warning = parse_binding_head(head)
    assert isinstance(fields, dict)
    if offset is None:
        assert fields == {} and source is None and warning
    else:
        assert 0 <= offset <= len(head)


@FILES
@given(data=blobs, name=st.sampled_from(["x.md", "y__43.md", "svc/z.md", "v.json", "w.txt", "a.yaml"]))
@example(data=b"# x\nkind: let\n---\n" + "é".encode() * 10_000, name="x.md")  # multibyte across the 16 KiB head
def test_read_binding_on_arbitrary_bytes(tmp_path, data, name):
    root = Path(tempfile.mkdtemp(dir=tmp_path)) / "bindings"
    path = root / name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    b = read_binding(path, root)
    assert b.exists and b.bytes == len(data)
    assert 0 <= b.value_offset <= len(data)
    for text in [b.source or "", *(b.fields or {}).values(), *(b.fields or {}).keys()]:
        assert not CONTROL.search(text.replace("\n", "")), text
    # Reading the value from its offset works and shows no control characters.
    value, size, _ = read_window(path, offset=b.value_offset)
    assert size == len(data) and not CONTROL.search(value)


@FILES
@given(data=blobs)
@example(data=b"timestamp: " + b"\xff" * 3000)
def test_read_segment_on_arbitrary_bytes(tmp_path, data):
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "captain-007.md"
    path.write_bytes(data)
    seg = read_segment(path, 7)
    assert seg.number == 7 and seg.bytes == len(data)
    for text in (seg.timestamp, seg.prompt):
        assert text is None or not CONTROL.search(text)


# -- narration ----------------------------------------------------------------------------------------------
@FAST
@given(documents)
@example('{"type":"assistant","message":' + "[" * 100_000)  # nesting deeper than json's recursion limit
@example("[Frame-] execution_id: 99\n[Frame-]\n[CallStack]\nexecution_id: x | block:")
def test_parse_narration_text_never_raises(text):
    run = parse_narration_text(text)
    _assert_run_shape(run)


@FILES
@given(chunks=st.lists(blobs, min_size=1, max_size=6), jsonl=st.booleans())
@example(chunks=[b'{"type":"assistant","message":' + b"[" * 100_000 + b"\n"], jsonl=False)
@example(chunks=[b'\n{"', "\n0→".encode()], jsonl=False)  # sniffed as a transcript from a cut first line
def test_narration_tail_on_arbitrary_appends_matches_a_fresh_read(tmp_path, chunks, jsonl):
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / ("t.jsonl" if jsonl else "n.md")
    path.write_bytes(b"")
    tail = NarrationTail(path)
    for chunk in chunks:
        with open(path, "ab") as fh:
            fh.write(chunk)
        tail.poll()
        _assert_run_shape(tail.run)
    with open(path, "ab") as fh:
        fh.write(b"\n")  # complete the last line so every byte is parsed
    tail.poll()
    # Appending in pieces ends where reading the whole file at once does.
    fresh = NarrationTail(path)
    fresh.poll()
    assert [(e.kind, e.text, e.line) for e in tail.run.events] == [(e.kind, e.text, e.line) for e in fresh.run.events]
    assert sniff_narration(path) in (True, False)
    _assert_run_shape(load_narration(path))


# -- SQLite ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_db(tmp_path_factory) -> Path:
    return build_sqlite_run(tmp_path_factory.mktemp("db")) / "state.db"


@FILES
@given(data=blobs)
@example(data=b"SQLite format 3\x00" + b"\x00" * 84)
def test_load_sqlite_run_on_arbitrary_bytes(tmp_path, data):
    run_dir = Path(tempfile.mkdtemp(dir=tmp_path))
    (run_dir / "state.db").write_bytes(data)
    run = load_sqlite_run(run_dir)
    _assert_run_shape(run)
    assert run.warnings  # not SQLite: said so
    assert sorted(p.name for p in run_dir.iterdir()) == ["state.db"]  # nothing written beside it


@FILES
@given(cut=st.integers(0, 1 << 16), flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=8))
@example(cut=100, flips=[])
@example(cut=1 << 16, flips=[(18, 2)])  # claims WAL mode with no -wal file
def test_load_sqlite_run_on_a_corrupted_real_database(tmp_path, real_db, cut, flips):
    data = bytearray(real_db.read_bytes()[:cut])
    for at, value in flips:
        if at < len(data):
            data[at] = value
    run_dir = Path(tempfile.mkdtemp(dir=tmp_path))
    (run_dir / "state.db").write_bytes(bytes(data))
    before = bytes(data)
    run = load_sqlite_run(run_dir)
    _assert_run_shape(run)
    assert (run_dir / "state.db").read_bytes() == before


# -- project files -------------------------------------------------------------------------------------------
@FILES
@given(data=blobs)
@example(data=b"[" * 100_000)
def test_project_files_never_raise(tmp_path, data):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    (folder / ".env").write_bytes(data)
    (folder / "state.json").write_bytes(data)
    assert isinstance(read_env(folder / ".env"), dict)
    assert isinstance(read_state_json(folder / "state.json"), dict)


# -- whole run folders ----------------------------------------------------------------------------------------
run_files = st.dictionaries(
    st.sampled_from([
        "state.md", "vm.log.md", "program.prose", "program.md", "manifest.md", "bindings/a.md", "bindings/b__3.md",
        "bindings/svc/c.md", "bindings/d.json", "agents/captain/memory.md", "agents/captain/captain-001.md",
        "imports/h--lib/state.md", "imports/h--lib/bindings/x.md", "imports/h--lib/imports/k/state.md",
        "state.db", "services/s.md", "bindings/.hidden.md",
    ]),
    blobs,
    max_size=8,
)


@FILES
@given(files=run_files)
def test_open_run_on_arbitrary_run_folders(tmp_path, files):
    run_dir = Path(tempfile.mkdtemp(dir=tmp_path)) / "20260101-120000-abc123"
    run_dir.mkdir()
    for rel, data in files.items():
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_bytes(data)
    try:
        run = open_run(run_dir)
    except NotARunError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    _assert_run_shape(run)
    for imp in run.imports:
        _assert_run_shape(imp)
    assert run.status_reason is not None


# -- mutations of the real corpus ---------------------------------------------------------------------------
def corpus_files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix != ".tsv")


def parse_everything(data: bytes, name: str, tmp: Path) -> None:
    """Feed one (mutated) file to every parser that could meet it."""
    text = decode(data)
    parse_snapshot(text)
    log = parse_event_log(text, source_name=name)
    assert not any("parsing stopped early" in w for w in log.warnings), log.warnings
    parse_narration_text(text)
    parse_binding_head(data[:16384].decode("utf-8", "replace"))
    parse_trace_lines(text)
    root = tmp / "bindings"
    root.mkdir(parents=True, exist_ok=True)
    target = root / (name if name.endswith((".md", ".json")) else name + ".md")
    target.write_bytes(data)
    read_binding(target, root)
    read_segment(target, 1)


def mutations(data: bytes, seed: int) -> list[bytes]:
    """Truncations, a line swap, junk inserted, a doubled block: deterministic per seed."""
    import random

    rnd = random.Random(seed)
    out = [data[: rnd.randrange(len(data) + 1)] for _ in range(3)] + [data[: len(data) // 2]]
    lines = data.split(b"\n")
    if len(lines) > 1:
        i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        out.append(b"\n".join(lines))
    junk = [b"\x00\xff\xfe", b"\x1b[2J", b"```", b"## Execution Trace\n", b"---\n", b"[Frame+]", "→ ∥".encode()[:4]]
    at = rnd.randrange(len(data) + 1)
    out.append(data[:at] + rnd.choice(junk) + data[at:])
    out.append(data + data[: len(data) // 3])
    return out


def test_every_corpus_file_survives_truncation_swaps_and_junk(corpus, tmp_path):
    files = corpus_files(corpus)
    assert len(files) > 100, f"expected the whole corpus under {corpus}"
    for n, path in enumerate(files):
        data = path.read_bytes()
        for k, mutated in enumerate(mutations(data, n)):
            parse_everything(mutated, path.name, tmp_path / f"{n}-{k}")


@pytest.fixture(scope="module")
def corpus_state_files() -> list[Path]:
    from conftest import corpus_or_skip

    corpus = corpus_or_skip()
    return sorted(p for p in corpus.rglob("*") if p.is_file() and p.name in ("state.md", "vm.log.md"))


@FILES
@given(data=st.data())
def test_corpus_runs_open_after_random_mutations(tmp_path, corpus_state_files, data):
    state = data.draw(st.sampled_from(corpus_state_files), label="state file")
    run_src = state.parent
    raw = state.read_bytes()
    op = data.draw(st.sampled_from(["truncate", "swap", "junk", "shuffle"]), label="op")
    if op == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw)), label="cut")]
    elif op == "swap":
        lines = raw.split(b"\n")
        i = data.draw(st.integers(0, len(lines) - 1))
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        raw = b"\n".join(lines)
    elif op == "junk":
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(blobs, label="junk") + raw[at:]
    else:
        lines = raw.split(b"\n")
        raw = b"\n".join(data.draw(st.permutations(lines), label="order"))
    run_dir = Path(tempfile.mkdtemp(dir=tmp_path)) / run_src.name
    shutil.copytree(run_src, run_dir, symlinks=True)
    (run_dir / state.name).write_bytes(raw)
    run = open_run(run_dir)
    _assert_run_shape(run)


# -- the live path: Workspace.apply after any sequence of file operations ------------------------------------
def _run_summary(run: Run) -> tuple:
    return (
        [(t.line, t.text, t.note, t.state) for t in run.trace],
        sorted((str(b.path), b.bytes, b.exists, b.kind, b.value_offset) for b in run.bindings),
        sorted((a.name, [(s.number, s.bytes, s.timestamp) for s in a.segments]) for a in run.agents),
        sorted((i.import_handle, len(i.trace), len(i.bindings)) for i in run.imports),
        run.status,
    )


file_ops = st.lists(
    st.one_of(
        st.tuples(st.just("state"), st.sampled_from(FRAGMENTS[:40]), st.integers(0, 5)),
        st.tuples(st.just("binding"), st.sampled_from(["a", "b__3", "svc/c"]), blobs),
        st.tuples(st.just("append"), st.sampled_from(["a", "b__3"]), st.binary(max_size=40)),
        st.tuples(st.just("delete"), st.sampled_from(["bindings/a.md", "bindings/b__3.md", "state.md",
                                                       "agents/cap/cap-001.md", "imports/lib"]), st.none()),
        st.tuples(st.just("segment"), st.integers(1, 3), blobs),
        st.tuples(st.just("import"), st.sampled_from(FRAGMENTS[:40]), st.none()),
    ),
    min_size=1,
    max_size=12,
)


@FILES
@given(ops=file_ops, batch=st.integers(1, 4))
def test_workspace_apply_ends_where_a_fresh_read_does(tmp_path, ops, batch):
    from prose_tui.live.workspace import Workspace

    root = Path(tempfile.mkdtemp(dir=tmp_path))
    run_dir = root / ".prose" / "runs" / "20260101-120000-abc123"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text("## Execution Trace\n```prose\nx  # <-- EXECUTING\n```\n")
    fixed = lambda: __import__("datetime").datetime(2026, 1, 1, 12, 30, tzinfo=__import__("datetime").timezone.utc)  # noqa: E731
    ws = Workspace(root, clock=fixed)
    ws.scan()
    pending: set[Path] = set()
    for n, (op, what, data) in enumerate(ops, start=1):
        if op == "state":
            path = run_dir / "state.md"
            lines = [f"s{i}  # (complete)" for i in range(data)] + [f"{what}  # <-- EXECUTING"]
            tmp = run_dir / ".state.tmp"
            tmp.write_text("## Execution Trace\n```prose\n" + "\n".join(lines) + "\n```\n")
            os.replace(tmp, path)
        elif op in ("binding", "append"):
            path = run_dir / "bindings" / f"{what}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb" if op == "binding" else "ab") as fh:
                fh.write(data)
        elif op == "delete":
            path = run_dir / what
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        elif op == "segment":
            path = run_dir / "agents" / "cap" / f"cap-{what:03d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        else:
            path = run_dir / "imports" / "lib" / "state.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"## Execution Trace\n```prose\n{what}  # (complete)\n```\n")
        pending.add(path)
        if n % batch == 0 or n == len(ops):
            ws.apply(pending)  # the watcher hands over the changed paths, batched
            pending = set()
    if not run_dir.exists():
        return
    expected = open_run(run_dir, now=fixed(), observed=ws.observed.get(run_dir))
    assert _run_summary(ws.runs[run_dir]) == _run_summary(expected)


def test_sqlite_text_that_is_not_utf8_reads_with_replacement_characters(tmp_path):
    run_dir = tmp_path / "20260101-120000-abc123"
    run_dir.mkdir()
    conn = sqlite3.connect(run_dir / "state.db")
    conn.executescript(
        "CREATE TABLE run (id TEXT, program_path TEXT, status TEXT);"
        "CREATE TABLE execution (id INTEGER PRIMARY KEY, statement_index INTEGER, statement_text TEXT, status TEXT);"
        "CREATE TABLE bindings (name TEXT, execution_id INTEGER, kind TEXT, value TEXT);"
        "INSERT INTO run VALUES (CAST(x'72756e80' AS TEXT), 'p.prose', 'running');"
        "INSERT INTO execution VALUES (1, 1, CAST(x'73657373696f6e20ff22' AS TEXT), 'executing');"
        "INSERT INTO bindings VALUES (CAST(x'6eff' AS TEXT), NULL, 'let', CAST(x'76c3' AS TEXT));"
    )
    conn.commit()
    conn.close()
    run = load_sqlite_run(run_dir)
    assert not any("could not be read" in w for w in run.warnings), run.warnings
    assert run.id == "run\ufffd"
    assert [t.text for t in run.trace if "session" in t.text] and "\ufffd" in run.trace[-1].text
    assert [b.name for b in run.bindings] == ["n\ufffd"]
