"""The backend protocol (issue 30): a backend declares what it does, the registry is explicit
and order-independent, third-party backends come in through an entry point, and a change is
classified once and its state.md read once on its way through the live pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from prose_tui.backends import registry
from prose_tui.backends.filesystem.backend import FilesystemBackend
from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.history import Journal
from prose_tui.live.pipeline import LivePipeline, journal_sink
from prose_tui.live.workspace import Workspace
from prose_tui.model import Backend, Binding, Delta, Part, Run, RunFormat, RunStatus

from snapshot_vm import text as snapshot_text
from test_live_pipeline import WAIT, Collector, _pipeline

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

# A third-party format, as a package would ship it: a file ending in ".tiny" whose first
# line is the run id. It implements the four required methods and nothing else.
TINY = '''
from pathlib import Path
from typing import ClassVar

from prose_tui.backends.protocol import RunBackend, Value
from prose_tui.model import Backend, Delta, Run, RunFormat


class TinyBackend(RunBackend):
    kind: ClassVar[Backend] = Backend("tiny")  # its own kind: the model's enums are open
    name: ClassVar[str] = "tiny"
    priority: ClassVar[int] = 5

    def claims(self, path):
        return path.is_file() and path.suffix == ".tiny"

    def open(self, path, *, now=None, stale_after=1800.0, observed=None, summary=False):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        return Run(id=first, path=path, backend=self.kind, format=RunFormat("tiny-log"), program="tiny.prose")

    def apply(self, run, paths, *, now=None, stale_after=1800.0, observed=None):
        return Delta.whole(self.open(run.path), set(paths))

    def read_value(self, run, binding):
        return Value(text="")


class HalfBackend(RunBackend):  # claims, but cannot open: not a backend
    name = "half"

    def claims(self, path):
        return True
'''


def _cli(args: list[str], *, extra_path: list[Path] = (), stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, extra_path), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "prose_tui", *args], capture_output=True, text=True, env=env,
                          input=stdin, timeout=WAIT, cwd=ROOT)


def _plugin(tmp_path: Path, entry: str = "tiny = tinyfmt:TinyBackend") -> Path:
    """A package installed the way pip leaves it: a module and a dist-info with an entry point."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tinyfmt.py").write_text(TINY, encoding="utf-8")
    dist = site / "tinyfmt-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyfmt\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[prose_tui.backends]\n{entry}\n", encoding="utf-8")
    return site


def test_a_backend_installed_with_an_entry_point_reads_its_runs(tmp_path):
    site = _plugin(tmp_path)
    run = tmp_path / "one.tiny"
    run.write_text("tiny-run-7\n", encoding="utf-8")
    shown = _cli(["show", str(run), "--json"], extra_path=[site])
    assert shown.returncode == 0, shown.stderr
    run_json = json.loads(shown.stdout)
    assert (run_json["id"], run_json["backend"], run_json["format"]) == ("tiny-run-7", "tiny", "tiny-log")
    without = _cli(["show", str(run), "--json"])  # the same file, the package not installed
    assert without.returncode == 1 and "not a run state file" in without.stderr


