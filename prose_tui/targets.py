"""What the value viewer can show: a binding, agent memory, a segment, the program, a raw file.

Textual-free; the tree and the trace produce targets, the viewer reads them through the
source layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .model import Binding, Run

TargetKind = Literal["binding", "memory", "segment", "program", "state", "section", "env"]


@dataclass(frozen=True, slots=True)
class Target:
    """One viewable thing. ``path`` is the file; ``text`` is in-memory content (sections)."""

    kind: TargetKind
    title: str
    path: Path | None = None
    binding: Binding | None = None
    text: str | None = None
    warning: str | None = None

    @property
    def markdown(self) -> bool:
        """Rendered as Markdown by default (program text and raw state files are not)."""
        return self.kind in ("binding", "memory", "segment", "section")


def binding_target(binding: Binding) -> Target:
    return Target("binding", binding.name, binding.path, binding, warning=binding.warning)


def resolve_trace_binding(run: Run, rel_path: str | None, text: str) -> Binding | None:
    """The binding a trace line wrote: its ``-->`` path, else the name it assigns."""
    if rel_path:
        wanted = (run.path / rel_path).resolve()
        for b in run.bindings:
            if b.path.resolve() == wanted:
                return b
    m = re.match(r"\s*(?:let|const|output|input)?\s*([A-Za-z_][\w]*)\s*=", text)
    if m:
        frame = run.call_stack[0].execution_id if run.call_stack else None
        return run.binding_named(m.group(1), frame)
    return None
