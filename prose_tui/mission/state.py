"""Find, read and classify ``agent_state.json``.

Two different files carry this name (FORMATS.md, "Known defects in the seed specs"):

* the Mission Control file of seeds/agent-state.md, "File Format": ``desired_state`` (written by
  the human), ``current_state`` (written by the agent), ``timestamp``, ``setBy``, ``note``; the
  real runtime also writes ``current_state: "terminated"``;
* an agent heartbeat file written by another component: ``session_id``, ``current_issue``,
  ``status``, ``last_heartbeat``, ``restart_count``.

:func:`read_state` never raises for bad input: a missing, unreadable, malformed or unrecognised
file, or unknown state values, each become a :class:`MissionState` whose ``kind`` says which and
whose ``message`` is the sentence to show the user (seeds/agent-state.md, "Error Handling", seen
from Mission Control's side). This module must not import textual.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Callable, NotRequired, TypedDict

FILE_NAME = "agent_state.json"
GENERATED_APP_DIR = "generated-app"

#: Values Mission Control may write to ``desired_state`` (seeds/agent-state.md, "The Four States").
CONTROL_STATES: tuple[str, ...] = ("continuous", "pause", "run_once", "run_cleanup")
#: ``current_state`` values that mean a session is running (seeds/agent-state.md, "UI Status Mapping").
RUNNING_STATES = frozenset({"continuous", "run_once", "run_cleanup"})
#: Written by the real runtime, not by the seed (FORMATS.md, "Known defects in the seed specs").
TERMINATED = "terminated"
REPORTED_STATES: tuple[str, ...] = CONTROL_STATES + (TERMINATED,)

MISSION_KEYS = ("desired_state", "current_state")
HEARTBEAT_KEYS = ("session_id", "current_issue", "status", "last_heartbeat", "restart_count")
#: The seed's default for a new file (seeds/agent-state.md, "State Transition Rules for Agent").
DEFAULT_STATE = {"desired_state": "pause", "current_state": "pause"}
#: A heartbeat older than this is flagged as stale.
HEARTBEAT_STALE_AFTER = timedelta(minutes=2)

STATE_DESCRIPTIONS = {
    "continuous": "running sessions continuously",
    "run_once": "running a single session",
    "run_cleanup": "running a cleanup session",
    "pause": "idle (paused)",
    TERMINATED: "terminated",
}

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time as an aware UTC datetime (the default clock everywhere in this package)."""
    return datetime.now(timezone.utc)


class Kind(str, Enum):
    """What kind of file was found at the path."""

    MISSION = "mission"
    HEARTBEAT = "heartbeat"
    MISSING = "missing"
    UNREADABLE = "unreadable"
    MALFORMED = "malformed"
    UNRECOGNISED = "unrecognised"
    UNKNOWN_STATE = "unknown_state"


@dataclass(frozen=True)
class Badge:
    """The status badge: ``label`` such as ``RUNNING``; ``tone`` is one of running, idle,
    terminated, warning, error, heartbeat, stale (the UI maps tones to colours)."""

    label: str
    tone: str


@dataclass(frozen=True)
class Pending:
    """A transition Mission Control asked for that the agent has not reported yet.

    ``since`` is the file's ``timestamp`` (usually Mission Control's write); None if unknown.
    """

    desired_state: str
    current_state: str | None
    description: str
    since: datetime | None

    def pending_for(self, now: datetime) -> timedelta | None:
        """How long the transition has been pending at ``now``; None without a timestamp."""
        return None if self.since is None else now - self.since


@dataclass(frozen=True)
class Heartbeat:
    """The heartbeat file's fields; ``last_heartbeat`` parsed from ISO 8601 or epoch seconds/ms."""

    session_id: str | None
    current_issue: str | None
    status: str | None
    last_heartbeat: datetime | None
    last_heartbeat_text: str | None
    restart_count: int | None
    stale: bool


