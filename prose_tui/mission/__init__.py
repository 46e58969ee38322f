"""Mission Control for ``agent_state.json`` (seeds/agent-state.md): read, classify and steer.

The core (``state``, ``control``, ``cli``) does not import textual; the Textual parts live in
``prose_tui.tui.widgets.mission_panel`` and ``prose_tui.tui.screens.mission_control``.
"""

from prose_tui.mission.control import (
    ACTION_LABELS,
    ACTIONS,
    AgentKeepsOverwriting,
    ControlError,
    NotMissionControlFile,
    StateFileMalformed,
    StateFileMissing,
    StateFileUnwritable,
    WriteResult,
    apply_action,
    create_default,
    set_desired_state,
)
from prose_tui.mission.state import (
    CONTROL_STATES,
    FILE_NAME,
    Badge,
    Heartbeat,
    Kind,
    MissionState,
    Pending,
    find_agent_state,
    read_state,
    utc_now,
)

__all__ = [
    "ACTIONS",
    "ACTION_LABELS",
    "CONTROL_STATES",
    "FILE_NAME",
    "AgentKeepsOverwriting",
    "Badge",
    "ControlError",
    "Heartbeat",
    "Kind",
    "MissionState",
    "NotMissionControlFile",
    "Pending",
    "StateFileMalformed",
    "StateFileMissing",
    "StateFileUnwritable",
    "WriteResult",
    "apply_action",
    "create_default",
    "find_agent_state",
    "read_state",
    "set_desired_state",
    "utc_now",
]
