"""What the filesystem formats know of a run's past (``RunBackend.history_source``, issue 30).

For :mod:`prose_tui.history`: whether a ``state.md`` is its own history (a compact event log
or ``# VM Log``, FORMATS.md generations 2-4) or a snapshot the journal keeps revisions of
(seeds/filesystem.md, generation 1); a snapshot revision parsed; an event log read again up
to a line (the run as of a cursor); what an event-log line's failure mark says; and a 0.15
skill run's nodes as of a cursor (openprose-0.15 state/filesystem.md, ``receipts/`` and
``compiled-intent.json``, drawn as :mod:`.skill` draws them live). No writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable

from prose_tui.backends.filesystem.eventlog import looks_like_event_log, parse_event_log
from prose_tui.backends.protocol import Revision
from prose_tui.model import Frame, Node, Run, RunFormat, RunStatus, Section, StatementState, TraceLine

__all__ = ["FilesystemHistory"]

# the formats whose trace is their log, one line per event line
LOG_FORMATS = (RunFormat.EVENT_LOG, RunFormat.CONTRACT, RunFormat.VM_LOG, RunFormat.SKILL)
# Longer prefixes are not parsed again: a history step is then the events' fold (states by
# event, the call stack from frame events). Parsing 99,000 lines again took 5.4 s of the UI
# thread per step (`[`); 5,000 take about 0.3 s.
REPARSE_LINES = 5_000


class FilesystemHistory:
    """The filesystem backend's :class:`~prose_tui.backends.protocol.HistorySource`."""

    def keeps_own_history(self, head: str) -> bool:
        """True for a compact event log or a ``# VM Log`` (``eventlog.looks_like_event_log``)."""
        return looks_like_event_log(head)

    def revision(self, text: str, key: Hashable | None = None) -> Revision:
        """A snapshot ``state.md`` revision (``snapshot_sections.parse_snapshot_cached``)."""
        # (the snapshot parser: imported for a snapshot run alone, issue 33)
        from prose_tui.backends.filesystem.snapshot import parse_time
        from prose_tui.backends.filesystem.snapshot_sections import parse_snapshot_cached

        snap = parse_snapshot_cached(text, key)
        return Revision(header=snap.header, trace=snap.trace, constructs=snap.constructs, call_stack=snap.call_stack,
                        sections=snap.sections, index=snap.binding_rows, started=parse_time(snap.header.get("started")),
                        updated=parse_time(snap.header.get("updated")))

    def log_prefix(self, run: Run, lines: int) -> tuple[list[TraceLine], list[Frame]] | None:
        """An event log's first ``lines`` trace lines parsed again under the run's header, so
        trace states, open parallels and the call stack are what the file said then. ``None``
        for a snapshot, or when the lines do not survive the round trip."""
        if run.format not in LOG_FORMATS or not 0 < lines <= len(run.trace) or lines > REPARSE_LINES:
            return None
        head = f"# run:{run.id} {run.program or ''}\n"
        if run.header.get("started"):
            head += f"started: {run.header['started']}\n"
        log = parse_event_log(head + "\n".join(t.text for t in run.trace[:lines]) + "\n")
        if len(log.trace) != lines:
            return None
        return log.trace, log.call_stack

    def nodes_at(self, out: Run, run: Run, states: dict[str, StatementState], rendered: set[str],
                 cursor: int, total: int) -> None:
        """A run with receipts (a skill run): its compiled-intent lines and "Program (nodes of …)" section noted as
        of then, receipt totals in ``metrics``, a node's ``Error:`` section shown once it
        failed, and the failing nodes named in the status reason."""
        by_name = {n.name: n for n in out.nodes}
        out.trace = [_skill_line(t, by_name, states) for t in out.trace]
        out.metrics = dict(out.metrics)  # copy_run shares it with the live run
        _skill_metrics(out)
        failing = [n for n in out.nodes if n.status == "failed"]
        # a node's __error.md (skill.py's "Error: {node} (…)" section) is shown once it failed
        later = tuple(f"Error: {n.name} (" for n in out.nodes if n.status != "failed")
        out.sections = [s for s in out.sections if not (later and s.title.startswith(later))]
        out.sections = [_program_section(s, by_name) for s in out.sections]
        if failing and out.status is RunStatus.RUNNING:
            out.status_reason += "; " + "; ".join(
                f"node {n.name} failed: {n.failure_reason or 'no failure text'}" for n in failing[:3])


def _skill_line(t: TraceLine, nodes: dict[str, Node], states: dict[str, StatementState]) -> TraceLine:
    """A compiled-intent line (``name ← producers``, no step) as of then; others as they are."""
    if t.step is not None or t.note is None:
        return t
    name = t.text.split("←", 1)[0].strip()
    if name not in nodes:
        return t
    return dataclasses.replace(t, state=states[name], note=_skill_note(nodes[name]))


def _skill_note(node: Node) -> str:
    """A skill run's compiled-intent line note (skill.py), as of then."""
    bits = [node.status] if node.status else []
    if node.receipts:
        bits.append(f"{node.receipts} receipt{'s' if node.receipts != 1 else ''}")
    if node.version:
        bits.append(node.version)
    if node.failure_reason:
        bits.append(node.failure_reason)
    return " · ".join(bits) or "no receipt yet"


def _program_section(section: Section, nodes: dict[str, Node]) -> Section:
    """skill.py's "Program (nodes of compiled-intent.json)" section, one ``name ← producers
    # note`` line per node, with each note as of then; other sections as they are."""
    if not section.title.startswith("Program (nodes of "):
        return section
    lines = []
    for line in section.text.splitlines():
        head, sep, _note = line.partition("    # ")
        node = nodes.get(head.split("←", 1)[0].strip()) if sep else None
        lines.append(f"{head}    # {_skill_note(node)}" if node is not None else line)
    return dataclasses.replace(section, text="\n".join(lines))


def _skill_metrics(out: Run) -> None:
    """A skill run's receipt totals in ``Run.metrics`` (the keys skill.py writes), as of then."""
    from prose_tui.backends.filesystem.skill_receipts import add_receipt_metrics

    for key in [k for k in out.metrics if k == "receipts" or k.startswith(("receipts_", "tokens_"))]:
        del out.metrics[key]
    add_receipt_metrics(out)
