"""Per-line classifier for the compact event log (FORMATS.md, Generations of the filesystem
format, 2. Compact event log; also 3. contract-markdown runs and 4. ``vm.log.md``).

One event line is ``{step}→ {body}`` (or ``{step}-> {body}``), a terminator
(``---end``/``---error``/``---resume``), or free text. The markers openprose 0.15 added
(``∅ skipped``, ``⇒ delegate``, ``⟳ (resumed)``, ``✗ missing-env:VAR``, ``---test``) are
recognised by :mod:`prose_tui.backends.filesystem.skill_lines`. :func:`classify_line` turns one line
into a :class:`LineInfo`: the step label, the time the line carries, and one or more
:class:`Item` (several only for one-line parallels ``a ✓ | b ✓ (parallel)``). It keeps no
state between lines; frames, live states and the run status are worked out by
:mod:`prose_tui.backends.filesystem.eventlog`. Pure functions, never raise on a ``str``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime

from prose_tui.backends.filesystem.skill_lines import (
    SkillItem,
    skill_statement,
    test_verdict,
)
from prose_tui.model import EventKind, StatementState
from prose_tui.model.statement import STEP_RE, TERMINATOR_RE

# Outcome marks -> (event kind, default status, trace state). The spec's marks are ✓ ✗ ⊘;
# their look-alikes (✔ ✅ ✘ ✖ ❌) are accepted because an LLM writes them. ⚠ is "completed with a
# warning": the VM moved on, so the statement is complete, and the status says "warning".
MARKS: dict[str, tuple[EventKind, str, StatementState]] = {
    "✓": (EventKind.STATEMENT_COMPLETED, "ok", StatementState.COMPLETE),
    "✔": (EventKind.STATEMENT_COMPLETED, "ok", StatementState.COMPLETE),
    "✗": (EventKind.STATEMENT_FAILED, "failed", StatementState.FAILED),
    "✘": (EventKind.STATEMENT_FAILED, "failed", StatementState.FAILED),
    "✖": (EventKind.STATEMENT_FAILED, "failed", StatementState.FAILED),
    "✅": (EventKind.STATEMENT_COMPLETED, "ok", StatementState.COMPLETE),
    "❌": (EventKind.STATEMENT_FAILED, "failed", StatementState.FAILED),
    "⊘": (EventKind.STATEMENT_SKIPPED, "deferred", StatementState.SKIPPED),
    "⚠": (EventKind.STATEMENT_COMPLETED, "warning", StatementState.COMPLETE),
}
_MARK_CHARS = "".join(MARKS)

_ISO = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
# A timestamp in brackets anywhere, or a bare full ISO stamp at the start or end of the line.
_BRACKETED_TIME_RE = re.compile(rf"[\[(](?P<t>{_ISO}|{_CLOCK})[\])]")
# A bare stamp token: "2026-01-01T10:00:00Z" (or the date and time as two tokens).
_STAMP_TOKEN_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}\S*)?")
_CLOCK_TOKEN_RE = re.compile(r"\d{2}:\d{2}\S*")

_PAR_START_RE = re.compile(r"^(?:∥|‖|\|\|)\s*start\b[:\s]*(?P<rest>.*)$", re.IGNORECASE)
_PAR_DONE_RE = re.compile(r"^(?:∥|‖|\|\|)\s*(?:done|join(?:ed)?|end)\b\s*(?P<rest>.*)$", re.IGNORECASE)
_LOOP_RE = re.compile(r"^loop(?:\s*:\s*|\s+)(?P<i>\d+)\s*(?:/\s*(?P<n>[^\s(]+))?\s*(?P<rest>.*)$", re.IGNORECASE)
_EXIT_RE = re.compile(r"\bexit\b\s*(?:\((?P<cond>[^)]*)\))?", re.IGNORECASE)
_BLOCK_RE = re.compile(r"^block\s*:\s*(?P<name>[^\s#]+)\s*(?:#(?P<id>\d+))?\s*(?P<rest>.*)$", re.IGNORECASE)
_POP_RE = re.compile(r"^#(?P<id>\d+)\s*(?P<rest>.*)$")
_POP_WORDS = re.compile(r"^(?:done|end(?:ed)?|complete[d]?|returned?|pop(?:ped)?)\b", re.IGNORECASE)
_RETRY_RE = re.compile(r"^retry(?:\s*:\s*|\s+)(?P<a>\d+)\s*(?:/\s*(?P<n>\d+))?\s*(?P<rest>.*)$", re.IGNORECASE)
_IF_RE = re.compile(
    r"^if\s*(?:\((?P<c1>[^)]*)\)|:\s*(?P<c2>[^\s(]+))\s*(?P<rest>.*)$", re.IGNORECASE
)
_TAG_RE = re.compile(r"^\[(?P<tag>[^\]]*)\]\s*")
_KEYWORD_RE = re.compile(r"^(?:let|const|output|input|exec)\s+(?P<rest>\S.*)$")
_STATUS_WORD_RE = re.compile(r"^(?P<word>[A-Za-z][\w-]*)\s*(?P<rest>(?:\(.*)?)$")
# A line without a step is taken as a statement only when its subject is one token.
_STEPLESS_SUBJECT_RE = re.compile(r"^(?:\[[^\]]*\]\s*)?[^\s()]+(?:\s*\([^()]*\))?$")
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLOCK_RE = re.compile(_CLOCK)
_DAYS: dict[date, str] = {}  # a run date as the "YYYY-MM-DDT" a clock stamp is put on (parse_timestamp)
# Cheap gates, each a necessary condition of the rules it guards (same flags, same prefixes),
# so a line skips the regexes that cannot match it (issue 35: most lines are plain steps).
_KEYWORD_START_RE = re.compile(r"(?:∥|‖|\|\||loop|block|#|retry|if)", re.IGNORECASE)
_MARK_RE = re.compile(f"[{_MARK_CHARS}]")
_PAREN_OR_MARK_RE = re.compile(f"[(){_MARK_CHARS}]")
_SKILL_MARKER_RE = re.compile("[∅⇒⟳]|missing-env")  # what skill_lines.skill_statement looks for first
# The shape most step lines have, ``12→ name ✓``, ``2→ gate:push ✗ rejected``, ``7→ step_7 ✓
# [10:00:07]``: step, arrow, one-token subject, mark, maybe a status word, maybe a bracketed
# stamp, single spaces, nothing else. Its characters leave out everything another rule looks
# for (brackets and parentheses but the stamp's, ``|``, ``-``, ``#``, ``∥``, the 0.15 markers,
# whitespace inside a token), so the rules give such a line exactly what ``_fast_step`` does
# (tests/test_eventlog_fast.py checks it line by line on the corpus and generated logs).
_FAST_STEP_RE = re.compile(
    # (a subject starting like a keyword rule, ``if:true ✓``, is left to the rules)
    rf"(?P<step>\d+(?:[A-Za-z._][A-Za-z0-9._]*)?)→ (?!(?i:loop|block|retry|if))"
    rf"(?P<name>[A-Za-z0-9_][A-Za-z0-9_:+.]*) (?P<mark>[{_MARK_CHARS}])"
    rf"(?: (?P<word>[A-Za-z][A-Za-z0-9_]*))?(?: \[(?P<t>{_ISO}|{_CLOCK})\])?"
)
# Regexes here avoid adjacent overlapping quantifiers (``\s*.*?\s*$``): a pathological line
# must cost linear time, not cubic (tests/test_eventlog.py, test_long_lines_are_fast).

_KEYWORD_INITIALS = frozenset("lcoie")  # of _KEYWORD_RE's words (case-sensitive)

_TRUE_WORDS = {"true", "yes", "1", "met"}
_FALSE_WORDS = {"false", "no", "0", "unmet"}


@dataclass(slots=True)
class Item:
    """One event a line stands for, before sequencing (no seq, no line number)."""

    kind: EventKind
    name: str | None = None
    status: str | None = None
    execution_id: int | None = None
    note: str | None = None
    state: StatementState | None = None
    attempt: int | None = None
    max_attempts: int | None = None
    tag: str | None = None
    time: datetime | None = None  # terminators: the timestamp they carry
    message: str | None = None  # ---error: the message


@dataclass(slots=True)
class LineInfo:
    """What one non-blank line of an event log says.

    ``step`` is the label before the arrow (``None`` for terminators and free text).
    ``items`` has at least one entry. ``state``/``note`` are for the trace view.
    ``recognised`` is false when the line became a NOTE because nothing matched.
    """

    text: str
    step: str | None
    items: list[Item] = field(default_factory=list)
    state: StatementState | None = None
    note: str | None = None
    time: datetime | None = None
    recognised: bool = True


def parse_timestamp(token: str, base: date | None = None) -> datetime | None:
    """An ISO 8601 stamp (``Z`` and ``±hh:mm`` offsets allowed) via ``datetime.fromisoformat``.

    A bare clock time (``12:01:03``) is put on ``base`` when given, else ``None``.
    Returns ``None`` for anything that does not parse; never raises.
    """
    token = token.strip().strip("[]()").rstrip(",;.")
    if not token:
        return None
    # A clock time has its first ":" at index 1 or 2, where an ISO date has a digit of its
    # year: ``fromisoformat`` would refuse it (asking first costs an exception a line).
    clock = _CLOCK_RE.fullmatch(token) is not None
    if not clock:
        try:
            return datetime.fromisoformat(token)
        except (ValueError, TypeError):
            return None
    if base is not None:
        clock_text = token.zfill(len(token) + 1) if token.index(":") == 1 else token  # 9:01 -> 09:01
        day = _DAYS.get(base)
        if day is None:
            if len(_DAYS) > 64:
                _DAYS.clear()
            day = _DAYS[base] = f"{base.isoformat()}T"
        try:
            return datetime.fromisoformat(day + clock_text)
        except (ValueError, TypeError):
            return None
    return None


def _take_time(body: str, base: date | None) -> tuple[str, datetime | None]:
    """Remove one timestamp from ``body`` (bracketed anywhere, or bare ISO at an end).

    A stamp is removed by its shape; its time is ``None`` when it does not parse (or is a
    bare clock time and there is no ``base`` date).
    """
    match = _BRACKETED_TIME_RE.search(body) if "[" in body or "(" in body else None
    if match:
        when = parse_timestamp(match.group("t"), base)
        return (body[: match.start()] + " " + body[match.end() :]).strip(), when
    if "-" not in body:  # every bare stamp has a date, and every date a "-"
        return body, None
    tokens = body.split()
    if len(tokens) < 2:
        return body, None
    for stamp, rest in (_stamp_at(tokens, 0), _stamp_at(tokens, -1)):
        if stamp is not None:
            return " ".join(rest), parse_timestamp(stamp)
    return body, None


def _stamp_at(tokens: list[str], end: int) -> tuple[str | None, list[str]]:
    """A bare ISO stamp at the start (``end=0``) or end (``-1``) of ``tokens``, and the rest.

    The stamp is one token (``2026-01-01T10:00Z``) or a date token and a clock token; a
    trailing stamp may be preceded by ``@``. Only stamps with a time count.
    """
    def is_date(t: str) -> bool:
        return t[4:5] == "-" and _STAMP_TOKEN_RE.fullmatch(t) is not None

    if end == 0:
        first = tokens[0]
        if is_date(first) and "T" in first:
            return first, tokens[1:]
        if is_date(first) and len(tokens) > 2 and _CLOCK_TOKEN_RE.fullmatch(tokens[1]):
            return f"{first} {tokens[1]}", tokens[2:]
        return None, tokens
    last = tokens[-1]
    stamp, rest = None, tokens
    if is_date(last) and "T" in last:
        stamp, rest = last, tokens[:-1]
    elif len(tokens) > 2 and _CLOCK_TOKEN_RE.fullmatch(last) and is_date(tokens[-2]):
        stamp, rest = f"{tokens[-2]} {last}", tokens[:-2]
    if stamp is not None and rest and rest[-1] == "@":
        rest = rest[:-1]
    return stamp, rest


def _split_outside_parens(body: str) -> tuple[str, str, str] | None:
    """``(before, mark, after)`` at the first outcome mark outside parentheses, or None."""
    first = _MARK_RE.search(body)
    if first is None:
        return None
    index = first.start()
    if "(" not in body[:index]:  # the common case: no parenthesis before the first mark
        return body[:index].strip(), body[index], body[index + 1 :].lstrip("\ufe0f").strip()
    depth = 0
    for match in _PAREN_OR_MARK_RE.finditer(body):
        char = match.group()
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            index = match.start()
            return body[:index].strip(), char, body[index + 1 :].lstrip("\ufe0f").strip()
    return None


def _join(*parts: str | None) -> str | None:
    kept = [stripped for p in parts if p and (stripped := p.strip())]
    return " ".join(kept) if kept else None


def _subject(text: str) -> tuple[str | None, str | None, str | None]:
    """``[tag] name (annotation)`` -> (tag, name, annotation); keywords let/exec/... dropped."""
    tag = None
    match = _TAG_RE.match(text) if text[:1] == "[" else None
    if match:
        tag = match.group("tag").strip() or None
        text = text[match.end() :]
    text = text.strip()
    name, ann = text, None
    opening = text.rfind("(")
    if text.endswith(")") and opening != -1 and ")" not in text[opening + 1 : -1]:
        name, ann = text[:opening].strip(), text[opening:]
    keyword = _KEYWORD_RE.match(name) if name[:1] in _KEYWORD_INITIALS else None
    if keyword:
        name = keyword.group("rest").strip()
    return tag, (name or None), ann


def _statement(body: str) -> Item:
    """A plain statement: ``[tag] name (ann) MARK word (note)``; no mark means started."""
    split = _split_outside_parens(body)
    if split is None:
        tag, name, ann = _subject(body)
        return Item(EventKind.STATEMENT_STARTED, name, None, None, ann, None, None, None, tag)
    before, mark, after = split
    kind, status, state = MARKS[mark]
    tag, name, ann = _subject(before)
    note = after or None
    word = _STATUS_WORD_RE.match(after) if after else None
    if word:
        status = word.group("word")
        note = word.group("rest") or None
    # Positional (Item's field order: kind, name, status, execution_id, note, state, attempt,
    # max_attempts, tag): a call with keywords costs twice as much, on every line.
    return Item(kind, name, status, None, _join(ann, note) if ann or note else None, state, None, None, tag)


def _one_line_parallel(body: str) -> list[Item] | None:
    """``a ✓ | b ✓ (parallel)``: PARALLEL_STARTED, one item per branch, PARALLEL_JOINED."""
    if "|" not in body or "|" not in body.replace("||", ""):
        return None
    text = body.strip()
    opening = text.rfind("(")
    if text.endswith(")") and opening != -1 and text[opening + 1 : -1].strip().lower() == "parallel":
        text = text[:opening].strip()
    parts = [p.strip() for p in re.split(r"(?<!\|)\|(?!\|)", text)]
    if len(parts) < 2 or not all(p and _split_outside_parens(p) for p in parts):
        return None
    branches = [_statement(p) for p in parts]
    names = ",".join(b.name or "?" for b in branches)
    failed = any(b.kind is EventKind.STATEMENT_FAILED for b in branches)
    joined = Item(EventKind.PARALLEL_JOINED, name=names, status="failed" if failed else "ok")
    return [Item(EventKind.PARALLEL_STARTED, name=names), *branches, joined]


def _keyword_event(body: str) -> Item | None:
    """Parallel, loop, block, pop, retry and if markers; None when the body is none of them."""
    if not _KEYWORD_START_RE.match(body):
        return None
    if m := _PAR_START_RE.match(body):
        names = ",".join(p.strip() for p in m.group("rest").split(",") if p.strip())
        return Item(EventKind.PARALLEL_STARTED, name=names or None, state=StatementState.EXECUTING)
    if m := _PAR_DONE_RE.match(body):
        split = _split_outside_parens(m.group("rest"))
        status = MARKS[split[1]][1] if split else "ok"
        return Item(EventKind.PARALLEL_JOINED, status=status, state=StatementState.COMPLETE,
                    note=m.group("rest") or None)
    if m := _LOOP_RE.match(body):
        of = f"{m.group('i')}/{m.group('n')}" if m.group("n") else m.group("i")
        exit_ = _EXIT_RE.search(m.group("rest"))
        return Item(EventKind.LOOP_ITERATION, name="loop", status="exit" if exit_ else None,
                    note=_join(of, m.group("rest")))
    if m := _BLOCK_RE.match(body):
        eid = int(m.group("id")) if m.group("id") else None
        return Item(EventKind.FRAME_PUSHED, name=m.group("name"), execution_id=eid,
                    note=m.group("rest") or None)
    if (m := _POP_RE.match(body)) and (not m.group("rest") or _POP_WORDS.match(m.group("rest"))
                                       or m.group("rest")[0] in _MARK_CHARS):
        rest = m.group("rest")
        split = _split_outside_parens(rest)
        status = "done"
        if split:
            word = _STATUS_WORD_RE.match(split[2])
            status = word.group("word") if word else MARKS[split[1]][1]
            if MARKS[split[1]][0] is EventKind.STATEMENT_FAILED and not word:
                status = "failed"
        return Item(EventKind.FRAME_POPPED, execution_id=int(m.group("id")), status=status,
                    state=StatementState.FAILED if split and MARKS[split[1]][0] is EventKind.STATEMENT_FAILED
                    else StatementState.COMPLETE,
                    note=rest or None)
    if m := _RETRY_RE.match(body):
        of = f"{m.group('a')}/{m.group('n')}" if m.group("n") else m.group("a")
        return Item(EventKind.RETRY, status=of, attempt=int(m.group("a")),
                    max_attempts=int(m.group("n")) if m.group("n") else None,
                    note=m.group("rest") or None)
    if m := _IF_RE.match(body):
        cond = (m.group("c1") if m.group("c1") is not None else m.group("c2") or "").strip()
        rest = m.group("rest").strip() or None
        if cond.lower() in _FALSE_WORDS:
            return Item(EventKind.STATEMENT_SKIPPED, name="if", status="skip",
                        state=StatementState.SKIPPED, note=rest)
        if cond.lower() in _TRUE_WORDS:
            return Item(EventKind.STATEMENT_COMPLETED, name="if", status="true",
                        state=StatementState.COMPLETE, note=rest)
    return None


def _terminator(line: str) -> LineInfo | None:
    match = TERMINATOR_RE.match(line)
    if not match:
        return None
    word = match.group("word").lower()
    rest = match.group("rest").strip()
    tokens = rest.split()
    when, used = None, 0
    if len(tokens) >= 2 and re.match(r"^\d{1,2}:\d{2}", tokens[1]):
        when, used = parse_timestamp(f"{tokens[0]} {tokens[1]}"), 2
    if when is None and tokens:
        when, used = parse_timestamp(tokens[0]), 1
    remainder = " ".join(tokens[used:]) if when is not None else rest
    if word.startswith("resume"):
        item = Item(EventKind.RUN_RESUMED, time=when, note=remainder or None)
    elif word.startswith(("error", "fail")):
        item = Item(EventKind.RUN_ERRORED, status="failed", time=when, message=remainder or None)
    else:
        item = Item(EventKind.RUN_ENDED, status="completed", time=when, note=remainder or None)
    return LineInfo(text=line, step=None, items=[item], note=remainder or None, time=when)


def classify_line(line: str, base: date | None = None) -> LineInfo:
    """Classify one non-blank event-log line.

    ``base`` is the run's date, used to place bare clock times (``[12:01:03]``).
    Returns a :class:`LineInfo` whose ``items`` is never empty; a line nothing matches is
    a single NOTE with ``recognised=False``. Never raises. The common step line shape
    (``_FAST_STEP_RE``) is read in one match; every other line by
    :func:`classify_line_by_rules`, which gives the same result for any line.
    """
    text = line.rstrip("\r\n")
    fast = _FAST_STEP_RE.fullmatch(text)
    if fast is not None:
        return _fast_step(text, fast, base)
    return classify_line_by_rules(text, base)


def _fast_step(text: str, match: re.Match[str], base: date | None) -> LineInfo:
    """The :class:`LineInfo` of a line of ``_FAST_STEP_RE``'s shape (what the rules give it)."""
    kind, status, state = MARKS[match["mark"]]
    stamp = match["t"]
    when = parse_timestamp(stamp, base) if stamp is not None else None
    word = match["word"]
    # Positional: kind, name, status, execution_id, note, state, attempt, max_attempts, tag, time.
    item = Item(kind, match["name"], word or status, None, None, state, None, None, None, when)
    return LineInfo(text, match["step"], [item], state, None, when)