def test_a_broken_entry_point_is_named_and_the_built_ins_still_read(tmp_path):
    site = _plugin(tmp_path, "broken = tinyfmt:NoSuchBackend\nhalf = tinyfmt:HalfBackend")
    code = ("from prose_tui.backends import registry; "
            "print([b.name for b in registry.backends()]); print(registry.load_errors())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT,
                         env=dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{ROOT}"))
    assert out.returncode == 0, out.stderr
    names, errors = out.stdout.splitlines()
    assert names == "['sqlite', 'reactor', 'receipt-ledger', 'filesystem', 'narration', 'postgres']"
    assert "broken" in errors and "AttributeError" in errors
    assert "half" in errors and "abstract" in errors  # the four required methods are required


def test_registering_a_backend_before_the_first_lookup_keeps_the_built_ins(tmp_path):
    """A fresh process registers first and looks up after: the built-ins are still there,
    and the order is the declared priorities', not the order of registration."""
    (tmp_path / "tinyfmt.py").write_text(TINY, encoding="utf-8")
    code = textwrap.dedent("""
        from tinyfmt import TinyBackend
        from prose_tui.backends import registry

        class Late(TinyBackend):
            name = "late"
            priority = 99

        registry.register(Late())
        registry.register(TinyBackend())
        print([b.name for b in registry.backends()])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT,
                         env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['tiny', 'sqlite', 'reactor', 'receipt-ledger', 'filesystem', 'narration', 'postgres', 'late']"


def test_register_refuses_what_is_not_a_backend():
    with pytest.raises(TypeError):
        registry.register(object())  # type: ignore[arg-type]


class _Bare(RunBackend):
    """Only what every backend must have: the optional capabilities are the declared defaults."""

    kind = Backend.NARRATION
    name = "bare"

    def claims(self, path: Path) -> bool:
        return False

    def open(self, path, **kwargs) -> Run:  # type: ignore[override]
        return Run(id=path.name, path=path)

    def apply(self, run, paths, **kwargs) -> Delta:  # type: ignore[override]
        return Delta(run, set(paths))

    def read_value(self, run: Run, binding: Binding) -> Value:
        return Value(text="")


def test_a_backend_without_optional_capabilities_gets_the_declared_defaults(tmp_path):
    bare = _Bare()
    run_dir = tmp_path / "r"
    (run_dir / "bindings").mkdir(parents=True)
    (run_dir / "state.md").write_text("nothing parsed here\n", encoding="utf-8")
    run = Run(id="r", path=run_dir, state_file=run_dir / "state.md", status=RunStatus.COMPLETED, status_reason="done")
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    assert bare.classify(run_dir, run_dir / "state.md") is Part.STATE
    assert bare.classify(run_dir, run_dir / "bindings" / "x.md") is Part.BINDING
    assert bare.classify(run_dir, run_dir / "notes.txt") is Part.OTHER
    assert bare.events(run) is run.events
    assert bare.read_table(run, "x_anything") == ([], [])
    assert bare.status(run, now=now) == (RunStatus.COMPLETED, "done")
    assert bare.older(run, 50) == 0
    assert not bare.polls and bare.poll(run) is None and bare.poll_interval == 1.0
    assert bare.summary_parts is None and not bare.grows and not bare.is_run_folder(run_dir)
    assert bare.chain(run) is None
    assert bare.open_text("anything") is None
    lines, banner = bare.raw_trace(run)
    assert [t.text for t in lines] == ["nothing parsed here"] and "shown raw" in (banner or "")
    import argparse
    parser = argparse.ArgumentParser()
    bare.add_options(parser, live=True)
    assert parser.parse_args([]) == argparse.Namespace()
    from prose_tui.backends.common.dburl import Target
    assert bare.sources_for(Target(path=tmp_path), None) == []
    bare.forget(run_dir)  # nothing kept: nothing to drop, no error


def _counting_classify(monkeypatch) -> Counter:
    """Count the filesystem backend's classification of each path (the real method runs)."""
    calls: Counter = Counter()
    real = FilesystemBackend.classify

    def classify(self, run_path: Path, path: Path) -> Part:
        calls[path] += 1
        return real(self, run_path, path)

    monkeypatch.setattr(FilesystemBackend, "classify", classify)
    return calls


def _journaled_pipeline(tmp_path: Path, collector: Collector, journal: Journal) -> tuple[Workspace, LivePipeline]:
    ws, pipeline = _pipeline(tmp_path, collector)
    pipeline.sinks.insert(0, journal_sink(journal, lambda: datetime.now(timezone.utc)))  # before the collector
    return ws, pipeline


def test_a_changed_path_is_classified_once_and_the_class_reaches_apply_and_the_journal(tmp_path, monkeypatch):
    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-50a4e0"
    run_dir.mkdir(parents=True)
    (run_dir / "state.md").write_text(snapshot_text(3, 5), encoding="utf-8")
    (run_dir / "bindings").mkdir()
    calls = _counting_classify(monkeypatch)
    collector = Collector()
    journal = Journal(tmp_path / "state")
    ws, pipeline = _journaled_pipeline(tmp_path, collector, journal)
    try:
        binding = run_dir / "bindings" / "value_0001.md"
        writer = (f"from pathlib import Path; Path({str(binding)!r}).write_text("
                  f"'# value_0001\\n\\nkind: let\\n\\n---\\n\\nthe value\\n', encoding='utf-8')")
        subprocess.run([sys.executable, "-c", writer], check=True, timeout=WAIT)  # the VM, another process
        collector.wait(lambda: any(binding in d.paths for d in collector.deltas), "the binding's change")
        changes = [d for d in collector.deltas if binding in d.paths]
        assert all(d.parts[binding] is Part.BINDING for d in changes)  # the class travelled with the change
        assert calls[binding] == len(changes)  # once per change: not again in the backend's apply
        assert any(e.kind == "binding" and e.path == binding for e in journal.entries(run_dir))
    finally:
        pipeline.stop()


def test_a_rewritten_state_md_is_read_once_per_change_the_journal_takes_the_backends_bytes(tmp_path):
    """The VM (another process) rewrites a snapshot state.md; the backend reads it and the
    journal keeps that revision without opening the file itself."""
    run_dir = tmp_path / ".prose" / "runs" / "20260301-090000-50a4e0"
    run_dir.mkdir(parents=True)
    (run_dir / "state.md").write_text(snapshot_text(0, 5), encoding="utf-8")
    state = str(run_dir / "state.md")
    opened: list[str] = []
    counting = threading.Event()

    def audit(event: str, args: tuple) -> None:
        if counting.is_set() and event == "open" and str(args[0]) == state:
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else os.O_RDONLY
            if flags & os.O_ACCMODE == os.O_RDONLY:
                frames, frame = [], sys._getframe(1)
                while frame is not None:
                    frames.append(frame.f_code.co_filename)
                    frame = frame.f_back
                opened.append("journal" if any(f.endswith(os.path.join("history", "journal.py")) for f in frames)
                              else "backend")

    sys.addaudithook(audit)  # (stays installed: it counts only while ``counting`` is set)
    collector = Collector()
    journal = Journal(tmp_path / "state")
    ws, pipeline = _journaled_pipeline(tmp_path, collector, journal)
    try:
        vm = subprocess.Popen([sys.executable, str(TESTS / "snapshot_vm.py"), str(run_dir), "5"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
        try:
            counting.set()
            assert vm.stdin is not None and vm.stdout is not None
            vm.stdin.write("1\n")
            vm.stdin.flush()
            sha = vm.stdout.readline().strip()
            collector.wait(lambda: any(e.sha256 == sha for e in journal.entries(run_dir)), "the journaled revision")
            counting.clear()
        finally:
            vm.stdin.close()  # type: ignore[union-attr]
            vm.wait(timeout=WAIT)
        reads = [d for d in collector.deltas if d.state_data is not None]
        assert reads, "the backend read the rewritten state.md whole"
        assert opened.count("journal") == 0, opened  # the journal took the backend's bytes
        assert opened.count("backend") == len(reads)  # one open per change that read it
        assert ws.runs[run_dir].format is RunFormat.SNAPSHOT
    finally:
        pipeline.stop()
