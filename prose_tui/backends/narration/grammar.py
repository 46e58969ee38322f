"""The line shapes of the narration markers: one compiled pattern per shape (seeds/in-context.md).

Three generations of marker are read (see :mod:`.markers` for the protocol and what each
marker becomes): the seed's text markers (``[Binding] x = 1``, :data:`BRACKET`), the older
emoji markers (``📦 x = 1``, :data:`EMOJI`) and the compact narration of later versions
(``3→ research ✓``, :data:`STEP` … :data:`END`; FORMATS.md, generation 2). The remaining
patterns read the body of a marker or a continuation line after it.

Every pattern reads one line (escape sequences already removed) and never raises. Shared by :mod:`.markers`, :mod:`.compact` (the
marker handlers) and :mod:`.parse` (which sniffs files for markers).
"""

from __future__ import annotations

import re

_NAMES = "Program|Position|Binding|Input|Output|Import|Success|Warning|Error|Parallel|Loop|Pipeline|Try|Flow|Frame\\+|Frame-|Frame−|CallStack|Call Stack"
_PREFIX = r"^[ \t>*`_~-]*"
#: A seed text marker, ``[Binding] x = 1``: group 1 the marker name, group 2 the body.
BRACKET = re.compile(_PREFIX + r"\[(" + _NAMES + r")\][*`_]*[ \t]*:?[ \t]*(.*)$", re.IGNORECASE)
#: The emoji of the older markers → the text marker name each stands for.
EMOJI_MAP = {"📋": "program", "📍": "position", "📦": "binding", "✅": "success", "⚠": "warning",
             "🔀": "parallel", "🔄": "loop", "🔗": "pipeline", "🛡": "try", "➡": "flow"}
#: An older emoji marker, ``📦 x = 1``: group 1 the emoji (a key of :data:`EMOJI_MAP`), group 2 the body.
EMOJI = re.compile(_PREFIX + r"(📋|📍|📦|✅|⚠|🔀|🔄|🔗|🛡|➡)\ufe0f?[ \t]*(.*)$")
#: A compact statement line, ``3→ research ✓``: group 1 the step (``3``, ``4b``), group 2 the rest.
STEP = re.compile(r"^[ \t>*`-]*(\d+[a-z]?)[ \t]*(?:→|->)[ \t]*(.*)$")
#: A compact frame line, ``#43 process`` / ``#43 done``: group 1 the execution_id, group 2 the rest.
FRAME_ID = re.compile(r"^[ \t>*`-]*#(\d+)[ \t]+(\S.*)$")
#: A compact parallel line, ``∥ [a b c]`` / ``∥start a,b`` / ``∥done``: group 1 the rest.
PAR = re.compile(r"^[ \t>*`-]*∥[ \t]*(.*)$")
#: A compact loop line, ``loop:2/5``: group 1 the iteration, group 2 the bound (a number, ``?`` or ``∞``; optional), group 3 the rest.
LOOP = re.compile(r"^[ \t>*`-]*loop:(\d+)(?:/(\d+|\?|∞))?(.*)$")
#: A compact ``try→`` / ``catch→`` / ``finally→`` line: group 1 the clause, group 2 the rest.
TRY = re.compile(r"^[ \t>*`-]*(try|catch|finally)[ \t]*(?:→|->)[ \t]*(.*)$", re.IGNORECASE)
#: The compact end of a run, ``---end`` / ``---error timeout`` / ``---resume``: group 1 the word, group 2 the rest.
END = re.compile(r"^[ \t]*---(end|error|resume)\b[ \t]*(.*)$")
#: A tool-call line of the host agent, ``[Task: …]`` / ``[Multiple Task calls]``: a note, not a marker.
TASK = re.compile(r"^[ \t>*`-]*\[(Task[^\]]*|Multiple Task calls|\.\.\.[^\]]*)\]", re.IGNORECASE)

