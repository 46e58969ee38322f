"""The workspace: the runs below one path, kept current as their files change.

Textual-free. ``watch.py`` turns file-system events into ``apply`` calls; each changed path
is routed to the run that owns it and to the part of that run it belongs to, and only
that part is read again: a binding file re-reads that binding, a segment re-reads that
agent, ``state.md`` re-parses the state file (binding files are not re-read), an import
re-reads that import. A folder appearing under a ``runs`` folder re-discovers runs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from prose_tui.backends import NotARunError, find_runs, open_run
from prose_tui.backends.common import agents as agent_files
from prose_tui.backends.common.bindings import is_binding_path, read_binding
from prose_tui.backends.common.status import (
    DEFAULT_STALE_AFTER,
    apply_staleness,
    infer_status,
    run_id_time,
)
from prose_tui.backends.common.text import visible_name
from prose_tui.backends.discover import RUN_PARTS, RunRef, owning_run, runs_roots
from prose_tui.backends.filesystem.folder import STATE_FILES, load_run, reload_state
from prose_tui.backends.narration.parse import NarrationTail, sniff_narration
from prose_tui.model import Backend, Delta, Run

PARTIAL_EVERY = 8 * 1024 * 1024  # bytes of a narration file between partial first screens


class Part(StrEnum):
    """Which part of a run a changed path belongs to."""

    STATE = "state"
    BINDING = "binding"
    AGENT = "agent"
    IMPORT = "import"
    PROGRAM = "program"
    OTHER = "other"


@dataclass(slots=True)
class RunChange:
    """What ``Workspace.apply`` changed in one run: the parts and the paths behind them."""

    run: Run
    parts: set[Part] = field(default_factory=set)
    paths: set[Path] = field(default_factory=set)


@dataclass(slots=True)
class Applied:
    """The outcome of one batch of file events."""

    changed: dict[Path, RunChange] = field(default_factory=dict)
    runs_added: list[Path] = field(default_factory=list)
    runs_removed: list[Path] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.changed or self.runs_added or self.runs_removed)


class Workspace:
    """Every run below ``root``; ``runs`` maps run folder to its latest ``Run``.

    ``stale_after`` (seconds) feeds status inference. ``clock`` returns the current UTC time
    (tests fix it). Raises ``FileNotFoundError`` from ``scan`` when ``root`` is missing.
    """

    def __init__(self, root: Path, *, stale_after: float = DEFAULT_STALE_AFTER, clock=None,
                 sources: Sequence[RunSource] = ()) -> None:
        self.root = root.resolve()
        self.sources: list[RunSource] = list(sources)  # runs off disk (a PostgreSQL database)
        self.stale_after = stale_after
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.refs: dict[Path, RunRef] = {}
        self.runs: dict[Path, Run] = {}
        # The start-up scan and "open in full" run in threads while the UI loop applies file
        # events and ticks: every change to runs/detailed/refs happens under this lock.
        self.lock = threading.RLock()
        self.observed: dict[Path, datetime] = {}
        self.tails: dict[Path, NarrationTail] = {}
        self.detailed: set[Path] = set()  # runs read in full; the others are summaries

    # -- reading -------------------------------------------------------------------------
    def discover(self) -> list[RunRef]:
        """Find the runs below ``root`` (no run is read), newest first by the time in the run id
        (else the folder's time). Runs that disappeared are forgotten."""
        refs = find_runs(self.root)
        with self.lock:
            self.refs = {ref.path: ref for ref in refs}
            for path in [p for p in self.runs if p not in self.refs and self._source_of(p) is None]:
                self.runs.pop(path, None)
                self.detailed.discard(path)
        return sorted(refs, key=_ref_order, reverse=True)

    def scan(self, progress=None, *, partial=None, first: Path | None = None, on_run=None,
             detail_first: bool = True, refs: list[RunRef] | None = None) -> list[Run]:
        """Discover and read every run: ``first`` (or the newest) in full, the others as
        summaries (state file only; ``detail`` reads one in full when it is opened).

        ``progress(done, total, unit)`` is called as runs are read (``unit`` ``"runs"``) and,
        for a large narration file, as its bytes are read (``unit`` ``"bytes"``);
        ``partial(run)`` receives such a run as parsed so far; ``on_run(run)`` each run read.
        ``detail_first=False`` reads every run as a summary; ``refs`` are those a caller
        already got from ``discover`` (the project is not walked again).
        """
        refs = self.discover() if refs is None else refs
        if not detail_first:
            first = None  # summaries only (headless listing)
        elif refs and (first is None or first not in self.refs):
            first = refs[0].path
        ordered = sorted(refs, key=lambda r: r.path != first)
        for done, ref in enumerate(ordered, start=1):
            run = self._read(ref.path, progress=progress, partial=partial, summary=ref.path != first)
            if run is not None and on_run is not None:
                on_run(run)
            if progress is not None:
                progress(done, len(refs), "runs")
        self._scan_sources()
        return self.sorted_runs()

    def summary(self, path: Path) -> Run | None:
        """The run at ``path`` as a run list row needs it (state file only), read now."""
        return self.runs.get(path) if path in self.detailed else self._read(path, summary=True)

    def detail(self, path: Path) -> Run | None:
        """The run at ``path`` read in full (bindings, agents, imports); kept up to date from now on."""
        if path in self.detailed and path in self.runs:
            return self.runs[path]
        run = self._read(path, summary=False)
        if run is not None:
            self.detailed.add(path)
        return run

    def _read(self, path: Path, *, progress=None, partial=None, summary: bool | None = None) -> Run | None:
        source = self._source_of(path)
        if source is not None:
            return self._read_source(source, path, summary=path not in self.detailed if summary is None else summary)
        if path.is_file() and path.name not in STATE_FILES and path in self.refs and self.refs[path].flat:
            self.detailed.add(path)
            return self._read_narration(path, progress=progress, partial=partial)
        if summary is None:
            summary = path not in self.detailed
        try:
            run = open_run(path, now=self.clock(), stale_after=self.stale_after, observed=self.observed.get(path),
                           summary=summary)
        except (NotARunError, OSError):
            with self.lock:
                self.runs.pop(path, None)
            return None
        with self.lock:
            if summary and path in self.detailed:
                # Read in full meanwhile (another thread): a summary must not replace it.
                return self.runs.get(path, run)
            if not summary:
                self.detailed.add(path)
            self.runs[path] = run
        return run

    def _read_narration(self, path: Path, *, progress=None, partial=None) -> Run | None:
        """Narration files are tailed: each read parses only the bytes appended since the last."""
        tail = self.tails.get(path)
        if tail is None:
            if not sniff_narration(path):
                return None
            tail = self.tails[path] = NarrationTail(path)
        shown = [0]

        def report(done: int, total: int) -> None:
            if progress is not None:
                progress(done, total, "bytes")
            if partial is not None and done - shown[0] >= PARTIAL_EVERY and done < total:
                shown[0] = done
                partial(tail.run)

        tail.poll(progress=report)
        run = tail.run
        apply_staleness(run, now=self.clock(), stale_after=self.stale_after, observed=self.observed.get(path))
        with self.lock:
            self.runs[path] = run
        return run

    def sorted_runs(self) -> list[Run]:
        """Newest first: start time where known, then id."""
        with self.lock:
            runs = list(self.runs.values())
        return sorted(
            runs,
            key=lambda r: (r.started.timestamp() if r.started else 0.0, r.id),
            reverse=True,
        )

    def watch_roots(self) -> list[Path]:
        """The folders a watcher should watch: every ``runs`` folder (or the single run)."""
        roots = {ref.runs_root for ref in self.refs.values()} or set(runs_roots(self.root))
        if self.root.is_file():
            roots = {self.root}
        # No runs folder yet: watch nothing (a whole project is too much to watch); the
        # explorer rescans every few seconds until one appears.
        return sorted(r for r in roots if r.exists())

    def refresh_statuses(self) -> list[Run]:
        """Re-infer statuses as time passes (a quiet run becomes interrupted); returns changed runs."""
        changed = []
        now = self.clock()
        with self.lock:
            items = list(self.runs.items())
        for path, run in items:
            if run.backend is Backend.FILESYSTEM:
                status = infer_status(run, now=now, stale_after=self.stale_after, observed=self.observed.get(path))
            else:
                before = (run.status, run.status_reason)
                apply_staleness(run, now=now, stale_after=self.stale_after, observed=self.observed.get(path))
                status = (run.status, run.status_reason)
                run.status, run.status_reason = before
            if status != (run.status, run.status_reason):
                run.status, run.status_reason = status
                changed.append(run)
        return changed

    # -- applying changes ------------------------------------------------------------------
    def part_of(self, run_dir: Path, path: Path) -> Part:
        """Route a path inside ``run_dir`` to the part of the run it belongs to."""
        try:
            rel = path.relative_to(run_dir)
        except ValueError:
            return Part.OTHER
        if not rel.parts:
            return Part.OTHER
        head = rel.parts[0]
        if len(rel.parts) == 1 and (head in STATE_FILES or head.startswith("state.db")):
            return Part.STATE
        if head == "bindings" and is_binding_path(path, run_dir):
            return Part.BINDING
        if head == "agents" and len(rel.parts) >= 3:
            return Part.AGENT
        if head == "imports" and len(rel.parts) >= 2:
            return Part.IMPORT
        if len(rel.parts) == 1 and (head.endswith(".prose") or head in ("program.md", "root.prose.md")):
            return Part.PROGRAM
        return Part.OTHER

    def apply(self, paths: set[Path]) -> Applied:
        """Bring the runs up to date with changed ``paths`` (absolute). Never raises for I/O."""
        with self.lock:
            return self._apply(paths)

    def _apply(self, paths: set[Path]) -> Applied:
        out = Applied()
        now = self.clock()
        rediscover = False
        touched: dict[Path, set[Path]] = {}
        for path in paths:
            run_dir = owning_run(path, list(self.refs))
            if run_dir is not None and self.refs[run_dir].flat and run_dir.is_dir():
                # In the flat layout runs/ is itself a run; a new folder beside its parts is a run.
                rel = path.relative_to(run_dir).parts
                if rel and rel[0] not in STATE_FILES and rel[0] not in RUN_PARTS and not rel[0].endswith(".prose"):
                    run_dir = None
            if run_dir is None:
                rediscover = rediscover or _under_runs(path)
                continue
            touched.setdefault(run_dir, set()).add(path)
        if rediscover:
            before = set(self.refs)
            try:
                self.refs = {ref.path: ref for ref in find_runs(self.root)}
            except OSError:
                self.refs = {}
            for gone in before - set(self.refs):
                self.runs.pop(gone, None)
                out.runs_removed.append(gone)
            for new in set(self.refs) - before:
                if self._read(new) is not None:
                    out.runs_added.append(new)
        for run_dir, changed_paths in touched.items():
            if run_dir not in self.refs:
                continue
            if not run_dir.exists():
                self.refs.pop(run_dir, None)
                self.runs.pop(run_dir, None)
                out.runs_removed.append(run_dir)
                continue
            self.observed[run_dir] = now
            known = run_dir in self.runs
            change = self._update(run_dir, changed_paths, now)
            if change is not None:
                out.changed[run_dir] = change
                if not known:  # its folder came first, its state file only now: a new row
                    out.runs_added.append(run_dir)
        return out

    def _update(self, run_dir: Path, paths: set[Path], now: datetime) -> RunChange | None:
        run = self.runs.get(run_dir)
        if run_dir not in self.detailed and not run_dir.is_file():
            run = self._read(run_dir, summary=True)  # a run list row: the state file is enough
            return RunChange(run, {Part.STATE}, paths) if run is not None else None
        if run_dir.is_file():  # a narration file: read what was appended
            run = self._read(run_dir)
            return RunChange(run, {Part.STATE}, paths) if run is not None else None
        parts = {self.part_of(run_dir, p) for p in paths}
        if run is None or run.backend is not Backend.FILESYSTEM or parts & {Part.PROGRAM, Part.OTHER}:
            run = self._read(run_dir)  # a program or an unknown file: read the run again
            return RunChange(run, parts, paths) if run is not None else None
        if Part.STATE in parts:
            # The state file alone is read again; binding, agent and import reads are kept.
            run = reload_state(run, now=now, stale_after=self.stale_after, observed=self.observed.get(run_dir))
            self.runs[run_dir] = run
        for path in paths:
            part = self.part_of(run_dir, path)
            if part is Part.BINDING:
                _update_binding(run, run_dir, path)
            elif part is Part.AGENT:
                _update_agent(run, run_dir, path)
            elif part is Part.IMPORT:
                _update_import(run, run_dir, path, now, self.stale_after)
        run.status, run.status_reason = infer_status(
            run, now=now, stale_after=self.stale_after, observed=self.observed.get(run_dir)
        )
        return RunChange(run, parts, paths)


    # -- runs off disk (sources such as a PostgreSQL database) ---------------------------------
    # Kept apart from the file-system routing above: a source lists its runs, reads one in
    # full, and is polled (no file events). Its runs share ``runs``/``detailed`` with the rest.
    def _source_of(self, path: Path) -> RunSource | None:
        return next((s for s in self.sources if s.owns(path)), None)

    def _scan_sources(self) -> None:
        """List every source's runs (one query each). They join the list with the scan's
        result, not one by one: a row-by-row update of 10,000 rows costs seconds."""
        for source in self.sources:
            try:
                runs = source.list_runs()
            except OSError:
                continue  # its state (shown in the status line) says why
            with self.lock:
                for run in runs:
                    if run.path not in self.detailed:
                        self.runs[run.path] = run

    def _read_source(self, source: RunSource, path: Path, *, summary: bool) -> Run | None:
        if summary:
            return self.runs.get(path)
        try:
            run = source.open(path)
        except (OSError, KeyError):
            return self.runs.get(path)
        with self.lock:
            self.runs[path] = run
            self.detailed.add(path)
        return run

    def source_states(self) -> list[str]:
        """One line per source for the status bar (connected, reconnecting and why)."""
        return [source.state for source in self.sources]

    def poll_sources(self) -> Applied:
        """Ask every source what changed (new, changed and removed runs; the runs read in
        full). Blocking I/O: call it from a worker thread every ``poll_interval`` seconds."""
        out = Applied()
        now = self.clock()
        for source in self.sources:
            try:
                listed = source.poll_runs()
            except OSError:
                listed = None
            with self.lock:
                if listed is not None:
                    for run in listed.added:
                        self.runs[run.path] = run
                        out.runs_added.append(run.path)
                    for run in listed.changed:
                        self.runs[run.path] = run
                        out.changed[run.path] = RunChange(run, {Part.STATE}, {run.path})
                    for path in listed.removed:
                        self.runs.pop(path, None)
                        self.detailed.discard(path)
                        out.runs_removed.append(path)
                deltas = source.poll()
                for path, delta in deltas.items():
                    self.observed[path] = now
                    self.runs[path] = delta.run
                    # The run's own key says "more than bindings changed"; binding keys name those.
                    paths = set(delta.bindings) | ({path} if not delta.bindings or delta.events or delta.status else set())
                    out.changed[path] = RunChange(delta.run, {Part.STATE}, paths)
        return out


class RunSource(Protocol):
    """A place runs live that is not a folder (``backends.postgres.PostgresSource``)."""

    @property
    def state(self) -> str: ...
    @property
    def poll_interval(self) -> float: ...

    def owns(self, path: Path) -> bool: ...
    def list_runs(self) -> list[Run]: ...
    def open(self, path: Path) -> Run: ...
    def poll(self, path: Path | None = None) -> dict[Path, Delta]: ...
    def poll_runs(self) -> Any: ...


def _update_binding(run: Run, run_dir: Path, path: Path) -> None:
    index = next((i for i, b in enumerate(run.bindings) if b.path == path), None)
    if not path.exists():
        if index is not None:
            run.bindings.pop(index)
        return
    binding = read_binding(path, run_dir / "bindings")
    if index is None:
        run.bindings.append(binding)
    else:
        old = run.bindings[index]
        if binding.kind is None:
            binding.kind = old.kind
        run.bindings[index] = binding


def _update_agent(run: Run, run_dir: Path, path: Path) -> None:
    folder = run_dir / "agents" / path.relative_to(run_dir / "agents").parts[0]
    fresh = agent_files.read_agent_dir(folder, "execution") if folder.is_dir() else None
    run.agents = [a for a in run.agents if a.path != folder]
    if fresh is not None:
        run.agents.append(fresh)
        run.agents.sort(key=lambda a: a.name)


def _update_import(run: Run, run_dir: Path, path: Path, now: datetime, stale_after: float) -> None:
    handle = path.relative_to(run_dir / "imports").parts[0]
    folder = run_dir / "imports" / handle
    handle = visible_name(handle)  # as load_run names imports
    run.imports = [i for i in run.imports if i.import_handle != handle]
    if folder.is_dir():
        child = load_run(folder, now=now, stale_after=stale_after)
        child.import_handle = handle
        run.imports.append(child)
        run.imports.sort(key=lambda i: i.import_handle or "")


def _under_runs(path: Path) -> bool:
    """True for a path inside a ``runs`` folder: the only places a new run can appear."""
    return "runs" in path.parts[:-1]


def _ref_order(ref: RunRef) -> float:
    """Newest first before any run is read: the run id's time, else the folder's."""
    started = run_id_time(ref.path.name)
    if started is not None:
        return started.timestamp()
    try:
        return ref.path.stat().st_mtime
    except OSError:
        return 0.0


def placeholder(ref: RunRef) -> Run:
    """A run list row for a run not read yet: its id and the start time its id gives."""
    return Run(id=visible_name(ref.path.name), path=ref.path, started=run_id_time(ref.path.name),
               status_reason="not read yet")
