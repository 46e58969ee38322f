"""Mission Control's writes to ``agent_state.json``: atomic, race-checked, never lossy.

Mission Control writes only ``desired_state``, ``timestamp`` (ISO 8601 UTC), ``setBy: "human"``
and, when given, ``note``; every other key is kept and ``current_state`` is never changed
(seeds/agent-state.md, "Summary" and "State Separation Philosophy").

The agent rewrites the whole file too (seeds/agent-state.md, "Complete Example"), so:

1. the file is re-read just before writing and the new text is built from that reading;
2. the new text goes to a temporary file in the same folder, is fsynced, and the file is re-read
   once more: if the agent wrote in the meantime, the write is rebuilt from the agent's text
   (so its latest ``current_state`` survives); only then is the temporary file renamed over the
   original (``os.replace``), so the agent never reads half a file;
3. for ``verify_window`` seconds afterwards the file is watched: if the agent overwrote the new
   ``desired_state`` (it wrote from a reading taken before ours), the value is applied again on
   top of the agent's text and the result says so. Watching ends early once the agent reports
   ``current_state`` equal to the new ``desired_state``.

Without a lock the agent honours, a write landing in the microseconds between step 2's re-read
and the rename can still be replaced; the agent's next write restores its ``current_state``.
This module must not import textual.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from prose_tui.mission.state import (
    CONTROL_STATES,
    DEFAULT_STATE,
    Clock,
    Kind,
    MissionState,
    read_state,
    utc_now,
)

#: CLI/UI action name → the ``desired_state`` it writes (seeds/agent-state.md, "The Four States").
ACTIONS: dict[str, str] = {
    "start": "continuous",
    "stop": "pause",
    "once": "run_once",
    "cleanup": "run_cleanup",
}
ACTION_LABELS: dict[str, str] = {
    "start": "Start (continuous)",
    "stop": "Stop (pause)",
    "once": "Run single session",
    "cleanup": "Run cleanup session",
}

VERIFY_WINDOW = 0.25
VERIFY_STEP = 0.01
MAX_REAPPLY = 25
#: Seconds a file must stay malformed before a write reports it: an agent writing in place
#: (seeds/agent-state.md, "Complete Example") leaves it empty or half-written for a moment.
SETTLE = 0.5
#: Rebuilds from a fresh reading when the agent wrote during a write; the last try writes anyway
#: (from the freshest reading), since an agent writing that often restores its own state at once.
_MAX_REBUILDS = 5
_ANY = object()


class ControlError(Exception):
    """A control could not be applied; ``message`` is the sentence to show the user."""

    def __init__(self, message: str, state: MissionState | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.state = state


class StateFileMissing(ControlError):
    """No file at the path and creation was not requested."""


class StateFileMalformed(ControlError):
    """The file is not a Mission Control file; ``lost`` is the text an overwrite would replace."""

    def __init__(self, message: str, state: MissionState, lost: str) -> None:
        super().__init__(message, state)
        self.lost = lost


class NotMissionControlFile(ControlError):
    """The file is the agent heartbeat file, which has no ``desired_state`` to steer."""


class StateFileUnwritable(ControlError):
    """The file or its folder cannot be read or written."""


class AgentKeepsOverwriting(ControlError):
    """The agent overwrote ``desired_state`` more than ``max_reapply`` times in a row."""


@dataclass(frozen=True)
class WriteResult:
    """What a control did. ``written`` is the object last written; ``reapplied`` counts how often
    the agent overwrote ``desired_state`` and it was applied again; ``acknowledged`` is True if
    the agent already reported ``current_state == desired_state``; ``replaced`` is the text of a
    malformed file that was overwritten on request (None otherwise)."""

    path: Path
    desired_state: str
    written: dict[str, Any]
    reapplied: int = 0
    created: bool = False
    acknowledged: bool = False
    replaced: str | None = None

    @property
    def message(self) -> str:
        """The sentence to show the user."""
        parts = []
        if self.created:
            parts.append(f"Created {self.path.name} with the default state.")
        if self.replaced is not None:
            parts.append(f"Replaced the unreadable {self.path.name} ({len(self.replaced)} characters).")
        parts.append(f"desired_state set to {self.desired_state}.")
        if self.reapplied:
            times = "once" if self.reapplied == 1 else f"{self.reapplied} times"
            parts.append(f"The agent overwrote it {times}; applied it again.")
        if self.acknowledged:
            parts.append("The agent has picked it up.")
        elif self.written.get("current_state") == self.desired_state:
            parts.append(f"The agent already reports {self.desired_state}.")
        return " ".join(parts)


def iso_utc(moment: datetime) -> str:
    """``2025-10-15T22:39:14.372Z``: the seed's timestamp form (seeds/agent-state.md, "File Format")."""
    moment = moment.astimezone(timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def malformed_preview(text: str, lines: int = 12, width: int = 72) -> str:
    """The first ``lines`` lines of ``text``, each cut to ``width``, for a confirmation prompt."""
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in text.splitlines()[:lines]]
    hidden = len(text.splitlines()) - len(shown)
    if hidden > 0:
        shown.append(f"… and {hidden} more lines")
    return "\n".join(shown) if shown else "(empty file)"


