"""Filesystem runs: one ``.prose/runs/{id}/`` folder into a ``Run`` (seeds/filesystem.md).

Reads whichever state file the folder has: a snapshot ``state.md`` (generation 1), an
event-log ``state.md`` or ``vm.log.md`` (generations 2-4, ``eventlog``), or none. Bindings
come from the files on disk, merged with the Index rows that name them; agents from the
run's ``agents/`` and, by name, from project and user scope; imports recursively.
Never raises for a readable folder: whatever does not parse becomes a warning and its
file stays listed so the view can show it raw.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from itertools import compress
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

from prose_tui.backends.common import agents as agent_files
from prose_tui.backends.common.foreground import in_turns, wait_turn
from prose_tui.backends.common.bindings import (
    MAX_BINDING_DEPTH,
    is_binding_name,
    name_and_scope,
    outside_binding,
    scan_bindings,
)
from prose_tui.backends.common.contained import OUTSIDE_RUN, inside, lexically_inside, run_root
from prose_tui.backends.common.encryption import looks_encrypted
from prose_tui.backends.common.project import read_env, read_state_json, shown_env
# STATE_FILES: still taken from here by loader, discover, filesystem.backend and live.workspace.
from prose_tui.backends.common.state_files import STATE_FILES as STATE_FILES
from prose_tui.backends.common.state_files import state_file_of
from prose_tui.backends.common.status import (
    COPY_GAP,
    DEFAULT_STALE_AFTER,
    as_utc,
    distrust_future,
    infer_status,
    run_id_time,
)
from prose_tui.backends.common.text import decode, open_regular, visible_name
from prose_tui.backends.filesystem.eventlog import (
    SNIFF_LINES,
    EventLog,
    looks_like_event_log,
    parse_event_log,
    take_header_line,
)
from prose_tui.backends.filesystem import eventlog_tail
from prose_tui.backends.filesystem.eventlog_tail import EventLogParser, EventLogTail
from prose_tui.backends.filesystem.skill import (
    apply_skill,
    is_skill_run,
    settle_status,
    split_front_matter,
)
from prose_tui.backends.filesystem.tail import FileTail
from prose_tui.model import Agent, Backend, Binding, Run, RunFormat, Section

if TYPE_CHECKING:
    from prose_tui.backends.filesystem.snapshot import SnapshotState

# The snapshot parser (with its Markdown reader) and a failed node's error files are imported
# where a run needs them: an event log's first screen waits for none of them (issue 33).

PROGRAM_FILES = ("program.prose", "program.md", "root.prose.md")
MAX_IMPORT_DEPTH = 32
MAX_STATE_BYTES = 8 * 1024 * 1024  # a snapshot state file's cap; an event log is read whole
_SNIFF_BYTES = 64 * 1024
_TIME, _TZINFO = attrgetter("time"), attrgetter("tzinfo")
_AGENT_DECL = re.compile(r"^\s*agent\s+([\w.-]+)\s*:", re.M)
_PERSIST = re.compile(r"persist:\s*(project|user|true)", re.I)
_RUN_MARKERS = ("state.md", "vm.log.md", "state.db", "program.prose", "bindings", "program.md", "root.prose.md", "manifest.md",
                # openprose 0.11-0.14 manifests (FORMATS.md generation 5) and 0.15 skill runs (6)
                "manifest.run.md", "forme.manifest.json", "compiled-intent.json", "receipts", "world-model")
_RUN_ID = re.compile(r"^\d{8}-\d{6}")


def is_run_dir(path: Path) -> bool:
    """True when ``path`` holds any file a VM writes into a run folder. A judge-era (0.12-0.14)
    ``state/responsibilities/`` counts only in a folder named by a run id: an OpenProse root
    keeps a durable ``state/`` of its own."""
    if any((path / marker).exists() for marker in _RUN_MARKERS):
        return True
    return _RUN_ID.match(path.name) is not None and (path / "state" / "responsibilities").is_dir()


def folder_read_problem(path: Path) -> str | None:
    """Why the folder ``path`` cannot be listed ("Permission denied"), or ``None`` when it can."""
    try:
        with os.scandir(path) as entries:
            next(entries, None)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def program_file_of(run_dir: Path) -> Path | None:
    """``program.prose``/``program.md``/``root.prose.md``, else the single ``*.prose`` there."""
    for name in PROGRAM_FILES:
        if (run_dir / name).is_file():
            return run_dir / name
    proses = sorted(run_dir.glob("*.prose"))
    return proses[0] if len(proses) == 1 else None


def project_dir_of(run_dir: Path) -> Path | None:
    """The folder holding ``.prose/`` (or ``.agents/prose``) for a run inside ``runs/``."""
    for parent in [run_dir, *run_dir.parents]:
        if parent.name == "runs" and parent.parent.name in (".prose", "prose"):
            prose_dir = parent.parent
            return prose_dir.parent.parent if prose_dir.parent.name == ".agents" else prose_dir.parent
    return None


def read_text(path: Path, limit: int = MAX_STATE_BYTES, *, root: Path | None = None) -> tuple[str, bool]:
    """Up to ``limit`` bytes of ``path`` decoded as UTF-8 with replacement; and whether it was cut.
    Raises ``OSError``; ``OutsideRun`` when ``root`` is given and ``path`` leaves it."""
    with open_regular(path, root=root) as fh:
        data = fh.read(limit + 1)
    return decode(data[:limit]), len(data) > limit


def program_text(path: Path, root: Path | None = None) -> str | None:
    """The program file's text (UTF-8 with replacement, its first 8 MiB), read with the run so
    a view annotates it without reading; ``None`` when it cannot be read or lies outside
    ``root`` (the run's ``run_root``)."""
    try:
        with open_regular(path, root=root) as fh:
            return fh.read(MAX_STATE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


def load_run(
    run_dir: Path,
    *,
    now: datetime | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
    observed: datetime | None = None,
    home: Path | None = None,
    summary: bool = False,
    tails: dict | None = None,
    root: Path | None = None,
    read: dict | None = None,
    _depth: int = 0,
    _seen: frozenset[Path] = frozenset(),
) -> Run:
    """Load one filesystem run folder. ``home`` overrides ``~`` for user-scope agents.

    ``summary`` reads the state file only (header, trace, call stack, status): what a run
    list row needs, without binding heads, agents, project files or imports.

    ``tails`` (a dict the caller keeps) receives, under ``run_dir``, the
    :class:`~prose_tui.backends.filesystem.eventlog_tail.EventLogTail` an event log was parsed with,
    so a later change parses only appended bytes. ``read`` (a dict the caller keeps)
    receives, under the state file's path, ``(bytes, os.stat_result)`` when the state file
    was read whole: a change hands them on (``Delta.state_data``) instead of a second read.

    ``root`` is the folder every file the run names must lie in (default: ``run_dir``
    resolved once; an import is read with its top run's). A file outside it (a symlink to
    ``~/secret.txt``, an Index row ``../x.md``) is listed with the note "outside the run:
    not read" and never read (backends/common/contained.py); ``run.root`` keeps it for the
    views, which read values later.

    A folder that cannot be listed (permission denied) is a run with status ``unreadable``
    and the reason, nothing else read.

    Raises ``FileNotFoundError`` only when ``run_dir`` is not a folder.
    """
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir} is not a folder")
    root = root or run_root(run_dir)
    if (problem := folder_read_problem(run_dir)) is not None:
        run = Run(id=visible_name(run_dir.name), path=run_dir, backend=Backend.FILESYSTEM, root=root,
                  read_problem=problem, warnings=[f"cannot read the run folder: {problem}"])
        run.started = _id_time_as_logged(run)
        run.status, run.status_reason = infer_status(run, now=now, stale_after=stale_after, observed=observed)
        return run
    run, snapshot = _read_state(run_dir, tails, now, root, read)
    if summary:
        _skill_hook(run, run_dir, summary=True)
        run.status, run.status_reason = infer_status(run, now=now, stale_after=stale_after, observed=observed)
        _skill_status(run)
        return run
    wait_turn()  # a background read gives way to a live change between its phases (foreground.py)
    run.bindings = _merge_bindings(scan_bindings(run_dir, root), snapshot, run_dir)
    if snapshot is not None:
        # What the first rewrite after this read compares its Index with (``reload_state``):
        # without it, the live worker merged every Index row again, 10-15 ms of the first
        # change shown after a snapshot run opened.
        _MERGED[run_dir] = (snapshot.binding_rows, run.bindings)
    if run.events:
        _link_event_bindings(run)
        wait_turn()
    if run.format in (RunFormat.EVENT_LOG, RunFormat.CONTRACT) and run.program_path is not None:
        run.program_text = program_text(run.program_path, root)
    run.agents = _agents(run_dir, snapshot, run.program_path, home, root)
    if any(b.encrypted for b in run.bindings) and not run.encrypted:
        run.warnings.append("some binding files are SOPS-encrypted")
    _project_files(run, run_dir)
    run.imports = _imports(run_dir, now, stale_after, home, _depth, _seen | {run_dir.resolve()}, run.warnings, root)
    _skill_hook(run, run_dir)
    note_outside(run)
    wait_turn()
    run.status, run.status_reason = infer_status(run, now=now, stale_after=stale_after, observed=observed)
    _skill_status(run)
    return run


TAIL_FIRST_OVER = 256 * 1024  # an event log longer than this (some 8,000 events) gets a first screen from its tail
TAIL_FIRST_BYTES = 64 * 1024  # the tail that first screen parses: a few hundred events
FROM_TAIL = "reading the whole log: showing its last {} KiB; earlier history, open blocks and their status are still loading"


def load_run_tail_first(run_dir: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
                        observed: datetime | None = None, tail_bytes: int = TAIL_FIRST_BYTES,
                        tails: dict[Path, EventLogTail] | None = None) -> Run | None:
    """A first screen of a long event log (issue 33): the run as its header and its last
    ``tail_bytes`` bytes (whole lines) say, parsed in milliseconds, for the explorer to show
    while :func:`load_run` parses the whole log. ``None`` when the run's state file is not a
    plain event log (``vm.log.md`` or a ``state.md`` that sniffs as one, without front
    matter) over ``TAIL_FIRST_OVER`` bytes, or cannot be read.

    Events keep their line numbers in the file and trace lines their numbers in the whole
    trace (the lines before the tail are counted, not parsed: a whitespace-only line there
    makes them one too high); events' ``seq`` count from the tail's first. What the tail
    cannot tell is left out, never guessed: blocks opened before it are not on the call
    stack, and a warning (``FROM_TAIL``) says the rest is loading. The run's status is the
    tail's: a ``---end``/``---error`` or the last statement line are at the end.

    ``tails``: given, it gets the log's tail (``tails[run_dir]``) as parsed to the last whole
    line, so the first screen is followed live (``live.apply_paths``) while the whole read
    goes on: a VM's next events show in milliseconds, not after the whole log is parsed."""
    root = run_root(run_dir)
    state_file = state_file_of(run_dir)
    if state_file is None or not inside(state_file, root):
        return None
    try:
        with open_regular(state_file, root=root) as fh:
            st = os.fstat(fh.fileno())
            if st.st_size <= max(TAIL_FIRST_OVER, tail_bytes + _SNIFF_BYTES):
                return None
            head = fh.read(_SNIFF_BYTES)
            if head.startswith(b"---") or not _is_event_log_start(state_file.name, head) \
                    or not EventLogParser.supports(decode(head)) or looks_encrypted(decode(head[:4096])):
                return None
            start = st.st_size - tail_bytes
            fh.seek(start)
            tail = fh.read(tail_bytes)
            lines_before, blank_before = head.count(b"\n"), head.count(b"\n\n")
            fh.seek(len(head))
            for chunk in iter(lambda: fh.read(min(1 << 20, start - fh.tell())), b""):
                lines_before += chunk.count(b"\n")  # counted, not parsed: a few ms for 30 MB
                blank_before += chunk.count(b"\n\n")
    except OSError:
        return None
    scratch, header = EventLog(), []
    for line in decode(head[:head.rfind(b"\n") + 1]).splitlines():
        if line.strip() and not take_header_line(line, scratch):
            break
        header.append(line)
    first = tail.find(b"\n") + 1  # the tail from its first whole line; a line still being written waits
    last = tail.rfind(b"\n") + 1
    lines_before += tail[:first].count(b"\n")
    parser = EventLogParser(state_file.name)
    # Trace lines are numbered as in the whole log: the lines before the tail, less the
    # header and the blank lines among them (a whitespace-only line counts as a line here).
    parser.trace_base = lines_before - len(header) - (blank_before - sum(1 for line in header if not line.strip()))
    parser.feed(header)
    parser.lines = lines_before
    parser.feed(decode(tail[first:last]).splitlines())
    log = parser.finish()
    run = Run(id=visible_name(run_dir.name), path=run_dir, backend=Backend.FILESYSTEM, root=root,
              state_file=state_file, state_mtime=st.st_mtime, read_at=now or datetime.now(timezone.utc))
    _apply_event_log(run, "", state_file.name, log)
    run.call_stack = []  # frames opened before the tail are not known yet: none rather than some
    run.warnings.insert(0, FROM_TAIL.format(tail_bytes // 1024))
    if tails is not None:
        followed = EventLogTail(FileTail.read_up_to(state_file, start + last, st, head, tail[:last]), parser,
                                from_tail=True)
        followed.warnings_at, followed.shown_warnings = 1, len(log.warnings)
        tails[run_dir] = followed
    _program_and_times(run, run_dir, root, now)
    run.status, run.status_reason = infer_status(run, now=now, stale_after=stale_after, observed=observed)
    return run


FIRST_SCREEN_FILES = 256  # a snapshot run with more binding and agent folders than this gets a first screen
STILL_READING = "reading {} binding files: bindings, agents and values are still loading"


def load_snapshot_first_screen(run_dir: Path, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
                               observed: datetime | None = None) -> Run | None:
    """A first screen of a snapshot run with many binding files (issue 33): the run as its
    ``state.md`` says (header, trace, Active Constructs, Call Stack, other sections; not the
    Index) and its status, without opening one binding or agent file, for the explorer to
    show while :func:`load_run` reads them (that read then finds the trace annotated:
    ``snapshot_sections.parse_snapshot_first_screen``).

    The status is inferred as :func:`load_run` infers it, the binding files known by
    their names in a listing of ``bindings/`` (one written for a statement still to come
    is evidence of an interrupted run, ``status._bindings_written_after``); ``bindings``
    and ``agents`` stay empty and the first warning (``STILL_READING``) says they are
    loading. ``None`` when the full read is quick anyway (at most ``FIRST_SCREEN_FILES``
    binding files and agent folders), the state file is not a plain snapshot ``state.md``
    of at most ``MAX_STATE_BYTES`` (an event log, SOPS-encrypted, a 0.15 skill run, text
    that cannot be cut at its ``##`` sections), lies outside the run, or cannot be read."""
    root = run_root(run_dir)
    listed = _binding_names(run_dir, root)
    if len(listed) + len(agent_files.agent_dirs(run_dir / "agents")) <= FIRST_SCREEN_FILES or is_skill_run(run_dir):
        return None
    state_file = state_file_of(run_dir)
    if state_file is None or state_file.name != "state.md" or not inside(state_file, root):
        return None
    try:
        with open_regular(state_file, root=root) as fh:
            st = os.fstat(fh.fileno())
            data = fh.read(MAX_STATE_BYTES + 1)
    except OSError:
        return None
    text = decode(data)
    from prose_tui.backends.filesystem.snapshot import looks_like_snapshot
    from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_first_screen

    if len(data) > MAX_STATE_BYTES or looks_encrypted(text[:4096]) or looks_like_event_log(text) \
            or not looks_like_snapshot(text):
        return None
    snapshot = parse_snapshot_first_screen(text, run_dir)
    if snapshot is None:
        return None
    run = Run(id=visible_name(run_dir.name), path=run_dir, backend=Backend.FILESYSTEM, root=root,
              state_file=state_file, state_mtime=st.st_mtime, read_at=now or datetime.now(timezone.utc))
    _apply_snapshot(run, snapshot)
    _program_and_times(run, run_dir, root, now)
    run.bindings = listed
    run.status, run.status_reason = infer_status(run, now=now, stale_after=stale_after, observed=observed)
    run.bindings = []  # names alone: a binding's size, kind and value come with the full read
    run.warnings.insert(0, STILL_READING.format(len(listed)))
    return run


def _binding_names(run_dir: Path, root: Path) -> list[Binding]:
    """The binding files below ``bindings/`` as ``scan_bindings`` finds them, by name and
    scope only: listed, never opened nor measured. Empty when ``bindings/`` lies outside
    ``root`` or cannot be listed."""
    folder = run_dir / "bindings"
    if not folder.is_dir() or not inside(folder, root):
        return []
    found: list[Binding] = []
    base = len(folder.parts)
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = dirnames if len(here.parts) - base < MAX_BINDING_DEPTH else []
        service = visible_name(here.relative_to(folder).parts[0]) if here != folder else None
        for fn in filenames:
            if not fn.startswith(".") and is_binding_name(fn):
                name, eid = name_and_scope(visible_name(os.path.splitext(fn)[0]))  # Path.stem
                found.append(Binding(name=name, path=here / fn, execution_id=eid, service=service))
    return found


# -- openprose 0.15 skill runs: kept apart in skill.py; these two calls are the whole hook ----

def _skill_hook(run: Run, run_dir: Path, *, summary: bool = False) -> None:
    """World model, receipts, nodes and compiled intent of a 0.15 skill run (skill.py);
    for an earlier ``vm.log.md`` run (0.12-0.14) that says it failed, its
    ``workspace/{node}/__error.md`` files as ``Error: {node}`` sections, as a skill run has."""
    if is_skill_run(run_dir):
        apply_skill(run, run_dir, summary=summary)
    elif run.format in (RunFormat.VM_LOG, RunFormat.CONTRACT) and _says_failed(run):
        from prose_tui.backends.filesystem.world_model import error_nodes, read_error

        for node in error_nodes(run_dir):
            if (err := read_error(run_dir, node)) is not None and err.text.strip():
                run.sections.append(Section(f"Error: {node} (workspace/{node}/__error.md)", err.text.strip()))


def _says_failed(run: Run) -> bool:
    status = (run.header.get("status") or "").strip().lower()
    return run.error_marker is not None or "error" in run.header or status.startswith(("fail", "error", "abort"))


def _skill_status(run: Run) -> None:
    if run.format is RunFormat.SKILL:
        settle_status(run)


def _read_state(run_dir: Path, tails: dict | None = None, now: datetime | None = None,
                root: Path | None = None, read: dict | None = None) -> tuple[Run, SnapshotState | None]:
    """A run from its state file alone (header, trace, call stack, events), and the parsed
    snapshot whose Index names its bindings and agents (``None`` for other formats).
    An event log is parsed with a tail kept in ``tails`` (see ``load_run``). A header or
    event time in the future (beyond ``status.FUTURE_SKEW`` of ``now``) is warned about
    and replaced by the file's time (``status.distrust_future``). A state file outside
    ``root`` is not read (a warning says so). ``read_at`` is ``now`` (else the time read)
    when the state file was read, ``read_problem`` why not when it exists but could not be
    (a warning says so too)."""
    root = root or run_root(run_dir)
    run = Run(id=visible_name(run_dir.name), path=run_dir, backend=Backend.FILESYSTEM, root=root)
    state_file = state_file_of(run_dir)
    snapshot: SnapshotState | None = None
    if state_file is not None and not inside(state_file, root):
        run.warnings.append(f"{state_file.name}: {OUTSIDE_RUN}")
        state_file = None
    if state_file is not None:
        run.state_file = state_file
        try:
            with open_regular(state_file, root=root) as fh:
                st = os.fstat(fh.fileno())
                # Sized by the file, not the cap: read(cap + 1) allocates 8 MiB per read (issue 35)
                data = fh.read(min(st.st_size, MAX_STATE_BYTES) + 1)
                if st.st_size < len(data) <= MAX_STATE_BYTES:  # it grew since the fstat
                    data += fh.read(MAX_STATE_BYTES + 1 - len(data))
                cut = len(data) > MAX_STATE_BYTES
                if cut and _is_event_log_start(state_file.name, data):
                    # An event log is read to its end, however long: its last lines are where
                    # the run is now, and a cut log could not be tailed (issue 33).
                    data += fh.read()
                    st = os.fstat(fh.fileno())
                    cut = False
                elif cut:
                    data = data[:MAX_STATE_BYTES]
            run.state_mtime = st.st_mtime
            # A plain event log longer than a chunk is parsed by its tail a chunk at a time:
            # its whole text is never decoded in one call (a 100,000-event log: 35 ms holding
            # the interpreter, and a copy of the file as text). Anything else is decoded whole.
            tailed = (tails is not None and not cut and len(data) > eventlog_tail.FEED_CHUNK
                      and _tailed_log(state_file.name, data))
            text = "" if tailed else decode(data)
            if read is not None and not cut:
                read[state_file] = (data, st)
            run.read_at = now or datetime.now(timezone.utc)
        except OSError as exc:  # permission denied, gone between the look and the open, I/O error
            text, cut, data, st, tailed = "", False, b"", None, False
            run.read_problem = exc.strerror or str(exc)
            run.warnings.append(f"cannot read {state_file.name}: {run.read_problem}")
        if cut:
            run.warnings.append(f"{state_file.name} is over {MAX_STATE_BYTES // 2**20} MiB; only its start was read")
        if st is None:
            pass  # not read: nothing to parse (infer_status says "unreadable")
        elif tailed and tails is not None:  # a plain event log (``_tailed_log``)
            log = _tail_log(run_dir, state_file, data, st, tails)
            tails[run_dir].warnings_at, tails[run_dir].shown_warnings = len(run.warnings), len(log.warnings)
            _apply_event_log(run, "", state_file.name, log)
        elif looks_encrypted(text[:4096]) and not _plain_events_after_encryption(text):
            run.encrypted = True
            run.format = RunFormat.ENCRYPTED
        elif state_file.name == "vm.log.md" or looks_like_event_log(text):
            text, front = split_front_matter(text)  # 0.12-0.15 logs: YAML status:/error: on top
            log = None
            # A log with front matter is read whole on each change (its header may be rewritten);
            # a plain log is tailed.
            if tails is not None and not front and not cut and st is not None and EventLogParser.supports(text):
                text = ""  # the tail decodes ``data`` a chunk at a time: no whole copy held while parsing
                log = _tail_log(run_dir, state_file, data, st, tails)
                tails[run_dir].warnings_at, tails[run_dir].shown_warnings = len(run.warnings), len(log.warnings)
            _apply_event_log(run, text, state_file.name, log)
            run.header.update(front)
        else:
            from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_cached

            snapshot = parse_snapshot_cached(text, run_dir)  # a rewrite re-parses only what changed
            _apply_snapshot(run, snapshot)
    elif (run_dir / "state.db").exists():
        run.warnings.append("state.db found: SQLite runs are read by the sqlite source")
    _program_and_times(run, run_dir, root, now)
    return run, snapshot


def _program_and_times(run: Run, run_dir: Path, root: Path, now: datetime | None) -> None:
    """The program file, and the start and update times, of a run read from its state file."""
    run.program_path = program_file_of(run_dir)
    if run.program_path is not None and not inside(run.program_path, root):
        run.warnings.append(f"{run.program_path.name}: {OUTSIDE_RUN}")
        run.program_path = None
    if run.program is None and run.program_path is not None:
        run.program = run.program_path.name
    if run.started is None:
        run.started = _id_time_as_logged(run)
    if run.updated is None and run.state_mtime:
        mtime = datetime.fromtimestamp(run.state_mtime, timezone.utc)
        # A file a day newer than the run's own start time was copied or cloned, not written
        # by the VM: its time says nothing about the run (status.last_change applies the same rule).
        started = as_utc(run.started)
        if started is None or (mtime - started).total_seconds() < COPY_GAP:
            run.updated = mtime
    distrust_future_time(run, now)


def _tailed_log(name: str, data: bytes) -> bool:
    """Whether a whole state file ``data`` is a plain event log that its tail parses a
    chunk at a time (``EventLogTail``), judged from its first ``_SNIFF_BYTES`` as the whole
    text would be: an event log (``vm.log.md``, or first lines that sniff as one), with no
    front matter, not starting with a ``{`` block, not SOPS-encrypted. ``False`` when its
    first lines do not fit in those bytes (then the whole text decides)."""
    head = decode(data[:_SNIFF_BYTES])
    if len(data) > _SNIFF_BYTES and head.count("\n") < SNIFF_LINES:
        return False
    if head.startswith(("---\n", "---\r\n")) or not EventLogParser.supports(head) or looks_encrypted(head[:4096]):
        return False
    return name == "vm.log.md" or looks_like_event_log(head)


def _tail_log(run_dir: Path, state_file: Path, data: bytes, st: os.stat_result, tails: dict) -> EventLog:
    """Parse the event log ``data`` (read at ``st``) with a new tail kept in ``tails``."""
    tail = EventLogTail.start(state_file, state_file.name)
    tail.feed_bytes(data, st, changes=False)
    tails[run_dir] = tail
    return tail.parser.finish()


def _is_event_log_start(name: str, data: bytes) -> bool:
    """Whether a state file whose first bytes are ``data`` is an event log (``vm.log.md``, or
    a ``state.md`` whose first lines sniff as one), judged from its first 64 KiB."""
    return name == "vm.log.md" or looks_like_event_log(decode(data[:_SNIFF_BYTES]))


def _id_time_as_logged(run: Run) -> datetime | None:
    """The start a run id encodes (``YYYYMMDD-HHMMSS``), read in the UTC offset the run's
    own log stamps carry (a ``---error 2026-02-13T11:48:13-05:00`` line: the VM's clock is
    at -05:00, so is the id it named the run by), and never after the run's first stamped
    event: a run does not end before it starts (issue 28). UTC when no stamp has an offset.
    The stamps are gone over in C, a slice at a time (``foreground.in_turns``): 100,000
    events in one go held the interpreter 25 ms of a long log's read."""
    started = run_id_time(run.id)
    if started is None:
        return None
    events = run.events
    zoned: datetime | None = None  # the first stamp with an offset
    first: datetime | None = None  # the earliest stamp, in UTC
    for start, stop in in_turns(len(events)):
        stamps = list(filter(None, map(_TIME, events[start:stop])))  # (a datetime is never false)
        if not stamps:
            continue
        if zoned is None:
            zoned = next(compress(stamps, map(_TZINFO, stamps)), None)
        try:
            # Stamps all naive (taken as UTC) or all with an offset compare as they are.
            earliest = as_utc(min(stamps))
        except TypeError:  # naive and zoned stamps mixed: each taken as UTC first
            earliest = min(map(as_utc, stamps))
        first = earliest if first is None else min(first, earliest)
    if zoned is not None and zoned.utcoffset():
        started = started.replace(tzinfo=zoned.tzinfo)
    if first is not None and as_utc(started) > first:
        return first
    return started


def distrust_future_time(run: Run, now: datetime | None) -> None:
    """``status.distrust_future`` for a run read from its state file, naming where its time
    was written. An event log that ended (``---end``/``---error``) is left as written: its
    status does not depend on its age, and its stamps are its history."""
    if run.end_marker is not None or run.error_marker is not None:
        return
    name = run.state_file.name if run.state_file else "the state file"
    if run.format is RunFormat.SNAPSHOT and "updated" in run.header:
        source = f"{name}'s updated: header"
    else:
        source = f"{name}'s last event time" if run.events else f"{name}'s time"
    distrust_future(run, now, source=source)


_MERGED: dict[Path, tuple[list, list[Binding]]] = {}  # run -> (Index rows, bindings merged from them)


def reload_state(previous: Run, *, now: datetime | None = None, stale_after: float = DEFAULT_STALE_AFTER,
                 observed: datetime | None = None, home: Path | None = None, tails: dict | None = None,
                 read: dict | None = None) -> Run:
    """``previous`` (a run read in full) after its state file changed: the state file is read
    again, the binding files, agents and imports already read are kept. The Index may name
    new bindings (merged as missing until their files arrive) or new agents (agents re-read).
    ``tails`` and ``read`` as for :func:`load_run`.
    """
    run_dir = previous.path
    run, snapshot = _read_state(run_dir, tails, now, previous.root, read)
    merged = _MERGED.get(run_dir)
    if snapshot is not None and merged is not None and merged[1] is previous.bindings \
            and merged[0] == snapshot.binding_rows:
        # The Index names the same bindings as the revision before: the merge would give the
        # same list (binding files changed in the same batch are applied to it after this).
        run.bindings = previous.bindings
    else:
        run.bindings = _merge_bindings([b for b in previous.bindings if b.exists], snapshot, run_dir)
        if snapshot is not None:
            _MERGED[run_dir] = (snapshot.binding_rows, run.bindings)
    if run.events:
        _link_event_bindings(run)
    names = {r.get("name") for r in (snapshot.agent_rows if snapshot else [])}
    if names <= {a.name for a in previous.agents}:
        run.agents = previous.agents
    else:
        run.agents = _agents(run_dir, snapshot, run.program_path, home, run.root)
    run.imports = previous.imports
    run.sections += [s for s in previous.sections if s.title.startswith("Project .prose/")]
    run.warnings += [w for w in previous.warnings if w.startswith(("some binding files", "imports nested", "import "))
                     or (w.endswith(OUTSIDE_RUN) and w not in run.warnings)]
    _skill_hook(run, run_dir)
    run.status, run.status_reason = infer_status(run, now=now, stale_after=stale_after, observed=observed)
    _skill_status(run)
    return run


def _apply_snapshot(run: Run, snap: SnapshotState) -> None:
    from prose_tui.backends.filesystem.snapshot import parse_time

    run.format = RunFormat.SNAPSHOT
    run.header = snap.header
    if snap.header.get("run"):
        run.id = snap.header["run"] if run.path.name == "runs" else run.id
    run.program = snap.header.get("program") or None
    run.started = parse_time(snap.header.get("started"))
    run.updated = parse_time(snap.header.get("updated"))
    run.trace = snap.trace
    run.constructs = snap.constructs
    run.call_stack = snap.call_stack
    run.sections = snap.sections
    run.warnings.extend(snap.warnings)


def _apply_event_log(run: Run, text: str, source_name: str, log: EventLog | None = None) -> None:
    if log is None:
        log = parse_event_log(text, source_name=source_name)
    contract = (run.path / "manifest.md").exists() or (run.path / "services").is_dir()
    run.format = RunFormat.VM_LOG if source_name == "vm.log.md" else RunFormat.CONTRACT if contract else RunFormat.EVENT_LOG
    run.header = dict(log.header)
    run.program = log.program
    run.events = log.events
    run.trace = log.trace
    run.call_stack = log.call_stack
    run.warnings.extend(log.warnings)
    if log.encrypted_lines:
        run.warnings.append(
            f"the first {log.encrypted_lines} lines of {source_name} are SOPS-encrypted; "
            "the events the VM appended in plain text after them are shown"
        )
    for event in log.events:
        if event.time is not None:
            run.updated = event.time
    if log.bullet_status:
        run.header.setdefault("status", log.bullet_status)
    if log.status == "failed":
        when = log.errored.isoformat() if log.errored else ""
        run.error_marker = f"---error {when} {log.error_message or ''}".strip()
    elif log.status == "completed":
        run.end_marker = f"---end {log.ended.isoformat() if log.ended else ''}".strip()


def _plain_events_after_encryption(text: str) -> bool:
    """A SOPS block followed by plain event lines the VM appended later (FORMATS.md, SOPS)."""
    if not looks_like_event_log(text):
        return False
    log = parse_event_log(text)
    return bool(log.encrypted_lines) and any(e.step is not None or e.kind.value.startswith("run_") for e in log.events)


def _link_event_bindings(run: Run) -> None:
    """Event-log lines name the binding a step wrote; link a line to the binding file of that
    name when one exists (``bindings/{name}.md`` or ``bindings/{service}/{name}.md``)."""
    by_name: dict[str, Binding] = {}
    for b in run.bindings:
        if b.exists and (b.name not in by_name or b.execution_id is None):
            by_name[b.name] = b
    if not by_name:
        return  # no binding file to link to: the trace is not walked (100,000 lines: 0.1 s)
    for line in run.trace:
        if line.binding is not None or line.step is None or line.state is None:
            continue
        m = re.match(r"^\s*\S+?(?:→|->)\s*(?:\[[^\]]*\]\s*)?([.\w-]+)", line.text)
        binding = by_name.get(m.group(1)) if m else None
        if binding is not None:
            line.binding = binding.path.relative_to(run.path).as_posix()


# Per run read lately, the paths of the missing bindings its last Index named (a Path is
# immutable, so shared): a rewrite does not make them again. Issue 35: a growing run's 600
# new paths per rewrite, each part interned by pathlib, churned CPython's interned-string
# table and arenas (about 1 MB of RSS per 1,000 rewrites). Bounded by the runs' Index rows.
_INDEX_PATHS: dict[Path, dict[str, Path]] = {}
_INDEX_PATH_RUNS = 16


def _merge_bindings(found: list[Binding], snap: SnapshotState | None, run_dir: Path) -> list[Binding]:
    """Files on disk, plus Index rows whose file is missing (``exists=False``).

    Paths are matched lexically (``os.path.normpath``), not with ``Path.resolve``: both
    sides are below the same ``run_dir``, and resolving costs a ``readlink`` per path
    component, which for 10,000 Index rows was most of the time to open a run.
    """
    if snap is None or not snap.binding_rows:
        return found
    by_path = {os.path.normpath(b.path): b for b in found}
    base = os.fspath(run_dir)  # joined as strings: a Path per row was a third of the merge
    known = _INDEX_PATHS.pop(run_dir, {})
    paths: dict[str, Path] = {}
    for listed, row in enumerate(snap.binding_rows):  # the Index's order is the run's (Binding.listed)
        name = row.get("name") or ""
        rel = row.get("path") or f"bindings/{name}.md"
        path = os.path.normpath(os.path.join(base, rel if not rel.startswith("(") else f"bindings/{name}.md"))
        binding = by_path.get(path)
        kind = (row.get("kind") or "").lower() or None
        if binding is None:
            eid_text = row.get("execution id", "execution_id") or ""
            eid = int(m.group(0)) if (m := re.search(r"\d+", eid_text)) else None
            where = paths[rel] = known.get(rel) or run_dir / rel
            missing = Binding(name=name, path=where, kind=kind, execution_id=eid, exists=False,
                              warning="named in the Index but its file does not exist (yet)")
            binding = missing if lexically_inside(path, run_dir) else outside_binding(missing)
            found.append(binding)
        elif binding.kind is None and kind:
            binding.kind = kind
        binding.listed = listed
    while len(_INDEX_PATHS) >= _INDEX_PATH_RUNS:
        del _INDEX_PATHS[next(iter(_INDEX_PATHS))]  # the run read longest ago
    _INDEX_PATHS[run_dir] = paths
    return found


def _agents(run_dir: Path, snap: SnapshotState | None, program: Path | None, home: Path | None,
            root: Path | None = None) -> list[Agent]:
    """The run's agents: its own ``agents/*`` (read below ``root``), then those the Index or
    the program names, from project or user scope (read below that scope's ``agents/``)."""
    agents: dict[str, Agent] = {}
    for folder in agent_files.agent_dirs(run_dir / "agents"):
        agents[folder.name] = agent_files.read_agent_dir(folder, "execution", root)
    declared: dict[str, str | None] = {}
    if program is not None:
        try:
            source, _ = read_text(program, 1024 * 1024, root=root)
        except OSError:
            source = ""
        for m in _AGENT_DECL.finditer(source):
            body = source[m.end(): m.end() + 600].split("\nagent ", 1)[0]
            persist = _PERSIST.search(body)
            declared[m.group(1)] = persist.group(1).lower() if persist else None
    rows = {r.get("name") or "": r for r in (snap.agent_rows if snap else [])}
    project = project_dir_of(run_dir)
    user_home = home or Path(os.path.expanduser("~"))
    for name in list(rows) + list(declared):
        if not name or name in agents:
            continue
        scope_word = (rows[name].get("scope") if name in rows else None) or declared.get(name)
        scoped = _scoped_folder(name, scope_word, project, user_home)
        agent = agent_files.read_agent_dir(scoped, scope_word or "project", run_root(scoped.parent)) if scoped else Agent(name=name, scope=scope_word or ("stateless" if not declared.get(name) else declared[name]))
        if name in rows:
            agent.details = {k: v for k, v in rows[name].cells.items() if k not in ("name", "scope", "path") and v}
            agent.scope = agent.scope if scoped else rows[name].get("scope") or agent.scope
        agents[name] = agent
    return list(agents.values())


def _scoped_folder(name: str, scope: str | None, project: Path | None, home: Path) -> Path | None:
    """``{project}/.prose/agents/{name}`` or ``~/.prose/agents/{name}`` (seeds/filesystem.md,
    Memory Scoping), when it exists. ``name`` is the run's text: one that is not a plain
    folder name (``..``, ``a/b``) names no folder."""
    if not name or name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        return None
    scope = (scope or "").lower()
    candidates: list[Path] = []
    if project is not None and scope in ("project", "", "true"):
        candidates.append(project / ".prose" / "agents" / name)
    if scope in ("user", ""):
        candidates.append(home / ".prose" / "agents" / name)
    return next((c for c in candidates if c.is_dir()), None)


def _project_files(run: Run, run_dir: Path) -> None:
    """The project's ``.prose/.env`` and ``.prose/state.json`` (seeds/filesystem.md, ``.prose/.env``;
    FORMATS.md, Project files), kept as sections so they show beside the run; secret-looking
    ``.env`` values are masked (``project.shown_env``), since these sections reach exports."""
    project = project_dir_of(run_dir)
    if project is None:
        return
    for name, reader in ((".env", read_env), ("state.json", read_state_json)):
        path = project / ".prose" / name
        if path.is_file():
            values = shown_env(reader(path)) if name == ".env" else reader(path)
            body = "\n".join(f"{k}={v}" for k, v in values.items()) or "(no KEY=VALUE lines)"
            run.sections.append(Section(f"Project .prose/{name}", f"```\n{body}\n```"))


def outside_import(child: Path, root: Path | None = None) -> Run:
    """The stand-in for an ``imports/{handle}`` folder that lies outside the run (``root``): a
    run with no content whose status reason and warning say "outside the run: not read"."""
    sub = Run(id=visible_name(child.name), path=child, backend=Backend.FILESYSTEM, status_reason=OUTSIDE_RUN,
              root=root)
    sub.warnings.append(OUTSIDE_RUN)
    sub.import_handle = visible_name(child.name)
    return sub


def _imports(run_dir, now, stale_after, home, depth, seen, warnings, root: Path | None = None) -> list[Run]:
    folder = run_dir / "imports"
    if not folder.is_dir():
        return []
    if depth >= MAX_IMPORT_DEPTH:
        warnings.append(f"imports nested deeper than {MAX_IMPORT_DEPTH} levels are not shown")
        return []
    out: list[Run] = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir()):
        if root is not None and not inside(child, root):
            out.append(outside_import(child, root))
            continue
        if child.resolve() in seen:
            warnings.append(f"import {child.name} loops back to a run already shown; skipped")
            continue
        sub = load_run(child, now=now, stale_after=stale_after, home=home, root=root, _depth=depth + 1, _seen=seen)
        sub.import_handle = visible_name(child.name)
        out.append(sub)
        capped = f"imports nested deeper than {MAX_IMPORT_DEPTH} levels are not shown"
        if capped in sub.warnings and capped not in warnings:
            warnings.append(capped)  # said on every run above the cap, so the top run's header shows it
    return out


def note_outside(run: Run) -> None:
    """Add one warning per file the run names that lies outside it (``bindings/linked.md:
    outside the run: not read``): the header of every view and export lists them."""
    notes: list[str] = []
    for b in run.bindings:
        if b.outside:
            notes.append(f"{_shown(b.path, run.path)}: {OUTSIDE_RUN}")
    for a in run.agents:
        for path in a.outside:
            try:
                shown = path.relative_to(run.path).as_posix()
            except ValueError:  # project or user scope: named by scope, not by the user's folders
                shown = f"{a.scope} agent {a.name}" + ("" if path == a.path else f" {visible_name(path.name)}")
            notes.append(f"{shown}: {OUTSIDE_RUN}")
    for sub in run.imports:
        if sub.status_reason == OUTSIDE_RUN and not sub.trace:
            notes.append(f"imports/{sub.import_handle}: {OUTSIDE_RUN}")
    run.warnings.extend(n for n in notes if n not in run.warnings)


def _shown(path: Path, run_dir: Path) -> str:
    """``path`` as the run wrote it, relative to the run folder where it is below it."""
    try:
        return path.relative_to(run_dir).as_posix()
    except ValueError:
        return visible_name(str(path))
