"""A snapshot run changed while it is read in full is shown as changed, not as it was read.

Opening a run reads it whole on a worker thread (``Workspace.detail``) while the live
worker follows the run's summary. A VM that rewrites ``state.md`` (seeds/filesystem.md,
generation 1: rewritten whole, atomically) or writes a binding file meanwhile is seen by the
live worker, which applies it to the summary (or, a binding of a summary, drops it); the
whole read, taken before the write, then took the summary's place and the screen showed
the run as it was until the VM wrote again (a run that ended then never showed its end).

Each test makes the whole read wait, once parsed, until a second process (the VM) wrote
and the live worker applied that write; then lets it be swapped in, and waits for the
screen to show the write.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

from app_helpers import make_app, settled, wait_until, watched

from prose_tui.model import RunStatus
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.trace_view import TraceView

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import huge_run  # noqa: E402

SHOWN_FIRST = "20260301-090000-a1a1a1"  # the newest run: shown at start
OPENED = "20260301-080000-b2b2b2"  # opened from the run list: read in full while the VM writes

# The VM's writes, made by a second process: ``state.md`` written whole beside itself, then
# renamed over it (a snapshot's atomic rewrite); a binding file written in place.
_WRITE = ("import os, sys; p, text, atomic = sys.argv[1], sys.argv[2], sys.argv[3] == 'atomic'\n"
          "t = p + '.tmp' if atomic else p\n"
          "with open(t, 'w', encoding='utf-8') as f: f.write(text)\n"
          "if atomic: os.replace(t, p)")


def _vm_writes(path: Path, text: str) -> None:
    how = "atomic" if path.name == "state.md" else "in place"
    subprocess.run([sys.executable, "-c", _WRITE, str(path), text, how], check=True)


def _runs(tmp_path: Path) -> Path:
    """Two snapshot runs (a few statements and bindings); the older one's folder."""
    huge_run(tmp_path, bindings=6, trace_lines=60, agents=0, segments=0, run_id=SHOWN_FIRST)
    return huge_run(tmp_path, bindings=6, trace_lines=60, agents=0, segments=0, run_id=OPENED)


class _WriteDuringRead:
    """Makes the whole read of ``run_dir`` wait, once parsed and before it is handed over,
    until the VM (a second process) wrote ``text`` to ``path`` and the live worker applied
    a batch naming that file; only the first such read. ``done`` is set once the read went
    on, ``applied`` once the worker applied the write."""

    def __init__(self, monkeypatch, app, run_dir: Path, path: Path, text: str) -> None:
        from prose_tui.backends.filesystem import backend as backend_module

        self.done = threading.Event()
        self.applied = threading.Event()
        self.written = threading.Event()
        workspace = app.workspace
        apply = workspace.apply

        def applied(paths):
            result = apply(paths)
            if self.written.is_set() and path in paths:
                self.applied.set()
            return result

        monkeypatch.setattr(workspace, "apply", applied)
        load = backend_module.load_run

        def load_then_write(at, *args, **kwargs):
            run = load(at, *args, **kwargs)
            if at == run_dir and not kwargs.get("summary") and not self.done.is_set():
                try:
                    # The watches in place (a first screen at start-up starts them as the read goes on).
                    app.explorer.feed.live.pipeline.installed.wait(60)
                    self.written.set()  # (before: the worker may apply the write before the writer ends)
                    _vm_writes(path, text)
                    self.applied.wait(60)  # a bound for a failing run only: the worker applies it
                finally:
                    self.done.set()
            return run

        monkeypatch.setattr(backend_module, "load_run", load_then_write)


def _tree_labels(tree: BindingTree) -> list[str]:
    labels, nodes = [], [tree.root]
    while nodes:
        node = nodes.pop()
        labels.append(node.label.plain)
        nodes.extend(node.children)
    return labels