def _base_for(state: MissionState, *, create: bool, overwrite_malformed: bool) -> tuple[dict[str, Any], bool, str | None]:
    """(object to update, created, replaced text) for ``state``; raises ControlError subclasses."""
    if state.kind is Kind.MISSING:
        if not create:
            raise StateFileMissing(state.message, state)
        return dict(DEFAULT_STATE), True, None
    if state.kind is Kind.UNREADABLE:
        raise StateFileUnwritable(state.message, state)
    if state.kind is Kind.HEARTBEAT:
        raise NotMissionControlFile(state.message, state)
    if state.kind is Kind.UNRECOGNISED:
        if not overwrite_malformed:
            raise StateFileMalformed(state.message, state, state.raw or "")
        return dict(state.data or {}), False, None  # keeps its keys: nothing is lost
    if state.kind is Kind.MALFORMED:
        if not overwrite_malformed:
            raise StateFileMalformed(state.message, state, state.raw or "")
        return dict(DEFAULT_STATE), False, state.raw or ""
    return dict(state.data or {}), False, None


def _updated(base: dict[str, Any], desired: str, note: str | None, now: Clock) -> dict[str, Any]:
    new = dict(base)
    new["desired_state"] = desired
    new["timestamp"] = iso_utc(now())
    new["setBy"] = "human"
    if note is not None:
        new["note"] = note
    return new


def _current_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return "\0unreadable"


def _replace_if_unchanged(path: Path, text: str, expected: object) -> bool:
    """Write ``text`` to a fsynced temporary file beside ``path`` and rename it over ``path``,
    unless ``path`` no longer holds ``expected``; returns False (nothing written) in that case."""
    folder = path.parent
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    except OSError as error:
        raise StateFileUnwritable(f"Cannot read {path}: {error.strerror or error}.") from error
    try:
        handle = tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=folder, prefix=f".{path.name}.", suffix=".tmp", delete=False
        )
    except FileNotFoundError as error:
        raise StateFileUnwritable(f"Folder {folder} does not exist.") from error
    except OSError as error:
        raise StateFileUnwritable(f"Cannot write in {folder}: {error.strerror or error}.") from error
    temporary = Path(handle.name)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if expected is not _ANY and _current_text(path) != expected:
            temporary.unlink()
            return False
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise StateFileUnwritable(f"Cannot write {path}: {error.strerror or error}.") from error
    _fsync_folder(folder)
    return True


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _write_once(
    path: Path,
    build: Callable[[MissionState], tuple[dict[str, Any], bool, str | None]],
    now: Clock,
    settle: float,
):
    """Read, build, write with the pre-rename check; rebuilds when the agent wrote meanwhile."""
    settle_until = time.monotonic() + settle
    attempt = 0
    while True:
        state = read_state(path, now=now)
        try:
            new, created, replaced = build(state)
        except StateFileMalformed:
            # Perhaps the agent is half-way through an in-place write (and was descheduled):
            # only a file that stays malformed for ``settle`` seconds is reported.
            if time.monotonic() >= settle_until:
                raise
            time.sleep(0.02)
            continue
        attempt += 1
        expected = state.raw if attempt < _MAX_REBUILDS else _ANY
        if _replace_if_unchanged(path, _dump(new), expected):
            return state, new, created, replaced