def classify_line_by_rules(line: str, base: date | None = None) -> LineInfo:
    """:func:`classify_line` rule by rule (the specification path): a test verdict or a
    terminator, else a stamp taken off, the step label, then the 0.15 markers, a one-line
    parallel, a keyword event and the statement rule, in that order."""
    text = line.rstrip("\r\n")
    stripped = text.strip()
    if stripped[:2] == "--":  # a test verdict and a terminator both start with "--"
        if (verdict := test_verdict(text)) is not None:
            item = _from_skill(verdict)
            return LineInfo(text=text, step=None, items=[item], state=item.state, note=item.note)
        term = _terminator(text)
        if term is not None:
            return term
    step = None
    if "[" in stripped or "(" in stripped or "-" in stripped:  # a stamp has one of them
        body, when = _take_time(stripped, base)
    else:
        body, when = stripped, None
    match = STEP_RE.match(body)
    if match:
        step, body = match.group("step"), match.group("body").strip()
    items: list[Item] | None = None
    if step is not None and _SKILL_MARKER_RE.search(body) and (marker := skill_statement(body)) is not None:
        items = [_from_skill(marker)]
    elif "|" in body and (par := _one_line_parallel(body)) is not None:
        items = par
    elif (kw := _keyword_event(body)) is not None:
        items = [kw]
    elif step is not None:
        items = [_statement(body)]
    elif (split := _split_outside_parens(body)) and split[0] and _STEPLESS_SUBJECT_RE.match(
        split[0]
    ):
        items = [_statement(body)]
    if items is None:
        return LineInfo(text=text, step=None, items=[Item(EventKind.NOTE)], time=when,
                        recognised=False)
    if len(items) == 1:  # the common case, without the loops of _line_state/_line_note
        item = items[0]
        item.time = item.time or when
        return LineInfo(text, step, items, item.state, item.note, when)  # (positional: as Item above)
    for item in items:
        item.time = item.time or when
    return LineInfo(text=text, step=step, items=items, state=_line_state(items),
                    note=_line_note(items), time=when)


def _from_skill(marker: SkillItem) -> Item:
    """An openprose-0.15 marker (:mod:`.skill_lines`) as an :class:`Item`."""
    return Item(marker.kind, name=marker.name, status=marker.status, note=marker.note, state=marker.state)


def _line_state(items: list[Item]) -> StatementState | None:
    if len(items) == 1:
        return items[0].state
    states = {i.state for i in items if i.kind.name.startswith("STATEMENT")}
    if StatementState.FAILED in states:
        return StatementState.FAILED
    return StatementState.COMPLETE if states else None


def _line_note(items: list[Item]) -> str | None:
    if len(items) == 1:
        return items[0].note
    return _join(*(i.note for i in items)) or "parallel"