@dataclass(frozen=True)
class MissionState:
    """One reading of an ``agent_state.json`` path, classified.

    ``message`` is the headline for the user; ``problems`` are further warnings (unknown values,
    missing keys, an unparseable timestamp, a stale heartbeat). ``data`` is the parsed JSON object
    (None unless the file held one) and ``raw`` the exact text read (None if it could not be read).
    """

    path: Path
    kind: Kind
    message: str
    read_at: datetime
    problems: tuple[str, ...] = ()
    raw: str | None = None
    data: dict[str, Any] | None = None
    desired_state: str | None = None
    current_state: str | None = None
    timestamp: datetime | None = None
    timestamp_text: str | None = None
    set_by: str | None = None
    note: str | None = None
    heartbeat: Heartbeat | None = None
    searched: tuple[Path, ...] = field(default=())

    @property
    def controllable(self) -> bool:
        """True if a control can write ``desired_state`` without asking first."""
        return self.kind in (Kind.MISSION, Kind.UNKNOWN_STATE)

    @property
    def badge(self) -> Badge:
        """The status badge (seeds/agent-state.md, "UI Status Mapping", plus ``terminated``)."""
        if self.kind is Kind.MISSING:
            return Badge("NO FILE", "error")
        if self.kind in (Kind.MALFORMED, Kind.UNRECOGNISED, Kind.UNREADABLE):
            return Badge("UNREADABLE", "error")
        if self.kind is Kind.HEARTBEAT:
            hb = self.heartbeat
            if hb is not None and hb.stale:
                return Badge("HEARTBEAT STALE", "stale")
            return Badge("HEARTBEAT", "heartbeat")
        current = self.current_state
        if current in RUNNING_STATES:
            return Badge("RUNNING", "running")
        if current == "pause":
            return Badge("IDLE", "idle")
        if current == TERMINATED:
            return Badge("TERMINATED", "terminated")
        if current is None:
            return Badge("NO REPORT", "warning")
        return Badge("UNKNOWN", "warning")

    @property
    def pending(self) -> Pending | None:
        """The transition waiting for the agent, or None when desired and current agree."""
        if not self.controllable or self.desired_state not in CONTROL_STATES:
            return None
        if self.desired_state == self.current_state:
            return None
        if self.desired_state == "pause" and self.current_state == TERMINATED:
            return None  # nothing runs either way
        return Pending(
            self.desired_state,
            self.current_state,
            describe_transition(self.desired_state, self.current_state),
            self.timestamp,
        )


def describe_transition(desired: str, current: str | None) -> str:
    """A sentence for a pending change, e.g. ``"stopping after the current session"``."""
    if current == TERMINATED:
        return f"the agent has terminated; it will act on {desired} only when restarted"
    if current is None:
        return f"waiting for the agent to report (desired {desired})"
    if desired == "pause" and current in RUNNING_STATES:
        return "stopping after the current session"
    if current == "pause":
        return {
            "continuous": "starting continuous sessions when the agent next polls",
            "run_once": "starting a single session when the agent next polls",
            "run_cleanup": "starting a cleanup session when the agent next polls",
        }[desired]
    if current in RUNNING_STATES:
        return f"switching to {desired} after the current session"
    return f"desired {desired}; the agent reports {current!r}"


