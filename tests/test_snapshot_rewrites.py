"""A snapshot ``state.md`` rewrite costs what changed (issue 9): only the trace lines that
differ from the revision before are annotated again, the delta names only them, the run's
trace list is re-stated in place; and whatever the rewrite, the parse equals a parse of
the whole text (snapshot.parse_snapshot) and the run equals a fresh open."""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prose_tui.backends.filesystem.snapshot_trace as snapshot_trace
from prose_tui.backends import open_run
from prose_tui.backends.filesystem.backend import FilesystemBackend
from prose_tui.backends.filesystem.snapshot import parse_snapshot
from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_cached

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TRACE = [
    "let a = session: scout                    # --> bindings/a.md (complete)",
    "let b = session: writer                   # <-- EXECUTING",
    "let c = session: judge                    # [...next...]",
    '  prompt: """',
    "  a # line inside a string",
    '  """',
    "parallel:                                 # (complete)",
    "  x = session: one                        # <-- RETRYING (attempt 2/3)",
    "if **done**:                              # (skipped)",
    "",
    "   ",
    "## not a heading inside the fence",
    "~~~",
]


def _state(trace: list[str], *, fence: str = "```", tail: str = "", index: int = 3) -> str:
    rows = "".join(f"| v{i} | let | bindings/v{i}.md | (root) |\n" for i in range(index))
    return (f"# Execution State\n\nrun: 20260301-090000-c0ffee\nprogram: demo.prose\nupdated: 2026-03-01T09:00:00Z\n\n"
            f"## Execution Trace\n\n{fence}prose\n" + "".join(t + "\n" for t in trace) + f"{fence}\n{tail}\n"
            "## Index\n\n### Bindings\n\n| Name | Kind | Path | Execution ID |\n|---|---|---|---|\n" + rows +
            "\n## Call Stack\n\n| execution_id | block | depth | status |\n|---|---|---|---|\n| 1 | main | 0 | executing |\n")


def _program(n: int) -> list[str]:
    out = []
    for i in range(n):
        note = "# --> bindings/v{0}.md (complete)".format(i) if i < n - 5 else "# [...next...]"
        out.append(f"let v{i} = session: worker_{i % 7}".ljust(50) + note)
    return out


def test_a_rewrite_annotates_and_names_only_the_lines_that_changed(tmp_path, monkeypatch):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    trace = _program(300)
    trace[200] = trace[200].split("#")[0] + "# <-- EXECUTING"
    (run_dir / "state.md").write_text(_state(trace), encoding="utf-8")
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=NOW)
    before = run.trace
    objects = list(before)

    annotated: list[str] = []
    real = snapshot_trace.split_annotation
    monkeypatch.setattr(snapshot_trace, "split_annotation", lambda raw, s: annotated.append(raw) or real(raw, s))
    trace[200] = trace[200].split("#")[0] + "# --> bindings/v200.md (complete)"
    trace[201] = trace[201].split("#")[0] + "# <-- EXECUTING"
    tmp = run_dir / ".state.md.tmp"
    tmp.write_text(_state(trace), encoding="utf-8")
    os.replace(tmp, run_dir / "state.md")
    delta = backend.apply(run, {run_dir / "state.md"}, now=NOW)

    assert delta.trace_lines == {200, 201}
    assert len(annotated) == 2  # not the 298 unchanged lines
    assert delta.run.trace is before  # re-stated in place: a view repaints the two lines
    assert all(delta.run.trace[i] is objects[i] for i in range(300) if i not in (200, 201))
    fresh = open_run(run_dir, now=NOW)
    assert delta.run.trace == fresh.trace
    assert delta.run.status == fresh.status


LINE = st.sampled_from(TRACE + [f"let v{i} = session: w   # (complete)" for i in range(4)])


@FAST
@given(first=st.lists(LINE, max_size=14),
       edits=st.lists(st.tuples(st.sampled_from(["set", "insert", "delete", "append"]), st.integers(0, 20), LINE),
                      min_size=1, max_size=6),
       fence=st.sampled_from(["```", "~~~~", "````"]), tail=st.sampled_from(["", "after the fence\n", "\n\n"]))
def test_any_rewrite_parses_as_the_whole_text(first, edits, fence, tail):
    key = object()
    trace = list(first)
    parse_snapshot_cached(_state(trace, fence=fence, tail=tail), key)
    for op, at, line in edits:
        if op == "set" and trace:
            trace[at % len(trace)] = line
        elif op == "insert":
            trace.insert(at % (len(trace) + 1), line)
        elif op == "delete" and trace:
            del trace[at % len(trace)]
        else:
            trace.append(line)
        text = _state(trace, fence=fence, tail=tail)
        assert parse_snapshot_cached(text, key) == parse_snapshot(text)


