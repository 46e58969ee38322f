"""The journal of watched snapshot runs and the headless recorder (issue 3).

The demo VM writes a seed-format run step by step (seeds/filesystem.md); the journal taken
while it runs must replay to exactly what a user saw live, and must never touch the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from prose_tui.backends import open_run
from prose_tui.demo.simulator import DemoVM
from prose_tui.history import Journal, failure_context, history_of, state_at
from prose_tui.history.journal import run_files
from prose_tui.live.record import record

START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


class Clock:
    """A fixed clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def live_view(run) -> tuple:
    return (
        [(t.text, t.state) for t in run.trace],
        run.executing.line if run.executing else None,
        [(f.execution_id, f.block, f.depth, f.status) for f in run.call_stack],
        sorted((b.name, b.execution_id, b.exists) for b in run.bindings),
    )


def journal_demo(tmp_path: Path, steps: int | None = None):
    """Run the demo VM, journaling after each step; returns (vm, journal, live views, hashes ok)."""
    clock = Clock()
    vm = DemoVM(tmp_path / "project", clock=clock)
    journal = Journal(tmp_path / "state")
    live: list[tuple[str, tuple]] = []
    untouched = True
    for n, step in enumerate(vm.steps()):
        if steps is not None and n >= steps:
            continue  # the VM goes on; nobody watches
        before = tree_hash(tmp_path / "project")
        journal.record(vm.run_dir, set(step.paths), clock())
        untouched &= tree_hash(tmp_path / "project") == before
        sha = hashlib.sha256((vm.run_dir / "state.md").read_bytes()).hexdigest()
        live.append((sha, live_view(open_run(vm.run_dir))))
    return vm, journal, live, untouched


def test_demo_journal_replays_exactly_what_was_seen_live(tmp_path):
    vm, journal, live, untouched = journal_demo(tmp_path)
    assert untouched, "journaling changed the run folder"
    assert not (journal.root.resolve()).is_relative_to((tmp_path / "project").resolve())
    run = open_run(vm.run_dir)
    history = history_of(run, journal=journal)
    assert history.origin == "journal" and "journal" in history.note
    cursors = history.revision_cursors()
    assert [sha for sha, _ in cursors] == [sha for sha, _ in live]
    assert len(live) == 31
    for (sha, seen), (_, cursor) in zip(live, cursors):
        assert live_view(state_at(run, history, cursor, journal=journal)) == seen, cursor
    # the views move: the stack grows three deep and unwinds, bindings accumulate
    depths = [len(seen[2]) for _, seen in live]
    assert max(depths) == 3 and depths[-1] == 0
    assert len(live[0][1][3]) == 0 < len(live[-1][1][3])
    assert [e.seq for e in history.events] == list(range(len(history.events)))


def test_journal_events_say_what_happened(tmp_path):
    vm, journal, _, _ = journal_demo(tmp_path)
    run = open_run(vm.run_dir)
    history = history_of(run, journal=journal)
    kinds = [e.kind.value for e in history.events]
    pushed = [e.execution_id for e in history.events if e.kind.value == "frame_pushed"]
    popped = [e.execution_id for e in history.events if e.kind.value == "frame_popped"]
    assert pushed == [1, 2, 3] and popped == [3, 2, 1]
    assert kinds.count("parallel_started") == 1 and kinds.count("parallel_joined") == 1
    assert kinds.index("parallel_started") < kinds.index("parallel_joined")
    assert [history.events[i].status for i in history.retries()] == ["2/3"]
    assert history.failures() == []
    assert kinds[-1] == "run_ended"
    segments = [e.status for e in history.events if e.kind.value == "agent_segment" and e.name == "captain"]
    assert segments == ["001", "002", "003"]
    # bindings are the same objects the live run holds, so the viewer can read them
    cursor = history.revision_cursors()[10][1]
    at = state_at(run, history, cursor, journal=journal)
    live_objects = {id(b) for b in run.bindings}
    assert at.bindings and all(id(b) in live_objects for b in at.bindings if b.exists)
    captain = next(a for a in at.agents if a.name == "captain")
    assert [s.number for s in captain.segments] == [1]


