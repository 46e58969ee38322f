"""A simulated OpenProse VM that writes a seed-format run to disk, step by step.

It writes what a VM following seeds/filesystem.md would write: ``program.prose``, a
``state.md`` rewritten after every statement (seeds/filesystem.md, "state.md" and "VM Update
Protocol"), binding files (seeds/filesystem.md, "bindings/{name}.md", "Scoped Bindings",
"Anonymous Session Bindings"), agent memory and segments (seeds/filesystem.md, "Agent Memory
Files", "Memory Scoping for Persistent Agents"), an import run (seeds/filesystem.md, "Imports
Recursive Structure") and ``.prose/.env``. No Textual here: the app and tests drive it.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from prose_tui.demo import content as C

EXEC = "<-- EXECUTING"
NEXT = "[...next...]"
DONE = "(complete)"
_PROPS = ("prompt:", "context:", "model:", "persist:", "retry:", "#")


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(t: datetime) -> str:
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_id(t: datetime, rng: random.Random) -> str:
    """``{YYYYMMDD}-{HHMMSS}-{random6}`` (seeds/filesystem.md, Run ID Format)."""
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc)
    return t.strftime("%Y%m%d-%H%M%S-") + "".join(rng.choice("0123456789abcdef") for _ in range(6))


def _context(seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    base = rng.randint(120, 880)
    ctx = {f"p{i}": str(base + i * 3 + rng.randint(0, 2)) for i in range(1, 10)}
    minor = rng.randint(4, 9)
    ctx.update(prev=f"0.{minor}.{rng.randint(0, 5)}", next=f"0.{minor + 1}.0", n="9")
    ctx.update(uid=f"{rng.getrandbits(48):012x}", sid=f"{rng.getrandbits(32):08x}")
    return ctx


@dataclass
class DemoStep:
    """One VM step: what it did, how long to wait after it (seconds at speed 1), files written."""

    description: str
    delay: float
    paths: list[Path] = field(default_factory=list)


class _State:
    """One ``state.md`` being kept by the VM (seeds/filesystem.md, state.md)."""

    def __init__(self, run_id: str, program_name: str, program: str, started: datetime):
        self.run_id, self.program_name, self.started = run_id, program_name, started
        lines = program.splitlines()
        while lines and (lines[0].startswith("#") or not lines[0].strip()):
            lines.pop(0)  # the program's title comment is not part of the trace
        self.lines = lines
        self.notes: dict[int, str] = {}
        self.bindings: dict[str, tuple[str, str, str, str]] = {}
        self.agents: list[tuple[str, str, str]] = []
        self.constructs: list[tuple[str, list[str]]] = []
        self.stack: list[tuple[int, str]] = []  # (execution_id, block), outermost first
        self.status: str | None = None
        self.error: str | None = None
        heads = [ln for ln in lines if ln.strip() and not ln.strip().startswith(_PROPS)]
        self.col = max(48, max(len(ln) for ln in heads) + 2)

    def at(self, key: str) -> int:
        for i, line in enumerate(self.lines):
            if line.strip().startswith(key):
                return i
        raise KeyError(key)

    def mark(self, key: str, note: str | None) -> None:
        i = self.at(key)
        if note is None:
            self.notes.pop(i, None)
        else:
            self.notes[i] = note

    def marks(self, *pairs: tuple[str, str | None]) -> None:
        """``mark`` each ``(key, note)`` in turn."""
        for key, note in pairs:
            self.mark(key, note)

    def source(self, key: str) -> str:
        """The statement starting at ``key`` with its indented continuation, dedented."""
        i = self.at(key)
        indent = len(self.lines[i]) - len(self.lines[i].lstrip())
        out = [self.lines[i]]
        for line in self.lines[i + 1 :]:
            if not line.strip() or len(line) - len(line.lstrip()) <= indent:
                break
            out.append(line)
        return "\n".join(line[indent:] for line in out)

    def span(self, key: str) -> str:
        first = self.at(key) + 1
        last = first + self.source(key).count("\n")
        return f"line {first}" if first == last else f"lines {first}-{last}"

    def bind(self, name: str, kind: str, rel: str, eid: int | None) -> None:
        self.bindings[rel] = (name, kind, rel, "(root)" if eid is None else str(eid))

    def _word(self) -> str:
        return "complete" if self.status == "completed" else str(self.status)

    def render(self, updated: datetime) -> str:
        out = ["# Execution State", "", f"run: {self.run_id}", f"program: {self.program_name}"]
        out += [f"started: {_stamp(self.started)}", f"updated: {_stamp(updated)}"]
        if self.status:
            out.append(f"status: {self.status}")
        out += ["", "## Execution Trace", "", "```prose"]
        for i, line in enumerate(self.lines):
            note = self.notes.get(i)
            out.append(line if note is None else f"{line.ljust(self.col - 1)} # {note}")
        out += ["```", "", "## Active Constructs", ""]
        if self.constructs:
            for title, items in self.constructs:
                out += [f"### {title}", *items, ""]
        else:
            out += [f"(none - execution {self._word()})" if self.status else "(none)", ""]
        out += ["## Index", "", "### Bindings", "", "| Name | Kind | Path | Execution ID |"]
        out.append("|------|------|------|--------------|")
        rows = list(self.bindings.values()) or [("(none yet)", "", "", "")]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        out += ["", "### Agents", "", "| Name | Scope | Path |", "|------|-------|------|"]
        out += [f"| {n} | {s} | {p} |" for n, s, p in self.agents]
        out += ["", "## Call Stack", ""]
        if self.stack:
            out += ["| execution_id | block | depth | status |", "|--------------|-------|-------|--------|"]
            for depth, (eid, block) in reversed(list(enumerate(self.stack, 1))):
                status = "executing" if depth == len(self.stack) else "waiting"
                out.append(f"| {eid} | {block} | {depth} | {status} |")
        else:
            out.append(f"(empty - execution {self._word()})" if self.status else "(empty - root scope)")
        if self.error:
            out += ["", "## Error", "", self.error]
        return "\n".join(out) + "\n"


class _Writer:
    """File writes shared by the live VM and the history runs: atomic unless told otherwise."""

    def __init__(self, clock: Callable[[], datetime], ctx: dict[str, str], atomic: bool):
        self.clock, self.ctx, self.atomic = clock, ctx, atomic
        self.written: list[Path] = []

    def write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = C.fill(text, self.ctx).encode("utf-8")
        if self.atomic:
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        else:
            path.write_bytes(data)
        self.written.append(path)

    def binding(self, doc: _State, root: Path, key: str, name: str, kind: str, value: str,
                eid: int | None = None, suffix: str = "") -> None:
        """Write ``bindings/{name}[__{eid}].md`` (seeds/filesystem.md, bindings/) and index it."""
        rel = f"bindings/{name}.md" if eid is None else f"bindings/{name}__{eid}.md"
        head = f"# {name}\n\nkind: {kind}\n" + ("" if eid is None else f"execution_id: {eid}\n")
        body = value if value.endswith("\n") else value + "\n"
        self.write(root / rel, f"{head}\nsource:\n```prose\n{doc.source(key)}\n```\n\n---\n\n{body}")
        doc.bind(name, kind, rel, eid)
        doc.mark(key, f"--> {rel}{suffix}")

    def agent(self, folder: Path, name: str, memory: str, prompt: str, summary: str) -> int:
        """Rewrite ``memory.md`` and add the next ``{name}-NNN.md`` segment; returns NNN."""
        taken = [int(p.stem.rsplit("-", 1)[1]) for p in folder.glob(f"{name}-*.md")
                 if p.stem.rsplit("-", 1)[1].isdigit()] if folder.is_dir() else []
        n = max(taken, default=0) + 1
        self.write(folder / "memory.md", memory)
        self.write(folder / f"{name}-{n:03d}.md", f"# Segment {n:03d}\n\ntimestamp: "
                   f"{_stamp(self.clock())}\nprompt: \"{prompt}\"\n\n## Summary\n\n{summary}\n")
        return n


class DemoVM:
    """Writes the demo run ``{project}/.prose/runs/{run_id}/`` one statement at a time.

    ``run_dir`` is set at construction; nothing is written until ``steps()`` or ``run()``.
    ``run_id`` defaults to ``{YYYYMMDD}-{HHMMSS}-{random6}`` from the clock and ``seed``
    (seeds/filesystem.md, Run ID Format), redrawn if that folder exists. ``clock`` returns
    the time written into headers and segments (default: real UTC now); a fixed clock and
    seed give byte-identical files. ``atomic`` writes each file to a temporary name and
    renames it over the target (``os.replace``); ``atomic=False`` writes in place, as a
    careless VM would. Write failures raise ``OSError`` from the step that hit them.
    """

    def __init__(self, project: Path, *, run_id: str | None = None,
                 clock: Callable[[], datetime] | None = None, seed: int = 0, atomic: bool = True):
        self.project = Path(project)
        self.clock = clock or _utcnow
        self.started = self.clock()
        rng, runs = random.Random(seed), self.project / ".prose" / "runs"
        self.run_id = run_id or _run_id(self.started, rng)
        while run_id is None and (runs / self.run_id).exists():  # same second, same seed
            self.run_id = _run_id(self.started, rng)
        self.run_dir = runs / self.run_id
        self._w = _Writer(self.clock, _context(seed), atomic)
        self._started_steps = False
        self._pending: Iterator[DemoStep] | None = None  # the steps ``first_step`` began
        self.doc = _State(self.run_id, C.PROGRAM_NAME, C.PROGRAM, self.started)
        self.doc.agents = [("scout", "stateless", "(none)"), ("captain", "execution", "agents/captain/"),
                           ("archivist", "project", ".prose/agents/archivist/")]
        self.child: _State | None = None
        self._child_open = True
        self.par: dict[str, str] | None = None
        self.loop: tuple[int, str] | None = None  # (iteration, status) once entered
        self.loop_done = False

    # -- bookkeeping ---------------------------------------------------------------------
    def _constructs(self) -> list[tuple[str, list[str]]]:
        d, out = self.doc, []
        if self.par and any(s != "complete" for s in self.par.values()):
            out.append((f"Parallel ({d.span('parallel:')})", [f"- {k}: {v}" for k, v in self.par.items()]))
        if not self.loop_done:
            it, status = self.loop or (0, "not yet entered")
            out.append((f"Loop ({d.span('loop until')})", [f"- status: {status}", f"- iteration: {it}/3",
                        "- condition: **the captain approves the notes**"]))
        for depth, (eid, block) in enumerate(d.stack, 1):
            arg = "{ features, fixes, risks }" if depth == 1 else f"bindings/parts__{eid - 1}.md"
            out.append((f"Block {block} (execution {eid}, {d.span('block process')})",
                        [f"- depth: {depth}", f"- chunk: {arg}"]))
        if self.child and not self.child.status:
            out.append((f"Import acme/summarize ({d.span('let tldr')})",
                        [f"- path: imports/{C.CHILD_HANDLE}/", "- status: executing"]))
        return out

    def _step(self, description: str, delay: float) -> DemoStep:
        self.doc.constructs = self._constructs()
        now = self.clock()
        if self.child is not None and self._child_open:
            self._child_open = self.child.status is None
            self._w.write(self.run_dir / "imports" / C.CHILD_HANDLE / "state.md", self.child.render(now))
        self._w.write(self.run_dir / "state.md", self.doc.render(now))
        paths, self._w.written = list(dict.fromkeys(self._w.written)), []
        return DemoStep(description, delay, paths)

    def _bind(self, key: str, name: str, kind: str, value: str, eid: int | None = None, suffix: str = "") -> None:
        self._w.binding(self.doc, self.run_dir, key, name, kind, value, eid, suffix)

    def _captain(self, n: int) -> None:
        prompt, summary = C.CAPTAIN_SEGMENTS[n]
        self._w.agent(self.run_dir / "agents" / "captain", "captain", C.CAPTAIN_MEMORY[n], prompt, summary)

    def _frame_at(self, eid: int, at: str) -> None:
        """Annotate the block body for the innermost frame ``eid`` (one frame's view)."""
        d = self.doc
        d.mark("let parts", EXEC if at == "parts" else f"--> bindings/parts__{eid}.md")
        d.mark("if **", {"parts": None, "if": EXEC}.get(at, DONE))
        d.mark("do process(parts)", DONE if at == "result" and eid < 3 else None)
        d.mark("let result", EXEC if at == "result" else NEXT)

    # -- the program -----------------------------------------------------------------------
    def steps(self) -> Iterator[DemoStep]:
        """Perform the run one step per ``next()``; each step ends with state.md rewritten.

        About 31 steps whose delays add up to about a minute. The run passes through
        every construct of seeds/filesystem.md: input/const/let/output bindings, a
        persistent ``captain`` (Agent Memory Files), a three-branch ``parallel:``, a
        recursive block three frames deep with scoped bindings and a Call Stack, a retry
        (``<-- RETRYING (attempt 2/3)``), a loop of two iterations, an import child run
        (Imports Recursive Structure), a ``persist: project`` agent and ``anon_001``.
        Raises RuntimeError when called a second time on the same VM.
        """
        if self._started_steps:
            raise RuntimeError("a DemoVM runs once; make a new one")
        self._started_steps = True
        d, w, V = self.doc, self._w, C.VALUES
        env = self.project / ".prose" / ".env"
        if not env.exists():
            w.write(env, C.ENV)  # seeds/filesystem.md, .prose/.env
        # The run appears whole (program.prose and state.md), as a VM that prepares its run
        # folder before it names it: an explorer watching runs/ never reads a run folder
        # without its state file. Atomic writes only; atomic=False writes in place.
        real = self.run_dir
        if w.atomic:
            self.run_dir = self.project / ".prose" / f".{self.run_id}.new"
        w.write(self.run_dir / "program.prose", C.PROGRAM)
        d.mark("loop until", "[not yet entered]")
        d.marks(("input repo", EXEC), ("const audience", NEXT), ("let changes", NEXT))
        first = self._step("Start the run: copy program.prose, write state.md", 0.8)
        if self.run_dir != real:
            staged, self.run_dir = self.run_dir, real
            real.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staged, real)
            first.paths = [real / p.relative_to(staged) if p.is_relative_to(staged) else p for p in first.paths]
        yield first
        self._bind("input repo", "repo", "input", V["repo"])
        d.marks(("const audience", EXEC), ("let plan", NEXT))
        yield self._step("Bind input repo", 0.5)
        self._bind("const audience", "audience", "const", V["audience"])
        d.marks(("let changes", EXEC), ("parallel:", NEXT))
        yield self._step("Bind const audience; session changes starts (scout)", 3.2)
        self._bind("let changes", "changes", "let", V["changes"])
        d.mark("let plan", EXEC)
        yield self._step("changes written; captain resumes to plan", 3.0)
        self._captain(1)
        self._bind("let plan", "plan", "let", V["plan"])
        self.par = {"features": "executing", "fixes": "pending", "risks": "pending"}
        d.marks(("parallel:", None), ("features =", EXEC), ("fixes =", NEXT), ("risks =", NEXT))
        d.mark("let draft", NEXT)
        yield self._step("Captain segment 001 and plan written; parallel starts 3 branches", 2.6)
        names = list(self.par)
        for i, name in enumerate(names):
            self._bind(f"{name} =", name, "let", V[name], suffix=" (complete)")
            self.par[name] = "complete"
            if i + 1 < len(names):
                self.par[names[i + 1]] = "executing"
                d.mark(f"{names[i + 1]} =", EXEC)
                yield self._step(f"Parallel branch {name} complete ({i + 1}/3)", 1.6 + 0.4 * i)
        d.marks(("parallel:", DONE), ("let draft", None))
        d.stack.append((1, "process"))
        self._frame_at(1, "parts")
        yield self._step("Parallel joined (3/3); call process (execution 1, depth 1)", 2.0)
        for eid in (1, 2, 3):
            self._bind("let parts", "parts", "let", C.PARTS[eid], eid)
            self._frame_at(eid, "if")
            yield self._step(f"parts__{eid} written; evaluate the condition", 0.8)
            if eid < 3:
                d.stack.append((eid + 1, "process"))
                self._frame_at(eid + 1, "parts")
                yield self._step(f"Condition true: process recurses (execution {eid + 1}, depth {eid + 1})", 2.0)
        self._frame_at(3, "result")
        yield self._step("Condition false: write result at depth 3", 2.6)
        d.mark("let result", "<-- RETRYING (attempt 2/3)")
        yield self._step("Session result failed (model timeout); retrying, attempt 2/3", 3.0)
        for eid in (3, 2, 1):
            self._bind("let result", "result", "let", C.RESULTS[eid], eid)
            d.stack.pop()
            if eid > 1:
                self._frame_at(eid - 1, "result")
                yield self._step(f"result__{eid} written; execution {eid} returns to {eid - 1}", 2.0)
        d.mark("block process", DONE)
        self._bind("let draft", "draft", "let", C.RESULTS[1])
        d.marks(("loop until", EXEC), ("let tldr", NEXT))
        self.loop = (0, "evaluating condition")
        yield self._step("result__1 written; process returns; draft bound; loop condition", 1.0)
        for it in (1, 2):
            self.loop = (it, "executing")
            d.marks(("loop until", None), ("let review", EXEC), ("draft = session", NEXT))
            yield self._step(f"Loop condition not met: iteration {it}/3 starts", 3.0)
            self._captain(it + 1)
            self._bind("let review", "review", "let", C.REVIEWS[it])
            d.mark("draft = session", EXEC)
            yield self._step(f"Captain segment {it + 1:03d} and review written (iteration {it})", 2.5)
            self._bind("draft = session", "draft", "let", C.DRAFTS[it])
            d.mark("loop until", EXEC)
            self.loop = (it, "evaluating condition")
            yield self._step(f"draft revised (iteration {it}); evaluate the loop condition", 1.0)
        self.loop_done = True
        d.marks(("loop until", DONE), ("let tldr", EXEC), ("let archive_note", NEXT))
        yield self._step("Loop condition met (captain approved); call the import summarize", 1.2)
        child_dir = self.run_dir / "imports" / C.CHILD_HANDLE
        w.write(child_dir / "program.prose", C.CHILD_PROGRAM)
        self.child = c = _State(self.run_id, C.CHILD_NAME, C.CHILD_PROGRAM, self.clock())
        c.agents = [("condenser", "stateless", "(none)")]
        w.binding(c, child_dir, "input text", "text", "input", C.DRAFTS[2])
        c.marks(("let points", EXEC), ("output summary", NEXT))
        d.mark('use "acme', f"--> imports/{C.CHILD_HANDLE}/")
        yield self._step("Import acme/summarize starts as a child run", 2.0)
        w.binding(c, child_dir, "let points", "points", "let", C.CHILD_VALUES["points"])
        c.mark("output summary", EXEC)
        yield self._step("Import: points written", 2.0)
        w.binding(c, child_dir, "output summary", "summary", "output", C.CHILD_VALUES["summary"])
        c.status = "completed"
        self._bind("let tldr", "tldr", "let", C.CHILD_VALUES["summary"])
        d.marks(("let archive_note", EXEC), ('session "Check', NEXT))
        yield self._step("Import completed; tldr bound; archivist resumes (project scope)", 2.4)
        self._w.agent(self.project / ".prose" / "agents" / "archivist", "archivist", C.ARCHIVIST_MEMORY,
                      *C.ARCHIVIST_SEGMENT)
        self._bind("let archive_note", "archive_note", "let", V["archive_note"])
        d.marks(('session "Check', EXEC), ("output notes", NEXT))
        yield self._step("Archivist memory updated; anonymous link check starts", 2.2)
        self._bind('session "Check', "anon_001", "let", V["anon_001"])
        d.mark("output notes", EXEC)
        yield self._step("anon_001 written; final notes start", 3.0)
        self._bind("output notes", "notes", "output", C.DRAFTS[2] + C.NOTES_TAIL)
        d.status = "completed"
        yield self._step("Output notes written; run completed", 0.0)

    def first_step(self) -> DemoStep:
        """Perform the first step now (the run appears, whole); ``run`` goes on from the next."""
        if self._pending is None:
            self._pending = self.steps()
        return next(self._pending)

    def run(self, speed: float = 1.0, stop: threading.Event | None = None, *,
            watched: threading.Event | None = None) -> None:
        """Perform every step (those after ``first_step`` when it was called), waiting
        ``step.delay / speed`` seconds after each. ``watched``: wait for it (an explorer
        that has read the project and watches it) before any further step, so that
        whoever watches sees every step happen.

        Returns when the run is complete or as soon as ``stop`` is set (checked before each
        step and while waiting). Raises ValueError when ``speed`` is not positive.
        """
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        stop = stop or threading.Event()
        while watched is not None and not watched.wait(0.1):
            if stop.is_set():
                return
        if self._pending is None:
            self._pending = self.steps()
        steps = self._pending
        while not stop.is_set():
            step = next(steps, None)
            if step is None:
                return
            if step.delay:
                stop.wait(step.delay / speed)


