"""Helpers for app tests: a fixed clock, an app on a path, waiting for the explorer."""

from __future__ import annotations

import hashlib
from contextlib import asynccontextmanager
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from prose_tui.tui.app import ProseTUI
from prose_tui.tui.screens.explorer import READERS

FIXED_NOW = datetime(2026, 3, 1, 10, 8, 0, tzinfo=timezone.utc)


def make_app(path: Path, *, watch: bool = False, now: datetime = FIXED_NOW, stale_after: float = 1800) -> ProseTUI:
    """The explorer on ``path`` with a fixed clock. ``app.notified`` lists every notification's
    message in order, kept after the toast itself has timed out (a loaded machine can take
    longer than a toast's few seconds to reach the check)."""
    return keep_notifications(ProseTUI(path, watch=watch, clock=lambda: now, stale_after=stale_after))


def keep_notifications(app: ProseTUI) -> ProseTUI:
    """``app`` with ``app.notified``: every notification's message in order, kept after the
    toast has timed out."""
    notified: list[str] = []
    shown = app.notify

    def notify(message, **options):
        notified.append(str(message))
        return shown(message, **options)

    app.notify = notify  # type: ignore[method-assign]
    app.notified = notified  # type: ignore[attr-defined]
    return app


# Every wait is bounded by turns of the event loop, never by the wall clock: one
# ``pilot.pause()`` lets the app process what is queued and waits until the process is idle
# (one idle window, see below; up to 1 s while a reader thread is busy), so on a loaded
# machine a wait simply takes more wall time. The bound only ends a wait for something that
# never happens: 2000 turns of at least 5 ms, as long as the 500 turns of 20 ms it replaced.
TURNS = 2000

# Textual's test pilot decides that the app is idle when the process used under 1/20 of a
# window of CPU time in one window: ``pause``, ``wait_for_scheduled_animations`` and each
# key of ``press`` (twice) wait for such a window, 20 ms by default. Tests here wait on the
# conditions the app signals (``wait_until``, ``settled``), so the window only has to let
# the loop turn: 5 ms windows make the suite's UI tests about a fifth faster (their many
# key presses and pauses waited 20 ms each at least, and until a 20 ms gap in the app's work).
IDLE_WINDOW = 0.005


def use_short_idle_window(window: float = IDLE_WINDOW) -> None:
    """Set the idle window of Textual's pilot (``textual._wait``, a private module) to
    ``window`` seconds. Only where it has the shape this was written for (Textual 8:
    ``wait_for_idle(min_sleep=0.02, max_sleep=1)``); elsewhere the tests keep Textual's
    window and are only slower."""
    import inspect

    try:
        from textual import _wait

        if (list(inspect.signature(_wait.wait_for_idle).parameters) != ["min_sleep", "max_sleep"]
                or not hasattr(_wait, "SLEEP_GRANULARITY") or not hasattr(_wait, "SLEEP_IDLE")):
            return
    except ImportError:
        return
    _wait.SLEEP_GRANULARITY = window
    _wait.SLEEP_IDLE = window / 20.0
    _wait.wait_for_idle.__defaults__ = (window, 1)  # (min_sleep, max_sleep); was (0.02, 1)



async def wait_until(pilot, predicate, *, what: str = "condition", turns: int = TURNS) -> None:
    """Let the app run until ``predicate()`` holds; fail naming ``what`` after ``turns`` turns."""
    for _ in range(turns):
        if predicate():
            return
        await pilot.pause()
    if not predicate():
        raise AssertionError(f"{what} did not happen within {turns} turns of the event loop")


async def _readers_done(app) -> None:
    """Wait for the workers reading runs (start-up read, "open in full") to finish."""
    busy = [w for w in app.workers if w.group in READERS and not w.is_finished]
    if busy:  # an empty list would make ``wait_for_complete`` wait for every worker
        await app.workers.wait_for_complete(busy)


