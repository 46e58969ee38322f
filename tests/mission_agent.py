"""A fake long-running agent for the Mission Control tests, run as a subprocess.

Default mode follows the agent side of seeds/agent-state.md ("State Transition Rules for Agent",
"Complete Example"): create pause/pause if the file is missing; poll while paused; in continuous
mode run sessions back to back; run_once and run_cleanup run one session and then write
desired_state = current_state = pause; a malformed file or unknown value is treated as pause.
Writes are read-modify-write of the whole file with ``open(path, "w")``, as in the seed.
SIGTERM finishes the current session, writes current_state "terminated" (as the real runtime
does) and exits.

``--race`` mode is an agent racing Mission Control, driven step by step by the test (``Racer``)
so that the race is produced by the test, never by the scheduler: each ``read`` on its standard
input takes a reading of the file and holds it; each ``write`` writes the reading it holds (or a
fresh one) back, keeping whatever desired_state it read, cycling current_state and counting
``beat``; a held reading taken before Mission Control's write clobbers that write. Each command
is answered with a line ``ok BEAT`` once done. At the end of its input (or on SIGTERM) it records
its last current_state and beat in the ``--log`` file as JSON.

Every session is logged to ``--log`` as JSON lines: {"event": "start"|"end", "kind": ..., "n": ...}.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from datetime import datetime, timezone

STATES = ("continuous", "pause", "run_once", "run_cleanup")
# The agent's lifetime when its test never ends it: only a guard against a hung test. It ends
# with its parent anyway (_stop_with_parent); a test that is merely slow, as on a loaded
# 2-core machine, must never see its agent terminate itself (it did at 60 s).
MAX_SECONDS = 900.0
stopping = False


def _on_term(signum, frame):
    global stopping
    stopping = True


def _stop_with_parent(parent: int) -> None:
    """Stop as on SIGTERM once the test process that started the agent is gone (a test killed
    before its ``finally``): the agent never outlives its test, and ``--max-seconds`` can be
    long enough that a test slowed down by a loaded machine never sees its agent give up."""
    global stopping
    while os.getppid() == parent:
        time.sleep(0.5)
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


def run_racer(agent: Agent, commands, replies) -> None:
    """Obey ``read``/``write`` lines from ``commands`` (see the module docstring)."""
    beat = 0
    current = "pause"
    held: dict | None = None
    cycle = itertools.cycle(("continuous", "pause", "run_once", "run_cleanup"))
    for line in commands:
        if stopping:
            break
        command = line.strip()
        if command == "read":
            held = agent.read()
        elif command == "write":
            state = held if held is not None else agent.read()
            held = None
            beat += 1
            current = next(cycle)
            state["current_state"] = current
            state["beat"] = beat
            with open(agent.path, "w", encoding="utf-8") as handle:
                json.dump(state, handle)
        else:
            replies.write(f"unknown command {command!r}\n")
            replies.flush()
            continue
        replies.write(f"ok {beat}\n")
        replies.flush()
    if agent.log:
        with open(agent.log, "w", encoding="utf-8") as handle:
            json.dump({"current_state": current, "beat": beat}, handle)


class Racer:
    """The ``--race`` agent in a subprocess, one step at a time (for the tests).

    ``step`` stands in for Mission Control's ``sleep`` between its checks (pass it as
    ``sleep=``): the agent writes the reading it holds (a clobber when Mission Control wrote
    since it was taken), then, as ``random.Random(seed)`` decides, takes a reading to write at
    the next step, rewrites the file at once from a fresh reading, or does nothing. ``meddle``
    is the agent writing between Mission Control's reading and its rename. A stale reading is
    thus written within one check of Mission Control's write: exactly the race the verify
    window is there to catch, however the machine schedules the processes.
    """

    def __init__(self, path, log, *, seed: int = 0, hold: float = 0.4, fresh: float = 0.3,
                 meddle: float = 0.3) -> None:
        self.path, self.log = path, log
        self.choose = random.Random(seed)
        self.hold, self.fresh, self.meddle_chance = hold, fresh, meddle
        self.holding = False
        self.beat = 0  # the beat of the agent's last write
        self.clobbers = 0  # writes of a reading that no longer matched the file (Mission Control wrote since)
        self.meddles = 0
        self._held_from: str | None = None
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(path), "--race", "--log", str(log)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def _say(self, command: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply.startswith("ok "):
            raise AssertionError(f"the racing agent did not do {command!r}: {reply!r}")
        self.beat = int(reply.split()[1])

    def read(self) -> None:
        self._held_from = Path(self.path).read_text(encoding="utf-8")
        self._say("read")
        self.holding = True

    def write(self) -> None:
        if self.holding and Path(self.path).read_text(encoding="utf-8") != self._held_from:
            self.clobbers += 1
        self._say("write")
        self.holding = False

    def step(self, seconds: float = 0.0) -> None:
        """One of Mission Control's pauses (``seconds`` is ignored: nothing waits)."""
        if self.holding:
            self.write()
        roll = self.choose.random()
        if roll < self.hold:
            self.read()
        elif roll < self.hold + self.fresh:
            self.write()

    def meddle(self) -> None:
        """Mission Control has read the file and is about to write its own: as
        ``random.Random(seed)`` decides, the agent rewrites it from a fresh reading now (unless
        it holds a reading: that one is written at the next ``step``, over Mission Control's)."""
        if not self.holding and self.choose.random() < self.meddle_chance:
            self.meddles += 1
            self.write()

    def close(self) -> dict:
        """End the agent; its record of its last current_state and beat."""
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=120)  # a hang guard: it exits at the end of its input
        if self.process.stdout:
            self.process.stdout.close()
        return json.loads(Path(self.log).read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("state")
    parser.add_argument("--poll", type=float, default=0.02)
    parser.add_argument("--session", type=float, default=0.4)
    parser.add_argument("--log")
    parser.add_argument("--gate", help="sessions end only when this file appears (a test's release)")
    parser.add_argument("--race", action="store_true", help="race step by step, as told on stdin (Racer)")
    parser.add_argument("--max-seconds", type=float, default=MAX_SECONDS)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGALRM, _on_term)
    signal.setitimer(signal.ITIMER_REAL, args.max_seconds)  # a last resort: see _stop_with_parent
    threading.Thread(target=_stop_with_parent, args=(os.getppid(),), daemon=True).start()
    agent = Agent(args.state, args.log)
    if args.race:
        run_racer(agent, sys.stdin, sys.stdout)
    else:
        run_state_machine(agent, args.poll, args.session, args.gate)


if __name__ == "__main__":
    main()
