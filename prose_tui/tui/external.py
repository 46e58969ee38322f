"""Handing a value to the user's own tools: ``$PAGER``, ``$VISUAL``/``$EDITOR``.

The explorer never writes into a run, so the editor gets a read-only temporary copy
(mode 0444, removed when the editor exits); only an explicit "edit the file itself" gives
it the run's file. Values that are not a file of their own (an SQLite row, a narrated
value, a failure report) are written to the temporary copy for both tools.

Textual-free apart from ``run_suspended``, which suspends the app (``App.suspend``) for
the tool and says so in a notification where the app cannot suspend (textual-serve, a
test driver) instead of failing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.text import decode, open_regular, read_window
from prose_tui.model import Backend, Run
from prose_tui.tui.targets import Target

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App

DEFAULT_PAGER = "less -R"
DEFAULT_EDITOR = "vi"


def pager_command() -> list[str]:
    """``$PAGER`` split as a shell would (default ``less -R``)."""
    return shlex.split(os.environ.get("PAGER", "").strip() or DEFAULT_PAGER)


def editor_command() -> list[str]:
    """``$VISUAL``, else ``$EDITOR``, split as a shell would (default ``vi``)."""
    chosen = os.environ.get("VISUAL", "").strip() or os.environ.get("EDITOR", "").strip()
    return shlex.split(chosen or DEFAULT_EDITOR)


def tool_env(argv: list[str]) -> dict[str, str]:
    """The environment for a pager: ``less`` gets ``LESSSECURE=1`` so its ``v`` (edit) and
    ``!`` (shell) commands cannot reach the run's files."""
    env = dict(os.environ)
    if argv and Path(argv[0]).name == "less":
        env["LESSSECURE"] = "1"
    return env


@dataclass(frozen=True)
class Content:
    """What a target holds. ``file`` is the run's own file when the target is one whole
    file (a binding, memory or segment file, a state file); ``text`` is the value itself
    (from the value offset for a binding), cut to the limit asked for; ``size`` its full
    size in UTF-8 bytes and ``cut`` whether ``text`` is shorter than that. ``root`` is the
    folder ``file`` must still lie in when it is copied (the run's root)."""

    name: str
    text: str
    size: int
    cut: bool
    file: Path | None = None
    root: Path | None = None


class NotReadable(Exception):
    """The target's value cannot be handed out (encrypted, missing); the message says why."""


def target_content(target: Target, *, limit: int | None = None) -> Content:
    """Read ``target``'s value (at most ``limit`` bytes of it). Raises ``NotReadable``."""
    name = _file_name(target)
    binding = target.binding
    if binding is not None and binding.encrypted:
        raise NotReadable(f"{target.title} is SOPS-encrypted: its value is not handed out")
    if binding is not None and binding.outside:
        raise NotReadable(f"{target.title}: {OUTSIDE_RUN}")
    if target.text is not None:
        return _clip(name, target.text, limit)
    if target.read is not None:
        try:
            text = target.read()
        except Exception as exc:  # a backend's reader: say what failed
            raise NotReadable(f"cannot read {target.title}: {exc}") from exc
        return _clip(name, text, limit)
    if target.path is None or not target.path.is_file():
        if binding is not None and not binding.exists:
            raise NotReadable(f"{target.title}: the Index names it but its file does not exist yet")
        raise NotReadable(f"{target.title} has no file to open")
    offset = binding.value_offset if binding is not None else 0
    try:
        text, size, cut = read_window(target.path, offset=offset, max_bytes=limit or (1 << 62), root=target.root)
    except OutsideRun as exc:
        raise NotReadable(f"{target.title}: {OUTSIDE_RUN}") from exc
    except OSError as exc:
        raise NotReadable(f"cannot read {target.path.name}: {exc.strerror or exc}") from exc
    size -= min(offset, size)
    return Content(name, text.lstrip("\n") if offset else text, size, cut, file=target.path, root=target.root)


def state_target(run: Run) -> Target:
    """The run's state file as a target (a SQLite run's trace as text: its state.db is binary)."""
    state = run.state_file
    if state is not None and run.backend is not Backend.SQLITE and state.suffix != ".db":
        return Target("state", state.name, state, root=run.root)
    if not run.trace:  # not read yet, or nothing parsed: there is nothing to hand out
        return Target("state", f"run {run.id}")
    text = "\n".join(f"{t.line:>4}  {t.text}" + (f"  # {t.note}" if t.note else "") for t in run.trace)
    return Target("state", f"{run.id}-trace.txt", text=text)


def _file_name(target: Target) -> str:
    if target.path is not None and target.text is None and target.read is None:
        return target.path.name
    stem = "".join(c if c.isalnum() or c in "-_." else "-" for c in target.title).strip("-.") or "value"
    return stem if "." in stem[-6:] else f"{stem}.md"


def _clip(name: str, text: str, limit: int | None) -> Content:
    data = text.encode("utf-8", "replace")
    if limit is None or len(data) <= limit:
        return Content(name, text, len(data), False)
    return Content(name, decode(data[:limit]), len(data), True)


@contextmanager
def read_only_copy(content: Content) -> Iterator[Path]:
    """A temporary file (mode 0444) holding ``content`` (the whole file when it is one),
    named like the original so editors pick the right syntax; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="prose-tui-"))
    copy = folder / content.name
    try:
        if content.file is not None:  # checked again: the file may have become a link out since it was read
            with open_regular(content.file, root=content.root) as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            copy.write_text(content.text, encoding="utf-8")
        copy.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        yield copy
    finally:
        try:
            copy.chmod(stat.S_IRUSR | stat.S_IWUSR)
        except OSError:
            pass
        shutil.rmtree(folder, ignore_errors=True)


def run_suspended(app: App, argv: list[str], *, env: dict[str, str] | None = None, what: str) -> int | None:
    """Run ``argv`` with the terminal handed over (``App.suspend``); returns its exit status,
    or ``None`` (after a notification) when the app cannot suspend or the tool is missing."""
    from textual.app import SuspendNotSupported

    failure: str | None = None
    status: int | None = None
    try:
        with app.suspend():
            # Nothing may escape this block: the app only resumes when it ends normally.
            try:
                status = subprocess.call(argv, env=env)
            except OSError as exc:
                failure = f"cannot start the {what} {argv[0]!r}: {exc.strerror or exc}"
    except SuspendNotSupported:
        app.notify(f"This terminal cannot be handed to the {what} here (the app cannot suspend, "
                   "e.g. in a browser or a test driver). Copy the value with y instead.",
                   severity="warning", markup=False)
        return None
    if failure is not None:
        app.notify(failure + f" (set ${'PAGER' if what == 'pager' else 'VISUAL or $EDITOR'})",
                   severity="error", markup=False)
        return None
    return status
