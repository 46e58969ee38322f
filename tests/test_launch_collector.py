"""Starting the explorer with Python's cyclic collector off, and running it with it on (issue 33).

``prose-tui PATH`` imports the explorer and makes the app before the first frame: tens of
thousands of objects that all stay. The collector ran about a hundred times meanwhile and
freed next to nothing. ``cli.launch`` keeps it off for that, freezes what is alive, and runs
the app with it on again (the explorer's own ``HeapKeeper`` then holds it off while a run
opens). A fresh interpreter, as a user's shell starts it; ``App.run`` records the collector's
state instead of taking over the terminal. What is asserted is state, never a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVENTLOG = ROOT / "tests" / "fixtures" / "eventlog"

PROBE = """
import gc, json, sys
import textual.app
seen = {{"collections": 0}}
gc.callbacks.append(lambda phase, info: phase == "start" and seen.__setitem__("collections", seen["collections"] + 1))
def run(self, *args, **kwargs):
    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count(), collections_before_run=seen["collections"])
    {run_body}
textual.app.App.run = run
from prose_tui.cli.main import main
import prose_tui.cli.launch as launching
def launch(args, _launch=launching.launch):
    seen["collections"] = 0  # from here: the explorer's import and making
    return _launch(args)
launching.launch = launch
try:
    status = main([{path!r}, "--no-watch"])
except RuntimeError as exc:
    status = str(exc)
print(json.dumps({{**seen, "status": status, "enabled_after": gc.isenabled()}}))
"""


def _launched(home: Path, run_body: str = "return None") -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(home), "XDG_STATE_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", PROBE.format(path=str(EVENTLOG), run_body=run_body)],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_explorer_is_made_without_collections_and_runs_with_the_collector_on(tmp_path):
    seen = _launched(tmp_path)
    assert seen["status"] == 0
    assert seen["collections_before_run"] == 0  # importing and making the explorer: no collection
    assert seen["enabled"] is True  # the app runs with the collector on
    assert seen["frozen"] > 10_000  # what the start-up made is frozen, not looked at again
    assert seen["enabled_after"] is True


def test_the_collector_is_on_again_when_the_app_fails(tmp_path):
    seen = _launched(tmp_path, 'raise RuntimeError("the terminal went away")')
    assert seen["status"] == "the terminal went away"
    assert seen["enabled_after"] is True