#: ``execution_id: 5`` (or ``= 5``, optionally parenthesised) anywhere in a body: group 1 the id.
EXECUTION_ID = re.compile(r"\(?\s*execution_id\s*[:=]\s*(\d+)\s*\)?", re.IGNORECASE)
#: A binding body, ``let x = value``: group 1 the keyword (``let``/``const``/``output``/``input``; optional), group 2 the name, group 3 the value.
ASSIGNMENT = re.compile(r"^(?:(let|const|output|input)\s+)?([A-Za-z_][\w.\[\]]*)\s*=\s*(.*)$", re.DOTALL)
#: A trailing scope remark after a value, ``(mutable)`` / ``(from caller)`` …: removed from the value.
ANNOTATION = re.compile(r"\s*\((?:mutable|immutable|reassignment[^)]*|will return to caller|from caller|parent scope)\)\s*$", re.IGNORECASE)
#: ``a, b bound`` (names bound without a value): group 1 the comma-separated names.
BOUND = re.compile(r"^([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s+bound\b", re.IGNORECASE)
#: ``Resolving 'x': found in execution_id 3`` (Scoped Binding Narration): group 1 the name, group 2 the id.
RESOLVING = re.compile(r"Resolving\s+'?([\w.]+)'?\s*:\s*found in execution_id\s+(\d+)", re.IGNORECASE)
#: A ``[Position]`` body ``Statement 3 of 7: text``: group 1 the statement number, group 2 the text.
STATEMENT = re.compile(r"^Statement\s+(\d+)(?:\s+of\s+\d+)?\s*:\s*(.*)$", re.IGNORECASE)
#: A ``[Position]`` body ``Executing: text``: group 1 the text.
EXECUTING = re.compile(r"^Executing\s*:\s*(.*)$", re.IGNORECASE)
#: A ``[Loop]`` body ``Iteration 2 of max 5``: group 1 the iteration, group 2 the bound (optional).
ITERATION = re.compile(r"Iteration\s+(\d+)(?:\s+of\s+(?:max\s+)?(\d+))?", re.IGNORECASE)
#: ``retry 2/3`` / ``retry attempt 2 of 3`` in a ``[Warning]``: group 1 the attempt, group 2 the maximum.
RETRY = re.compile(r"\bretry\s*(?::|attempt)?\s*(\d+)\s*(?:/|of)\s*(\d+)", re.IGNORECASE)
#: A ``[Frame+]`` body ``Entering block: name (…)``: group 1 the block name (optional), group 2 the rest.
ENTERING_BLOCK = re.compile(r"Entering block\s*:?\s*([\w.-]+)?(.*)$", re.IGNORECASE)
#: ``depth: 2`` in a ``[Frame+]`` body: group 1 the depth.
DEPTH = re.compile(r"depth\s*[:=]\s*(\d+)", re.IGNORECASE)
#: The line after ``[Frame+]``, ``Parent: execution_id 1``: group 1 the parent's id.
PARENT = re.compile(r"^\s*Parent\s*:\s*execution_id\s*[:=]?\s*(\d+)", re.IGNORECASE)
#: A row under ``[CallStack]`` (Call Stack State), ``execution_id: 5 | block: b | depth: 2 | status: executing``: groups 1-4 id, block, depth and status (the last two optional).
STACK_ROW = re.compile(r"execution_id\s*[:=]\s*(\d+)\s*\|\s*block\s*[:=]\s*([^|]+?)\s*(?:\|\s*depth\s*[:=]\s*(\d+))?\s*(?:\|\s*status\s*[:=]\s*(\w+))?\s*$", re.IGNORECASE)
#: A continuation line ``- name = value`` / ``name: value``: group 1 the name, group 2 ``=`` or ``:``, group 3 the value.
ITEM = re.compile(r"^\s*[-*]?\s*([A-Za-z_][\w.]*)\s*(=|:)\s*(.*)$")
#: A labelled line under ``[Import] Importing:``, ``Registered as: alias``: group 1 the label, group 2 the value.
LABELLED_VALUE = re.compile(r"^\s*(Fetching from|Inputs expected|Outputs provided|Registered as|Arguments)\s*:\s*(.*)$", re.IGNORECASE)
#: The text of a statement that opens a block (``parallel``, ``loop``, ``try``, ``if``, ``choice`` … or a ``|`` pipeline).
CONTAINER = re.compile(r"^(?:(?:let|const)\s+\w+\s*=\s*)?(parallel|loop|repeat|for|do\b|try|if|choice|block|pipeline)|parallel block|^\w+\s*\|", re.IGNORECASE)
#: The result after the first colon of a ``[Success]`` body: group 1 the value.
RESULT = re.compile(r":\s*(.+)$")
#: An agent line under ``[Program]``, ``- Agent: name (model: x, …)``: group 1 the name, group 2 the details (optional).
AGENT = re.compile(r"^\s*[-*]\s*Agent\s*:\s*([\w-]+)\s*(?:\((.*)\))?", re.IGNORECASE)
#: A ``*.prose`` file name in a ``[Program]`` body: group 1 the name.
PROGRAM_NAME = re.compile(r"([\w./-]+\.prose)\b")


def unquote(value: str) -> str:
    """``value`` stripped of whitespace and of one pair of matching ``"`` or ``'`` quotes."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