@asynccontextmanager
async def _open_while_writing(tmp_path, monkeypatch, run_dir: Path, path: Path, text: str):
    """The explorer watching, the run at ``run_dir`` opened from the list and read in full
    while the VM writes ``text`` to ``path``; yields ``(app, pilot)`` once the read went on
    and what it read is shown."""
    async with watched(tmp_path) as (app, pilot):
        assert app.explorer.model.run.path.name == SHOWN_FIRST
        hook = _WriteDuringRead(monkeypatch, app, run_dir, path, text)
        app.explorer.open_run_at(run_dir)
        await wait_until(pilot, hook.done.is_set, what="the whole read of the run opened")
        await settled(pilot, run_dir)
        assert hook.applied.is_set(), "the live worker did not apply the write made during the read"
        yield app, pilot


def _rewritten(run_dir: Path, *, ended: bool = False) -> str:
    """``state.md`` of ``run_dir`` one step on: the executing statement completes and a
    marker statement executes next; ``ended``: every statement completes and the header
    says ``status: completed`` (the run's end, in a snapshot)."""
    lines = (run_dir / "state.md").read_text(encoding="utf-8").splitlines()
    executing = next(i for i, ln in enumerate(lines) if "<-- EXECUTING" in ln)
    lines[executing] = lines[executing].replace("# <-- EXECUTING", "# (complete)")
    nxt = next(i for i in range(executing + 1, len(lines)) if lines[i].startswith("let "))
    marker = "# (complete)" if ended else "# <-- EXECUTING"
    lines[nxt] = "let written_meanwhile = session: worker_000".ljust(70) + " " + marker
    if ended:
        lines = [ln.replace("# [...next...]", "# (complete)") for ln in lines]
        lines.insert(lines.index("program: huge.prose") + 1, "status: completed")
    return "\n".join(lines) + "\n"


async def test_a_state_rewritten_during_the_whole_read_is_shown(tmp_path, monkeypatch) -> None:
    run_dir = _runs(tmp_path)
    text = _rewritten(run_dir)
    async with _open_while_writing(tmp_path, monkeypatch, run_dir, run_dir / "state.md", text) as (app, pilot):
        explorer = app.explorer
        trace = explorer.query_one(TraceView)
        await wait_until(pilot, lambda: any("written_meanwhile" in line.text for line in trace.lines),
                         what="the rewrite made during the read on screen")
        assert explorer.model.run is app.workspace.runs[run_dir]
        assert explorer.model.run.executing is not None
        assert "written_meanwhile" in explorer.model.run.executing.text


async def test_a_binding_written_during_the_whole_read_is_shown(tmp_path, monkeypatch) -> None:
    run_dir = _runs(tmp_path)
    binding = run_dir / "bindings" / "written_meanwhile.md"
    text = ("# written_meanwhile\n\nkind: let\n\nsource:\n```prose\nlet written_meanwhile = session: worker\n```\n\n"
            "---\n\nThe value the VM wrote while the run was read.\n")
    async with _open_while_writing(tmp_path, monkeypatch, run_dir, binding, text) as (app, pilot):
        explorer = app.explorer
        tree = explorer.query_one(BindingTree)
        await wait_until(pilot, lambda: any(b.path == binding for b in explorer.model.run.bindings),
                         what="the binding written during the read in the run shown")
        await settled(pilot, run_dir)
        assert any(label.startswith("written_meanwhile") for label in _tree_labels(tree))


async def test_a_run_that_ended_during_the_whole_read_shows_its_end(tmp_path, monkeypatch) -> None:
    run_dir = _runs(tmp_path)
    text = _rewritten(run_dir, ended=True)
    async with _open_while_writing(tmp_path, monkeypatch, run_dir, run_dir / "state.md", text) as (app, pilot):
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.model.run.status is RunStatus.COMPLETED,
                         what="the run's end, written during the read, on screen")
        await settled(pilot, run_dir)
        row = next(r for r in explorer.run_list.runs if r.path == run_dir)
        assert row.status is RunStatus.COMPLETED