def describe_duration(delta: timedelta) -> str:
    """Compact duration: ``"42s"``, ``"3m 05s"``, ``"2h 07m"``, ``"4d 3h"`` (negative → absolute)."""
    seconds = int(abs(delta.total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def describe_age(moment: datetime | None, now: datetime) -> str:
    """``"12s ago"``, or ``"in 5s (clock skew?)"`` for a moment after ``now``; ``"unknown"`` for None."""
    if moment is None:
        return "unknown"
    delta = now - moment
    if delta.total_seconds() < -1:
        return f"in {describe_duration(delta)} (clock skew?)"
    return f"{describe_duration(delta)} ago"


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 text (``Z`` or offset; naive means UTC) or epoch seconds/milliseconds → aware UTC
    datetime; None if the value is not a timestamp."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e12 else value
        try:
            return datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def candidate_paths(root: str | Path = ".") -> tuple[Path, ...]:
    """Where :func:`find_agent_state` looks under ``root``: ``root/agent_state.json`` then
    ``root/generated-app/agent_state.json``."""
    root = Path(root)
    return (root / FILE_NAME, root / GENERATED_APP_DIR / FILE_NAME)


def find_agent_state(root: str | Path = ".", explicit: str | Path | None = None) -> Path:
    """The ``agent_state.json`` to use: ``explicit`` (``--agent-state FILE``) as given; ``root``
    itself if it is a file; else the first existing candidate of :func:`candidate_paths`; else
    ``root/agent_state.json`` (which does not exist yet, so reading it reports MISSING)."""
    if explicit is not None:
        return Path(explicit)
    root = Path(root)
    if root.is_file():
        return root
    candidates = candidate_paths(root)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return candidates[0]


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _json_kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _read_text(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason the file could not be read); (None, None) if missing. The
    reason is a sentence without its full stop; a file name in it is as the user gave it (never
    capitalised)."""
    try:
        return path.read_text(encoding="utf-8"), None
    except FileNotFoundError:
        return None, None
    except IsADirectoryError:
        return None, f"{path} is a folder, not a file"
    except UnicodeDecodeError:
        return None, f"{path} is not UTF-8 text"
    except OSError as error:
        return None, f"Cannot read {path}: {error.strerror or error}"


def read_state(
    path: str | Path,
    *,
    now: Clock = utc_now,
    stale_after: timedelta = HEARTBEAT_STALE_AFTER,
    searched: tuple[Path, ...] = (),
    retries: int = 2,
    retry_delay: float = 0.02,
) -> MissionState:
    """Read and classify ``path``; never raises for bad content.

    An agent that writes in place (``open(..., "w")`` as in seeds/agent-state.md, "Complete
    Example") can be caught half-way, so text that is not valid JSON is re-read up to ``retries``
    times, ``retry_delay`` seconds apart, before it is reported MALFORMED. ``searched`` lists the
    places looked in, for the MISSING message.
    """
    path = Path(path)
    text, error = _read_text(path)
    for _ in range(retries):
        if text is None or _parses(text):
            break
        time.sleep(retry_delay * (0.5 + random.random()))  # jitter: don't fall in step with a writer
        text, error = _read_text(path)
    read_at = now()
    if error is not None:
        kind = Kind.MALFORMED if "UTF-8" in error else Kind.UNREADABLE
        return MissionState(path, kind, error + ".", read_at)
    if text is None:
        where = " or ".join(str(p) for p in searched) if len(searched) > 1 else str(path)
        message = (
            f"No agent_state.json at {where}. Mission Control can create it with the seed's "
            "default (desired_state and current_state both pause)."
        )
        return MissionState(path, Kind.MISSING, message, read_at, searched=searched)
    return classify(path, text, now=now, stale_after=stale_after, read_at=read_at)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class _Common(TypedDict):
    """The fields every ``MissionState`` that ``classify`` returns shares."""

    path: Path
    read_at: datetime
    raw: str
    data: NotRequired[dict[str, Any]]


def classify(
    path: Path,
    text: str,
    *,
    now: Clock = utc_now,
    stale_after: timedelta = HEARTBEAT_STALE_AFTER,
    read_at: datetime | None = None,
) -> MissionState:
    """Classify the text of an ``agent_state.json`` (see the module docstring)."""
    read_at = read_at or now()
    base: _Common = {"path": path, "read_at": read_at, "raw": text}
    if not text.strip():
        return MissionState(kind=Kind.MALFORMED, message=f"{path} is empty.", **base)
    try:
        data = json.loads(text)
    except ValueError as error:
        where = (f"line {error.lineno}, column {error.colno}: {error.msg}" if isinstance(error, json.JSONDecodeError)
                 else str(error))
        message = (
            f"{path} is not valid JSON ({where}). The agent treats this as pause; "
            "Mission Control will not overwrite it without confirmation."
        )
        return MissionState(kind=Kind.MALFORMED, message=message, **base)
    if not isinstance(data, dict):
        message = f"{path} holds {_json_kind(data)}, not a JSON object."
        return MissionState(kind=Kind.MALFORMED, message=message, **base)
    base["data"] = data
    heartbeat = None
    if any(key in data for key in HEARTBEAT_KEYS):
        heartbeat = _heartbeat(data, now(), stale_after)
    if not any(key in data for key in MISSION_KEYS):
        if heartbeat is not None:
            return _heartbeat_state(data, heartbeat, now(), stale_after, base)
        keys = ", ".join(sorted(map(str, data))) or "none"
        message = (
            f"{path} is JSON but neither a Mission Control file (desired_state, current_state) "
            f"nor a heartbeat file (session_id, last_heartbeat, ...). Keys: {keys}."
        )
        return MissionState(kind=Kind.UNRECOGNISED, message=message, **base)
    return _mission_state(data, heartbeat, base)


def _heartbeat(data: dict[str, Any], now: datetime, stale_after: timedelta) -> Heartbeat:
    beat = parse_timestamp(data.get("last_heartbeat"))
    restarts = data.get("restart_count")
    return Heartbeat(
        session_id=_as_text(data.get("session_id")),
        current_issue=_as_text(data.get("current_issue")),
        status=_as_text(data.get("status")),
        last_heartbeat=beat,
        last_heartbeat_text=_as_text(data.get("last_heartbeat")),
        restart_count=restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else None,
        stale=beat is not None and now - beat > stale_after,
    )


def _heartbeat_state(data, heartbeat: Heartbeat, now: datetime, stale_after: timedelta, base) -> MissionState:
    problems = []
    status = heartbeat.status or "unknown"
    message = (
        f"Agent heartbeat file (status {status}), not a Mission Control file: it has no "
        "desired_state, so the controls cannot steer this agent."
    )
    if heartbeat.last_heartbeat is None:
        problems.append("No readable last_heartbeat: cannot tell whether the agent is alive.")
    elif heartbeat.stale:
        age = describe_duration(now - heartbeat.last_heartbeat)
        problems.append(
            f"Heartbeat is old: last beat {age} ago (more than {describe_duration(stale_after)}); "
            "the agent may have stopped."
        )
    return MissionState(kind=Kind.HEARTBEAT, message=message, problems=tuple(problems), heartbeat=heartbeat, **base)


def _mission_state(data: dict[str, Any], heartbeat: Heartbeat | None, base) -> MissionState:
    desired = _as_text(data.get("desired_state"))
    current = _as_text(data.get("current_state"))
    problems: list[str] = []
    unknown = False
    expected = ", ".join(CONTROL_STATES)
    if desired is None:
        problems.append("desired_state is missing: the agent treats this as pause.")
    elif desired not in CONTROL_STATES:
        unknown = True
        problems.append(
            f"Unknown desired_state {desired!r} (expected one of {expected}); "
            "the agent treats it as pause."
        )
    if current is None:
        problems.append("current_state is missing: the agent has not reported its state yet.")
    elif current not in REPORTED_STATES:
        unknown = True
        problems.append(
            f"Unknown current_state {current!r} reported by the agent "
            f"(expected one of {expected} or {TERMINATED})."
        )
    stamp_text = _as_text(data.get("timestamp"))
    stamp = parse_timestamp(data.get("timestamp"))
    if stamp_text is not None and stamp is None:
        problems.append(f"timestamp {stamp_text!r} is not an ISO 8601 time.")
    if unknown:
        message = "agent_state.json holds a state value Mission Control does not know."
    elif current in STATE_DESCRIPTIONS:
        message = f"Agent is {STATE_DESCRIPTIONS[current]}."
    else:
        message = "The agent has not reported a current_state yet."
    return MissionState(
        kind=Kind.UNKNOWN_STATE if unknown else Kind.MISSION,
        message=message,
        problems=tuple(problems),
        desired_state=desired,
        current_state=current,
        timestamp=stamp,
        timestamp_text=stamp_text,
        set_by=_as_text(data.get("setBy")),
        note=_as_text(data.get("note")),
        heartbeat=heartbeat,
        **base,
    )
