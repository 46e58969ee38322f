"""A fake long-running agent for the Mission Control tests, run as a subprocess.

Default mode follows the agent side of seeds/agent-state.md ("State Transition Rules for Agent",
"Complete Example"): create pause/pause if the file is missing; poll while paused; in continuous
mode run sessions back to back; run_once and run_cleanup run one session and then write
desired_state = current_state = pause; a malformed file or unknown value is treated as pause.
Writes are read-modify-write of the whole file with ``open(path, "w")``, as in the seed.
SIGTERM finishes the current session, writes current_state "terminated" (as the real runtime
does) and exits.

``--race`` mode instead rewrites the file in a tight loop (keeping whatever desired_state it
read, cycling current_state and counting ``beat``); on SIGTERM it stops and records its last
current_state and beat in the ``--log`` file as JSON.

Every session is logged to ``--log`` as JSON lines: {"event": "start"|"end", "kind": ..., "n": ...}.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import time
from datetime import datetime, timezone

STATES = ("continuous", "pause", "run_once", "run_cleanup")
stopping = False


def _on_term(signum, frame):
    global stopping
    stopping = True


def stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Agent:
    def __init__(self, path: str, log: str | None) -> None:
        self.path = path
        self.log = log

    def read(self) -> dict:
        """The state, tolerant as the seed asks: missing → created, malformed → pause."""
        if not os.path.exists(self.path):
            self.write(desired="pause", current="pause")
            return {"desired_state": "pause", "current_state": "pause"}
        for _ in range(5):
            try:
                with open(self.path, encoding="utf-8") as handle:
                    data = json.load(handle)
                if isinstance(data, dict):
                    return data
            except (OSError, ValueError):
                pass
            time.sleep(0.005)
        return {}

    def write(self, desired: str | None = None, current: str | None = None, **extra) -> dict:
        state = self.read() if os.path.exists(self.path) else {}
        if desired:
            state["desired_state"] = desired
        if current:
            state["current_state"] = current
        state.update(extra)
        state["timestamp"] = stamp()
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2)
        return state

    def record(self, **event) -> None:
        if self.log:
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(event) + "\n")


def run_state_machine(agent: Agent, poll: float, session: float, gate: str | None = None) -> None:
    count = 0

    def run_session(kind: str) -> None:
        nonlocal count
        count += 1
        agent.record(event="start", kind=kind, n=count)
        if gate is None:
            time.sleep(session)
        else:  # the session lasts until the test creates the gate file (then it is taken)
            while not stopping and not os.path.exists(gate):
                time.sleep(poll)
            if os.path.exists(gate):
                os.remove(gate)
        agent.record(event="end", kind=kind, n=count)

    while not stopping:
        desired = agent.read().get("desired_state")
        if desired not in STATES:
            desired = "pause"  # malformed or unknown: treat as pause (seed, "Error Handling")
        if desired == "continuous":
            agent.write(current="continuous")
            run_session("continuous")
        elif desired in ("run_once", "run_cleanup"):
            agent.write(current=desired)
            run_session("cleanup" if desired == "run_cleanup" else "once")
            agent.write(desired="pause", current="pause")
        else:
            if agent.read().get("current_state") != "pause":
                agent.write(current="pause")
            time.sleep(poll)
    agent.write(current="terminated")


def run_racer(agent: Agent, window: float, pause: float) -> None:
    beat = 0
    current = "pause"
    cycle = itertools.cycle(("continuous", "pause", "run_once", "run_cleanup"))
    while not stopping:
        beat += 1
        current = next(cycle)
        state = agent.read()
        time.sleep(window)  # a slow agent: whatever Mission Control writes now gets overwritten
        state["current_state"] = current
        state["beat"] = beat
        with open(agent.path, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        time.sleep(pause)
    if agent.log:
        with open(agent.log, "w", encoding="utf-8") as handle:
            json.dump({"current_state": current, "beat": beat}, handle)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("state")
    parser.add_argument("--poll", type=float, default=0.02)
    parser.add_argument("--session", type=float, default=0.4)
    parser.add_argument("--log")
    parser.add_argument("--gate", help="sessions end only when this file appears (a test's release)")
    parser.add_argument("--race", action="store_true")
    parser.add_argument("--race-window", type=float, default=0.0005)
    parser.add_argument("--race-pause", type=float, default=0.0015)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGALRM, _on_term)
    signal.setitimer(signal.ITIMER_REAL, args.max_seconds)  # never outlive a broken test
    agent = Agent(args.state, args.log)
    if args.race:
        run_racer(agent, args.race_window, args.race_pause)
    else:
        run_state_machine(agent, args.poll, args.session, args.gate)


if __name__ == "__main__":
    main()
