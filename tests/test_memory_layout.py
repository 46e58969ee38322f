"""What a long event log keeps per event (issue 9: <= 1 KB per event past the first 1,000).

A log history's refs are an array of trace lines (``LineRefs``), not an object per event,
and behave as the list of ``EventRef`` they replace; the parser makes one int object per
number where a line's number in the file, an event's ``seq`` and a trace line's number
are equal."""

from __future__ import annotations

import pytest

from prose_tui.backends.filesystem.eventlog_tail import EventLogParser
from prose_tui.history.refs import EventRef, LineRefs


def test_line_refs_behave_as_the_list_of_event_refs_they_replace():
    plain = [EventRef(trace_line=t) for t in (1, None, 3, 3, 5)]
    refs = LineRefs(r.trace_line for r in plain)
    assert refs == plain and list(refs) == plain and len(refs) == 5
    assert refs[1] == EventRef() and refs[-1].trace_line == 5 and refs[1:3] == plain[1:3]
    del refs[3:]
    del plain[3:]
    refs.append(EventRef(trace_line=9))
    plain.append(EventRef(trace_line=9))
    refs[0] = EventRef(trace_line=2)
    plain[0] = EventRef(trace_line=2)
    refs[:] = [*refs, EventRef()]
    plain[:] = [*plain, EventRef()]
    assert refs == plain
    assert [r.trace_line for r in refs] == [2, None, 3, 9, None]
    assert refs + [EventRef(trace_line=1)] == [*plain, EventRef(trace_line=1)]


@pytest.mark.parametrize("bad", [EventRef(trace_line=1, revision="ab" * 32), EventRef(path=None, trace_line=0)])
def test_line_refs_refuse_what_they_cannot_hold(bad, tmp_path):
    refs = LineRefs([1])
    with pytest.raises(ValueError):
        refs.append(bad)
    with pytest.raises(ValueError):
        refs.append(EventRef(path=tmp_path / "a.md"))
    assert refs == [EventRef(trace_line=1)]


def test_a_log_history_keeps_its_trace_lines_in_an_array(tmp_path):
    from prose_tui.backends.filesystem.backend import FilesystemBackend
    from prose_tui.history.stream import history_of

    run = tmp_path / ".prose" / "runs" / "20260301-100000-abcdef"
    run.mkdir(parents=True)
    lines = "".join(f"{i}→ step_{i} ✓\n" for i in range(1, 401))
    (run / "state.md").write_text(f"# run:20260301-100000-abcdef long.prose\n{lines}", encoding="utf-8")
    loaded = FilesystemBackend().open(run)
    history = history_of(loaded)
    assert isinstance(history.refs, LineRefs)
    assert [r.trace_line for r in history.refs] == [t.line for t in loaded.trace]


def test_the_parser_makes_one_int_per_number_for_seq_line_and_trace_line():
    parser = EventLogParser()
    parser.feed(["# run:20260301-100000-abcdef long.prose", *(f"{i}→ step_{i} ✓" for i in range(1, 2001))])
    log = parser.log
    numbers = [n for e in log.events for n in (e.seq, e.line)] + [t.line for t in log.trace]
    big = [n for n in numbers if n is not None and n > 256]  # smaller ints are Python's own shared ones
    assert len({id(n) for n in big}) == len(set(big)), "one object per value"
    assert [e.seq for e in log.events] == list(range(2000))
    assert [t.line for t in log.trace] == list(range(1, 2001))
    assert [e.line for e in log.events] == list(range(2, 2002))


def _loop_log(rounds: int) -> str:
    lines = ["# run:20260301-100000-abcdef loop.prose"]
    for r in range(rounds):
        lines += [f"3→ loop:{r + 1}/{rounds}", f"4→ researcher ✓ [10:{r // 60:02d}:{r % 60:02d}]",
                  f"5→ gate:review ✓ approved [10:{r // 60:02d}:{r % 60:02d}]"]
    return "\n".join(lines) + "\n"


