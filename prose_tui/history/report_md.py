"""A :class:`~prose_tui.history.report.Report` as GitHub-flavoured Markdown, for pasting
into an issue or a pull request.

Run text never becomes Markdown or HTML: inline text goes into code spans whose fence is
longer than any backtick run inside, multi-line text into fenced blocks whose fence is
longer than any inside, and the few HTML ``<summary>`` texts are ``html.escape``-d. So a
trace line reading ``<script>`` or ``](javascript:...)`` is shown, not rendered. Long
sections are cut (``MAX_TRACE``/``MAX_EVENTS`` lines, values at the report's limit) and
values past ``MD_BUDGET`` characters are left out, each with a note, to stay below
issue-body size limits.
"""

from __future__ import annotations

import html
import re

from prose_tui.history.report import Cut, Report, describe_seconds, size_text

__all__ = ["MD_VALUE_LIMIT", "code", "fenced", "render_markdown"]

MD_VALUE_LIMIT = 4 * 1024  # bytes of one value in a Markdown report (issue bodies are small)
MD_BUDGET = 60_000  # characters: GitHub refuses issue and comment bodies past 65,536
MAX_TRACE = 300
MAX_EVENTS = 150


def code(text: str) -> str:
    """``text`` as one inline code span on one line, whatever backticks it holds."""
    flat = " ".join(text.split()) or " "
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or longest else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def fenced(text: str, info: str = "text") -> str:
    """``text`` in a fenced block whose fence is longer than any backtick or tilde run in it."""
    longest = max((len(m) for m in re.findall(r"`{3,}|~{3,}", text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def _summary(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=True)


def _value(cut: Cut) -> list[str]:
    out = []
    if cut.warning:
        out.append(f"> warning: {code(cut.warning)}")
        out.append("")
    if cut.cut:
        out.append(f"_{cut.note}_")
        out.append("")
    out.append(fenced(cut.text.strip("\n")))
    return out


def render_markdown(report: Report) -> str:
    """The report as one Markdown document."""
    run = report.run
    out: list[str] = [f"## prose-tui run {code(run.id)}: **{run.status.value}**", ""]
    out.append(f"**Why:** {code(run.status_reason or 'no reason recorded')}")
    out.append("")
    if report.at is not None:
        out += [f"> State {code(report.at_text)}", ""]
    for key, value in report.header:
        if key not in ("status", "why"):
            out.append(f"- {key}: {code(value)}")
    out.append("")
    if report.failures:
        out += [f"### Failures ({len(report.failures)})", ""]
        for f in report.failures:
            out.append(f"#### Event {f.seq}: {code(f.event_text)}")
            out.append("")
            out.append(f"- statement: {code(f.statement or 'unknown')}")
            out.append(f"- error: {code(f.error or 'no error text recorded')}")
            if f.retries:
                out.append(f"- retries before it ({len(f.retries)}):")
                out += [f"  - {code(t)}" for t in f.retries]
            out.append("")
            for name, scope, cut in f.context:
                out.append(f"<details><summary>context binding {_summary(name)} · {_summary(scope)} · "
                           f"{size_text(cut.size)}</summary>")
                out.append("")
                out += _value(cut)
                out += ["", "</details>", ""]
    out += [f"### Trace ({len(report.trace)} lines)", ""]
    trace = report.trace[:MAX_TRACE]
    lines = [f"{n:>4} {mark} {text}" + (f"  # {note}" if note else "") for n, mark, text, note in trace]
    if len(report.trace) > MAX_TRACE:
        lines.append(f"… {len(report.trace) - MAX_TRACE} more lines left out")
    out += [fenced("\n".join(lines) or "(no trace)"), ""]
    if report.call_stack:
        out += ["Call stack (innermost first):", ""]
        out += [f"- {code(f'#{eid} {block}')}" + (f" depth {depth}" if depth is not None else "")
                + (f" · {code(status)}" if status else "")
                for eid, block, depth, status in report.call_stack]
        out.append("")
    out += [f"### Timeline ({len(report.timeline)} events)", "", f"_{report.history.note}; “took” is the time until the next event._", ""]
    rows = report.timeline[-MAX_EVENTS:]
    left_out = len(report.timeline) - len(rows)
    table = [f"… {left_out} earlier events left out"] if left_out else []
    for row in rows:
        took = describe_seconds(row.took)
        table.append(f"{row.seq:>4} {row.time or '-':<19} {took:>7} {row.mark} {row.text}")
    out += [fenced("\n".join(table) or "(no events)"), ""]
    omitted: list[str] = []

    def fits(extra: list[str]) -> bool:
        """A value goes in while the document stays under ``MD_BUDGET`` characters."""
        return sum(len(x) + 1 for x in out) + sum(len(x) + 1 for x in extra) <= MD_BUDGET

    if report.bindings:
        out += [f"### Bindings ({len(report.bindings)})", ""]
        for b in report.bindings:
            lines = _value(b.value)
            head = f"{_summary(b.name)} · {_summary(b.kind)} · {_summary(b.scope)} · {size_text(b.value.size)}"
            if fits(lines):
                out += [f"<details><summary>{head}</summary>", "", *lines, "", "</details>", ""]
            else:
                out.append(f"- {code(b.name)} · {code(b.kind)} · {code(b.scope)} · {size_text(b.value.size)}")
                omitted.append(b.name)
        out.append("")
    if report.agents:
        out += [f"### Agents ({len(report.agents)})", ""]
        for a in report.agents:
            out.append(f"- {code(a.name)} · {code(a.scope)} · {len(a.segments)} segments")
            if a.memory is not None:
                lines = _value(a.memory)
                if fits(lines):
                    out += ["", f"<details><summary>memory of {_summary(a.name)} · {size_text(a.memory.size)}</summary>",
                            "", *lines, "", "</details>", ""]
                else:
                    omitted.append(f"memory of {a.name}")
        out.append("")
    if omitted:
        out += [f"_{len(omitted)} values left out to stay under {MD_BUDGET:,} characters (issue bodies are limited "
                "to 65,536); export HTML for all of them._", ""]
    if report.warnings:
        out += [f"### Warnings ({len(report.warnings)})", ""]
        out += [f"- {code(w)}" for w in report.warnings]
        out.append("")
    out.append(f"<sub>exported by prose-tui {html.escape(report.version)} at {html.escape(report.generated)}</sub>")
    return "\n".join(out) + "\n"