def test_default_journal_lives_in_the_user_state_folder(tmp_path, _isolated_user_dirs):
    vm = DemoVM(tmp_path / "project", clock=Clock())
    journal = Journal()
    steps = vm.steps()
    for _ in range(4):
        journal.record(vm.run_dir, set(next(steps).paths), START)
    assert journal.root.is_relative_to(_isolated_user_dirs)
    assert journal.folder(vm.run_dir).parent.name == "journals"
    history = history_of(open_run(vm.run_dir))  # no journal given: the default one
    assert history.origin == "journal"


def test_identical_revisions_and_unchanged_files_are_not_stored_twice(tmp_path):
    vm = DemoVM(tmp_path / "project", clock=Clock())
    journal = Journal(tmp_path / "state")
    steps = vm.steps()
    for _ in range(3):
        journal.record(vm.run_dir, set(next(steps).paths), START)
    folder = journal.folder(vm.run_dir)
    pack = (folder / "revisions.pack").read_bytes()
    assert [e.stored is not None for e in journal.entries(vm.run_dir) if e.kind == "state"] == [True] * 3
    everything = run_files(vm.run_dir)
    assert journal.record(vm.run_dir, everything, START) == 0
    state = vm.run_dir / "state.md"
    state.write_bytes(state.read_bytes())  # rewritten, same text
    assert journal.record(vm.run_dir, {state}, START) == 0
    # a fresh Journal (another process) reads the index and agrees nothing changed
    assert Journal(tmp_path / "state").record(vm.run_dir, everything, START) == 0
    assert (folder / "revisions.pack").read_bytes() == pack
    binding = vm.run_dir / "bindings" / "repo.md"
    binding.write_text(binding.read_text() + "more\n")
    assert journal.record(vm.run_dir, {binding}, START) == 1
    binding.unlink()
    assert journal.record(vm.run_dir, {binding}, START) == 1
    assert [e.kind for e in journal.entries(vm.run_dir)][-2:] == ["binding", "removed"]


def test_journal_keeps_no_more_texts_past_its_cap(tmp_path, monkeypatch):
    import prose_tui.history.journal as journal_module

    vm = DemoVM(tmp_path / "project", clock=Clock())
    journal = Journal(tmp_path / "state")
    steps = vm.steps()
    for _ in range(2):
        journal.record(vm.run_dir, set(next(steps).paths), START)
    pack = journal.folder(vm.run_dir) / "revisions.pack"
    kept = pack.stat().st_size
    monkeypatch.setattr(journal_module, "MAX_JOURNAL_BYTES", kept + 100)  # less than a whole revision more
    for _ in range(3):
        journal.record(vm.run_dir, set(next(steps).paths), START)
    states = [e for e in journal.entries(vm.run_dir) if e.kind == "state"]
    assert len(states) == 5  # every revision is still indexed...
    assert [e.text is not None for e in states] == [True, True, False, False, False]  # ...texts up to the cap
    assert pack.stat().st_size == kept
    run = open_run(vm.run_dir)
    history = history_of(run, journal=journal)
    assert history.origin == "journal"
    assert live_view(state_at(run, history, len(history.events) - 1, journal=journal)) == live_view(run)


def test_half_written_last_line_is_skipped(tmp_path):
    vm = DemoVM(tmp_path / "project", clock=Clock())
    journal = Journal(tmp_path / "state")
    steps = vm.steps()
    journal.record(vm.run_dir, set(next(steps).paths), START)
    index = journal.folder(vm.run_dir) / "index.jsonl"
    good = journal.entries(vm.run_dir)
    with open(index, "ab") as fh:
        fh.write(b'{"t": "2026-03-01T09:00:05+00:00", "k": "bind')
    assert [(e.kind, e.path) for e in journal.entries(vm.run_dir)] == [(e.kind, e.path) for e in good]
    added = journal.record(vm.run_dir, set(next(steps).paths), START + timedelta(seconds=9))
    assert added == 2  # the repo binding and the new state.md revision
    after = journal.entries(vm.run_dir)
    assert len(after) == len(good) + 2
    assert after[-1].kind == "state" and after[-1].text == (vm.run_dir / "state.md").read_text(encoding="utf-8")
    assert all(json.loads(line) for line in index.read_text().splitlines()[-2:])


