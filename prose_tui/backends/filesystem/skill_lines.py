"""Per-line rules for the ``vm.log.md`` markers that openprose 0.15 added (June 2026).

Source: openprose-0.15 ``state/filesystem.md``, ``vm.log.md`` Event Markers, and
``prose.md`` (``⊘ terminated (max_rounds)``, ``✗ missing-env:{VAR}``). The older markers
(``✓``, ``✗``, ``∥start``...) stay in :mod:`prose_tui.backends.filesystem.eventlog_lines`,
which asks this module first. Pure functions of one line, no state, never raise: they work
on a whole file and on bytes appended to it alike.

=============================================  ==========================================
Marker (body after ``N→``)                      Item
=============================================  ==========================================
``researcher ∅ skipped``                        STATEMENT_SKIPPED ``skipped``, state skipped
``server ⇒ synthesizer (delegate: req-001)``    STATEMENT_STARTED ``delegated``, note names
                                                the delegate and its request id
``server ⟳ (resumed)``                          STATEMENT_STARTED ``resumed``
``node ✗ missing-env:API_KEY``                  STATEMENT_FAILED ``missing-env``, note
                                                ``missing-env:API_KEY``
``---test PASS``                                STATEMENT_COMPLETED named ``test``, ``PASS``
``---test FAIL (2/3 assertions)``               STATEMENT_FAILED named ``test``, ``FAIL``
=============================================  ==========================================

``✓ rendered``, ``[eval] assertion ✓`` and ``⊘ terminated (max_rounds)`` need no rule of
their own: the general statement rule gives them status ``rendered``, tag ``eval`` and
status ``terminated``.
"""

from __future__ import annotations

import re

from prose_tui.model import EventKind, StatementState

__all__ = ["SkillItem", "skill_statement", "test_verdict"]

_SKIPPED_RE = re.compile(r"^(?P<name>[^\s∅]+)\s*∅\s*(?P<rest>.*)$")
_DELEGATE_RE = re.compile(r"^(?P<name>[^\s⇒]+)\s*⇒\s*(?P<rest>.*)$")
_RESUMED_RE = re.compile(r"^(?P<name>[^\s⟳]+)\s*⟳\s*(?P<rest>.*)$")
_MISSING_ENV_RE = re.compile(r"^(?P<name>[^\s✗✘✖❌]+)\s*[✗✘✖❌]\ufe0f?\s*(?P<what>missing-env\s*:\s*(?P<var>[A-Za-z_][A-Za-z0-9_]*))(?P<rest>.*)$")
_TEST_RE = re.compile(r"^\s*-{2,}\s*test\b\s*(?P<verdict>[A-Za-z]+)?\s*(?P<rest>.*)$", re.IGNORECASE)
_DELEGATE_ID_RE = re.compile(r"\(\s*delegate\s*:\s*(?P<id>[^)]*)\)")


class SkillItem:
    """One event a 0.15 marker line stands for (the fields of ``eventlog_lines.Item``)."""

    __slots__ = ("kind", "name", "status", "note", "state")

    def __init__(self, kind: EventKind, name: str | None, status: str | None, note: str | None,
                 state: StatementState | None) -> None:
        self.kind, self.name, self.status, self.note, self.state = kind, name, status, note, state


def skill_statement(body: str) -> SkillItem | None:
    """The 0.15 statement marker in ``body`` (a step line without its ``N→``), or ``None``."""
    text = body.strip()
    if "∅" in text and (m := _SKIPPED_RE.match(text)):
        rest = m.group("rest").strip()
        word, _, note = rest.partition(" ")
        return SkillItem(EventKind.STATEMENT_SKIPPED, m.group("name"), word or "skipped",
                         note.strip() or None, StatementState.SKIPPED)
    if "⇒" in text and (m := _DELEGATE_RE.match(text)):
        rest = m.group("rest").strip()
        delegate = _DELEGATE_ID_RE.search(rest)
        target = rest[: delegate.start()].strip() if delegate else rest
        note = f"⇒ {target}" if target else "⇒ delegate"
        if delegate and delegate.group("id").strip():
            note += f" (request {delegate.group('id').strip()})"
        return SkillItem(EventKind.STATEMENT_STARTED, m.group("name"), "delegated", note,
                         StatementState.EXECUTING)
    if "⟳" in text and (m := _RESUMED_RE.match(text)):
        rest = m.group("rest").strip().strip("()").strip()
        return SkillItem(EventKind.STATEMENT_STARTED, m.group("name"), "resumed",
                         rest if rest and rest != "resumed" else None, StatementState.EXECUTING)
    if "missing-env" in text and (m := _MISSING_ENV_RE.match(text)):
        note = m.group("what").replace(" ", "") + (f" {m.group('rest').strip()}" if m.group("rest").strip() else "")
        return SkillItem(EventKind.STATEMENT_FAILED, m.group("name"), "missing-env", note,
                         StatementState.FAILED)
    return None


def test_verdict(line: str) -> SkillItem | None:
    """``---test PASS`` / ``---test FAIL (N/M assertions)``, or ``None`` for any other line.

    A verdict other than PASS (``FAIL``, a missing word) is a failed ``test`` statement; the
    parenthesised count is kept as the note.
    """
    m = _TEST_RE.match(line)
    if not m:
        return None
    verdict = (m.group("verdict") or "").upper()
    note = m.group("rest").strip().strip("()").strip() or None
    if verdict == "PASS":
        return SkillItem(EventKind.STATEMENT_COMPLETED, "test", "PASS", note, StatementState.COMPLETE)
    return SkillItem(EventKind.STATEMENT_FAILED, "test", verdict or "FAIL", note, StatementState.FAILED)
