"""Today's OpenProse skill runs (0.15, June 2026): world model, receipts, compiled intent.

Source: openprose-0.15 ``state/filesystem.md`` (run layout, ``vm.log.md`` markers, receipts,
error files), ``concepts/reactor.md`` (the receipt), ``compiler/ir-v0.md`` (compiled
intent); FORMATS.md generation 6 and the 0.12-0.14 dialect note (YAML front matter with
``status:``/``error:`` above the log). Real 0.15 VMs of June-July 2026 also wrote the
pre-reactor ``bindings/{service}/`` beside ``world-model/`` in one run: both are read.

:func:`apply_skill` adds to a run its folder's ``vm.log.md`` already gave (header, trace,
events): the world-model bindings, the receipts (as ``Run.receipts``, as ``RECEIPT_*``
events placed after the log line of the same node, and summarised in ``Run.nodes``), the
failure text of failed nodes (``semantic_diff.failure_reason`` and
``workspace/{node}/__error.md``), token totals in ``Run.metrics`` and the compiled intent's
nodes as the program when the run has no ``root.prose.md`` (nodes, totals and receipt
events come from :mod:`.skill_receipts`, shared with the live tail of :mod:`.skill_live`).
:func:`settle_status` then words the status. Nothing here raises for a readable folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prose_tui.backends.common.contained import run_root
from prose_tui.backends.common.text import visible
from prose_tui.model import (
    Binding,
    EventKind,
    Run,
    RunFormat,
    RunStatus,
    Section,
    StatementState,
    TraceLine,
)

if TYPE_CHECKING:
    from prose_tui.backends.filesystem.world_model import CompiledIntent

__all__ = ["apply_skill", "is_skill_run", "settle_status", "split_front_matter"]

INTENT_FILE = "compiled-intent.json"
_NODE_STATES = {"rendered": StatementState.COMPLETE, "skipped": StatementState.SKIPPED,
                "failed": StatementState.FAILED}
_FAILED_WORDS = ("fail", "error", "abort", "crash")
_STOPPED_WORDS = ("interrupt", "cancel", "stopped", "halted", "paused")


def is_skill_run(run_dir: Path) -> bool:
    """True for a 0.15 skill run: it has ``world-model/``, ``receipts/`` or ``compiled-intent.json``."""
    return any((run_dir / name).exists() for name in ("world-model", "receipts", INTENT_FILE))


def split_front_matter(text: str) -> tuple[str, dict[str, str]]:
    """A ``vm.log.md`` without its YAML front matter, and the front matter's keys (lower case).

    The front matter's lines become blank lines, so line numbers in the rest stay those of the
    file. Text without front matter (or whose front matter YAML rejects) comes back unchanged
    with ``{}``.
    """
    if not text.startswith(("---\n", "---\r\n")):
        return text, {}
    lines = text.splitlines(keepends=True)
    end = next((i for i in range(1, min(len(lines), 200)) if lines[i].rstrip("\r\n") == "---"), None)
    if end is None:
        return text, {}
    import frontmatter  # and PyYAML: only for a log that has front matter (start-up, issue 33)

    try:
        meta, _ = frontmatter.parse("".join(lines[: end + 1]))
    except Exception:  # YAML the library rejects: leave the lines to the event-log parser
        return text, {}
    if not meta:
        return text, {}
    fields = {str(k).lower(): visible(str(v).strip()) for k, v in meta.items() if v is not None}
    blank = "".join("\n" for _ in lines[: end + 1])
    return blank + "".join(lines[end + 1:]), fields


def apply_skill(run: Run, run_dir: Path, *, summary: bool = False) -> None:
    """Fill ``run`` (read from ``run_dir``'s ``vm.log.md``) with what a 0.15 skill run holds.

    Sets ``format`` to SKILL. ``summary`` reads the receipts and the compiled intent (for
    the status and a row's facts), not the world model's files.
    """
    # The receipt ledger, world model and their live tail are read for a skill run alone:
    # imported here, not with the backend an event log's first screen waits for (issue 33).
    from prose_tui.backends.filesystem.receipts import LedgerTail, read_ledgers
    from prose_tui.backends.filesystem.skill_live import SkillState, remember
    from prose_tui.backends.filesystem.skill_receipts import add_receipt_metrics, place_receipt_events, summarise_nodes
    from prose_tui.backends.filesystem.world_model import (
        error_nodes,
        read_compiled_intent,
        read_error,
        world_model_bindings,
    )

    run.format = RunFormat.SKILL
    if run.program is None and run.header.get("root"):
        run.program = run.header["root"]
    root = run.root or run_root(run_dir)  # every file below is read only inside the run
    tail = None if summary else LedgerTail.read(run_dir, root)  # a full read follows appends (skill_live.py)
    ledger = tail.ledger if tail is not None else read_ledgers(run_dir, root=root)
    run.warnings.extend(ledger.warnings)
    run.receipts = ledger.receipts
    errors = {node: err for node in error_nodes(run_dir) if (err := read_error(run_dir, node, root)) is not None}
    intent = read_compiled_intent(run_dir / INTENT_FILE, root)
    if intent is not None:
        run.warnings.extend(intent.warnings)
    run.nodes = summarise_nodes(run_dir, ledger, intent, errors, root)
    add_receipt_metrics(run)
    _test_verdict(run)
    base = list(run.events)
    place_receipt_events(run, ledger)
    if tail is not None:
        remember(SkillState(run, tail, intent, errors, base, list(ledger.warnings), root))
    if summary:
        return
    run.bindings = _merge(world_model_bindings(run_dir, run.warnings, root), run.bindings)
    for node, err in errors.items():
        run.sections.append(Section(f"Error: {node} (workspace/{node}/__error.md)", err.text.strip()))
    if intent is not None and intent.nodes and run.program_path is None:
        _program_from_intent(run, intent)


def _test_verdict(run: Run) -> None:
    """A test run whose last ``---test`` verdict failed ends failed even after ``---end``
    (openprose-0.15 prose.md, Executing Tests). Said through ``error_marker`` so that every
    later status inference (the explorer re-infers as time passes) agrees."""
    test = next((e for e in reversed(run.events) if e.name == "test" and e.step is None
                 and e.kind in (EventKind.STATEMENT_FAILED, EventKind.STATEMENT_COMPLETED)), None)
    if test is not None and test.kind is EventKind.STATEMENT_FAILED and run.end_marker is not None:
        run.error_marker, run.end_marker = test.text.strip(), None


def _merge(world: list[Binding], legacy: list[Binding]) -> list[Binding]:
    """World-model bindings first, then the ``bindings/`` files of a mixed-layout run."""
    seen = {b.path for b in world}
    return world + [b for b in legacy if b.path not in seen]


def _program_from_intent(run: Run, intent: CompiledIntent) -> None:
    """No ``root.prose.md``: the compiled intent's nodes are the program, one line per node
    annotated with its state; they are the trace too when the run has no log."""
    by_name = {n.name: n for n in run.nodes}
    lines: list[TraceLine] = []
    for number, spec in enumerate(intent.nodes, start=1):
        node = by_name.get(spec.name)
        text = spec.name + (f" ← {', '.join(spec.producers)}" if spec.producers else "")
        bits = []
        if node is not None and node.status:
            bits.append(node.status)
        if node is not None and node.receipts:
            bits.append(f"{node.receipts} receipt{'s' if node.receipts != 1 else ''}")
        if node is not None and node.version:
            bits.append(node.version)
        if node is not None and node.failure_reason:
            bits.append(node.failure_reason)
        state = _NODE_STATES.get(node.status or "") if node is not None else StatementState.PENDING
        lines.append(TraceLine(line=number, text=text, state=state or StatementState.PENDING,
                               note=" · ".join(bits) or "no receipt yet"))
    body = "\n".join(f"{t.text}    # {t.note}" for t in lines)
    run.sections.append(Section(f"Program (nodes of {INTENT_FILE})", f"```\n{body}\n```"))
    if not run.trace:
        run.trace = lines
    if run.program is None:
        run.program = INTENT_FILE


def settle_status(run: Run) -> None:
    """Word the status of a skill run from its markers, front matter and receipts.

    The log's ``---error``/``---end`` decide first (as for every event log), then the front
    matter's ``status:`` (with its ``error:``); a ``---test FAIL`` makes a finished run
    failed. The reason names the node that failed and its failure text.
    """
    failed = [n for n in run.nodes if n.status == "failed"]
    detail = "; ".join(f"node {n.name} failed: {n.failure_reason or 'no failure text'}" for n in failed[:3])
    written = (run.header.get("status") or "").strip().lower()
    error = " ".join((run.header.get("error") or "").split()) or None  # YAML block: one line
    if run.error_marker is None and run.end_marker is None and written.startswith(_FAILED_WORDS):
        run.status = RunStatus.FAILED
        run.status_reason = f"the log's front matter says status: {written}" + (f" ({error})" if error else "")
    elif run.error_marker is None and run.end_marker is None and written.startswith(_STOPPED_WORDS):
        run.status = RunStatus.INTERRUPTED
        run.status_reason = f"the log's front matter says status: {written}" + (f" ({error})" if error else "")
    elif run.status is RunStatus.FAILED and (run.error_marker or "").startswith("---test"):
        run.status_reason = f"the test failed: {run.error_marker}, then the log ends with ---end"
    elif error and run.status is RunStatus.FAILED and error not in run.status_reason:
        run.status_reason += f"; front matter error: {error}"
    if detail and run.status in (RunStatus.FAILED, RunStatus.INTERRUPTED, RunStatus.RUNNING):
        run.status_reason += f"; {detail}"