@settings(max_examples=25, deadline=None)
@given(edits=st.lists(st.tuples(st.sampled_from(["set", "insert", "delete", "append"]), st.integers(0, 40), LINE),
                      min_size=1, max_size=5))
def test_rewrites_applied_as_deltas_end_in_the_run_a_fresh_open_reads(edits):
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / ".prose" / "runs" / "20260301-090000-c0ffee"
        (run_dir / "bindings").mkdir(parents=True)
        trace = _program(30)
        state = run_dir / "state.md"
        state.write_text(_state(trace), encoding="utf-8")
        backend = FilesystemBackend()
        run = backend.open(run_dir, now=NOW)
        shown = run.trace  # what a view holds
        for op, at, line in edits:
            if op == "set":
                trace[at % len(trace)] = line
            elif op == "insert":
                trace.insert(at % (len(trace) + 1), line)
            elif op == "delete" and len(trace) > 1:
                del trace[at % len(trace)]
            else:
                trace.append(line)
            state.write_text(_state(trace), encoding="utf-8")
            delta = backend.apply(run, {state}, now=NOW)
            run = delta.run
            if delta.trace_lines is None:
                shown = run.trace  # redrawn whole
            assert shown is run.trace
            fresh = open_run(run_dir, now=NOW)
            assert run.trace == fresh.trace
            assert (run.status, run.call_stack, [b.path for b in run.bindings]) == \
                (fresh.status, fresh.call_stack, [b.path for b in fresh.bindings])


def test_the_history_knows_the_revision_the_journal_read_without_reading_it_again(tmp_path, monkeypatch):
    import hashlib

    from prose_tui.history.journal import Journal
    from prose_tui.history.replay import current_state

    run_dir = tmp_path / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    state = run_dir / "state.md"
    trace = _program(20)
    state.write_text(_state(trace), encoding="utf-8")
    journal = Journal(tmp_path / "journal")
    journal.record(run_dir, {state}, NOW)
    trace[3] = "let v3 = session: again   # <-- EXECUTING"
    state.write_text(_state(trace), encoding="utf-8")
    journal.record(run_dir, {state}, NOW)  # the live worker's sink reads the revision
    run = open_run(run_dir, now=NOW)
    data = state.read_bytes()

    def no_read(self):
        raise AssertionError(f"{self} read again on the UI side")

    monkeypatch.setattr(Path, "read_bytes", no_read)
    text, sha = current_state(run)
    assert sha == hashlib.sha256(data).hexdigest() and text == data.decode("utf-8")


def test_a_growing_run_keeps_the_parse_of_its_last_revisions_not_of_every_rewrite(tmp_path, monkeypatch):
    """Issue 35: a run whose Index gains a row per rewrite kept every old Index's parse
    (up to 2 MB of text, about 28 MB of parse for a 600-row run). What is held now is
    what the next rewrite can reuse: the sections of the last revision parsed per run (live
    and journal replay), and an unchanged section is still not parsed again."""
    import gc

    import prose_tui.backends.filesystem.snapshot_sections as sections
    from prose_tui.backends.filesystem.snapshot import IndexRow

    run = tmp_path / "run"
    for k in range(150):
        text = _state(_program(40), index=k)
        assert parse_snapshot_cached(text, run) == parse_snapshot(text)
        parse_snapshot_cached(text, ("journal", run))  # the history's replay of the same revision
    gc.collect()
    rows = sum(1 for o in gc.get_objects() if isinstance(o, IndexRow))
    # a few revisions' rows (the last per run and the last whole texts parsed), not 150 revisions' (11,000)
    assert rows <= 10 * 150, f"{rows} Index rows held after 150 rewrites of a 150-row Index"

    parsed: list[str] = []
    real = sections.parse_document
    monkeypatch.setattr(sections, "parse_document", lambda text: parsed.append(text) or real(text))
    parse_snapshot_cached(_state(_program(41), index=149), run)  # a statement more, the Index as it was
    assert parsed == [], "a rewrite that left the Index as it was parsed it again"


def _revisions_held(cache: object, marker: str) -> set[bytes]:
    """The ``state.md`` revisions whose ``updated:`` line starts with ``marker`` (those of
    one run) a cache holds whole, as text, bytes or a list of its lines, wherever in it."""
    held: set[bytes] = set()
    todo, seen = [cache], set()
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str | bytes):
            data = obj.encode() if isinstance(obj, str) else obj
            if data.startswith(b"# Execution State") and (line := [ln for ln in data.split(b"\n") if ln.startswith(marker.encode())]):
                held.add(line[0])
        elif isinstance(obj, list) and obj and all(isinstance(x, bytes) for x in obj):
            todo.append(b"\n".join(obj))
        elif isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, list | tuple):
            todo.extend(obj)
    return held