def test_no_journal_for_unknown_runs_and_never_inside_a_run(tmp_path):
    vm = DemoVM(tmp_path / "project", clock=Clock())
    next(vm.steps())
    journal = Journal(tmp_path / "state")
    assert not journal.has(vm.run_dir) and journal.entries(vm.run_dir) == []
    assert journal.revision_text(vm.run_dir, "0" * 64) is None
    before = tree_hash(vm.run_dir)
    with pytest.raises(ValueError, match="inside the run"):
        Journal(vm.run_dir / ".journal").record(vm.run_dir, set(), START)
    assert tree_hash(vm.run_dir) == before


def test_event_log_state_is_not_journaled(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-c0ffee"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text("# run:20260301-090000-c0ffee x.prose\n1→ a ✓\n", encoding="utf-8")
    (run_dir / "bindings" / "a.md").write_text("# a\nkind: let\n---\nA\n", encoding="utf-8")
    journal = Journal(tmp_path / "state")
    assert journal.record(run_dir, {run_dir / "state.md"}, START) == 1  # the binding only
    assert [e.kind for e in journal.entries(run_dir)] == ["binding"]
    assert history_of(open_run(run_dir), journal=journal).origin == "log"


def test_a_growing_event_log_stays_unjournaled_and_a_snapshot_put_in_its_place_is_kept(tmp_path):
    """The journal remembers that ``state.md`` is an event log while it only grows (it is not
    read again per appended event); a snapshot that replaces it is journaled with its text."""
    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-c0ffee"
    run_dir.mkdir(parents=True)
    state = run_dir / "state.md"
    state.write_text("# run:20260301-090000-c0ffee x.prose\n1→ a ✓\n", encoding="utf-8")
    journal = Journal(tmp_path / "state")
    assert journal.record(run_dir, {state}, START) == 0
    with open(state, "a", encoding="utf-8") as fh:
        fh.write("2→ b ✓\n")
    assert journal.record(run_dir, {state}, START + timedelta(seconds=1)) == 0
    snapshot = "## Execution Trace\n```prose\nsession \"a\"  # <-- EXECUTING\n```\n"
    tmp = run_dir / ".state.tmp"
    tmp.write_text(snapshot, encoding="utf-8")
    os.replace(tmp, state)
    assert journal.record(run_dir, {state}, START + timedelta(seconds=2)) == 1
    [entry] = journal.entries(run_dir)
    assert entry.kind == "state" and entry.text == snapshot


def test_journal_that_stopped_early_still_ends_live(tmp_path):
    vm, journal, live, _ = journal_demo(tmp_path, steps=5)
    run = open_run(vm.run_dir)
    history = history_of(run, journal=journal)
    assert history.origin == "journal" and "after the journal ends" in history.note
    cursors = history.revision_cursors()
    assert len(cursors) == 6  # five seen, and the file as it is now
    for (sha, seen), (_, cursor) in zip(live, cursors):
        assert live_view(state_at(run, history, cursor, journal=journal)) == seen
    assert live_view(state_at(run, history, len(history.events) - 1, journal=journal)) == live_view(run)


def test_imports_get_their_own_journal(tmp_path):
    vm, journal, _, _ = journal_demo(tmp_path)
    child = open_run(vm.run_dir).imports[0]
    assert journal.has(child.path)
    history = history_of(child, journal=journal)
    assert history.origin == "journal"
    assert history.events[-1].kind.value == "run_ended"


def test_what_a_record_keeps_of_the_paths_it_is_given(tmp_path):
    """A run's first record takes in its files; later ones keep only the run's own binding,
    segment and state.md paths that changed, also when named through a symlink to the run,
    and send imports to their own journal. Dot files, other files, the run folder itself and
    paths outside the run are left out."""
    run = tmp_path / "run"
    for folder in ("bindings/sub", "agents/captain", "imports/lib/bindings"):
        (run / folder).mkdir(parents=True)
    files = {"state.md": "let a = session \"x\"\n", "bindings/a.md": "1\n", "bindings/gone.md": "2\n",
             "bindings/sub/deep.json": "{}\n", "bindings/raw.bin": "3\n", "bindings/.draft.md": "4\n",
             "agents/captain/captain-001.md": "s\n", "agents/captain/memory.md": "m\n",
             "imports/lib/state.md": "let q = 1\n", "imports/lib/bindings/x.md": "x\n", "notes.txt": "n\n"}
    for rel, text in files.items():
        (run / rel).write_text(text, encoding="utf-8")
    (tmp_path / "link").symlink_to(run)
    journal = Journal(tmp_path / "state")

    def rows(run_dir: Path) -> list[tuple[str, str]]:
        return [(e.kind, e.path.relative_to(run_dir).as_posix()) for e in journal.entries(run_dir)]

    journal.record(run, set(), START)
    assert sorted(rows(run)) == [("binding", "bindings/a.md"), ("binding", "bindings/gone.md"),
                                 ("binding", "bindings/sub/deep.json"), ("segment", "agents/captain/captain-001.md"),
                                 ("state", "state.md")]
    assert rows(run)[-1] == ("state", "state.md")  # the state revision last, as the VM writes it
    assert rows(run / "imports" / "lib") == [("binding", "bindings/x.md"), ("state", "state.md")]

    (run / "bindings" / "a.md").write_text("1 and more\n", encoding="utf-8")
    (run / "bindings" / "gone.md").unlink()
    (run / "agents" / "captain" / "captain-002.md").write_text("s2\n", encoding="utf-8")
    (run / "imports" / "lib" / "bindings" / "x.md").write_text("x, later\n", encoding="utf-8")
    (run / "bindings" / ".draft.md").write_text("5\n", encoding="utf-8")
    changed = {tmp_path / "link" / "bindings" / "a.md", run / "bindings" / "gone.md",
               run / "agents" / "captain" / "captain-002.md", run / "imports" / "lib" / "bindings" / "x.md",
               run / "bindings" / ".draft.md", run / "bindings" / "raw.bin", run / "notes.txt", run,
               run / "bindings", tmp_path / "elsewhere.md", run / "agents" / "captain" / "memory.md"}
    added = journal.record(run, changed, START + timedelta(seconds=1))
    assert added == 4
    assert sorted(rows(run)[5:]) == [("binding", "bindings/a.md"), ("removed", "bindings/gone.md"),
                                     ("segment", "agents/captain/captain-002.md")]
    assert rows(run / "imports" / "lib")[-1] == ("binding", "bindings/x.md")


# --- the headless recorder --------------------------------------------------------------------


def test_record_thread_journals_a_running_demo_and_stops(tmp_path):
    project = tmp_path / "project"
    (project / ".prose" / "runs").mkdir(parents=True)
    journal = Journal(tmp_path / "state")
    stop, watching, changed = threading.Event(), threading.Event(), threading.Event()
    seen: list[str] = []
    result: list[int] = []

    def on_change(_run_dir, entries) -> None:
        seen.extend(e.kind for e in entries)
        changed.set()

    def journaled(sha: str) -> bool:
        return sha in {e.sha256 for e in journal.entries(vm.run_dir) if e.kind == "state"}

    def until_journaled(sha: str, what: str) -> None:
        # Event-driven: each batch the recorder journals wakes this up; the timeout only ends a hang.
        while True:
            changed.clear()
            if journaled(sha):
                return
            assert changed.wait(60), f"the recorder never journaled {what}"

    worker = threading.Thread(target=lambda: result.append(record(
        project, stop=stop, journal=journal, on_change=on_change, on_watching=watching.set)))
    worker.start()
    try:
        assert watching.wait(60), "the recorder's watcher never started"
        vm = DemoVM(project, clock=Clock())
        steps = vm.steps()
        revisions = []
        for step in range(6):
            next(steps)
            sha = hashlib.sha256((vm.run_dir / "state.md").read_bytes()).hexdigest()
            until_journaled(sha, f"state.md after step {step + 1}")
            revisions.append(sha)
    finally:
        stop.set()
        worker.join(60)
    assert not worker.is_alive()
    entries = journal.entries(vm.run_dir)
    states = [e.sha256 for e in entries if e.kind == "state"]
    assert set(revisions) <= set(states) and states[-1] == revisions[-1]  # every revision seen, the last last
    assert result and result[0] >= len(entries) > 0
    assert {"state", "binding"} <= set(seen)
    assert history_of(open_run(vm.run_dir), journal=journal).origin == "journal"


RECORDER = ("import sys; from pathlib import Path; from prose_tui.live.record import main_record; "
            "sys.exit(main_record(Path(sys.argv[1])))")


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_main_record_stops_cleanly_on_signals(tmp_path, signame):
    project = tmp_path / "project"
    vm = DemoVM(project, clock=Clock())
    steps = vm.steps()
    next(steps), next(steps)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-c", RECORDER, str(project)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(300, proc.kill)  # a hung recorder fails the test instead of the run (not a timing)
    watchdog.start()
    try:
        first = proc.stdout.readline()
        assert first.startswith("recording 1 run below"), first
        # what the run holds already: the repo binding, then the state.md revision
        lines = [proc.stdout.readline() for _ in range(2)]
        assert [line.split(": ", 1)[0] for line in lines] == [vm.run_id, vm.run_id], lines
        assert "binding bindings/repo.md" in lines[0] and "state.md revision" in lines[1]
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=300)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("stopped: ")
    assert "Traceback" not in err