def set_desired_state(
    path: str | Path,
    desired: str,
    *,
    note: str | None = None,
    create: bool = False,
    overwrite_malformed: bool = False,
    now: Clock = utc_now,
    verify_window: float = VERIFY_WINDOW,
    verify_step: float = VERIFY_STEP,
    max_reapply: int = MAX_REAPPLY,
    settle: float = SETTLE,
    sleep: Callable[[float], None] = time.sleep,
) -> WriteResult:
    """Set ``desired_state`` to ``desired`` (one of :data:`CONTROL_STATES`) in ``path``.

    ``create`` makes a missing file from the seed default (pause/pause) first;
    ``overwrite_malformed`` replaces a file that is not valid JSON with that default (the caller
    must have shown :attr:`StateFileMalformed.lost` and got a yes); a file is judged malformed only
    after it stays so for ``settle`` seconds (the agent may be mid-write). Blocks for up to
    ``verify_window`` seconds (longer if the agent overwrites the value) while checking the agent
    did not overwrite it. Raises ValueError for an unknown ``desired``; StateFileMissing,
    StateFileMalformed, NotMissionControlFile, StateFileUnwritable or AgentKeepsOverwriting
    (all :class:`ControlError`, with a user-facing ``message``) otherwise.
    Source: seeds/agent-state.md, "State Separation Philosophy" and "Summary".
    """
    if desired not in CONTROL_STATES:
        raise ValueError(f"desired_state must be one of {', '.join(CONTROL_STATES)}, not {desired!r}")
    path = Path(path)

    def first(state: MissionState):
        base, created, replaced = _base_for(state, create=create, overwrite_malformed=overwrite_malformed)
        return _updated(base, desired, note, now), created, replaced

    _, written, created, replaced = _write_once(path, first, now, settle)
    reapplied = 0
    acknowledged = False
    quiet_steps = 0
    needed = max(1, round(verify_window / verify_step)) if verify_window > 0 else 0
    while quiet_steps < needed:
        sleep(verify_step)
        seen = read_state(path, now=now)
        if not seen.controllable:
            quiet_steps += 1  # the agent is mid-write or recreating; judge the next reading
            continue
        if seen.desired_state == desired:
            if seen.current_state == desired and seen.raw != _dump(written):  # the agent wrote it
                acknowledged = True
                break
            quiet_steps += 1
            continue
        reapplied += 1
        if reapplied > max_reapply:
            raise AgentKeepsOverwriting(
                f"The agent keeps overwriting desired_state (now {seen.desired_state!r}); "
                f"gave up after applying {desired} {max_reapply} more times.",
                seen,
            )

        def again(state: MissionState):
            base, _, _ = _base_for(state, create=False, overwrite_malformed=False)
            return _updated(base, desired, note, now), False, None

        sleep(verify_step * random.random())  # jitter: don't fall in step with the agent's writes
        _, written, _, _ = _write_once(path, again, now, settle)
        quiet_steps = 0
    return WriteResult(path, desired, written, reapplied, created, acknowledged, replaced)


def apply_action(path: str | Path, action: str, **options: Any) -> WriteResult:
    """Run a named control (``start``, ``stop``, ``once``, ``cleanup``; see :data:`ACTIONS`);
    keyword options as for :func:`set_desired_state`."""
    try:
        desired = ACTIONS[action]
    except KeyError:
        raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}") from None
    return set_desired_state(path, desired, **options)


def create_default(path: str | Path, *, note: str | None = None, now: Clock = utc_now) -> WriteResult:
    """Create a missing ``path`` with the seed default, desired and current pause
    (seeds/agent-state.md, "Error Handling"). Raises ControlError if something is already there
    (nothing is overwritten) or the folder cannot be written."""
    path = Path(path)
    state = read_state(path, now=now, retries=0)
    if state.kind is not Kind.MISSING:
        raise ControlError(f"{path} already exists; nothing was changed.", state)
    new = _updated(dict(DEFAULT_STATE), "pause", note, now)
    if not _replace_if_unchanged(path, _dump(new), None):
        raise ControlError(f"{path} appeared while it was being created; nothing was changed.")
    return WriteResult(path, "pause", new, created=True)
