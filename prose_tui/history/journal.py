"""The journal: what prose-tui saw of a snapshot run while it watched (issue 3).

A snapshot ``state.md`` (seeds/filesystem.md, generation 1) is rewritten after every
statement, so its history is lost unless somebody keeps the revisions. While prose-tui
watches a run, :meth:`Journal.record` keeps each distinct revision of ``state.md`` and each
binding/segment write it saw, with the time it saw it. Nothing is ever written inside the
run folder.

Layout, under ``platformdirs.user_state_dir("prose-tui")`` (or ``root``)::

    journals/<sha1 of the resolved run path>/
        run.json              {"run": "/abs/path/of/run"}  (for humans and clean-up tools)
        index.jsonl           one JSON object per line, append-only:
                              {"t": ISO time, "k": "state"|"binding"|"segment"|"removed",
                               "p": run-relative path, "sha": sha256 hex (state only),
                               "size": bytes, "mtime": seconds since the epoch,
                               "at": offset of the revision in revisions.pack (state only)}
        revisions.pack        the state.md revisions, each as the lines that differ from
                              the one before, a whole one now and then (:mod:`.revisions`)
        revisions/<sha256>.md a revision's whole text: the layout before issue 35, still
                              read (a state line without "at"), no longer written

Robustness: a line that is not complete JSON (a write cut short by a crash) is skipped
without error, and the next append starts on a fresh line. A revision is appended to the
pack before its index line, so a record cut short is never referenced; one that does not
rebuild its sha256 reads as lost (the replay skips it, the cursor says so).

Bounded growth: a ``state.md`` revision is indexed only when its sha256 differs from the
last indexed one; its text costs the lines it changed (a rewrite of a 600-statement run
moving one annotation: a few hundred bytes, not the run's size); a binding or segment is
indexed only when its size or mtime changed; revisions larger than
``MAX_REVISION_BYTES``, and any revision once a run's stored revisions pass
``MAX_JOURNAL_BYTES`` on disk, are indexed without their text (a replay skips them);
event-log, encrypted and SQLite state is not journaled at all (those files are their own
history). In memory the journal keeps, per run, one short entry per change seen (no
text: texts are read back from disk when asked for, :attr:`JournalEntry.text`) and the
last revision written (to store the next as a difference).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

import platformdirs

from prose_tui.backends.common.agents import segment_number
from prose_tui.backends.common.bindings import is_binding_name
from prose_tui.backends.common.contained import inside
from prose_tui.backends.common.dburl import redact
from prose_tui.backends.common.encryption import looks_encrypted
from prose_tui.backends.protocol import HistorySource
from prose_tui.backends.common.text import decode, open_regular
from prose_tui.history.current import remember_current, sha256_of
from prose_tui.history.revisions import PACK_NAME, PackWriter, revision_lines
from prose_tui.history.sources import source_for
from prose_tui.model import Part

__all__ = ["Journal", "JournalEntry", "MAX_JOURNAL_BYTES", "MAX_REVISION_BYTES", "StoredRevision", "run_files"]

MAX_REVISION_BYTES = 8 * 1024 * 1024
MAX_JOURNAL_BYTES = 256 * 1024 * 1024  # stored revisions per run, on disk; past it, revisions are indexed only
KINDS = ("state", "binding", "segment", "removed")


@dataclass(slots=True, frozen=True)
class StoredRevision:
    """Where a ``state.md`` revision's text is kept: record ``at`` of the journal
    ``folder``'s ``revisions.pack``, or (``at`` ``None``, the layout before issue 35)
    ``folder/revisions/<sha256>.md``."""

    folder: Path
    sha256: str
    at: int | None = None

    def read(self) -> str | None:
        """The revision's text (UTF-8, bad bytes replaced, controls made visible), or
        ``None`` when it is lost (file gone, record cut short or not matching its sha256).
        Reads the journal folder each time but for the few revisions read lately."""
        if self.at is not None:
            lines = revision_lines(self.folder, self.at)
            return decode(b"\n".join(lines)) if lines is not None else None
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256):
            return None
        try:
            return decode((self.folder / "revisions" / f"{self.sha256}.md").read_bytes())
        except OSError:
            return None


@dataclass(slots=True)
class JournalEntry:
    """One journaled observation.

    ``time`` is when it was seen (the ``now`` given to ``record``). ``kind`` is ``"state"``
    (a ``state.md`` revision), ``"binding"``, ``"segment"`` (an agent's ``{name}-NNN.md``) or
    ``"removed"`` (a journaled file disappeared). ``path`` is absolute (the resolved run
    folder joined with the stored run-relative path). ``sha256`` is the revision's key
    (state only); ``stored`` where its text is kept (``None``: not kept, too large or past
    the cap); ``size`` (bytes) and ``mtime`` (seconds since the epoch) are the file's at
    that time. The text itself is not held: :attr:`text` reads it back.
    """

    time: datetime
    kind: str
    path: Path
    sha256: str | None = None
    size: int | None = None
    mtime: float | None = None
    stored: StoredRevision | None = field(default=None, repr=False)

    @property
    def text(self) -> str | None:
        """The revision's text read back from the journal (state only), or ``None`` when it
        was not stored or is lost. A disk read (for all but the few revisions read lately)."""
        return self.stored.read() if self.stored is not None else None


@dataclass(slots=True)
class _Seen:
    """What the index already says about one run: the last state sha and file stats."""

    state: str | None
    files: dict[str, tuple[int, int]]
    entries: int
    stored: int = 0  # bytes of revisions kept for this run, on disk
    event_log: tuple[int, int, int] | None = None  # (inode, device, size) of state.md when last seen as an event log
    pack: PackWriter | None = None  # appends this run's revisions; holds the last one written
    # whether a state file's head is a log, its own history (the backend's, asked once)
    own_history: Callable[[str], bool] | None = None


MAX_WALK_DEPTH = 8


def run_files(run_dir: Path) -> set[Path]:
    """The files of a run the journal cares about: ``state.md``, binding files, segments,
    and the same below ``imports/*/``. Missing folders give an empty set; never raises."""
    out: set[Path] = set()
    state = run_dir / "state.md"
    if state.is_file():
        out.add(state)
    for sub in ("bindings", "agents", "imports"):
        root = run_dir / sub
        if not root.is_dir():
            continue
        base = len(root.parts)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            folder = Path(dirpath)
            # Bindings and segments live a level or two down; a deeper tree is not the VM's.
            deep = len(folder.parts) - base >= MAX_WALK_DEPTH
            dirnames[:] = [] if deep else sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if not name.startswith("."):
                    out.add(folder / name)
    return out


class Journal:
    """The journals of every watched run, under ``root/journals/`` (see module doc).

    ``root`` defaults to ``platformdirs.user_state_dir("prose-tui")``. One instance may be
    shared by threads: writers (``record``) take turns; readers (``entries``,
    ``revision_text``, ``has``) never wait for a writer's file reads or writes, and see a
    record's entries once its index lines are written. Raises ``ValueError`` from ``record`` when
    the journal folder would be inside the run folder (it never writes into a run).
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else Path(platformdirs.user_state_dir("prose-tui"))
        # Two locks, so a reader (the UI thread building a history) never waits on a disk
        # write (issue 31): ``_writing`` serialises writers and is held across their file
        # reads and writes; ``_published`` guards only the in-memory entry lists below and
        # is never held across I/O.
        self._writing = threading.Lock()
        self._published = threading.Lock()
        self._seen: dict[Path, _Seen] = {}  # the writers' own state (under ``_writing``)
        # Entries of the runs this process read or journaled: the index is read at most once
        # per run; what ``record`` appends is added here, not read back. No texts (see
        # ``JournalEntry.text``); paths are shared between a run's entries.
        self._entries: dict[Path, list[JournalEntry]] = {}
        # Per run, a count that is odd while a writer is appending to its index (a
        # sequence lock): a reader that read the index from disk keeps what it read only
        # when no append began or ended meanwhile.
        self._version: dict[Path, int] = {}
        self._paths: dict[Path, dict[str, Path]] = {}
        # Per run, its journal folder: one object for every stored revision's entry (issue 35:
        # not a path of its own per rewrite, kept as long as the run is watched).
        self._folders: dict[Path, Path] = {}

    # -- places --------------------------------------------------------------------------------
    def folder(self, run_dir: Path) -> Path:
        """The journal folder of ``run_dir``: ``root/journals/<sha1 of its resolved path>``."""
        from prose_tui.remote import shown  # a remote run's journal is keyed by its ssh:// path, not the copy's

        key = hashlib.sha1(shown(str(Path(run_dir).resolve())).encode("utf-8", "surrogateescape")).hexdigest()
        return self.root / "journals" / key

    def has(self, run_dir: Path) -> bool:
        """True when the journal of ``run_dir`` has an index with at least one byte."""
        try:
            return (self.folder(run_dir) / "index.jsonl").stat().st_size > 0
        except OSError:
            return False

    # -- reading -------------------------------------------------------------------------------
    def entries(self, run_dir: Path) -> list[JournalEntry]:
        """Every entry for ``run_dir``, oldest first; a state entry says where its text is
        (``stored``) without reading it.

        Lines that are not complete JSON objects of a known kind (a half-written last
        line) are skipped. Both layouts are read: a state line with ``"at"`` (the pack) and
        one without (``revisions/<sha256>.md``, listed once). An empty list when there is
        no journal. Raises ``OSError`` only when the index exists but cannot be read.
        """
        run_dir = Path(run_dir).resolve()
        with self._published:
            known = self._entries.get(run_dir)
            if known is not None:
                return list(known)
            version = self._version.get(run_dir, 0)
        out = self._read_index(run_dir)
        if out is None:
            return []
        with self._published:
            if version % 2 == 0 and self._version.get(run_dir, 0) == version:
                return list(self._entries.setdefault(run_dir, out))
        return out  # a record landed while the index was read: right as read, not kept

    def _read_index(self, run_dir: Path) -> list[JournalEntry] | None:
        """Every entry of the index of ``run_dir`` (resolved), or ``None`` when there is none."""
        folder = self._folders.setdefault(run_dir, self.folder(run_dir))
        try:
            data = (folder / "index.jsonl").read_bytes()
        except FileNotFoundError:
            return None
        try:
            whole = {name[:-3] for name in os.listdir(folder / "revisions") if name.endswith(".md")}
        except OSError:
            whole = set()
        paths = self._paths.setdefault(run_dir, {})
        out: list[JournalEntry] = []
        for raw in data.split(b"\n"):
            row = _row(raw)
            if row is None:
                continue
            sha = row.get("sha") if isinstance(row.get("sha"), str) else None
            stored = None
            if row["k"] == "state" and sha is not None:
                at = row.get("at")
                if isinstance(at, int) and at >= 0:
                    stored = StoredRevision(folder, sha, at)
                elif sha in whole:
                    stored = StoredRevision(folder, sha)
            rel = row["p"]
            path = paths.get(rel)
            if path is None:
                path = paths[rel] = run_dir / rel
            out.append(JournalEntry(
                time=row["time"], kind=row["k"], path=path, sha256=sha,
                size=row.get("size") if isinstance(row.get("size"), int) else None,
                mtime=row.get("mtime") if isinstance(row.get("mtime"), (int, float)) else None,
                stored=stored,
            ))
        return out

    def revision_text(self, run_dir: Path, sha256: str) -> str | None:
        """The stored text of the ``state.md`` revision ``sha256`` (UTF-8, bad bytes
        replaced), or ``None`` when it was not stored, is lost, or the key is not a sha256.
        Read from disk (either layout); the entries of the run are read once to find it."""
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            return None
        for entry in reversed(self.entries(run_dir)):
            if entry.sha256 == sha256 and entry.stored is not None:
                text = entry.stored.read()
                if text is not None:
                    return text
        return StoredRevision(self.folder(run_dir), sha256).read()  # a whole file nobody indexed

    # -- writing -------------------------------------------------------------------------------
    def record(self, run_dir: Path, changed: set[Path], now: datetime, *, parts: Mapping[Path, Part] | None = None,
               state: tuple[bytes, os.stat_result] | None = None, source: HistorySource | None = None) -> int:
        """Journal what changed in ``run_dir``; returns the number of entries added.

        ``changed`` holds absolute paths (others and paths outside the run are ignored);
        the first call for a run also takes in every file already there (see
        :func:`run_files`), so a run first seen midway starts from what existed. Paths
        below ``imports/{handle}/`` go to that import's own journal. Within one call
        binding and segment writes come first (by mtime) and the ``state.md`` revision
        last, the order the VM Update Protocol of seeds/filesystem.md writes them in.
        ``now`` is stored as the time of each entry. Never writes inside ``run_dir``.

        ``parts`` is the part of the run each changed path belongs to, as the live layer
        classified it (``Delta.parts``): those paths are not classified again. ``state`` is
        ``state.md``'s bytes and stat when the backend read it whole for this change
        (``Delta.state_data``/``state_stat``): it is not read again. ``source`` is the history
        source of the backend that read the run (``history.sources.source_of``): given, no
        backend is asked to claim ``state.md`` (which may read it) to learn whether the file
        is its own history.
        """
        return len(self.record_entries(run_dir, changed, now, parts=parts, state=state, source=source))

    def record_entries(self, run_dir: Path, changed: set[Path], now: datetime, *,
                       parts: Mapping[Path, Part] | None = None,
                       state: tuple[bytes, os.stat_result] | None = None,
                       source: HistorySource | None = None) -> list[JournalEntry]:
        """Like :meth:`record`, returning the entries added (this run's and its imports')."""
        run_dir = Path(run_dir).resolve()
        folder = self.folder(run_dir)
        if folder.resolve() == run_dir or run_dir in folder.resolve().parents:
            raise ValueError(f"journal folder {folder} is inside the run {run_dir}; refusing to write there")
        with self._writing:
            if source is not None:
                seen = self._load_seen(run_dir, folder)
                if seen.own_history is None:
                    seen.own_history = source.keeps_own_history
            return self._record(run_dir, folder, set(changed), now, parts or {}, state)

    def _record(self, run_dir: Path, folder: Path, changed: set[Path], now: datetime,
                kinds: Mapping[Path, Part] | None = None,
                given: tuple[bytes, os.stat_result] | None = None) -> list[JournalEntry]:
        kinds = kinds or {}
        seen = self._load_seen(run_dir, folder)
        if seen.entries == 0:
            changed |= run_files(run_dir)
        # (mtime, rel, kind, path, stat or None): one stat per file. A run's first record takes
        # in every file (500 bindings: 35-40 -> 17-21 ms here), on the live worker beside the first
        # change's paint, so paths are split as text where they are plainly inside the run.
        files: list[tuple[float, str, str, Path, os.stat_result | None]] = []
        state: Path | None = None
        imports: dict[str, set[Path]] = {}
        prefix = str(run_dir) + os.sep
        for path in changed:
            text = str(path)
            if text.startswith(prefix):
                parts = tuple(text[len(prefix):].split(os.sep))
                full = Path(path)
            else:
                rel = _relative(Path(path), run_dir)
                if rel is None:
                    continue
                parts = rel.parts
                full = run_dir / rel
            if not parts or parts[-1].startswith("."):
                continue  # the run itself, or a VM's temporary file
            head = parts[0]
            # A changed path comes classified by the live layer (``parts``); the files a first
            # record takes in (``run_files``) are told apart by the run folder layout here.
            part = kinds.get(path)
            if part is None:
                part = (Part.IMPORT if head == "imports" else Part.STATE if len(parts) == 1 and head == "state.md"
                        else Part.BINDING if head == "bindings" and len(parts) >= 2 and is_binding_name(parts[-1])
                        else Part.AGENT if head == "agents" else Part.OTHER)
            if part is Part.IMPORT and len(parts) >= 3:
                imports.setdefault(parts[1], set()).add(full)
            elif part is Part.STATE and parts == ("state.md",):  # vm.log.md and state.db are their own history
                state = full
            elif part is Part.BINDING or (part is Part.AGENT and len(parts) == 3 and segment_number(full) is not None):
                try:
                    st: os.stat_result | None = os.lstat(full)
                    if st is not None and stat.S_ISLNK(st.st_mode):  # a link: followed only inside the run
                        st = os.stat(full) if inside(full, run_dir) else None
                except OSError:
                    st = None
                kind = "binding" if head == "bindings" else "segment"
                files.append((st.st_mtime if st is not None else 0.0, "/".join(parts), kind, full, st))
        rows: list[dict] = []
        added: list[JournalEntry] = []
        stamp = now.isoformat()
        for _mtime_key, rel_text, kind, path, st in sorted(files, key=lambda f: f[:2]):
            if st is None:
                if rel_text in seen.files:
                    del seen.files[rel_text]
                    rows.append({"t": stamp, "k": "removed", "p": rel_text})
                    added.append(JournalEntry(now, "removed", self._path(run_dir, rel_text, path)))
                continue
            key = (st.st_size, st.st_mtime_ns)
            if seen.files.get(rel_text) == key:
                continue
            seen.files[rel_text] = key
            rows.append({"t": stamp, "k": kind, "p": rel_text, "size": st.st_size, "mtime": st.st_mtime})
            added.append(JournalEntry(now, kind, self._path(run_dir, rel_text, path), size=st.st_size, mtime=st.st_mtime))
        if state is not None:
            entry = self._state_entry(state, folder, seen, now, run_dir, given)
            if entry is not None:
                row: dict[str, object] = {"t": stamp, "k": entry.kind, "p": "state.md"}
                if entry.kind == "state":
                    row.update(sha=entry.sha256, size=entry.size, mtime=entry.mtime)
                    if entry.stored is not None and entry.stored.at is not None:
                        row["at"] = entry.stored.at
                rows.append(row)
                added.append(entry)
        if rows:
            with self._published:
                self._version[run_dir] = self._version.get(run_dir, 0) + 1  # odd: appending
            try:
                self._append(folder, run_dir, rows)
            except BaseException:
                with self._published:
                    self._version[run_dir] += 1
                raise
            with self._published:
                self._version[run_dir] += 1
                known = self._entries.get(run_dir)
                if known is not None:
                    known.extend(added)  # this run's entries only: its imports' follow below
            seen.entries += len(rows)
        for handle, paths in sorted(imports.items()):
            child = run_dir / "imports" / handle
            if child.is_dir() and inside(child, run_dir):  # an import that links out of the run is not kept
                added.extend(self._record(child, self.folder(child), paths, now))
        return added

    def _state_entry(self, path: Path, folder: Path, seen: _Seen, now: datetime,
                     run_dir: Path | None = None,
                     given: tuple[bytes, os.stat_result] | None = None) -> JournalEntry | None:
        # An event log is its own history and encrypted text tells nothing: neither is kept.
        # A log that only grew since it was last seen as one (same inode, not shorter) is
        # still one: it is not read again (it is the whole run, read per appended event).
        # ``given``: the bytes and stat the backend's own read of this change gave (not read again).
        try:  # a state.md that links outside the run is never read (nor kept in the journal)
            if given is not None and (run_dir is None or inside(path, run_dir)):
                data, st = given
                if self._state_kind(data[:65536], st, seen, path) is not None:
                    return None
            else:
                with open_regular(path, root=run_dir) as fh:
                    st = os.fstat(fh.fileno())
                    known = seen.event_log
                    if known is not None and known[:2] == (st.st_ino, st.st_dev) and st.st_size >= known[2]:
                        seen.event_log = (st.st_ino, st.st_dev, st.st_size)
                        return None
                    head = fh.read(65536)
                    if self._state_kind(head, st, seen, path) is not None:
                        return None
                    data = head + fh.read()
        except OSError:
            if seen.state is not None:
                seen.state = None
                return JournalEntry(now, "removed", path)
            return None
        sha = sha256_of(data)
        remember_current(path, st, data, sha)  # the history's "state.md as it is now" without a read on the UI thread
        if sha == seen.state:
            return None
        seen.state = sha
        stored: StoredRevision | None = None
        if len(data) <= MAX_REVISION_BYTES and seen.stored + len(data) <= MAX_JOURNAL_BYTES:
            if seen.pack is None:
                seen.pack = PackWriter(folder)
            at, size = seen.pack.append(sha, data)  # before the index line that points at it
            seen.stored += size
            stored = StoredRevision(self._folders.setdefault(run_dir or path.parent, folder), sha, at)
        return JournalEntry(now, "state", self._path(path.parent, "state.md", path), sha256=sha, size=st.st_size,
                            mtime=st.st_mtime, stored=stored)

    @staticmethod
    def _state_kind(head: bytes, st: os.stat_result, seen: _Seen, path: Path) -> str | None:
        """``"event log"`` or ``"encrypted"`` for a ``state.md`` whose first bytes say so (not
        journaled), else ``None``; remembers an event log's inode and size in ``seen``. Whether
        it is a log is the backend's call (``HistorySource.keeps_own_history``), asked once per run."""
        if seen.own_history is None:
            source = source_for(path)
            seen.own_history = source.keeps_own_history if source is not None else _snapshot
        if seen.own_history(decode(head)):
            seen.event_log = (st.st_ino, st.st_dev, st.st_size)
            return "event log"
        seen.event_log = None
        if looks_encrypted(decode(head[:4096])):
            return "encrypted"
        return None

    def _path(self, run_dir: Path, rel: str, path: Path) -> Path:
        """``path`` (``run_dir/rel``), the same object for every entry of the run."""
        paths = self._paths.setdefault(run_dir, {})
        return paths.setdefault(rel, path)

    def _append(self, folder: Path, run_dir: Path, rows: list[dict]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        meta = folder / "run.json"
        if not meta.exists():
            _store(meta, json.dumps({"run": redact(str(run_dir))}).encode("utf-8"))  # no secret in a state file
        index = folder / "index.jsonl"
        payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
        with open(index, "ab") as fh:
            if fh.tell() > 0 and not _ends_with_newline(index):
                payload = b"\n" + payload  # a half-written line before us stays on its own
            self.write_index(fh, payload)

    def write_index(self, fh: BinaryIO, payload: bytes) -> None:
        """Append ``payload`` (whole JSON lines, UTF-8) to the open index file ``fh``: the
        write that makes a record's entries part of the journal. Runs on the writer's
        thread under the writer lock only; a reader (:meth:`entries`) never waits for it.
        A subclass may wrap it (the tests hold a write here to show a reader goes on)."""
        fh.write(payload)

    def _load_seen(self, run_dir: Path, folder: Path) -> _Seen:
        seen = self._seen.get(run_dir)
        if seen is not None:
            return seen
        seen = _Seen(state=None, files={}, entries=0)
        try:
            data = (folder / "index.jsonl").read_bytes()
        except OSError:
            data = b""
        for raw in data.split(b"\n"):
            row = _row(raw)
            if row is None:
                continue
            seen.entries += 1
            rel = row["p"]
            if row["k"] == "state":
                seen.state = row.get("sha")
            elif row["k"] == "removed":
                if rel == "state.md":
                    seen.state = None
                seen.files.pop(rel, None)
            elif isinstance(row.get("size"), int) and isinstance(row.get("mtime"), (int, float)):
                seen.files[rel] = (row["size"], int(round(row["mtime"] * 1e9)))
        try:
            seen.stored = sum(p.stat().st_size for p in (folder / "revisions").iterdir())
        except OSError:
            seen.stored = 0
        try:
            seen.stored += (folder / PACK_NAME).stat().st_size
        except OSError:
            pass
        # mtimes round-trip through floats; re-stat so an unchanged file is not indexed again
        for rel, (size, mtime_ns) in list(seen.files.items()):
            try:
                st = (run_dir / rel).stat()
            except OSError:
                continue
            if st.st_size == size and abs(st.st_mtime_ns - mtime_ns) < 2_000:
                seen.files[rel] = (st.st_size, st.st_mtime_ns)
        self._seen[run_dir] = seen
        return seen


def _snapshot(head: str) -> bool:
    """A state file no backend claims is kept as a snapshot (never its own history)."""
    return False


def _row(raw: bytes) -> dict | None:
    """One index line as a dict with ``time`` parsed, or ``None`` when it is not a whole entry."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        row = json.loads(raw)
        row["time"] = datetime.fromisoformat(row["t"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(row, dict) or row.get("k") not in KINDS or not isinstance(row.get("p"), str):
        return None
    if row["p"].startswith("/") or ".." in Path(row["p"]).parts:
        return None
    return row


def _relative(path: Path, run_dir: Path) -> Path | None:
    try:
        return path.relative_to(run_dir)
    except ValueError:
        pass
    try:
        return path.parent.resolve().joinpath(path.name).relative_to(run_dir)
    except (ValueError, OSError):
        return None


def _ends_with_newline(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    except OSError:
        return True


def _store(path: Path, data: bytes) -> None:
    """Write ``path`` atomically (temporary name, then rename); keep an existing file."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
