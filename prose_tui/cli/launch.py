"""Starting the TUI from the command line, including ``--demo`` (a simulated VM writing a run)."""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def launch(args: argparse.Namespace) -> int:
    """Run the app for parsed ``args``; returns the exit status.

    Python's cyclic collector is off while the explorer is imported and made (see
    :func:`_collector_off`); the app runs with it on again."""
    with _collector_off():
        from prose_tui.tui.app import ProseTUI

    stop = threading.Event()
    demo_dir: Path | None = None
    thread: threading.Thread | None = None
    path: Path = args.path
    vm = None
    if args.demo:
        from prose_tui.demo import DemoVM, write_history_runs

        demo_dir = Path(tempfile.mkdtemp(prefix="prose-tui-demo-"))
        write_history_runs(demo_dir)
        vm = DemoVM(demo_dir)
        path = demo_dir
    elif str(path) == "-":
        path = _stdin_to_file()
        demo_dir = path.parent
    elif getattr(args, "disk", True) and not path.exists():
        print(f"prose-tui: {path}: no such file or folder", file=sys.stderr)
        return 1
    elif (problem := not_a_run(path)) is not None:
        print(f"prose-tui: {problem}", file=sys.stderr)
        return 1
    try:
        with _collector_off():
            app = ProseTUI(path, stale_after=args.stale_after, watch=not args.no_watch, agent_state=args.agent_state,
                           config=_with_flags(args), sources=getattr(args, "sources", ()),
                           disk=getattr(args, "disk", True), initial=getattr(args, "initial", None))
        if vm is not None:
            # The demo run exists (its first step, whole) when the explorer starts, which
            # opens on it; its next steps wait until the explorer has read the project and
            # watches it, so the run's history holds every step, as for a run written while
            # the explorer is open.
            vm.first_step()
            thread = threading.Thread(target=vm.run, kwargs={"speed": args.speed, "stop": stop, "watched": app.first_read},
                                      daemon=True, name="demo-vm")
            thread.start()
        app.run()
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=2)
        if demo_dir is not None:
            shutil.rmtree(demo_dir, ignore_errors=True)
    return 0


@contextmanager
def _collector_off() -> Iterator[None]:
    """Python's cyclic collector off for the block, then what is alive frozen and the
    collector on again (unless it was off already: then left as it was).

    Importing the explorer (Textual with it) makes some 40,000 objects the collector
    tracks, nearly all of which stay: it ran about a hundred times meanwhile and freed some
    500 objects, 25-40 ms of CPU of an import of 400-500 ms (issue 33). Frozen
    (``gc.freeze``), they are not looked at by later collections either, as the explorer's
    ``HeapKeeper`` does with a run once it is shown."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def not_a_run(path: Path) -> str | None:
    """Why the file ``path`` is not a run (the line ``show`` prints), or ``None``. Checked
    before the full-screen app starts, which would otherwise wait for a run to appear there.
    Folders are the explorer's to watch: a run may yet be written below them."""
    if not path.is_file():
        return None
    from prose_tui.backends.loader import unclaimed
    from prose_tui.backends.registry import backend_for

    resolved = path.resolve()
    return None if backend_for(resolved) is not None else str(unclaimed(resolved))


def _with_flags(args: argparse.Namespace):
    """The config file's settings with the command line's ``--theme``/``--layout`` on top."""
    from dataclasses import replace

    from prose_tui.tui.config import Config

    config = getattr(args, "config", None) or Config()
    if getattr(args, "theme", None):
        config = replace(config, theme=args.theme)
    if getattr(args, "layout", None):
        config = replace(config, layout=args.layout)
    return config


def _stdin_to_file() -> Path:
    """Save piped narration to a temporary file and give the TUI the terminal back as stdin."""
    data = sys.stdin.buffer.read()
    folder = Path(tempfile.mkdtemp(prefix="prose-tui-stdin-"))
    target = folder / "stdin-narration.md"
    target.write_bytes(data)
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
        os.dup2(tty, 0)
        os.close(tty)
    except OSError:
        pass  # no terminal: the app will say so when it starts
    return target
