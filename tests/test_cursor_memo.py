"""A history cursor moved step by step (``CursorMemo``: the fold moved from the last cursor)
gives exactly the run ``state_at`` works out from the first event, field by field."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import prose_tui.backends.filesystem.history as fs_history
from prose_tui.backends import open_run
from prose_tui.history import CursorMemo, history_of, state_at


def long_log(root: Path, rounds: int) -> Path:
    """An event log with parallels, blocks, retries, failures and a statement left
    executing, ``rounds`` times over (about 16 events a round)."""
    run = root / ".prose" / "runs" / "20260305-120000-abcdef"
    run.mkdir(parents=True)
    lines = ["# run:20260305-120000-abcdef long.prose"]
    n = 0
    for r in range(rounds):
        n += 1
        lines.append(f"{n}→ fetch_{r} ✓")
        n += 1
        par = n
        lines += [f"{par}→ ∥start a{r},b{r}", f"{par}a→ a{r} ✓", f"{par}b→ b{r} ✓", f"{par}→ ∥done"]
        n += 1
        block = n
        lines.append(f"{block}→ block:review#{r}")
        n += 1
        lines.append(f"{n}→ draft_{r} ✗ timeout")
        if r % 3:
            lines += [f"{n}→ retry:2/3", f"{n}→ draft_{r} ✗ timeout", f"{n}→ retry:3/3"]
            lines.append(f"{n}→ draft_{r} ✓" if r % 3 == 1 else f"{n}→ draft_{r} ✗ rate limited")
        lines.append(f"{block}→ #{r} done")
        n += 1
        lines.append(f"{n}→ gate_{r} ✗ rejected" if r % 5 == 4 else f"{n}→ write_{r} ✓")
        n += 1
        lines.append(f"{n}→ think_{r}")  # started, never finished
    lines.append("---error 2026-03-05T12:09:30Z stopped")
    (run / "state.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def assert_same(memo_run, full_run, cursor: int) -> None:
    """Every field of the two runs equal (trace lines, frames, agents compared field by field)."""
    for field in dataclasses.fields(full_run):
        got, want = getattr(memo_run, field.name), getattr(full_run, field.name)
        if field.name == "trace" and got != want:
            first = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b) if len(got) == len(want) else None
            pytest.fail(f"as of event {cursor}: trace differs ({len(got)} vs {len(want)} lines; first at {first}: "
                        f"{got[first] if first is not None else ''} vs {want[first] if first is not None else ''})")
        assert got == want, f"as of event {cursor}: {field.name} differs"


@pytest.fixture
def folded(monkeypatch, tmp_path):
    """A long log whose cursor is always folded (never the log parsed again)."""
    monkeypatch.setattr(fs_history, "REPARSE_LINES", 0)
    run = open_run(long_log(tmp_path, 200))
    return run, history_of(run)


def test_stepping_forward_and_back_gives_the_full_computation(folded):
    run, history = folded
    n = len(history.events)
    assert n > 2000 and any(t.state is not None for t in run.trace)
    memo = CursorMemo(run, history)
    path = [*range(n - 2, n - 200, -1), *range(n - 200, n - 1, 3), *range(0, 120), *range(119, -1, -2)]
    for cursor in path:
        assert_same(state_at(run, history, cursor, memo=memo), state_at(run, history, cursor), cursor)


def test_jumps_and_every_event_of_a_short_stretch(folded):
    run, history = folded
    n = len(history.events)
    memo = CursorMemo(run, history)
    for cursor in (n // 2, 5, n - 3, 17, n // 3, n // 3 + 40, n // 3 - 25, 0, n - 2):
        assert_same(state_at(run, history, cursor, memo=memo), state_at(run, history, cursor), cursor)


def test_a_memo_for_another_read_of_the_run_is_not_used(folded, tmp_path):
    run, history = folded
    memo = CursorMemo(run, history)
    other = open_run(run.path)
    assert not memo.fits(other, history_of(other))
    cursor = len(history.events) // 2
    assert_same(state_at(run, history, cursor, memo=CursorMemo(other, history)), state_at(run, history, cursor), cursor)


def test_a_failure_report_with_the_cursors_memo_is_the_full_one(folded):
    """The failure under the cursor is explained from the memo (the runs as of it and
    before it): the same report as from the first event."""
    from prose_tui.history import failure_context

    run, history = folded
    memo = CursorMemo(run, history)
    failures = history.failures()
    assert len(failures) > 10
    for index in [*failures[-6:], *failures[:3]]:
        state_at(run, history, index, memo=memo)  # the cursor on it, as the explorer puts it
        assert failure_context(run, history, index, memo=memo) == failure_context(run, history, index), index


def test_a_memo_caught_up_with_a_growing_log_gives_the_full_computation(monkeypatch, tmp_path):
    """A log followed live while the cursor stands in its past: the VM appends, the run and
    its history grow in place, and the memo catches up with what was appended (``extend``;
    building a new one took 0.4-0.6 s of the UI thread per event at 100,000). As of any
    event, before or after the growth, it gives what ``state_at`` works out from the first
    event, also across a line written in two parts (read half, then replaced whole)."""
    from prose_tui.backends.filesystem.backend import FilesystemBackend
    from prose_tui.model import Part

    from app_helpers import FIXED_NOW, vm_appends

    monkeypatch.setattr(fs_history, "REPARSE_LINES", 0)
    run_dir = long_log(tmp_path, 60)
    state = run_dir / "state.md"
    lines = state.read_text(encoding="utf-8").splitlines(keepends=True)
    state.write_text("".join(lines[:300]), encoding="utf-8")
    backend = FilesystemBackend()
    run = backend.open(run_dir, now=FIXED_NOW)
    history = history_of(run)
    memo = CursorMemo(run, history)
    cursor = len(history.events) - 40
    assert_same(state_at(run, history, cursor, memo=memo), state_at(run, history, cursor), cursor)
    done = 300
    for size in (7, 1, 23, 60, 150, len(lines)):
        chunk = "".join(lines[done:done + size])
        done += size
        half = len(chunk) // 2 if size == 23 else len(chunk)  # a line read half-written, then whole
        for piece in (chunk[:half], chunk[half:]):
            if not piece:
                continue
            vm_appends(state, piece)
            assert backend.apply(run, {state: Part.STATE}, now=FIXED_NOW).run is run  # grown in place
            assert history_of(run) is history
            if memo.grew(run, history):
                memo.extend()
            else:  # a tail parsed again: the events it indexed are not all there
                memo = CursorMemo(run, history)
            assert memo.fits(run, history)
            n = len(history.events)
            for at in (cursor, max(0, cursor - 9), min(n - 2, cursor + 5), n - 2, cursor):
                assert_same(state_at(run, history, at, memo=memo), state_at(run, history, at), at)
    assert any(e.kind.name == "RUN_ERRORED" for e in history.events), "the log's end was appended"


def test_a_memo_is_not_caught_up_with_another_read_or_a_history_cut_back(folded):
    run, history = folded
    memo = CursorMemo(run, history)
    memo.ensure()
    other = open_run(run.path)
    assert not memo.grew(other, history_of(other))
    assert memo.grew(run, history)  # its own, the same length: nothing to catch up
    history.events.pop()  # a tail parsed again: the last event indexed is gone
    history.refs.pop()
    assert not memo.grew(run, history)


def test_a_failure_report_looks_back_through_its_statements_events_not_every_event(folded, monkeypatch):
    """The retries before a failure are found along the memo's chain of the statement's own
    events (its step's, or its trace line's): stepping onto a failure near the end of a
    100,000-event log looked at every event before it (0.14 s of the step)."""
    from prose_tui.history import failure_context
    from prose_tui.history.timeline import History

    run, history = folded
    memo = CursorMemo(run, history)
    index = history.failures()[-2]
    state_at(run, history, index, memo=memo)
    asked: list[int] = []
    real = History.same_statement

    def counted(self, a, b):
        asked.append(b)
        return real(self, a, b)

    monkeypatch.setattr(History, "same_statement", counted)
    ctx = failure_context(run, history, index, memo=memo)
    looked = len(asked)
    monkeypatch.setattr(History, "same_statement", real)
    assert ctx.retries == failure_context(run, history, index).retries
    assert looked <= 20, f"{looked} events looked at for the retries of one statement ({index} before it)"
