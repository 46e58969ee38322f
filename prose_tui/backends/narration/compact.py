"""Compact narration of later OpenProse versions (``3→ name ✓``, ``∥ [a b]``, ``loop:2/5``, ``#43 done``, ``try→``).

The same vocabulary as the event-log ``state.md`` (FORMATS.md, generation 2) spoken in the
conversation instead of a file; mapped onto the events of seeds/in-context.md's markers.
"""

from __future__ import annotations

import re
from datetime import datetime

from prose_tui.backends.narration.grammar import CONTAINER, END, FRAME_ID, LOOP, PAR, STEP, TRY
from prose_tui.backends.narration.state import ParserState
from prose_tui.model import ActiveConstruct, EventKind, RunStatus, StatementState


class CompactNarration(ParserState):
    """Compact-line handlers; :meth:`_compact` returns False for a line that is not compact narration."""

    __slots__ = ()

    # --- compact narration ------------------------------------------------------------------

    def _compact(self, line: str) -> bool:
        m = STEP.match(line)
        if m:
            self._compact_body(m.group(2).strip(), m.group(1), line.strip())
            return True
        m = FRAME_ID.match(line)
        if m and not line.lstrip().startswith("# "):
            self._compact_frame(int(m.group(1)), m.group(2).strip(), line.strip())
            return True
        m = PAR.match(line)
        if m:
            self._compact_parallel(m.group(1).strip(), None, line.strip())
            return True
        m = LOOP.match(line)
        if m:
            self._compact_loop(m, None, line.strip())
            return True
        m = TRY.match(line)
        if m:
            name = m.group(1).lower()
            self._event(EventKind.NOTE, line.strip(), name=name)
            if m.group(2).strip():
                self._compact_body(m.group(2).strip(), None, line.strip())
            return True
        m = END.match(line)
        if m:
            word = m.group(1)
            if word == "end":
                self.status = RunStatus.COMPLETED
                self._event(EventKind.RUN_ENDED, line.strip(), status="ok")
            elif word == "error":
                self.status = RunStatus.FAILED
                first, _, rest = m.group(2).partition(" ")
                try:
                    datetime.fromisoformat(first)
                    self.status_reason = rest.strip() or m.group(2)
                except ValueError:
                    self.status_reason = m.group(2)
                self._event(EventKind.RUN_ERRORED, line.strip(), status="failed")
            else:
                self.status = RunStatus.RUNNING
                self._event(EventKind.RUN_RESUMED, line.strip())
            return True
        return False

    def _compact_body(self, body: str, step: str | None, line: str, open_line: bool = True) -> None:
        if body.startswith("∥"):
            return self._compact_parallel(body[1:].strip(), step, line)
        m = LOOP.match(body)
        if m:
            return self._compact_loop(m, step, line)
        m = re.match(r"^block:([\w.-]+)#(\d+)", body)
        if m:
            return self._compact_frame(int(m.group(2)), m.group(1), line, step)
        m = FRAME_ID.match(body)
        if m:
            return self._compact_frame(int(m.group(1)), m.group(2).strip(), line, step)
        m = re.match(r"^retry:(\d+)/(\d+)", body)
        if m:
            self._event(EventKind.RETRY, line, status=f"{m.group(1)}/{m.group(2)}", step=step)
            for op in reversed(self._open):
                t = self.trace[op.index]
                t.state, t.attempt, t.max_attempts = StatementState.RETRYING, int(m.group(1)), int(m.group(2))
                break
            return None
        if body.startswith("✗"):
            msg = body[1:].strip()
            self.status_reason = msg
            if self._open:
                self.trace[self._open[-1].index].note = msg
            self._close_leaves(StatementState.FAILED)
            self._event(EventKind.STATEMENT_FAILED, line, status=msg.split()[0] if msg else "failed", step=step)
            return None
        m = re.match(r"^(.*?)\s*(✓|✗|⊘|skip(?:ped)?)\s*(.*)$", body)
        if m and m.group(1):
            name, mark, rest = m.group(1).strip(), m.group(2), m.group(3).strip()
            kind = {"✓": EventKind.STATEMENT_COMPLETED, "✗": EventKind.STATEMENT_FAILED}.get(mark, EventKind.STATEMENT_SKIPPED)
            state = {"✓": StatementState.COMPLETE, "✗": StatementState.FAILED}.get(mark, StatementState.SKIPPED)
            status = "ok" if mark == "✓" else (rest.split()[0] if rest else ("failed" if mark == "✗" else "skip"))
            if open_line:
                self._open_line(name, step, False)
                self._close_leaves(state)
            self._event(kind, line, name=name, status=status, step=step)
            return None
        if open_line and body:
            self._open_line(body, step, bool(CONTAINER.search(body)))
        self._event(EventKind.STATEMENT_STARTED, line, name=body or None, step=step)
        return None

    def _compact_parallel(self, rest: str, step: str | None, line: str) -> None:
        low = rest.lower()
        if low.startswith(("done", "join", "end", "✓")):
            self._close_kind("parallel")
            if self.parallels:
                self.parallels.pop()
            self._event(EventKind.PARALLEL_JOINED, line, status="ok", step=step)
            return
        rest = re.sub(r"^start\s*", "", rest)
        names = [n for n in re.split(r"[\s,\[\]]+", rest) if n]
        self._open_line(f"parallel [{' '.join(names)}]", step, True, "parallel")
        self.parallels.append(ActiveConstruct(title="Parallel", items=[f"{n}: pending" for n in names]))
        self._event(EventKind.PARALLEL_STARTED, line, name=",".join(names) or None, step=step)

    def _compact_loop(self, m: re.Match, step: str | None, line: str) -> None:
        label = f"{m.group(1)}/{m.group(2)}" if m.group(2) else m.group(1)
        if not self.loops:
            self.loops.append(ActiveConstruct(title="Loop"))
        self.loops[-1].items = [f"iteration {label}"]
        self._event(EventKind.LOOP_ITERATION, line, status=label, step=step)
        if "exit" in (m.group(3) or ""):
            self.loops.pop()
            self._event(EventKind.NOTE, line, name="loop", status="exited", step=step)

    def _compact_frame(self, eid: int, what: str, line: str, step: str | None = None) -> None:
        if what.lower().split()[0] in ("done", "✓", "complete", "exit", "end"):
            self._m_frame_pop(f"(execution_id: {eid})", line)  # type: ignore[attr-defined]  # MarkerParser's
        else:
            self._open_line(f"do {what}", step, True, "frame")
            self._m_frame_push(f"Entering block: {what.split()[0]} (execution_id: {eid})", line)  # type: ignore[attr-defined]
            self._context = ""
