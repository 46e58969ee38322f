"""``prose-tui record [PATH|URL]``: journal runs without a UI (issue 3).

For a run started and left over SSH: discover the runs below ``PATH``
(:func:`prose_tui.backends.find_runs`), journal what they hold now, then watch and journal
every change until stopped (SIGINT, SIGTERM or SIGHUP). The journal lives under the user
state folder (:class:`~prose_tui.history.journal.Journal`), never inside a run; a run
opened later replays it. No Textual here.

A PostgreSQL database (the target ``URL``, or ``--postgres URL`` beside ``PATH``) keeps its
own history in its tables, so nothing of it is journaled: :func:`follow_sources` prints its
runs as they appear, change status or go, until stopped. Every line printed passes through
:func:`~prose_tui.backends.common.dburl.redact`.
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.backends import find_runs
from prose_tui.backends.common.dburl import redact
from prose_tui.backends.discover import runs_roots
from prose_tui.history.journal import Journal, JournalEntry, run_files
from prose_tui.live.watcher import shared_watcher

__all__ = ["describe", "follow_sources", "main_record", "record"]

OnChange = Callable[[Path, list[JournalEntry]], None]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _run_dirs(path: Path) -> list[Path]:
    return sorted({ref.path.resolve() for ref in find_runs(path) if ref.path.is_dir()})


def _watch_roots(path: Path) -> list[Path]:
    """The ``runs`` folders below ``path``; the path itself when there are none yet (or it is one run)."""
    path = path.resolve()
    if path.is_file():
        return [path.parent]
    roots = [r for r in runs_roots(path) if r.is_dir()]
    if not roots or any(path == r or r in path.parents for r in roots):
        return [path]
    return roots


class _StopWatching:
    """The ``stop_event`` handed to ``watchfiles.watch``: ``stop`` itself, plus a call of
    ``on_watching`` the first time the watcher asks, which it does only once its watches are
    registered (watchfiles creates them before it starts waiting)."""

    def __init__(self, stop: threading.Event, on_watching: Callable[[], None] | None) -> None:
        self.stop = stop
        self.on_watching = on_watching

    def is_set(self) -> bool:
        if self.on_watching is not None:
            on_watching, self.on_watching = self.on_watching, None
            on_watching()
        return self.stop.is_set()


def record(path: Path, *, stop: threading.Event, journal: Journal | None = None,
           on_change: OnChange | None = None, debounce_ms: int = 30,
           on_watching: Callable[[], None] | None = None) -> int:
    """Journal every run below ``path`` until ``stop`` is set; returns the entries written.

    First each run's current files are journaled (only what the journal does not hold
    yet is added), then the process's one watcher (``live.watcher``) reports changes,
    grouped over its debounce, and each batch is journaled with the time it was seen
    (``debounce_ms`` is kept for callers; the shared watcher's debounce applies).
    A folder that appears under a ``runs`` folder is picked up as a new run.
    ``on_change(run_dir, entries)`` is called after each batch that added entries;
    ``on_watching()`` once, as soon as the watcher is registered (changes from then on are seen).
    Raises ``FileNotFoundError`` when ``path`` does not exist; returns promptly (within
    about 50 ms plus the batch in hand) once ``stop`` is set.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    journal = journal if journal is not None else Journal()
    known = _run_dirs(path)
    total = 0

    def take(run_dir: Path, changed: set[Path]) -> None:
        nonlocal total
        try:
            added = journal.record_entries(run_dir, changed, _now())
        except OSError as exc:  # a vanished run or a full disk: say so, keep going
            print(f"prose-tui record: {run_dir.name}: {exc}", file=sys.stderr)
            return
        total += len(added)
        if added and on_change is not None:
            on_change(run_dir, added)

    for run_dir in known:
        take(run_dir, run_files(run_dir))
    roots = _watch_roots(path)
    batches: queue.Queue[set[Path]] = queue.Queue()
    watcher = shared_watcher()  # the process's one watcher (the explorer's, when both run)
    sub = watcher.subscribe(roots, batches.put, on_ready=lambda: batches.put(set()))
    try:
        while not stop.is_set():
            try:
                batch = batches.get(timeout=0.05)
            except queue.Empty:
                continue
            while True:  # merge what queued up meanwhile
                try:
                    batch |= batches.get_nowait()
                except queue.Empty:
                    break
            if not batch:
                # The watches are installed: journal what changed before they were.
                for run_dir in known:
                    take(run_dir, run_files(run_dir))
                if on_watching is not None:
                    on_watching()  # a ready signal: changes from now on are seen
                    on_watching = None
                continue
            touched: dict[Path, set[Path]] = {}
            unknown = False
            for changed in batch:
                owner = _owner(changed, known) or _owner(_resolved(changed), known)
                if owner is None:
                    unknown = True
                    continue
                touched.setdefault(owner, set()).add(_resolved(changed))
            if unknown:
                try:
                    found = _run_dirs(path)
                except OSError:
                    found = known
                for run_dir in sorted(set(found) - set(known)):
                    known.append(run_dir)
                    take(run_dir, run_files(run_dir))
            for run_dir, changed_paths in sorted(touched.items()):
                take(run_dir, changed_paths)
    finally:
        watcher.unsubscribe(sub)
    return total


def _owner(path: Path, runs: list[Path]) -> Path | None:
    """The deepest run folder holding ``path``: a walk up its parents (cost: its depth)."""
    known = set(runs)
    for candidate in (path, *path.parents):
        if candidate in known:
            return candidate
    return None


def _resolved(path: Path) -> Path:
    try:
        return path.parent.resolve() / path.name
    except OSError:
        return path


def describe(run_dir: Path, entry: JournalEntry) -> str:
    """One line for a journaled change: ``run-id: what changed``."""
    try:
        rel = entry.path.relative_to(run_dir).as_posix()
    except ValueError:
        rel = entry.path.name
    what = {
        "state": f"{rel} revision {entry.sha256[:12] if entry.sha256 else '?'}",
        "binding": f"binding {rel} ({entry.size} bytes)",
        "segment": f"segment {rel}",
        "removed": f"removed {rel}",
    }.get(entry.kind, rel)
    return f"{run_dir.name}: {what}"


def _say(text: str, *, err: bool = False) -> None:
    from prose_tui.remote import shown  # a remote target: the host's paths, not the local copy's

    print(redact(shown(text)), file=sys.stderr if err else sys.stdout, flush=True)


def follow_sources(sources: list, *, stop: threading.Event, on_line: Callable[[str], None],
                   on_watching: Callable[[], None] | None = None) -> int:
    """Follow the run lists of ``sources`` (``backends.postgres.PostgresSource``) until
    ``stop`` is set: one ``on_line`` per run that appears (``RUN: new run (status)``), changes
    status (``RUN: running → completed``) or is deleted, and one when a database becomes
    unreachable or answers again. Returns the number of run changes seen. Each database is
    asked at most every few seconds (``PostgresSource.poll_runs``). Raises ``OSError``
    (``DatabaseUnavailable``, a safe message) when a database cannot be read at the start."""
    statuses: dict[Path, str] = {}
    for source in sources:
        for run in source.list_runs():
            statuses[run.path] = run.status.value
    if on_watching is not None:
        on_watching()
    changes = 0
    down: dict[int, str] = {}
    while not stop.is_set():
        for source in sources:
            try:
                listed = source.poll_runs()
            except OSError as exc:
                if down.get(id(source)) != str(exc):
                    down[id(source)] = str(exc)
                    on_line(f"{source.label}: {exc}")
                continue
            if down.pop(id(source), None) is not None:
                on_line(f"{source.label}: reachable again")
            for run in listed.added:
                statuses[run.path] = run.status.value
                on_line(f"{run.id}: new run ({run.status.value}) in {source.label}")
                changes += 1
            for run in listed.changed:
                before, statuses[run.path] = statuses.get(run.path), run.status.value
                if before != run.status.value:
                    on_line(f"{run.id}: {before or '?'} → {run.status.value}")
                    changes += 1
            for path in listed.removed:
                statuses.pop(path, None)
                on_line(f"{source.run_id_of(path) or path.name}: deleted from {source.label}")
                changes += 1
        stop.wait(min((s.poll_interval for s in sources), default=0.5))
    return changes


def main_record(argv_path: Path | None, *, sources: list | tuple = ()) -> int:
    """What ``prose-tui record [PATH|URL]`` runs; returns the exit code.

    Journals the runs below ``argv_path`` (``None``: no folder) and follows the run lists of
    ``sources`` (databases: printed, not journaled; see :func:`follow_sources`). Prints one
    line per journaled change and a summary when stopped. SIGINT, SIGTERM and SIGHUP stop it
    cleanly (exit 0). A missing path or a database that cannot be read prints one line to
    stderr and returns 1.
    """
    path = Path(argv_path) if argv_path is not None else None
    if path is not None and not path.exists():
        _say(f"prose-tui record: {path}: no such file or folder", err=True)
        return 1
    stop = threading.Event()
    journal = Journal()
    previous: dict[int, object] = {}

    def handler(signum, _frame) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                previous[signum] = signal.signal(signum, handler)
    runs_seen: set[Path] = set()

    def on_change(run_dir: Path, entries: list[JournalEntry]) -> None:
        runs_seen.add(run_dir)
        for entry in entries:
            _say(describe(run_dir, entry))

    total = 0
    follower: threading.Thread | None = None
    followed: list[int] = []
    try:
        for source in sources:  # an unreachable database says so before anything starts
            source.list_runs()
        if sources:
            count = sum(len(s.summaries) for s in sources)
            where = ", ".join(s.label for s in sources)
            _say(f"following {count} run{'s' if count != 1 else ''} in PostgreSQL {where} (a database keeps its own "
                 "history: nothing of it is journaled)" + ("; Ctrl-C to stop" if path is None else ""))

            def follow() -> None:
                try:
                    followed.append(follow_sources(list(sources), stop=stop, on_line=_say))
                except OSError as exc:
                    _say(f"prose-tui record: {exc}", err=True)

            follower = threading.Thread(target=follow, name="record postgres", daemon=True)
            follower.start()
        if path is not None:
            count = len(_run_dirs(path))
            _say(f"recording {count} run{'s' if count != 1 else ''} below {path} into {journal.root / 'journals'}"
                 " (Ctrl-C to stop)")
            total = record(path, stop=stop, journal=journal, on_change=on_change)
        else:
            while not stop.wait(0.5):
                pass
    except OSError as exc:
        _say(f"prose-tui record: {exc}", err=True)
        return 1
    finally:
        stop.set()
        if follower is not None:
            follower.join(timeout=10)
        for signum, old in previous.items():
            signal.signal(signum, old)  # type: ignore[arg-type]
    summary = f"stopped: {total} journal entr{'y' if total == 1 else 'ies'} for {len(runs_seen)} run{'s' if len(runs_seen) != 1 else ''}"
    if sources:
        summary += f", {sum(followed)} database run change{'s' if sum(followed) != 1 else ''}"
    _say(summary)
    return 0