def test_a_watched_run_holds_its_newest_revision_not_the_last_few_rewrites(tmp_path):
    """Issue 35: per rewrite of a watched run, the current-state cache kept another decoded
    ``state.md`` (16 of them) and the pack reader another whole revision (8), although only
    the newest is ever asked for again. Now each holds the newest one per run; the history
    is still the whole history, read back from the journal on disk."""
    from prose_tui.history import history_of
    import prose_tui.history.current as current
    import prose_tui.history.revisions as revisions
    from prose_tui.history.journal import Journal

    run_dir = tmp_path / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    state = run_dir / "state.md"
    journal = Journal(tmp_path / "journal")
    for k in range(20):
        text = _state(_program(20 + k)).replace("updated: 2026-03-01T09:00:00Z", f"updated: 2031-03-01T09:{k:02d}:00Z")
        state.write_text(text, encoding="utf-8")
        os.utime(state, (1_700_000_000 + k, 1_700_000_000 + k))
        journal.record(run_dir, {state}, NOW)
        history = history_of(open_run(run_dir, now=NOW), journal=journal)
    newest = {b"updated: 2031-03-01T09:19:00Z"}  # this run's; other tests' runs may be held too
    assert _revisions_held(current._CURRENT, "updated: 2031-") == newest
    # the pack reader holds at most the newest (now none: the replay takes the text above)
    assert _revisions_held(revisions._READ, "updated: 2031-") <= newest
    assert len(history.revision_cursors()) == 20  # every rewrite is still in the history
    cursors = history.revision_cursors()
    assert len({sha for _, sha in cursors}) == 20


def _watch(tmp_path, rewrites: int, journal) -> tuple[Path, object]:
    """A run rewritten ``rewrites`` times, each rewrite journaled and the history extended,
    as the live pipeline and the history pane do; returns the run folder and the history."""
    from prose_tui.history import history_of

    run_dir = tmp_path / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True, exist_ok=True)
    state = run_dir / "state.md"
    history = None
    for k in range(rewrites):
        state.write_text(_state(_program(20 + k)).replace("09:00:00Z", f"09:{k:02d}:00Z"), encoding="utf-8")
        os.utime(state, (1_700_000_000 + k, 1_700_000_000 + k))
        journal.record(run_dir, {state}, NOW)
        history = history_of(open_run(run_dir, now=NOW), journal=journal)
    return run_dir, history


def test_a_watched_rewrite_is_decoded_once_not_read_back_from_the_journal(tmp_path, monkeypatch):
    """Issue 35: the replay read each newest revision back from the journal's pack (its lines
    joined and decoded again) although the journal had just decoded it for "state.md as it is
    now". Now it takes that text: a watched run reads no revision back; a history built anew
    (another journal reader) still reads the older ones from disk."""
    from prose_tui.history import history_of
    from prose_tui.history.journal import Journal, StoredRevision

    reads: list[str] = []
    real = StoredRevision.read
    monkeypatch.setattr(StoredRevision, "read", lambda self: reads.append(self.sha256) or real(self))
    journal = Journal(tmp_path / "journal")
    run_dir, history = _watch(tmp_path, 12, journal)
    assert len(history.revision_cursors()) == 12
    assert reads == [], f"{len(reads)} of 12 watched rewrites were read back from the journal"
    fresh = history_of(open_run(run_dir, now=NOW), journal=Journal(tmp_path / "journal"))
    assert [sha for sha, _ in fresh.revision_cursors()] == [sha for sha, _ in history.revision_cursors()]
    assert len(reads) == 11  # every older revision from disk, the newest from the text kept


def test_a_watched_runs_journal_entries_share_its_folder(tmp_path):
    """Issue 35: every revision's entry held a path object of its own for the journal folder
    (a few hundred bytes per rewrite, for as long as the run is watched); they share one."""
    from prose_tui.history.journal import Journal

    journal = Journal(tmp_path / "journal")
    run_dir, _history = _watch(tmp_path, 6, journal)
    folders = [e.stored.folder for e in journal.entries(run_dir) if e.stored is not None]
    assert len(folders) == 6 and all(f is folders[0] for f in folders)
    assert all(e.text is not None for e in journal.entries(run_dir))
