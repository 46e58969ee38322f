"""Mission Control's status as (label, value) rows, shared by the panel and ``prose-tui agent status``."""

from __future__ import annotations

from datetime import datetime, timedelta

from prose_tui.mission.state import Kind, MissionState, describe_age, describe_duration


POLL_OVERDUE = timedelta(minutes=2)  # a paused agent polls every 5-10 s (seeds/agent-state.md, "Polling frequency")


def status_rows(state: MissionState, now: datetime, pending_since: datetime | None = None) -> list[tuple[str, str]]:
    """(label, value) rows describing ``state`` at ``now``: status, desired, the pending
    transition and how long it has been pending (from ``pending_since`` if given, else the file's
    timestamp), timestamp age, setBy, note, heartbeat fields and every warning."""
    rows: list[tuple[str, str]] = []
    if state.kind in (Kind.MISSION, Kind.UNKNOWN_STATE):
        rows.append(("Current", state.current_state or "(not reported)"))
        rows.append(("Desired", state.desired_state or "(missing)"))
        pending = state.pending
        if pending is not None:
            since = pending_since or pending.since
            waited = f" (pending {describe_duration(now - since)})" if since is not None else ""
            rows.append(("Pending", pending.description + waited))
            if since is not None and pending.current_state in ("pause", None) and now - since > POLL_OVERDUE:
                rows.append(("Warning", f"the agent has not taken up {pending.desired_state} in "
                             f"{describe_duration(now - since)}, though a paused agent reads this file every "
                             "5-10 s (seeds/agent-state.md): it is probably not running or not polling it"))
        if state.timestamp_text is not None:
            rows.append(("Updated", f"{describe_age(state.timestamp, now)} ({state.timestamp_text})"))
        rows.append(("Set by", state.set_by or "(not given)"))
        if state.note:
            rows.append(("Note", state.note))
    heartbeat = state.heartbeat
    if heartbeat is not None:
        rows.append(("Agent status", heartbeat.status or "(not given)"))
        if heartbeat.session_id:
            rows.append(("Session", heartbeat.session_id))
        if heartbeat.current_issue:
            rows.append(("Issue", heartbeat.current_issue))
        if heartbeat.last_heartbeat_text is not None:
            rows.append(("Last beat", f"{describe_age(heartbeat.last_heartbeat, now)} ({heartbeat.last_heartbeat_text})"))
        if heartbeat.restart_count is not None:
            rows.append(("Restarts", str(heartbeat.restart_count)))
    rows.extend(("Warning", problem) for problem in state.problems)
    return rows