def test_main_record_missing_path(tmp_path):
    proc = subprocess.run([sys.executable, "-c", RECORDER, str(tmp_path / "nowhere")], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"prose-tui record: {tmp_path / 'nowhere'}: no such file or folder"]


SNAPSHOT = """# Execution State

run: 20260301-110000-f00d00
program: publish.prose
{status}
## Execution Trace

```prose
let site = session "Build the site"              # --> bindings/site.md
session "Publish the site"                      # {mark}
  context: site
```
{error}"""


def test_journaled_failure_has_its_retries_and_context(tmp_path):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-110000-f00d00"
    (run_dir / "bindings").mkdir(parents=True)
    journal = Journal(tmp_path / "state")
    state = run_dir / "state.md"
    clock = Clock()
    (run_dir / "bindings" / "site.md").write_text("# site\nkind: let\n---\nhtml\n", encoding="utf-8")
    for mark, status, error in [
        ("<-- EXECUTING", "", ""),
        ("<-- RETRYING (attempt 2/3)", "", ""),
        ("<-- RETRYING (attempt 3/3)", "", ""),
        ("<-- RETRYING (attempt 3/3)", "status: failed\n", "\n## Error\n\n403 Forbidden: credentials expired\n"),
    ]:
        state.write_text(SNAPSHOT.format(mark=mark, status=status, error=error), encoding="utf-8")
        journal.record(run_dir, {state}, clock())
    run = open_run(run_dir)
    history = history_of(run, journal=journal)
    assert history.origin == "journal"
    assert [history.events[i].status for i in history.retries()] == ["2/3", "3/3"]
    assert history.failures() == [len(history.events) - 1]
    ctx = failure_context(run, history, history.first_failure())
    assert ctx.error == "403 Forbidden: credentials expired"
    assert ctx.statement is not None and ctx.statement.text.strip() == 'session "Publish the site"'
    assert [e.status for e in ctx.retries] == ["2/3", "3/3"]
    assert [b.name for b in ctx.context_bindings] == ["site"]
    # as of the first retry the run was still running, at attempt 2 of 3
    at = state_at(run, history, history.retries()[0], journal=journal)
    assert at.status.value == "running" and at.executing is not None and at.executing.attempt == 2