def test_names_steps_and_statuses_written_on_many_lines_are_held_once(tmp_path):
    """A loop writes the same agent, step and status on every pass: one object each for the
    whole log, not one per line (a long log's memory is its distinct words, not its lines)."""
    from prose_tui.backends.filesystem.backend import FilesystemBackend

    run = tmp_path / ".prose" / "runs" / "20260301-100000-abcdef"
    run.mkdir(parents=True)
    (run / "state.md").write_text(_loop_log(50), encoding="utf-8")
    loaded = FilesystemBackend().open(run)
    researcher = [e for e in loaded.events if e.name == "researcher"]
    gates = [e for e in loaded.events if e.name == "gate:review"]
    assert len(researcher) == len(gates) == 50
    assert len({id(e.name) for e in researcher}) == 1
    assert len({id(e.step) for e in researcher}) == 1
    assert len({id(e.status) for e in gates}) == 1 and gates[0].status == "approved"
    assert len({id(t.step) for t in loaded.trace if t.step == "4"}) == 1
    # the same second on two lines: one datetime
    assert researcher[7].time == gates[7].time and researcher[7].time is gates[7].time


@pytest.mark.parametrize("chunk", [1, 40, 4096])
def test_a_log_parsed_a_chunk_at_a_time_is_the_log_parsed_whole(tmp_path, monkeypatch, chunk):
    """The first read decodes and parses a long log a chunk of whole lines at a time (its text
    is never one string); lines longer than a chunk, CRLF endings and a last line still being
    written come out as a whole-file parse gives them."""
    from prose_tui.backends.filesystem import eventlog_tail
    from prose_tui.backends.filesystem.eventlog import parse_event_log
    from prose_tui.backends.filesystem.eventlog_tail import EventLogTail

    monkeypatch.setattr(eventlog_tail, "FEED_CHUNK", chunk)
    text = _loop_log(30).replace("\n", "\r\n", 9) + "6→ " + "w" * 300 + " ✓\n7→ writer"
    path = tmp_path / "state.md"
    path.write_bytes(text.encode("utf-8"))
    tail = EventLogTail.start(path, "state.md")
    assert tail.feed_bytes(path.read_bytes(), path.stat(), changes=False) <= {len(tail.parser.log.trace) - 1}
    got, want = tail.parser.finish(), parse_event_log(text.replace("\r\n", "\n"))
    assert [(e.seq, e.kind, e.text, e.name, e.step, e.status, e.line, e.time) for e in got.events] == \
        [(e.seq, e.kind, e.text, e.name, e.step, e.status, e.line, e.time) for e in want.events]
    assert [(t.line, t.text, t.state, t.note, t.step) for t in got.trace] == \
        [(t.line, t.text, t.state, t.note, t.step) for t in want.trace]
    assert got.trace[-1].text == "7→ writer" and got.trace[-1].state == "executing"


def test_a_long_log_s_whole_text_is_never_decoded_in_one_call(tmp_path, monkeypatch):
    """A plain event log read in full is decoded by its tail a chunk at a time: no call
    decodes the whole file (at 100,000 events one such call held the interpreter 35 ms while
    a live change waited, and kept a second copy of the log as text), and the run is the one
    a whole-text parse gives."""
    from prose_tui.backends.common import text as text_module
    from prose_tui.backends.filesystem import eventlog_tail, folder
    from prose_tui.backends.filesystem.folder import load_run

    run_dir = tmp_path / ".prose" / "runs" / "20260301-100000-abcdef"
    run_dir.mkdir(parents=True)
    monkeypatch.setattr(eventlog_tail, "FEED_CHUNK", 1 << 16)
    log = _loop_log(3_000)
    (run_dir / "state.md").write_text(log, encoding="utf-8")
    size = len(log.encode("utf-8"))
    assert size > 2 * eventlog_tail.FEED_CHUNK
    decoded: list[int] = []

    def counting(data: bytes) -> str:
        decoded.append(len(data))
        return text_module.decode(data)

    monkeypatch.setattr(folder, "decode", counting)
    monkeypatch.setattr(eventlog_tail, "decode", counting)
    tailed = load_run(run_dir, tails={})
    assert decoded and max(decoded) <= eventlog_tail.FEED_CHUNK < size
    whole = load_run(run_dir)  # no tail kept: parsed from the whole text
    assert [(e.seq, e.kind, e.text, e.line, e.time) for e in tailed.events] == \
        [(e.seq, e.kind, e.text, e.line, e.time) for e in whole.events]
    assert [(t.line, t.text, t.state) for t in tailed.trace] == [(t.line, t.text, t.state) for t in whole.trace]
    assert tailed.format is whole.format and tailed.status is whole.status and len(tailed.trace) == 9_000