async def test_a_change_of_the_replaced_run_reaching_the_screen_after_the_whole_read_does_not_replace_it(
        tmp_path, monkeypatch) -> None:
    # The live worker applied the rewrite to the summary and hands that delta to the UI; on a
    # loaded machine it gets there after the whole read (which has the rewrite) was shown.
    run_dir = _runs(tmp_path)
    text = _rewritten(run_dir)
    async with watched(tmp_path) as (app, pilot):
        explorer, workspace = app.explorer, app.workspace
        pipeline = explorer.feed.live.pipeline
        release, emitted = threading.Event(), threading.Event()
        emit = pipeline._emit

        def late_emit(delta):
            if delta.run.path == run_dir and not emitted.is_set():
                release.wait(60)  # a bound for a failing run only
                emit(delta)
                emitted.set()
            else:
                emit(delta)

        monkeypatch.setattr(pipeline, "_emit", late_emit)
        hook = _WriteDuringRead(monkeypatch, app, run_dir, run_dir / "state.md", text)
        explorer.open_run_at(run_dir)
        try:
            await wait_until(pilot, hook.done.is_set, what="the whole read of the run opened")
            await wait_until(pilot, lambda: explorer.model.run is workspace.runs.get(run_dir)
                             and explorer.model.is_full_read(explorer.model.run), what="the whole read shown")
            full = explorer.model.run
            assert full.executing is not None and "written_meanwhile" in full.executing.text
        finally:
            release.set()
        await wait_until(pilot, emitted.is_set, what="the summary's change handed to the UI")
        await settled(pilot, run_dir)
        shown = explorer.model.run
        assert (len(shown.bindings), [b.bytes for b in shown.bindings]) == (6, [b.bytes for b in full.bindings])
        assert shown is workspace.runs[run_dir]


async def test_a_binding_written_during_the_start_up_read_behind_a_first_screen_is_shown(tmp_path, monkeypatch) -> None:
    # A snapshot run with many binding files opens on a first screen (its state.md alone),
    # followed live while the start-up read reads every binding file.
    from prose_tui.backends.filesystem.folder import FIRST_SCREEN_FILES

    run_dir = huge_run(tmp_path, bindings=FIRST_SCREEN_FILES + 20, trace_lines=60, agents=0, segments=0,
                       run_id=OPENED)
    binding = run_dir / "bindings" / "written_meanwhile.md"
    text = ("# written_meanwhile\n\nkind: let\n\nsource:\n```prose\nlet written_meanwhile = session: worker\n```\n\n"
            "---\n\nThe value the VM wrote while the run was read.\n")
    app = make_app(tmp_path, watch=True)
    hook = _WriteDuringRead(monkeypatch, app, run_dir, binding, text)
    first_screens: list[object] = []
    first_screen = app.workspace.first_screen

    def recorded(path):
        first_screens.append(first_screen(path))
        return first_screens[-1]

    monkeypatch.setattr(app.workspace, "first_screen", recorded)
    async with app.run_test(size=(200, 50)) as pilot:
        explorer = app.explorer
        await wait_until(pilot, hook.done.is_set, what="the start-up read of the run")
        await settled(pilot, run_dir)
        assert [run is not None for run in first_screens] == [True]  # followed live during the read
        await wait_until(pilot, lambda: any(b.path == binding for b in explorer.model.run.bindings),
                         what="the binding written during the read in the run shown")
        assert explorer.model.run is app.workspace.runs[run_dir]  # (the tree pages a run this size)



async def test_a_snapshot_unchanged_during_its_whole_read_is_not_read_again(tmp_path, monkeypatch) -> None:
    # Its ``state.md`` was read again after every whole read of a snapshot opened from the
    # list (a second parse, and a new run object in place of the one its reader prepared for
    # showing); now only when the live worker saw the run change during the read.
    from prose_tui.backends.filesystem import live

    huge_run(tmp_path, bindings=6, trace_lines=60, agents=0, segments=0, run_id=SHOWN_FIRST)
    run_dir = huge_run(tmp_path, bindings=6, trace_lines=2_000, agents=0, segments=0, run_id=OPENED)
    again: list[Path] = []
    reload_state = live.reload_state

    def recorded(run, **kwargs):
        again.append(run.path)
        return reload_state(run, **kwargs)

    async with watched(tmp_path) as (app, pilot):
        explorer = app.explorer
        monkeypatch.setattr(live, "reload_state", recorded)
        read: list[object] = []
        app.workspace.on_full_read = lambda run, prepare=app.workspace.on_full_read: (read.append(run), prepare(run))
        explorer.open_run_at(run_dir)
        await settled(pilot, run_dir)
        assert explorer.model.run is app.workspace.runs[run_dir] is read[0]
    assert again == []
