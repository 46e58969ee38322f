"""Call-stack frames: block invocations (seeds/filesystem.md, Call Stack)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Frame:
    """One frame of the call stack, innermost first in ``Run.call_stack``.

    ``execution_id`` identifies the block invocation (the suffix of scoped bindings);
    ``depth`` is 1 for the outermost block call; ``status`` is executing, waiting,
    complete or failed as written. ``parent_id`` is the caller's execution_id where known.
    """

    execution_id: int | None
    block: str
    depth: int | None = None
    status: str | None = None
    parent_id: int | None = None
