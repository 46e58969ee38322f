"""The narration protocol: marker lines in a VM's conversation turned into a Run (seeds/in-context.md).

Three generations of markers are understood, line by line:

* the seed's text markers (seeds/in-context.md, The Narration Protocol): ``[Program]``,
  ``[Position]``, ``[Binding]``, ``[Input]``, ``[Output]``, ``[Import]``, ``[Success]``,
  ``[Warning]``, ``[Parallel]``, ``[Loop]``, ``[Pipeline]``, ``[Try]``, ``[Flow]``,
  ``[Frame+]``, ``[Frame-]`` and ``[CallStack]`` (seeds/in-context.md, Call Stack State);
* the older emoji markers of the same protocol: 📋 Program, 📍 Position, 📦 Binding,
  ✅ Success, ⚠️ Warning, 🔀 Parallel, 🔄 Loop, 🔗 Pipeline, 🛡️ Try, ➡️ Flow;
* the compact narration of later versions: ``3→ research ✓``, ``4→ ∥ [a b c]``,
  ``∥start a,b``/``∥done``, ``loop:2/5``, ``#43 process`` / ``#43 done``,
  ``block:process#43``, ``✗ timeout``, ``retry:2/3``, ``try→``/``catch→``/``finally→``,
  ``---end``/``---error``.

Lines that carry no marker are conversation, not state: they are ignored unless they
continue a multi-line marker (``[Input] Inputs received:`` followed by ``topic = …``,
``[Parallel] Parallel complete:`` followed by ``- a = …``, ``[Frame+]`` followed by
``Parent: execution_id 1``, ``[Import] Importing:`` followed by ``Registered as: …``,
``[CallStack]`` followed by ``execution_id: 5 | block: …``).

Binding values: narration passes values, not references (seeds/in-context.md, Context
Serialization), so each :class:`Binding` keeps its value in memory as
``Binding.fields["value"]`` (``fields["line"]`` is the source line). ``Binding.path`` is the
narration file (or ``<stdin>``), ``bytes`` the value's UTF-8 size. :func:`binding_value`
reads it back with scope resolution.

The parser never raises on any input: every handler works on plain regex matches.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from prose_tui.backends.common.text import visible
from prose_tui.backends.narration.compact import CompactNarration
from prose_tui.backends.narration.grammar import (
    AGENT,
    ANNOTATION,
    ASSIGNMENT,
    BOUND,
    BRACKET,
    CONTAINER,
    DEPTH,
    EMOJI,
    EMOJI_MAP,
    ENTERING_BLOCK,
    EXECUTING,
    EXECUTION_ID,
    ITEM,
    ITERATION,
    LABELLED_VALUE,
    PARENT,
    PROGRAM_NAME,
    RESOLVING,
    RESULT,
    RETRY,
    STACK_ROW,
    STATEMENT,
    TASK,
    unquote,
)
from prose_tui.model import (
    ActiveConstruct,
    Agent,
    Backend,
    Event,
    EventKind,
    Frame,
    Run,
    RunFormat,
    RunStatus,
    StatementState,
)


class NarrationParser(CompactNarration):
    """Feed narration lines one at a time; read the Run so far with :meth:`run`.

    ``source`` is the narration file (``None`` for standard input). :meth:`feed` takes the
    1-based source line number, the line's text and its time (a transcript entry's
    timestamp) and returns the events it produced. Never raises.
    """

    __slots__ = ()

    # --- output -----------------------------------------------------------------------------

    def run(self, run_id: str | None = None) -> Run:
        """The Run as narrated so far (backend and format ``NARRATION``)."""
        src = self.source or Path("<stdin>")
        run = Run(id=run_id or (src.stem if self.source else "stdin"), path=src, backend=Backend.NARRATION, format=RunFormat.NARRATION)
        run.state_file = self.source
        run.program = self.program
        run.status = self.status if self.status is not RunStatus.UNKNOWN or not self.events else RunStatus.RUNNING
        if run.status is RunStatus.FAILED:
            run.status_reason = f"the narration reports a failure: {self.status_reason}" if self.status_reason else "the narration reports a failure"
        elif run.status is RunStatus.COMPLETED:
            run.status_reason = "the narration reports the program complete"
        elif self.events:
            run.status_reason = f"no completion in the narration yet ({len(self.events)} events so far)"
        else:
            run.status_reason = "no OpenProse markers in the narration yet"
        run.started, run.updated = self.started, self.updated
        run.trace = list(self.trace)
        run.events = list(self.events)
        run.bindings = list(self.bindings.values())
        run.agents = list(self.agents.values())
        run.call_stack = list(reversed(self.frames))
        run.constructs = [*self.parallels, *self.loops]
        run.imports = list(self.imports.values())
        run.header = dict(self.header)
        if self.status_reason and run.status is not RunStatus.FAILED:
            run.header["last_failure"] = self.status_reason  # a failure the run recovered from
        if self.dialects:
            run.header["markers"] = ", ".join(sorted(self.dialects))
        run.warnings = list(self.warnings)
        return run

    # --- input ------------------------------------------------------------------------------

    def feed(self, line_no: int, text: str, time: datetime | None = None) -> list[Event]:
        """Parse one line; return the events it added (often none)."""
        start = len(self.events)
        self._line, self._time = line_no, time
        if time is not None:
            self.started = self.started or time
            self.updated = time
        try:
            self._dispatch(visible(text.rstrip("\r\n")))  # no escape sequence reaches the screen
        except Exception as exc:  # noqa: BLE001 - narration is free text; never stop reading
            self._warn(f"line {line_no} could not be understood ({type(exc).__name__}: {exc}); kept as a note.")
            self._event(EventKind.NOTE, text.strip())
        return self.events[start:]

    def _dispatch(self, line: str) -> None:
        if not line.strip():
            return
        m = BRACKET.match(line)
        if m:
            self.dialects.add("bracket")
            return self._marker(m.group(1).lower().replace("−", "-").replace(" ", ""), m.group(2).strip(), line)
        m = EMOJI.match(line)
        if m:
            self.dialects.add("emoji")
            return self._marker(EMOJI_MAP[m.group(1)], m.group(2).strip(), line)
        if self._compact(line):
            self.dialects.add("compact")
            self._context = ""
            return None
        if TASK.match(line):
            self._event(EventKind.NOTE, line.strip(), name="task")
            return None
        if self._context:
            self._continuation(line)
        return None

    # --- markers ----------------------------------------------------------------------------

    def _marker(self, kind: str, body: str, line: str) -> None:
        self._context = ""
        handler = getattr(self, f"_m_{kind.replace('+', '_push').replace('-', '_pop')}", None)
        if handler is None:
            self._event(EventKind.NOTE, line.strip(), name=kind)
            return
        handler(body, line.strip())

    def _m_program(self, body: str, line: str) -> None:
        low = body.lower()
        named = PROGRAM_NAME.search(body)
        if named:
            self.program = named.group(1)
        if "complete" in low or "finished" in low or "end" == low.strip():
            for op in list(self._open):
                self._set_state(op.index, StatementState.COMPLETE)
            self._open.clear()
            self.status = RunStatus.COMPLETED
            self._event(EventKind.RUN_ENDED, line, status="ok")
        elif any(w in low for w in ("fail", "error", "abort", "terminat")):
            self._close_leaves(StatementState.FAILED)
            self.status = RunStatus.FAILED
            self.status_reason = body
            self._event(EventKind.RUN_ERRORED, line, status="failed")
        elif "resum" in low:
            self.status = RunStatus.RUNNING
            self._event(EventKind.RUN_RESUMED, line)
        else:
            if "start" in low:
                self.status = RunStatus.RUNNING
                self.started = self.started or self._time
            self._context = "program"
            self._event(EventKind.NOTE, line, name="program")

    def _m_position(self, body: str, line: str) -> None:
        step = None
        text = body
        m = STATEMENT.match(body)
        if m:
            step, text = m.group(1), m.group(2)
        else:
            m = EXECUTING.match(body)
            if m:
                text = m.group(1)
        container = bool(CONTAINER.search(text.strip()))
        kind = "frame" if text.strip().lower().startswith("do ") else ""
        if step is not None and not self.frames and not self.loops and not self.parallels:
            for op in list(self._open):  # a new top-level statement: earlier constructs are over
                self._set_state(op.index, StatementState.COMPLETE)
            self._open.clear()
        self._open_line(text.strip(), step, container, kind)
        self._event(EventKind.STATEMENT_STARTED, line, name=text.strip()[:200], step=step)

    def _m_success(self, body: str, line: str) -> None:
        m = RESULT.search(body)
        self._last_result = unquote(m.group(1)) if m else None
        leaf = next((self.trace[o.index].text.strip() for o in reversed(self._open) if not o.container), None)
        self._close_leaves(StatementState.COMPLETE)
        self._event(EventKind.STATEMENT_COMPLETED, line, name=leaf, status="ok")

    def _m_warning(self, body: str, line: str) -> None:
        m = RETRY.search(body)
        if m:
            for op in reversed(self._open):
                t = self.trace[op.index]
                t.state, t.attempt, t.max_attempts = StatementState.RETRYING, int(m.group(1)), int(m.group(2))
                t.note = body
                break
            self._event(EventKind.RETRY, line, status=f"{m.group(1)}/{m.group(2)}")
            return
        leaf = None
        for op in [o for o in self._open if not o.container]:
            self.trace[op.index].note = body
            leaf = self.trace[op.index].text.strip()
        self._close_leaves(StatementState.FAILED)
        self.status_reason = body
        self._event(EventKind.STATEMENT_FAILED, line, name=leaf, status="failed")

    _m_error = _m_warning

    def _m_binding(self, body: str, line: str) -> None:
        m = RESOLVING.search(body)
        if m:
            self._event(EventKind.NOTE, line, name=m.group(1), execution_id=int(m.group(2)))
            return
        eid = None
        m = EXECUTION_ID.search(body)
        if m:
            eid = int(m.group(1))
            after = body[m.end():]
            body = (body[: m.start()] + ("" if after.strip().startswith("#") else after)).rstrip()
        elif self.frames:
            eid = self.frames[-1].execution_id
        m = BOUND.match(body)
        if m:
            for name in re.split(r"\s*,\s*", m.group(1)):
                if name in self._par_results:
                    self._bind(name, self._par_results[name], "let", eid)
                elif (name, eid) not in self.bindings:
                    self._bind(name, "", None, eid)
            return
        m = ASSIGNMENT.match(body)
        if not m:
            self._event(EventKind.NOTE, line, name="binding")
            return
        value = ANNOTATION.sub("", m.group(3))
        self._bind(m.group(2), unquote(value), m.group(1), eid)

    def _m_input(self, body: str, line: str) -> None:
        low = body.lower()
        self._context = "input-import" if ("passing" in low and self._import is not None) else "input"
        self._event(EventKind.NOTE, line, name="input")
        if "=" in body and not body.rstrip().endswith(":"):
            self._continuation(body)

    def _m_output(self, body: str, line: str) -> None:
        if body.lower().startswith("received"):
            self._context = "output-import"
            self._event(EventKind.NOTE, line, name="output")
            return
        m = ASSIGNMENT.match(body)
        if m:
            eid = self.frames[-1].execution_id if self.frames else None
            target = self._import if (self._import is not None and m.group(1) != "output") else None
            self._bind(m.group(2), unquote(ANNOTATION.sub("", m.group(3))), "output", eid, target=target)
        else:
            self._event(EventKind.NOTE, line, name="output")

    def _m_import(self, body: str, line: str) -> None:
        low = body.lower()
        rest = body.split(":", 1)[1].strip() if ":" in body else body
        if low.startswith("importing"):
            child = Run(id=rest, path=self.source or Path("<stdin>"), backend=Backend.NARRATION, format=RunFormat.NARRATION)
            child.program, child.status = rest, RunStatus.UNKNOWN
            self._pending_import = child
            self.imports[rest] = child
            self._context = "import"
            self._event(EventKind.NOTE, line, name=rest)
        elif low.startswith("invoking"):
            alias = re.split(r"[\s(]", rest, maxsplit=1)[0]
            found: Run | None = self.imports.get(alias) or next(
                (r for r in self.imports.values() if r.import_handle == alias), None)
            if found is not None:
                child = found
            else:
                child = Run(id=alias, path=self.source or Path("<stdin>"), backend=Backend.NARRATION, format=RunFormat.NARRATION, import_handle=alias)
                self.imports[alias] = child
            child.status = RunStatus.RUNNING
            child.started = child.started or self._time
            self._import = child
            self._event(EventKind.IMPORT_ENTERED, line, name=alias)
        elif "complete" in low or "done" in low or "fail" in low:
            alias = rest.strip()
            leaving = self._import or self.imports.get(alias)
            self._close_leaves(StatementState.FAILED if "fail" in low else StatementState.COMPLETE)
            for op in reversed(self._open):
                if alias and alias in self.trace[op.index].text:
                    self._set_state(op.index, StatementState.FAILED if "fail" in low else StatementState.COMPLETE)
                    self._open.remove(op)
                    break
            if leaving is not None:
                leaving.status = RunStatus.FAILED if "fail" in low else RunStatus.COMPLETED
                leaving.updated = self._time
            self._import = None
            self._event(EventKind.IMPORT_LEFT, line, name=alias, status="failed" if "fail" in low else "ok")
        else:
            self._event(EventKind.NOTE, line, name="import")

    def _m_parallel(self, body: str, line: str) -> None:
        low = body.lower()
        if low.startswith("enter") or "branches" in low and "complete" not in low:
            self._close_leaves(StatementState.COMPLETE)
            self._claim_or_open("parallel", body)
            self.parallels.append(ActiveConstruct(title=f"Parallel: {body}"))
            self._par_results = {}
            self._context = "parallel-start"
            self._event(EventKind.PARALLEL_STARTED, line)
        elif "complete" in low or "join" in low or "done" in low:
            self._close_kind("parallel")
            if self.parallels:
                self.parallels.pop()
            self._context = "parallel-done"
            self._event(EventKind.PARALLEL_JOINED, line, status="ok")
        else:
            self._context = "parallel-start"
            self._event(EventKind.NOTE, line, name="parallel")

    def _m_loop(self, body: str, line: str) -> None:
        low = body.lower()
        m = ITERATION.search(body)
        if low.startswith("start"):
            self._claim_or_open("loop", body)
            self.loops.append(ActiveConstruct(title=f"Loop: {body}"))
            self._event(EventKind.NOTE, line, name="loop", status="started")
        elif m and "exit" not in low:
            if not self.loops:
                self.loops.append(ActiveConstruct(title="Loop"))
            self._close_leaves(StatementState.COMPLETE)
            label = f"{m.group(1)}/{m.group(2)}" if m.group(2) else m.group(1)
            self.loops[-1].items = [f"iteration {label}"]
            self._event(EventKind.LOOP_ITERATION, line, status=label)
        elif "exit" in low or "complete" in low or "done" in low:
            self._close_kind("loop")
            if self.loops:
                self.loops.pop()
            self._event(EventKind.NOTE, line, name="loop", status="exited")
        else:
            self._event(EventKind.NOTE, line, name="loop")

    def _m_pipeline(self, body: str, line: str) -> None:
        self._event(EventKind.NOTE, line, name="pipeline")

    def _m_try(self, body: str, line: str) -> None:
        low = body.lower()
        name = "catch" if "catch" in low else "finally" if "finally" in low else "try"
        self._event(EventKind.NOTE, line, name=name)

    def _m_flow(self, body: str, line: str) -> None:
        self._event(EventKind.NOTE, line, name="flow")

    def _m_frame_push(self, body: str, line: str) -> None:
        m = ENTERING_BLOCK.search(body)
        block = (m.group(1) if m and m.group(1) else body.split("(")[0].strip()) or "block"
        eid_m = EXECUTION_ID.search(body)
        eid = int(eid_m.group(1)) if eid_m else (max((f.execution_id or 0 for f in self.frames), default=0) + 1)
        depth_m = DEPTH.search(body)
        depth = int(depth_m.group(1)) if depth_m else len(self.frames) + 1
        parent = self.frames[-1].execution_id if self.frames else None
        for f in self.frames:
            if f.status == "executing":
                f.status = "waiting"
        self.frames.append(Frame(execution_id=eid, block=block, depth=depth, status="executing", parent_id=parent))
        for op in reversed(self._open):
            if op.kind == "frame" and op.index not in self._frame_lines.values():
                self._frame_lines[eid] = op.index
                break
        self._context = "frame"
        self._event(EventKind.FRAME_PUSHED, line, name=block, execution_id=eid)

    def _m_frame_pop(self, body: str, line: str) -> None:
        eid_m = EXECUTION_ID.search(body)
        eid = int(eid_m.group(1)) if eid_m else (self.frames[-1].execution_id if self.frames else None)
        idx = next((i for i in range(len(self.frames) - 1, -1, -1) if self.frames[i].execution_id == eid), None)
        if idx is None:
            self._warn(f"line {self._line}: [Frame-] for execution_id {eid} without a matching [Frame+].")
            block = None
        else:
            if idx != len(self.frames) - 1:
                self._warn(f"line {self._line}: frame {eid} exited while inner frames were still open; they are closed too.")
            block = self.frames[idx].block
            del self.frames[idx:]
            if self.frames:
                self.frames[-1].status = "executing"
        self._close_leaves(StatementState.COMPLETE)
        tline = self._frame_lines.pop(eid, None) if eid is not None else None
        if tline is not None:
            self._set_state(tline, StatementState.COMPLETE)
            self._open = [o for o in self._open if o.index != tline]
        self._event(EventKind.FRAME_POPPED, line, name=block, execution_id=eid, status="ok")


    def _m_callstack(self, body: str, line: str) -> None:
        self._stack_snapshot = []
        self._context = "callstack"
        self._event(EventKind.NOTE, line, name="callstack")

    # --- continuation lines -----------------------------------------------------------------

    def _continuation(self, line: str) -> None:
        ctx = self._context
        if ctx == "callstack":
            m = STACK_ROW.search(line)
            if m:
                self._stack_snapshot.append(Frame(execution_id=int(m.group(1)), block=m.group(2).strip(),
                                                  depth=int(m.group(3)) if m.group(3) else None,
                                                  status=m.group(4).lower() if m.group(4) else None))
                snap = list(reversed(self._stack_snapshot))
                for i, f in enumerate(snap):
                    f.parent_id = snap[i - 1].execution_id if i > 0 else None
                self.frames = snap
            return
        if ctx == "frame":
            m = PARENT.match(line)
            if m and self.frames:
                self.frames[-1].parent_id = int(m.group(1))
            return
        if ctx == "import":
            m = LABELLED_VALUE.match(line)
            child = self._pending_import
            if m and child is not None:
                key = m.group(1).lower().replace(" ", "_")
                child.header[key] = m.group(2).strip()
                if key == "registered_as":
                    alias = m.group(2).strip()
                    child.import_handle = alias
                    child.id = alias
            return
        if ctx == "program":
            m = AGENT.match(line)
            if m:
                details = {}
                for part in (m.group(2) or "").split(","):
                    if ":" in part:
                        k, v = part.split(":", 1)
                        details[k.strip()] = v.strip()
                self.agents[m.group(1)] = Agent(name=m.group(1), scope="session", details=details)
            return
        m = ITEM.match(line)
        if not m:
            return
        name, sep, value = m.group(1), m.group(2), ANNOTATION.sub("", m.group(3))
        eid = self.frames[-1].execution_id if self.frames else None
        if ctx == "parallel-start" and sep == ":" and self.parallels:
            self.parallels[-1].items.append(f"{name}: {value.strip()}")
        elif ctx == "parallel-done" and sep == "=":
            self._par_results[name] = unquote(value)
        elif ctx == "input" and sep == "=":
            self._bind(name, unquote(value), "input", eid)
        elif ctx == "input-import" and sep == "=" and self._import is not None:
            self._bind(name, unquote(value), "input", None, target=self._import)
        elif ctx == "output-import" and sep == "=" and self._import is not None:
            self._bind(name, unquote(value), "output", None, target=self._import)


def binding_value(run: Run, name: str, execution_id: int | None = None) -> str | None:
    """The in-memory value of a narrated binding, resolved by scope (seeds/in-context.md, Scoped Binding Narration).

    Walks ``Run.call_stack`` from ``execution_id`` outwards, then root scope; when the
    frame chain is not on the stack any more, also tries ``execution_id`` itself.
    ``None`` when no such binding was narrated.
    """
    b = run.binding_named(name, execution_id)
    if b is None and execution_id is not None:
        b = next((x for x in run.bindings if x.name == name and x.execution_id == execution_id), None)
    if b is None or not b.fields:
        return None
    return b.fields.get("value")