class _SimClock:
    """A clock that stands still until told the simulated time moved on."""

    def __init__(self, base: datetime):
        self.base, self.offset = base, 0.0

    def __call__(self) -> datetime:
        return self.base + timedelta(seconds=self.offset)


def write_history_runs(project: Path, clock: Callable[[], datetime] | None = None) -> list[Path]:
    """Write two small finished runs before the demo run: one completed, one failed.

    The completed run is dated two days and the failed run one day before ``clock()``. The
    failed run ends at ``<-- RETRYING (attempt 3/3)`` with the real-world extensions
    ``status: failed`` and an ``## Error`` section. Returns the two run folders, oldest first.
    """
    now = (clock or _utcnow)()
    out = []
    for days, name, program in ((2, C.HISTORY_DONE_NAME, C.HISTORY_DONE), (1, C.HISTORY_FAILED_NAME, C.HISTORY_FAILED)):
        started = now - timedelta(days=days, minutes=7)
        run_id = _run_id(started, random.Random(days))
        root = Path(project) / ".prose" / "runs" / run_id
        w = _Writer(lambda: started, _context(0), True)
        w.write(root / "program.prose", program)
        doc = _State(run_id, name, program, started)
        if days == 2:
            doc.agents = [("triager", "stateless", "(none)")]
            w.binding(doc, root, "let issues", "issues", "let", C.HISTORY_DONE_VALUES["issues"])
            w.binding(doc, root, "output labels", "labels", "output", C.HISTORY_DONE_VALUES["labels"])
            doc.status = "completed"
        else:
            w.binding(doc, root, "let site", "site", "let", C.HISTORY_FAILED_VALUES["site"])
            doc.mark('session "Publish', "<-- RETRYING (attempt 3/3)")
            doc.status, doc.error = "failed", C.HISTORY_FAILED_ERROR
        w.write(root / "state.md", doc.render(started + timedelta(minutes=3, seconds=12)))
        out.append(root)
    return out


def write_demo_project(project: Path, *, clock: Callable[[], datetime] | None = None) -> Path:
    """Write the history runs and the whole demo run at once; returns the demo run folder.

    Timestamps start at ``clock()`` (default: now) and advance by each step's delay, as if
    the run had taken its minute; a fixed ``clock`` gives byte-identical trees.
    """
    sim = _SimClock((clock or _utcnow)())
    write_history_runs(project, sim)
    vm = DemoVM(project, clock=sim)
    for step in vm.steps():
        sim.offset += step.delay
    return vm.run_dir