def _unsettled(explorer, run_path: Path | None) -> str | None:
    """What the explorer is still waiting for (``pending``, then the trace's scroll), or
    ``None`` when it is settled."""
    waiting = explorer.pending(run_path)
    if waiting is not None:
        return waiting
    from prose_tui.tui.widgets.trace_view import TraceView

    trace = explorer.query_one(TraceView)
    height = trace.scrollable_content_region.height
    if trace.lines and trace.display and height > 0 and trace.region.height > 0:
        top = round(trace.scroll_offset.y)
        row = trace.row_of(trace.cursor)  # a line's annotation may take rows of its own
        if trace.following and not trace.turned_pages:  # a live change turns pages instead (issue 33)
            centred = max(0, min(row - height // 2, trace.row_count - height))
            if top != centred:
                return f"the trace to centre the executing line {trace.cursor} (row {row}; top row {top}, want {centred})"
        elif not top <= row < top + height:
            return f"the trace cursor {trace.cursor} (row {row}) to be in view (rows {top}..{top + height - 1})"
    return None


async def settled(pilot, run_path: Path | None = None, *, turns: int = TURNS) -> None:
    """Wait until the explorer shows what it read and nothing more is on its way.

    Settled means: the start-up read finished (``reads_done``), no run is being read, the
    shown run (or ``run_path``) is on screen from its full read (``loaded_run``), the trace
    is scrolled to the executing line when following (else its cursor is in view), and
    scheduled animations and refreshes are done. Fails naming what it still waits for.
    """
    explorer = pilot.app.explorer
    waiting: str | None = "the first turn"
    for _ in range(turns):
        await _readers_done(pilot.app)
        await pilot.wait_for_scheduled_animations()
        waiting = _unsettled(explorer, run_path)
        if waiting is None:
            await pilot.pause()
            if _unsettled(explorer, run_path) is None:
                return
    raise AssertionError(f"the explorer did not settle within {turns} turns: still waiting for {waiting}")


async def ready(pilot) -> None:
    """The explorer after its start-up read, settled (see ``settled``)."""
    await settled(pilot)


def pinned_copy(src: Path, dest: Path) -> Path:
    """Copy a fixture tree with every file time set to ``FIXED_NOW`` minus a minute.

    A clone gives files checkout-order times; pinning them keeps "newest binding" and ages
    the same on every machine, so snapshots are stable.
    """
    shutil.copytree(src, dest)
    stamp = FIXED_NOW.timestamp() - 60
    for path in dest.rglob("*"):
        os.utime(path, (stamp, stamp))
    return dest


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file below ``root`` plus the set of folders, for read-only checks."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


class Held:
    """Calls of a function held until ``release()`` (``hold_calls``): a step of the app made
    as slow as a test needs, as a loaded machine makes it. ``asked`` is set once a call waits."""

    def __init__(self) -> None:
        import threading

        self.asked = threading.Event()
        self._released = threading.Event()

    def release(self) -> None:
        """Let the held call and every later one through (call it in a ``finally`` too)."""
        self._released.set()

    def wait(self) -> None:
        self.asked.set()
        self._released.wait()


def hold_calls(monkeypatch, owner: object, name: str) -> Held:
    """Hold every call of ``owner.name`` (a module's function, a class's method or class)
    until the returned ``Held`` is released, then make it as before."""
    held = Held()
    real = getattr(owner, name)

    def held_call(*args, **kwargs):
        held.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, held_call)
    return held


def held_watches(monkeypatch) -> Held:
    """Hold the watches the watcher (``prose_tui.live.watcher``) installs: the window between
    a pipeline's start and its watches being in place, which a loaded machine stretches."""
    from watchfiles import _rust_notify

    return hold_calls(monkeypatch, _rust_notify, "RustNotify")


def held_run_reads(monkeypatch) -> Held:
    """Hold every read of a run on disk (the filesystem backend's ``load_run``): no run
    reaches the screen before, as on a machine too loaded to read it before the first layout."""
    from prose_tui.backends.filesystem import backend as backend_module

    return hold_calls(monkeypatch, backend_module, "load_run")


def held_listing(monkeypatch) -> Held:
    """Hold the start-up listing of runs (``Workspace.discover``): the run list stays empty."""
    from prose_tui.live.workspace import Workspace

    return hold_calls(monkeypatch, Workspace, "discover")


def palette_hit(app, text: str) -> bool:
    """The command palette lists a hit whose prompt holds ``text`` (hits come from a worker)."""
    lists = app.screen.query("CommandList")
    return bool(lists) and lists.first().option_count > 0 and text in str(lists.first().get_option_at_index(0).prompt)


def count_rows(widgets, asked=None):
    """Count in ``asked`` (a ``Counter``, made when not given; returned) the rows each of
    ``widgets`` is asked to paint: its ``render_lines`` calls' heights."""
    from collections import Counter

    asked = Counter() if asked is None else asked
    for widget in widgets:
        real = widget.render_lines

        def render_lines(crop, _real=real, _widget=widget):
            asked[_widget] += crop.height
            return _real(crop)

        widget.render_lines = render_lines
    return asked


def count_layouts(monkeypatch) -> list[str]:
    """The names of the screens laid out whole from now on (``Screen._refresh_layout``)."""
    from textual.screen import Screen

    layouts: list[str] = []
    real = Screen._refresh_layout

    def counting(self, *args, **kwargs):
        layouts.append(type(self).__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counting)
    return layouts


@asynccontextmanager
async def watched(path: Path, *, size: tuple[int, int] = (200, 50)):
    """The explorer on ``path``, watching, in ``run_test`` at ``size``: ``(app, pilot)`` once
    its watches are in place and what it read is shown (``settled``)."""
    app = make_app(path, watch=True)
    async with app.run_test(size=size) as pilot:
        explorer = app.explorer
        await wait_until(pilot, lambda: explorer.watcher_state.startswith("watching"), what="the watcher")
        await settled(pilot)
        yield app, pilot


def long_event_log(root: Path, run_id: str, over: int, *, first: tuple[str, ...] = (),
                   pad: str = "") -> tuple[Path, int]:
    """A run folder whose ``state.md`` is a compact event log (FORMATS.md, Generations 2-4) as
    a VM appends it, just over ``over`` bytes: its header, the ``first`` event lines, then
    ``N→ step_N ✓ [09:MM:SS]`` lines, each followed by ``pad``. Returns the folder and the
    number of events (``first`` counted)."""
    run = root / ".prose" / "runs" / run_id
    run.mkdir(parents=True)
    lines = [f"# run:{run_id} long.prose\n", *first]
    size, n = sum(len(line.encode("utf-8")) for line in lines), len(first)
    while size <= over:
        n += 1
        line = f"{n}→ step_{n} ✓ [09:{n // 60 % 60:02d}:{n % 60:02d}]{pad}\n"
        lines.append(line)
        size += len(line.encode("utf-8"))
    (run / "state.md").write_text("".join(lines), encoding="utf-8")
    return run, n


def vm_appends(state: Path, text: str) -> None:
    """A second process appends ``text`` to ``state``, as the VM does."""
    import subprocess
    import sys

    code = "import sys; f = open(sys.argv[1], 'a', encoding='utf-8'); f.write(sys.argv[2]); f.close()"
    subprocess.run([sys.executable, "-c", code, str(state), text], check=True)
