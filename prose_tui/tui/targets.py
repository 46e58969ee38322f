"""What the value viewer can show: a binding, agent memory, a segment, the program, a raw file.

Textual-free; the tree and the trace produce targets, the viewer reads them through the
source layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.text import read_window, visible
from prose_tui.backends.protocol import Value
from prose_tui.backends.registry import backend_of
from prose_tui.model import Backend, Binding, Run, assigned_name

TargetKind = Literal["binding", "memory", "segment", "program", "state", "section", "table"]


@dataclass(frozen=True, slots=True)
class Target:
    """One viewable thing. ``path`` is the file that changes it; the content is ``text``
    (in memory), else ``read()`` (a source's reader, for SQLite and narration values),
    else the file itself from the binding's value offset. ``note`` is one line the viewer
    shows above the value (a backend's ``Value.note``: "content address sha256:…");
    ``value()``, where given, reads text, note and warning at once (``read`` is its text).
    ``root``, where given, is the folder ``path`` must lie in to be read (the run's
    ``Run.root``, an agent's ``Agent.root``): a file outside it shows "outside the run:
    not read" (backends/common/contained.py).
    """

    kind: TargetKind
    title: str
    path: Path | None = None
    binding: Binding | None = None
    text: str | None = None
    warning: str | None = None
    read: Callable[[], str] | None = None
    note: str = ""
    value: Callable[[], Value] | None = None
    root: Path | None = None

    @property
    def key(self) -> tuple:
        """What item this is, whatever its metadata: the same file seen twice has one key."""
        return (self.kind, self.path, self.title, self.text if self.path is None else None)

    @property
    def markdown(self) -> bool:
        """Rendered as Markdown by default (program text and raw state files are not)."""
        return self.kind in ("binding", "memory", "segment", "section", "table")


@dataclass(frozen=True, slots=True)
class TargetRead:
    """What reading a target gave: ``text`` (control characters made visible), ``note``,
    ``size`` in bytes (of the file, or of the text a reader gave), ``cut`` when only a
    window of the file was read, ``error`` a sentence for the viewer's warning line."""

    text: str = ""
    note: str = ""
    size: int = 0
    cut: bool = False
    error: str | None = None


def needs_reading(target: Target | None) -> bool:
    """True when showing ``target`` reads a file or calls a source's reader (do it off the
    UI thread); False for text in memory and for what shows nothing."""
    if target is None or target.text is not None:
        return False
    if target.value is not None or target.read is not None:
        return True
    return target.path is not None and not (target.binding is not None and target.binding.encrypted)


def read_target(target: Target | None, *, window: int, tail: bool = False) -> TargetRead:
    """Read ``target`` for the viewer: its text, a reader's value, or a window of ``window``
    bytes of its file from the binding's value offset (the last ``window`` bytes when
    ``tail``). Never raises: a reader or a file that fails gives ``error`` (its words as
    the reader said them) and no text. Blocks on I/O: call it from a worker thread."""
    if target is None:
        return TargetRead()
    note = target.note
    try:
        if target.text is not None:
            return TargetRead(visible(target.text), note)
        if target.value is not None:
            value = target.value()
            error = value.warning if value.warning and value.warning != (target.warning or "") else None
            text = value.text or ""
            return TargetRead(visible(text), value.note or note, len(text.encode("utf-8", "replace")), error=error)
        if target.read is not None:
            text = target.read()
            return TargetRead(visible(text), note, len(text.encode("utf-8", "replace")))
    except Exception as exc:  # a source's reader: say what failed, keep the view
        return TargetRead(note=note, error=f"cannot read the value: {exc}")
    if (target.binding is not None and target.binding.encrypted) or target.path is None:
        return TargetRead(note=note)
    if target.binding is not None and target.binding.outside:
        return TargetRead(note=note, error=OUTSIDE_RUN)
    offset = target.binding.value_offset if target.binding is not None else 0
    try:
        text, size, truncated = read_window(target.path, offset=offset, max_bytes=window, tail=tail, root=target.root)
    except OutsideRun:
        return TargetRead(note=note, error=OUTSIDE_RUN)
    except OSError as exc:
        return TargetRead(note=note, error=f"cannot read {target.path.name}: {exc.strerror or exc}")
    except Exception as exc:  # undecodable, or any reader fault: shown as a warning, never a traceback
        return TargetRead(note=note, error=f"cannot read {target.path.name}: {exc}")
    return TargetRead(text.lstrip("\n"), note, size, truncated)


def binding_target(binding: Binding, run: Run | None = None) -> Target:
    """The viewer target for ``binding``; a value its backend holds outside a file of its own
    (a database row, a narrated value, a world model) gets a reader through the backend's
    ``read_value``. The backend's ``Value.note`` becomes the target's (a file binding's is
    known without reading: a 0.15 world model's content address)."""
    if run is None or binding.outside:
        return Target("binding", binding.name, binding.path, binding, warning=binding.warning,
                      root=run.root if run is not None else None)
    backend = backend_of(run)
    if run.backend is Backend.FILESYSTEM:
        note = backend.read_value(run, binding).note  # metadata only: the file is read by the viewer
        return Target("binding", binding.name, binding.path, binding, warning=binding.warning, note=note,
                      root=run.root)

    def value() -> Value:
        return backend.read_value(run, binding)

    def read() -> str:
        return value().text or ""
    return Target("binding", binding.name, binding.path, binding, warning=binding.warning, read=read, value=value,
                  root=run.root)


def resolve_trace_binding(run: Run, rel_path: str | None, text: str) -> Binding | None:
    """The binding a trace line wrote: its ``-->`` path, else the name it assigns."""
    if rel_path:
        wanted = (run.path / rel_path).resolve()
        for b in run.bindings:
            if b.path.resolve() == wanted:
                return b
    name = assigned_name(text)
    if name:
        frame = run.call_stack[0].execution_id if run.call_stack else None
        return run.binding_named(name, frame)
    return None


TABLE_ROWS = 200


def table_target(run: Run, table: str) -> Target:
    """An extension table of the run (``Run.tables``), read by its backend (``read_table``) as a
    Markdown table of its first ``TABLE_ROWS`` rows."""
    backend = backend_of(run)  # the run's backend reads its tables (SQLite's file, PostgreSQL's x_* tables)

    def read() -> str:
        columns, rows = backend.read_table(run, table, 0, TABLE_ROWS)
        if not columns:
            return f"{table} has no columns or could not be read."

        def cell(value: object) -> str:
            return ("" if value is None else str(value)).replace("|", "\\|").replace("\n", " ")[:80]

        lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
        more = f"\n\nFirst {TABLE_ROWS} rows shown." if len(rows) >= TABLE_ROWS else ""
        return "\n".join(lines) + more

    return Target("table", table, run.path / "state.db", read=read)
