"""The demo VM writes the seed-format run it says it writes (seeds/filesystem.md)."""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from prose_tui.demo import DemoVM, content, write_demo_project, write_history_runs

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
MARKER = re.compile(r"#\s*<-- (EXECUTING|RETRYING)")


def fixed_clock() -> datetime:
    return T0


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def trace(state: str) -> list[str]:
    return state.split("```prose\n", 1)[1].split("\n```\n", 1)[0].splitlines()


def markers(state: str) -> list[str]:
    return [line for line in trace(state) if MARKER.search(line)]


def call_stack(state: str) -> list[tuple[int, str, int, str]]:
    section = state.split("## Call Stack", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (\w+) \| (\d+) \| (\w+) \|$", section, re.M)
    return [(int(e), b, int(d), s) for e, b, d, s in rows]


def header(state: str) -> dict[str, str]:
    head = state.split("## ", 1)[0]
    return dict(re.findall(r"^(\w+): (.+)$", head, re.M))


def binding_parts(path: Path) -> dict[str, str]:
    """Split a binding file into the seed's parts, failing if one is missing."""
    text = path.read_text()
    m = re.match(
        r"# (?P<name>\S+)\n\nkind: (?P<kind>\w+)\n(?:execution_id: (?P<eid>\d+)\n)?\n"
        r"source:\n```prose\n(?P<source>.+?)\n```\n\n---\n\n(?P<value>.+)\Z",
        text,
        re.S,
    )
    assert m, f"{path.name} does not follow seeds/filesystem.md bindings layout:\n{text[:300]}"
    return m.groupdict()


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return write_demo_project(tmp_path / "proj", clock=fixed_clock)


def test_finished_run_has_every_feature(demo: Path) -> None:
    project = demo.parents[2]
    state = (demo / "state.md").read_text()
    head = header(state)
    assert head["run"] == demo.name and re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", demo.name)
    assert head["program"] == "release-notes.prose" and head["status"] == "completed"
    assert head["started"] == "2026-03-01T12:00:00Z"
    assert head["updated"] > head["started"]  # simulated minute passed
    assert (demo / "program.prose").read_text() == content.PROGRAM
    assert markers(state) == [] and call_stack(state) == []
    for section in ("## Execution Trace", "## Active Constructs", "## Index", "### Bindings",
                    "### Agents", "## Call Stack"):
        assert section in state

    names = {p.name for p in (demo / "bindings").iterdir()}
    for scoped in ("parts__1.md", "parts__2.md", "parts__3.md", "result__1.md", "result__2.md", "result__3.md"):
        assert scoped in names
        eid = scoped[-4]
        assert binding_parts(demo / "bindings" / scoped)["eid"] == eid
    assert "anon_001.md" in names and "anon_002.md" not in names
    kinds = {binding_parts(demo / "bindings" / n)["kind"] for n in names}
    assert kinds == {"input", "const", "let", "output"}
    indexed = set(re.findall(r"^\| \w+ \| \w+ \| bindings/(\S+) \| ", state, re.M))
    assert indexed == names, "the Index must list exactly the binding files"
    assert len((demo / "bindings" / "notes.md").read_text().splitlines()) > 40  # scrolls

    captain = demo / "agents" / "captain"
    assert sorted(p.name for p in captain.iterdir()) == ["captain-001.md", "captain-002.md",
                                                         "captain-003.md", "memory.md"]
    seg = (captain / "captain-002.md").read_text()
    assert re.search(r"^timestamp: 2026-03-01T12:\d\d:\d\dZ$", seg, re.M)
    assert re.search(r'^prompt: ".+"$', seg, re.M)
    assert "| captain | execution | agents/captain/ |" in state
    assert "| scout | stateless | (none) |" in state
    archivist = project / ".prose" / "agents" / "archivist"
    assert (archivist / "memory.md").exists() and (archivist / "archivist-001.md").exists()
    assert "| archivist | project | .prose/agents/archivist/ |" in state
    env = (project / ".prose" / ".env").read_text().splitlines()
    assert env and all(re.fullmatch(r"[A-Z_]+=\S+", line) for line in env)

    child = demo / "imports" / "acme--summarize"
    assert (child / "program.prose").read_text() == content.CHILD_PROGRAM
    child_state = (child / "state.md").read_text()
    assert header(child_state)["status"] == "completed" and markers(child_state) == []
    assert {p.name for p in (child / "bindings").iterdir()} == {"text.md", "points.md", "summary.md"}
    assert binding_parts(child / "bindings" / "summary.md")["kind"] == "output"
    assert any("--> imports/acme--summarize/" in line for line in trace(state))
    assert not [p for p in project.rglob("*") if ".tmp" in p.name], "temporary files left behind"


def test_history_runs_are_one_completed_and_one_failed(demo: Path) -> None:
    runs = sorted(p for p in demo.parent.iterdir() if p != demo)
    assert len(runs) == 2 and all(p.name < demo.name for p in runs)
    done, failed = ((p / "state.md").read_text() for p in runs)
    assert header(done)["status"] == "completed" and markers(done) == []
    assert header(failed)["status"] == "failed"
    assert [m.split("# ")[-1] for m in markers(failed)] == ["<-- RETRYING (attempt 3/3)"]
    assert "\n## Error\n\n" in failed
    for run in runs:
        for binding in (run / "bindings").iterdir():
            binding_parts(binding)


def test_every_intermediate_state_has_exactly_one_position(tmp_path: Path) -> None:
    vm = DemoVM(tmp_path, clock=fixed_clock)
    steps = list_states(vm)
    assert 30 <= len(steps) <= 60
    assert 45 <= sum(step.delay for step, _ in steps) <= 75
    for step, state in steps[:-1]:
        assert len(markers(state)) == 1, f"after {step.description!r}: {markers(state)}"
        assert "status:" not in state.split("## ", 1)[0]
    assert markers(steps[-1][1]) == [] and header(steps[-1][1])["status"] == "completed"
    retrying = [m for _, s in steps for m in markers(s) if "RETRYING" in m]
    assert retrying and all(m.endswith("# <-- RETRYING (attempt 2/3)") for m in retrying)
    assert "let result" in retrying[0]


def list_states(vm: DemoVM) -> list[tuple]:
    return [(step, (vm.run_dir / "state.md").read_text()) for step in vm.steps()]


def test_call_stack_grows_to_three_then_unwinds(tmp_path: Path) -> None:
    stacks = [call_stack(s) for _, s in list_states(DemoVM(tmp_path, clock=fixed_clock))]
    depths = [len(s) for s in stacks]
    deepest = depths.index(3)
    assert depths[: deepest + 1] == sorted(depths[: deepest + 1]) and 1 in depths[:deepest] and 2 in depths[:deepest]
    assert depths[deepest:] == sorted(depths[deepest:], reverse=True) and depths[-1] == 0
    assert stacks[deepest] == [(3, "process", 3, "executing"), (2, "process", 2, "waiting"),
                               (1, "process", 1, "waiting")]


def test_parallel_branches_complete_one_by_one(tmp_path: Path) -> None:
    done_counts = []
    for _, state in list_states(DemoVM(tmp_path, clock=fixed_clock)):
        lines = trace(state)
        start = next(i for i, line in enumerate(lines) if line.startswith("parallel:"))
        branches = [line for line in lines[start + 1:start + 10] if re.match(r"  \w+ = session", line)]
        assert len(branches) == 3
        done_counts.append(sum(line.endswith("(complete)") for line in branches))
    seen = [c for i, c in enumerate(done_counts) if i == 0 or c != done_counts[i - 1]]
    assert seen == [0, 1, 2, 3]


def test_loop_runs_iterations_after_not_yet_entered(tmp_path: Path) -> None:
    states = [s for _, s in list_states(DemoVM(tmp_path, clock=fixed_clock))]
    loop_notes = [next(line for line in trace(s) if line.startswith("loop until")).split("# ")[-1] for s in states]
    assert loop_notes[0] == "[not yet entered]" and loop_notes[-1] == "(complete)"
    iterations = {m for s in states for m in re.findall(r"- iteration: (\d)/3", s)}
    assert iterations == {"0", "1", "2"}


def test_file_set_only_grows_and_steps_report_their_writes(tmp_path: Path) -> None:
    vm = DemoVM(tmp_path, clock=fixed_clock)
    before: set[Path] = set()
    for step in vm.steps():
        now = files(tmp_path)
        assert before <= now, f"{step.description!r} removed {before - now}"
        assert vm.run_dir / "state.md" in step.paths
        assert set(step.paths) <= now and (now - before) <= set(step.paths)
        before = now


def test_fixed_clock_gives_byte_identical_trees(tmp_path: Path) -> None:
    a = write_demo_project(tmp_path / "a", clock=fixed_clock)
    b = write_demo_project(tmp_path / "b", clock=fixed_clock)
    assert a.name == b.name
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_in_place_writes_give_the_same_files(tmp_path: Path) -> None:
    for name, atomic in (("atomic", True), ("inplace", False)):
        for _ in DemoVM(tmp_path / name, clock=fixed_clock, atomic=atomic).steps():
            pass
    assert tree(tmp_path / "atomic") == tree(tmp_path / "inplace")


def test_seed_changes_the_run_but_not_its_shape(tmp_path: Path) -> None:
    runs = []
    for seed in (0, 1):
        vm = DemoVM(tmp_path / str(seed), clock=fixed_clock, seed=seed)
        for _ in vm.steps():
            pass
        runs.append(vm.run_dir)
    assert runs[0].name != runs[1].name
    assert (runs[0] / "bindings/changes.md").read_text() != (runs[1] / "bindings/changes.md").read_text()
    assert {p.name for p in (runs[0] / "bindings").iterdir()} == {p.name for p in (runs[1] / "bindings").iterdir()}


def test_second_run_continues_project_agent_segments(tmp_path: Path) -> None:
    for minutes in (0, 5):
        vm = DemoVM(tmp_path, clock=lambda m=minutes: T0 + timedelta(minutes=m))
        for _ in vm.steps():
            pass
    archivist = tmp_path / ".prose" / "agents" / "archivist"
    assert sorted(p.name for p in archivist.glob("archivist-*.md")) == ["archivist-001.md", "archivist-002.md"]
    assert len(list((tmp_path / ".prose" / "runs").iterdir())) == 2


def test_run_at_high_speed_completes(tmp_path: Path) -> None:
    vm = DemoVM(tmp_path, clock=fixed_clock)
    vm.run(speed=1000)
    assert header((vm.run_dir / "state.md").read_text())["status"] == "completed"


def test_stop_event_ends_the_run_early(tmp_path: Path) -> None:
    stop = threading.Event()
    calls = []

    def clock() -> datetime:  # the VM reads the clock while writing; stop it mid-run
        calls.append(1)
        if len(calls) == 10:
            stop.set()
        return T0

    vm = DemoVM(tmp_path, clock=clock)
    vm.run(speed=1000, stop=stop)
    state = (vm.run_dir / "state.md").read_text()
    assert "status" not in header(state) and len(markers(state)) == 1


def test_stop_interrupts_a_wait(tmp_path: Path) -> None:
    stop = threading.Event()
    vm = DemoVM(tmp_path, clock=fixed_clock)
    worker = threading.Thread(target=vm.run, kwargs={"speed": 0.01, "stop": stop})
    worker.start()  # at speed 0.01 the first wait alone is 80 s
    # Until the VM is in that wait (state.md written): on a loaded machine that may take longer
    # than the 10 s this loop used to give it, and the test then stopped a VM not yet waiting.
    for _ in range(12_000):  # a guard against a hang (at least 120 s), not a timing
        if (vm.run_dir / "state.md").exists():
            break
        stop.wait(0.01)
    assert (vm.run_dir / "state.md").exists(), "the VM never started its run"
    stop.set()
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert not (vm.run_dir / "bindings").exists()


def test_preset_stop_writes_nothing(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    vm = DemoVM(tmp_path, clock=fixed_clock)
    vm.run(stop=stop)
    assert not (tmp_path / ".prose").exists()


def test_history_alone_and_bad_speed(tmp_path: Path) -> None:
    done, failed = write_history_runs(tmp_path, fixed_clock)
    assert done.name.startswith("20260227-") and failed.name.startswith("20260228-")
    with pytest.raises(ValueError):
        DemoVM(tmp_path, clock=fixed_clock).run(speed=0)
    vm = DemoVM(tmp_path, clock=fixed_clock)
    list(vm.steps())
    with pytest.raises(RuntimeError):
        next(vm.steps())
