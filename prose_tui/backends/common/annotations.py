"""Trace annotations: splitting a trace line into program text and the VM's annotation.

Handles seeds/filesystem.md, ``state.md`` Status annotations (``# --> bindings/x.md``,
``# <-- EXECUTING``, ``# (complete)``, ``# [not yet entered]``, ``# [...next...]``,
``# <-- RETRYING (attempt 2/3)``) and the real-world dialects of FORMATS.md: annotations
without ``#`` (``✓ DONE``, ``✓ defined``), ``# [registered]`` / ``# (registered)``,
``(complete - APPROVED)``, ``--> exceptions.py created`` (an output that is not a binding),
and elided lines (``...remaining stages...``).

The rule: an annotation is a ``#`` comment outside string literals, or a run of two or more
spaces followed by an annotation token (``✓ ✗ ⊘ --> <--`` or a bracketed state word).
Its text is then classified by keywords, so unseen wordings of the same states still land.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from prose_tui.model import StatementState

# Annotation tokens that may follow program text without a "#".
_BARE = re.compile(r"\s{2,}(?=(?:✓|✔|✗|✘|⊘|-->|<--|\((?:complete|done|failed|skipped|registered)\b|\[(?:not yet|\.\.\.next|registered|next|skipped|failed)))", re.IGNORECASE)
# A "#" annotation strong enough to trust even inside a multi-line string.
_STRONG = re.compile(r"\s#\s*(?:-->|<--|\(complete|\[not yet entered\]|\[\.\.\.next\.\.\.\])", re.IGNORECASE)
_OUTPUT = re.compile(r"-->\s*(\S+)")
_ATTEMPT = re.compile(r"attempt\s+(\d+)\s*(?:/|of)\s*(\d+)", re.IGNORECASE)
_BINDING_PATH = re.compile(r"^(?:\./)?bindings/\S+$")
_QUOTE_OR_HASH = re.compile(r'["#]')

_GLYPH_STATES = {"✓": StatementState.COMPLETE, "✔": StatementState.COMPLETE, "✗": StatementState.FAILED,
                 "✘": StatementState.FAILED, "⊘": StatementState.SKIPPED}
# "<-- WORD ...", "(words)" or "[words]" at the start of an annotation: the state's own words.
_LEADING = re.compile(r"^(?:<--\s*([A-Za-z][\w -]*?)(?=\s*(?:\(|$))|\(([^)]*)\)|\[([^\]]*)\])")
_RULES: list[tuple[re.Pattern[str], StatementState]] = [
    (re.compile(r"retry", re.I), StatementState.RETRYING),
    (re.compile(r"<--\s*executing|\bexecuting\b|\brunning\b|\bin progress\b", re.I), StatementState.EXECUTING),
    (re.compile(r"✗|✘|\bfail(?:ed|ure)?\b|\berror\b|\baborted\b", re.I), StatementState.FAILED),
    (re.compile(r"⊘|\bskip(?:ped)?\b", re.I), StatementState.SKIPPED),
    (re.compile(r"not yet entered|\bpending\b|\bnot started\b", re.I), StatementState.PENDING),
    (re.compile(r"\.\.\.next\.\.\.|\bnext\b|\bqueued\b", re.I), StatementState.NEXT),
    (re.compile(r"✓|✔|\bcomplete[d]?\b|\bdone\b|\bregistered\b|\bdefined\b|\bsuccess\b|\bapproved\b", re.I), StatementState.COMPLETE),
]


@dataclass(slots=True)
class Annotation:
    """The parts of one annotated trace line."""

    text: str
    note: str | None
    state: StatementState | None
    binding: str | None
    attempt: int | None
    max_attempts: int | None


def classify(note: str) -> StatementState | None:
    """The statement state an annotation's words mean, or ``None`` for a plain comment.

    The output path of ``--> path`` is not read as words (``bindings/next.md`` is not
    "next"); an output arrow with no other state word means the output was written.
    """
    return _classify_words(_OUTPUT.sub(" ", note).strip(), "-->" in note)


@lru_cache(maxsize=4096)
def _classify_words(words: str, arrow: bool) -> StatementState | None:
    """``classify`` of a note whose output paths are taken out (``words``): the same few
    wordings recur on most lines of a trace, so each is classified once."""
    # The VM's leading marker decides ("✓ done (succeeded after retry)" is complete); the
    # words after it are only read when there is no marker or it is a bracket of words.
    if words[:1] in _GLYPH_STATES:
        return _GLYPH_STATES[words[:1]]
    lead = _LEADING.match(words)
    scope = next((g for g in lead.groups() if g), words) if lead else words
    first_word = scope.split()[0] if lead and scope.split() else None
    for candidate in ([first_word] if first_word else []) + [scope]:
        for pattern, state in _RULES:
            if pattern.search(candidate):
                return state
    if lead:
        for pattern, state in _RULES:
            if pattern.search(words):
                return state
    if arrow:
        return StatementState.COMPLETE
    return None


def _comment_start(line: str, in_string: bool) -> tuple[int | None, bool]:
    """Index of a ``#`` comment outside strings, and whether a triple-quoted string stays open.

    Jumps from one ``"``, ``#`` or backslash to the next (``str.find``, a regex), not
    character by character: a 4,000-line trace is annotated on every snapshot open."""
    i, n = 0, len(line)
    quote: str | None = '"""' if in_string else None
    while i < n:
        if quote:
            close, escape = line.find(quote, i), line.find("\\", i)
            if escape >= 0 and (close < 0 or escape < close):
                i = escape + 2  # an escaped character, whatever it is
                continue
            if close < 0:
                break
            i, quote = close + len(quote), None
            continue
        m = _QUOTE_OR_HASH.search(line, i)
        if m is None:
            break
        i = m.start()
        if line[i] == '"':
            quote = '"""' if line.startswith('"""', i) else '"'
            i += len(quote)
            continue
        if i == 0 or line[i - 1].isspace():
            return i, False
        i += 1
    # A single-quoted string does not span lines; only a triple quote stays open.
    return None, quote == '"""'


def split_annotation(line: str, in_string: bool = False) -> tuple[Annotation, bool]:
    """Split one trace line; returns the parts and whether a ``\"\"\"`` string is still open.

    Never raises. A line that is only a comment (``# note``) keeps its text and has no
    annotation: it is program text, not VM output.
    """
    cut: int | None = None
    still_open = in_string
    if in_string:
        strong = _STRONG.search(line)
        if strong:
            cut = strong.start() + 1
        _, still_open = _comment_start(line, True)
        if cut is not None:
            still_open = False
    else:
        cut, still_open = _comment_start(line, False)
        if cut is not None and not line[:cut].strip():
            cut = None  # a whole-line comment is part of the program
    note: str | None = None
    if cut is not None:
        note = line[cut:].lstrip("#").strip()
        text = line[:cut].rstrip()
    else:
        bare = _BARE.search(line)
        if bare and line[: bare.start()].strip() and not in_string:
            note = line[bare.end():].strip()
            text = line[: bare.start()].rstrip()
        else:
            text = line.rstrip()
    if not note:
        return Annotation(text, None, None, None, None, None), still_open
    binding = None
    out = _OUTPUT.search(note)
    if out and _BINDING_PATH.match(out.group(1)):
        binding = out.group(1).removeprefix("./")
    attempt = max_attempts = None
    m = _ATTEMPT.search(note)
    if m:
        attempt, max_attempts = int(m.group(1)), int(m.group(2))
    return Annotation(text, note, classify(note), binding, attempt, max_attempts), still_open
