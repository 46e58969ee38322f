"""The workspace: the runs below one path, kept current as their files change.

Textual-free. The live pipeline (``pipeline.py``) hands batches of changed paths to
``apply`` in a worker thread; each path is routed to the run that owns it (a dictionary
walk up the path's parents), each path is classified once by the run's backend
(``RunBackend.classify``: state, binding, agent...) and the backend applies the batch with
that classification (``RunBackend.apply``: an appended event log is tailed, a binding
re-reads that binding...), returning a ``Delta`` that carries it on (``Delta.parts``) to the
sinks. A folder appearing in a ``runs`` folder is a new run, read at once. Formats are
reached through the backend protocol and the registry only.

Locking: ``lock`` guards the dictionaries (``refs``, ``runs``, ``detailed``, ``observed``)
and is never held while reading disk; each run has its own lock (``run_lock``) so a
run is applied by one thread at a time, while a full read (``detail``) reads without it
and only swaps its result in under it, so live changes are never held up by a full read;
what the live worker applied meanwhile to the run it replaces (a summary, a first screen)
is applied again to it then (``_caught_up``), so a write made during the read is not lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.backends import NotARunError, backend_of, find_runs, open_run
from prose_tui.backends.common.contained import OUTSIDE_RUN
from prose_tui.backends.common.foreground import background_read
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER, apply_staleness, run_id_time
from prose_tui.backends.common.superseded import ReadSuperseded, superseded_by
from prose_tui.backends.common.text import visible_name
from prose_tui.backends.discover import RUN_PARTS, RunRef, in_flat_run, runs_roots
from prose_tui.backends.protocol import RunBackend
from prose_tui.backends.registry import backend_for, backend_or_default, backends
from prose_tui.live.changes import Applied, Part, RunChange
from prose_tui.live.sources import RunSource, SourceRuns
from prose_tui.model import Backend, Delta, Run, TraceLine

__all__ = ["Applied", "Part", "RunChange", "RunSource", "RunTable", "Workspace", "placeholder"]

PARTIAL_EVERY = 8 * 1024 * 1024  # bytes of a narration file between partial first screens


class _SummaryRead:
    """A run list summary of a run under way: ``superseded`` is set by a full read of the
    same run that began meanwhile (the summary stops at its next chunk:
    ``backends.common.superseded``); ``done`` once the summary read returned, either way."""

    __slots__ = ("done", "superseded")

    def __init__(self) -> None:
        self.superseded = threading.Event()
        self.done = threading.Event()


class RunTable(dict[Path, Run]):
    """``Workspace.runs``: run folder -> run, counting its writes (``version``), so what
    depends on every run (the next time a running run may turn interrupted) is looked for
    again only after a run was stored or dropped, not on every tick."""

    version = 0

    def __setitem__(self, path: Path, run: Run) -> None:
        self.version += 1
        super().__setitem__(path, run)

    def __delitem__(self, path: Path) -> None:
        self.version += 1
        super().__delitem__(path)

    def pop(self, path: Path, *default):
        self.version += 1
        return super().pop(path, *default)

    def popitem(self) -> tuple[Path, Run]:
        self.version += 1
        return super().popitem()

    def setdefault(self, path: Path, run: Run) -> Run:
        self.version += 1
        return super().setdefault(path, run)

    def update(self, *args, **kwargs) -> None:
        self.version += 1
        super().update(*args, **kwargs)

    def clear(self) -> None:
        self.version += 1
        super().clear()


class Workspace(SourceRuns):
    """Every run below ``root``; ``runs`` maps run folder to its latest ``Run``. Runs off disk
    (``sources``, a PostgreSQL database) join them through :class:`~prose_tui.live.sources.SourceRuns`.

    ``stale_after`` (seconds) feeds status inference. ``clock`` returns the current UTC time
    (tests fix it). Raises ``FileNotFoundError`` from ``scan`` when ``root`` is missing.
    ``disk=False``: the sources' runs alone (the target was a database URL); nothing below
    ``root`` is read or watched.
    """

    def __init__(self, root: Path, *, stale_after: float = DEFAULT_STALE_AFTER, clock=None,
                 sources: Sequence[RunSource] = (), disk: bool = True) -> None:
        self.root = root.resolve()
        self.disk = disk
        self.sources: list[RunSource] = list(sources)  # runs off disk (a PostgreSQL database)
        self.stale_after = stale_after
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.refs: dict[Path, RunRef] = {}
        self.runs: RunTable = RunTable()  # counts its writes: a status timer looks at the runs again only after one
        # The start-up scan, "open in full" and the live worker run in threads: every change to
        # runs/detailed/refs/observed happens under this lock, which no one holds during I/O.
        self.lock = threading.RLock()
        self._run_locks: dict[Path, threading.RLock] = {}
        self._full_reads: dict[Path, threading.Lock] = {}  # one full read of a run at a time
        self._summarising: dict[Path, _SummaryRead] = {}  # run list summaries under way (a full read stops them)
        # Runs being read in full -> the paths the live worker applied meanwhile to the run
        # that read replaces (a summary, a first screen), with their part: applied again to
        # the full read once it is swapped in (``_caught_up``).
        self._seen_during_read: dict[Path, dict[Path, Part]] = {}
        # ``on_read(path, what)`` is told of each run list summary and full read, on the thread
        # reading: "summary" and "full" when one begins, "superseding" when a full read stopped
        # a summary under way, "summary superseded" when that summary gave up, "summary
        # read"/"full read" when one finished (tests and benchmarks count parses with it).
        self.on_read: Callable[[Path, str], None] | None = None
        # ``on_full_read(run)``: a run just read in full from disk, on the reading thread, before it
        # takes the place of the run kept at its path (a UI prepares showing it there, issue 33).
        self.on_full_read: Callable[[Run], None] | None = None
        self.observed: dict[Path, datetime] = {}
        self.detailed: set[Path] = set()  # runs read in full; the others are summaries
        # A run with no parsed trace: its raw trace (``RunBackend.raw_trace``), read by the
        # thread that read the run, per run folder with the version it was read for (``raw_trace``).
        self._raw_traces: dict[Path, tuple[tuple[object, ...], tuple[list[TraceLine], str | None]]] = {}

    # -- reading -------------------------------------------------------------------------
    def discover(self) -> list[RunRef]:
        """Find the runs below ``root`` (no run is read), newest first by the time in the run id
        (else the folder's time). Runs that disappeared are forgotten."""
        refs = find_runs(self.root) if self.disk else []
        with self.lock:
            self.refs = {ref.path: ref for ref in refs}
            for path in [p for p in self.runs if p not in self.refs and self.source_of(p) is None]:
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
        first = self.read_in_full_first(refs, first) if detail_first else None  # None: summaries only
        ordered = sorted(refs, key=lambda r: r.path != first)
        for done, ref in enumerate(ordered, start=1):
            if ref.path != first and self._await_full_read(ref.path):
                run = self.runs.get(ref.path)  # opened meanwhile: its full read, not a second parse beside it
            else:
                run = self._read(ref.path, progress=progress, partial=partial, summary=ref.path != first,
                                 supersedable=True)
            if run is not None and on_run is not None:
                on_run(run)
            if progress is not None:
                progress(done, len(refs), "runs")
        self._scan_sources()
        return self.sorted_runs()

    def read_in_full_first(self, refs: list[RunRef], first: Path | None) -> Path | None:
        """The run ``scan`` reads in full, before the others: ``first`` when it is among
        the runs found (``refs``, from ``discover``), else the newest; ``None`` for none."""
        if not refs:
            return None
        return first if first is not None and first in self.refs else refs[0].path

    def summary(self, path: Path) -> Run | None:
        """The run at ``path`` as a run list row needs it (state file only), read now; when
        a full read of it is under way, that read's run (the state file is parsed once)."""
        if self._await_full_read(path):
            return self.runs.get(path)
        return self._read(path, summary=True, supersedable=True)

    def _await_full_read(self, path: Path) -> bool:
        """Wait for a full read of ``path`` under way (another thread's); True when the run
        is read in full now. Never call it holding the run's lock (a full read takes it)."""
        if path not in self.detailed and self._full_read_lock(path).locked():
            with self._full_read_lock(path):
                pass
        with self.lock:
            return path in self.detailed and path in self.runs

    def first_screen(self, path: Path) -> Run | None:
        """A first screen of the run on disk at ``path`` read in a few milliseconds, for a
        run not read in full whose whole read is slow (a long event log's header and last
        64 KiB: ``RunBackend.open_first_screen``; its warnings say the rest is loading),
        shown while :meth:`detail` reads it whole. ``None`` when the run is read in full
        already (or is a source's), has no such shortcut, or cannot be read (the whole
        read says why). Kept as the run at ``path`` when no other read of it is (the
        start-up read has not reached it yet), so live changes apply to it (the backend
        follows it from where it stopped) until a summary or the whole read replaces it."""
        if self.source_of(path) is not None:
            return None
        with self.lock:
            if path in self.detailed:
                return None
        backend = backend_for(path)
        if backend is None:
            return None
        try:
            run = backend.open_first_screen(path, now=self.clock(), stale_after=self.stale_after,
                                            observed=self.observed.get(path))
        except OSError:
            return None
        if run is not None:
            with self.lock:
                if path in self.refs and path not in self.runs:
                    self.runs[path] = run
        return run

    def detail(self, path: Path, *, first_screen: Callable[[Run], None] | None = None) -> Run | None:
        """The run at ``path`` read in full (bindings, agents, imports); kept up to date from now on.
        ``first_screen(run)``: for a run kept in a source (a database), called on this thread
        with a copy of the run's first screen (its last rows) before the rest is read."""
        with self.lock:
            if path in self.detailed and path in self.runs:
                return self.runs[path]
        return self._read(path, summary=False, first_screen=first_screen)

    def _read(self, path: Path, *, progress=None, partial=None, summary: bool | None = None,
              first_screen: Callable[[Run], None] | None = None, supersedable: bool = False) -> Run | None:
        """Read the run at ``path`` (see ``_read_now``). ``supersedable``: a summary that a full
        read of the same run, begun meanwhile, stops; it then returns that read's run."""
        if summary is True and supersedable:
            run = self._read_summary(path, progress=progress, partial=partial)
        else:
            run = self._read_once(path, progress=progress, partial=partial, summary=summary,
                                  first_screen=first_screen)
        if run is not None:
            self.keep_raw_trace(run)
        return run

    def _read_once(self, path: Path, *, progress=None, partial=None, summary: bool | None = None,
                   first_screen: Callable[[Run], None] | None = None) -> Run | None:
        if summary is False:
            # One full read of a run at a time: the start-up read and "open in full" often ask
            # for the same run at once; the second waits and takes the first's result, instead
            # of parsing the run again (two parses of a 20,000-event log were both kept alive:
            # one by the run list, one by the screen).
            # A summary of the run under way (the run list's, at start-up) is stopped first:
            # it and this read would parse the same log side by side (issue 33).
            with self._full_read_lock(path):
                with self.lock:
                    if path in self.detailed and path in self.runs:
                        return self.runs[path]
                    summarising = self._summarising.get(path)
                if summarising is not None:
                    summarising.superseded.set()
                    self._told(path, "superseding")
                    summarising.done.wait()
                self._told(path, "full")
                with self.lock:
                    self._seen_during_read[path] = {}  # from here on, until the swap (``_read_now``)
                try:
                    run = self._read_now(path, progress=progress, partial=partial, summary=False,
                                         first_screen=first_screen)
                finally:
                    with self.lock:
                        self._seen_during_read.pop(path, None)
                self._told(path, "full read")
                return run
        return self._read_now(path, progress=progress, partial=partial, summary=summary)

    def _read_summary(self, path: Path, *, progress=None, partial=None) -> Run | None:
        """A run list summary of ``path`` that a full read begun meanwhile supersedes: the
        summary stops at its next chunk and the full read's run is returned (one parse of a
        long log, not two side by side). A second summary of a run under way reads alone."""
        summarising = _SummaryRead()
        with self.lock:
            mine = self._summarising.setdefault(path, summarising) is summarising
        superseded = False
        try:
            self._told(path, "summary")
            with superseded_by(summarising.superseded if mine else None):
                run = self._read_once(path, progress=progress, partial=partial, summary=True)
        except ReadSuperseded:
            superseded = True
        finally:
            if mine:
                with self.lock:
                    self._summarising.pop(path, None)
                summarising.done.set()
        if superseded:
            self._told(path, "summary superseded")
            self._await_full_read(path)
            with self.lock:
                return self.runs.get(path)
        self._told(path, "summary read")
        return run

    def _told(self, path: Path, what: str) -> None:
        if self.on_read is not None:
            self.on_read(path, what)

    def _full_read_lock(self, path: Path) -> threading.Lock:
        with self.lock:
            lock = self._full_reads.get(path)
            if lock is None:
                lock = self._full_reads[path] = threading.Lock()
            return lock

    def _read_now(self, path: Path, *, progress=None, partial=None, summary: bool | None = None,
                  first_screen: Callable[[Run], None] | None = None) -> Run | None:
        source = self.source_of(path)
        if source is not None:
            return self._read_source(source, path, summary=path not in self.detailed if summary is None else summary,
                                     first_screen=first_screen)
        with self.lock:
            ref = self.refs.get(path)
            if summary is None:
                summary = path not in self.detailed
        if ref is not None and ref.flat and path.is_file():
            backend = backend_for(path)
            if backend is not None and backend.grows:
                with self.lock:
                    self.detailed.add(path)
                return self._read_growing(backend, path, progress=progress, partial=partial)
        first: Run | None = None
        if not summary and partial is not None and path not in self.runs:
            # A long log's newest screenful first (its tail), then the whole read behind it.
            first = self.first_screen(path)
            if first is not None:
                partial(first)
        try:
            # Read in the background: it gives way to a live change on its way to the screen
            # (a long log's whole read takes seconds; its first screen is followed meanwhile).
            with background_read():
                run = open_run(path, now=self.clock(), stale_after=self.stale_after,
                               observed=self.observed.get(path), summary=summary)
        except (NotARunError, OSError):
            with self.lock:
                self.runs.pop(path, None)
            return None
        with self.lock:
            if summary and path in self.detailed:
                # Read in full meanwhile (another thread): a summary must not replace it.
                return self.runs.get(path, run)
        if not summary:
            if self.on_full_read is not None:
                with background_read():  # its work over every event gives way to live changes too
                    self.on_full_read(run)
            # A full read swaps in under the run's lock: a live apply of the summary finishes
            # first, and the next one applies to this read. What the live worker applied to the
            # run it replaces while it was read (a snapshot rewritten, a binding written, events
            # appended to a first screen) is applied again to it now, under the same lock: read
            # before those writes, it would show the run as it was until the VM wrote again.
            with self.run_lock(path):
                with self.lock:
                    self.detailed.add(path)
                    self.runs[path] = run
                    seen = self._seen_during_read.pop(path, None)
                if seen:
                    run = self._caught_up(path, run, seen)
            return run
        with self.lock:
            self.runs[path] = run
        return run

    def _read_growing(self, backend: RunBackend, path: Path, *, progress=None, partial=None) -> Run | None:
        """A file that only grows (a narration: ``RunBackend.grows``) is read on from where the
        last read stopped; ``partial`` gets the run so far every ``PARTIAL_EVERY`` bytes."""
        shown = [0]

        def report(done: int, total: int, so_far: Run) -> None:
            if progress is not None:
                progress(done, total, "bytes")
            if partial is not None and done - shown[0] >= PARTIAL_EVERY and done < total:
                shown[0] = done
                partial(so_far)

        with self.run_lock(path):
            run = backend.open_growing(path, report)
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
        if not self.disk:
            return []
        roots = {ref.runs_root for ref in self.refs.values()} or set(runs_roots(self.root))
        if self.root.is_file():
            roots = {self.root}
        # No runs folder yet: watch nothing (a whole project is too much to watch); the
        # explorer rescans every few seconds until one appears.
        return sorted(r for r in roots if r.exists())

    def refresh_statuses(self, paths: Iterable[Path] | None = None) -> list[Run]:
        """Re-infer statuses as time passes (a quiet run becomes interrupted): of the runs
        at ``paths``, else of every run (see ``live.status_timer`` for which can change);
        returns the runs whose status or reason changed."""
        changed = []
        now = self.clock()
        with self.lock:
            if paths is None:
                items = list(self.runs.items())
            else:
                items = [(path, self.runs[path]) for path in paths if path in self.runs]
        rules: dict[Backend, RunBackend] = {}  # one backend lookup per kind, not per run (10,000 database runs)
        for path, run in items:
            backend = rules.get(run.backend)
            if backend is None:
                try:
                    backend = rules[run.backend] = backend_of(run)
                except LookupError:
                    backend = rules[run.backend] = backend_or_default(None)
            # The backend's own rule (a tailed log, a Reactor ledger), else staleness.
            status = backend.status(run, now=now, stale_after=self.stale_after, observed=self.observed.get(path))
            if status != (run.status, run.status_reason):
                run.status, run.status_reason = status
                changed.append(run)
        return changed

    # -- applying changes ------------------------------------------------------------------
    def part_of(self, run_dir: Path, path: Path) -> Part:
        """The part of the run at ``run_dir`` a path inside it belongs to, as the run's
        backend classifies it (the run folder layout for a run not read yet)."""
        run = self.runs.get(run_dir)  # one dict read (atomic): the UI thread asks, never waiting on the lock
        return backend_or_default(run).classify(run_dir, path)

    def owner(self, path: Path) -> Path | None:
        """The run folder (or narration file) ``path`` belongs to: a walk up its parents in a
        dictionary of run paths (cost: the path's depth, not the number of runs). In the flat
        layout a folder beside the run's own parts is not the flat run's."""
        refs = self.refs
        for candidate in (path, *path.parents):
            ref = refs.get(candidate)
            if ref is None:
                continue
            if ref.flat and candidate.is_dir() and candidate != path:
                rel = path.relative_to(candidate).parts
                if rel and not in_flat_run(rel[0]):
                    return None
            return candidate
        return None

    def run_lock(self, path: Path) -> threading.RLock:
        """The lock one run's reads and applies take turns under (never the workspace lock).
        Reentrant: an apply that finds its run gone reads it again under the same lock."""
        with self.lock:
            lock = self._run_locks.get(path)
            if lock is None:
                lock = self._run_locks[path] = threading.RLock()
            return lock

    def apply(self, paths: set[Path]) -> Applied:
        """Bring the runs up to date with changed ``paths`` (absolute). Never raises for I/O.

        Runs are found by :meth:`owner`; each run's backend applies its paths
        (``RunBackend.apply``) and the resulting ``Delta`` is in ``Applied.deltas``. The
        workspace lock guards the dictionaries only; disk is read outside it, under the
        run's own lock."""
        out = Applied()
        now = self.clock()
        touched: dict[Path, set[Path]] = {}
        unowned: list[Path] = []
        for path in paths:
            run_dir = self.owner(path)
            if run_dir is None:
                unowned.append(path)
            else:
                touched.setdefault(run_dir, set()).add(path)
        if unowned:
            self._discover_new(unowned, out)
        for run_dir, changed_paths in touched.items():
            if run_dir not in self.refs:
                continue
            if not run_dir.exists():
                with self.lock:
                    self.refs.pop(run_dir, None)
                    self.runs.pop(run_dir, None)
                    self.detailed.discard(run_dir)
                _forget(run_dir)
                out.runs_removed.append(run_dir)
                continue
            with self.lock:
                self.observed[run_dir] = now
                known = run_dir in self.runs
            change, delta = self._update(run_dir, changed_paths, now)
            if change is not None:
                out.changed[run_dir] = change
                if delta is not None:
                    out.deltas[run_dir] = delta
                if not known:  # its folder came first, its state file only now: a new row
                    out.runs_added.append(run_dir)
        return out

    def rediscover(self) -> Applied:
        """Walk the project again (a runs folder appeared): new runs are read as summaries,
        vanished ones dropped."""
        out = Applied()
        if not self.disk:
            return out
        try:
            found = find_runs(self.root)
        except OSError:
            return out
        with self.lock:
            before = set(self.refs)
            for ref in found:
                self.refs.setdefault(ref.path, ref)
            gone = before - {r.path for r in found}
            for path in gone:
                self.refs.pop(path, None)
                self.runs.pop(path, None)
                self.detailed.discard(path)
        out.runs_removed.extend(gone)
        for ref in found:
            if ref.path not in before and self._read(ref.path) is not None:
                out.runs_added.append(ref.path)
        return out

    def _discover_new(self, paths: list[Path], out: Applied) -> None:
        """Paths no run owns: a new run folder in a known ``runs`` folder is read at once; a
        path below the project but in no known ``runs`` folder (a new one) walks the project."""
        with self.lock:
            roots = {ref.runs_root for ref in self.refs.values()}
        candidates: set[Path] = set()
        walk = False
        for path in paths:
            root = next((r for r in (path, *path.parents) if r in roots), None)
            if root is None:
                walk = walk or _under_runs(path)
                continue
            rel = path.relative_to(root).parts
            if not rel or rel[0].startswith(".") or rel[0] in RUN_PARTS:
                continue
            candidate = root / rel[0]
            if candidate.is_dir() and not candidate.is_symlink():
                candidates.add(candidate)
        new_refs: list[RunRef] = []
        if walk and self.disk:
            try:
                found = find_runs(self.root)
            except OSError:
                found = []
            with self.lock:
                new_refs = [r for r in found if r.path not in self.refs]
        for candidate in candidates:
            root = next(r for r in (candidate, *candidate.parents) if r in roots)
            with self.lock:
                if candidate not in self.refs:
                    new_refs.append(RunRef(candidate, root))
        for ref in new_refs:
            with self.lock:
                self.refs[ref.path] = ref
            if self._read(ref.path) is not None:
                out.runs_added.append(ref.path)

    def _update(self, run_dir: Path, paths: set[Path], now: datetime) -> tuple[RunChange | None, Delta | None]:
        """Apply ``paths`` to the run at ``run_dir``: each path is classified here, once, and
        the classification goes with the change to the backend's ``apply`` and on to the
        sinks (``Delta.parts``, ``RunChange.kinds``)."""
        with self.run_lock(run_dir):
            with self.lock:
                run = self.runs.get(run_dir)
                detailed = run_dir in self.detailed
                read_in_full = self._seen_during_read.get(run_dir)
            backend = backend_or_default(run)
            kinds = {p: backend.classify(run_dir, p) for p in paths}
            parts = set(kinds.values())
            if read_in_full is not None:
                # A full read of the run is under way, taken maybe before this change: it is
                # applied to that read too once it is swapped in (under this lock, so not yet).
                with self.lock:
                    read_in_full.update(kinds)
            if run is None:
                fresh = self._read(run_dir, summary=not detailed)
                if fresh is None:
                    return None, None
                whole = Delta.whole(fresh, paths)
                whole.parts = kinds
                return RunChange(fresh, parts, paths, kinds), whole
            follows = backend.summary_parts
            if not detailed and follows is not None:
                # A run list row follows its state file only; the rest is read when it is opened.
                kinds = {p: kind for p, kind in kinds.items() if kind in follows}
                if not kinds:
                    return None, None
            try:
                delta = backend.apply(run, kinds, now=now, stale_after=self.stale_after,
                                      observed=self.observed.get(run_dir))
            except (OSError, NotARunError):
                with self.lock:
                    self.runs.pop(run_dir, None)
                return None, None
            delta.parts = kinds
            with self.lock:
                if self.runs.get(run_dir) is run:
                    self.runs[run_dir] = delta.run
        self.keep_raw_trace(delta.run)
        return RunChange(delta.run, parts, set(kinds), kinds), delta

    def _caught_up(self, path: Path, run: Run, seen: dict[Path, Part]) -> Run:
        """``run``, the full read just swapped in at ``path`` (the caller holds the run's
        lock), brought up to date with ``seen``: the paths the live worker applied, while it
        was read, to the run it replaced, with their parts (``_update``). The backend applies
        them as a live change (``RunBackend.apply``: a snapshot's ``state.md`` read again, a
        binding re-read, a log tailed from where the read stopped), so each is read once more
        whether or not the read had seen it. Returns the run kept at ``path`` now (a new
        object when the backend read a part whole again); ``run`` when that failed (the next
        live change says why)."""
        try:
            delta = backend_or_default(run).apply(run, seen, now=self.clock(), stale_after=self.stale_after,
                                                  observed=self.observed.get(path))
        except (OSError, NotARunError):
            return run
        with self.lock:
            if self.runs.get(path) is run:
                self.runs[path] = delta.run
        self.keep_raw_trace(delta.run)  # (as ``_update`` does: the change may have taken the trace away)
        return delta.run

    # -- a run with no parsed trace ------------------------------------------------------
    def keep_raw_trace(self, run: Run) -> None:
        """On the thread that read ``run`` (never the UI's): when it, or an import of it, has
        no parsed trace, read its raw trace (``RunBackend.raw_trace``: the state file as it
        is, else the program) once per version of its state file, for ``raw_trace``."""
        for each in (run, *run.imports):
            if each.trace or OUTSIDE_RUN in each.warnings:
                self._raw_traces.pop(each.path, None)
                continue
            key = _raw_key(each)
            kept = self._raw_traces.get(each.path)
            if kept is None or kept[0] != key:
                self._raw_traces[each.path] = (key, backend_or_default(each).raw_trace(each))

    def raw_trace(self, run: Run) -> tuple[list[TraceLine], str | None] | None:
        """``run``'s raw trace (lines, the banner saying why) as ``keep_raw_trace`` read it
        for this version of its state file; ``None`` when it was not read (the caller reads
        it, off the UI thread)."""
        kept = self._raw_traces.get(run.path)
        return kept[1] if kept is not None and kept[0] == _raw_key(run) else None

    def page_back(self, path: Path, limit: int) -> int:
        """Put up to ``limit`` older trace lines at the start of the run's trace, for
        backends whose runs show a window of a longer table (SQLite: ``older``); returns how
        many (0 when there are none or the backend does not page). Under the run's lock, so
        a live apply never sees the trace half-paged."""
        with self.lock:
            run = self.runs.get(path)
        if run is None:
            return 0
        try:
            backend = backend_of(run)
        except LookupError:
            return 0
        with self.run_lock(path):
            with self.lock:
                if self.runs.get(path) is not run:
                    return 0
            return int(backend.older(run, limit))


def _forget(path: Path) -> None:
    for backend in backends():
        backend.forget(path)


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


def _raw_key(run: Run) -> tuple[object, ...]:
    """The version of a run's state file a raw trace was read for."""
    return run.path, run.state_mtime, run.encrypted
