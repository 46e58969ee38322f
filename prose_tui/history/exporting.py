"""Export one run as a file: HTML, Markdown or JSON (issue 14), shared by ``prose-tui
export`` and the explorer's export key. No Textual; writes only the file asked for.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from prose_tui.history.report import build_report, detail_json
from prose_tui.history.stream import History
from prose_tui.model import Run, TraceLine

__all__ = ["FORMATS", "default_filename", "export_text", "write_export"]

FORMATS = ("html", "md", "json")
_EXTENSION = {"html": "html", "md": "md", "json": "json"}


def export_text(run: Run, history: History, fmt: str = "html", at: int | None = None,
                trace: list[TraceLine] | None = None) -> str:
    """The export of ``run`` as of event ``at`` in ``fmt`` (``html``, ``md`` or ``json``);
    ``trace`` is the trace as the explorer shows it (see ``build_report``).

    Raises ``ValueError`` for another format and ``IndexError`` for an ``at`` outside the
    history's events."""
    if fmt == "json":
        return json.dumps(detail_json(run, history, at), indent=2, ensure_ascii=False) + "\n"
    if fmt == "html":
        from prose_tui.history.report_html import render_html

        return render_html(build_report(run, history, at, trace=trace))
    if fmt == "md":
        from prose_tui.history.report_md import MD_VALUE_LIMIT, render_markdown

        return render_markdown(build_report(run, history, at, value_limit=MD_VALUE_LIMIT, trace=trace))
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


def default_filename(run: Run, fmt: str, at: int | None = None) -> str:
    """``prose-<run id>[-at-N].<ext>``, with anything but letters, digits, ``.-_`` in the
    run id replaced by ``_`` (a run id never chooses the folder it is written to)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", run.id).strip("._") or "run"
    suffix = f"-at-{at}" if at is not None else ""
    return f"prose-{safe[:80]}{suffix}.{_EXTENSION[fmt]}"


def write_export(run: Run, history: History, fmt: str = "html", at: int | None = None,
                 target: Path | None = None, trace: list[TraceLine] | None = None) -> Path:
    """Write the export and return its absolute path. ``target`` is a file, or a folder to
    write :func:`default_filename` into (default: the current folder). The file is replaced
    whole (written beside it, then renamed), never left half written. Raises ``OSError``,
    ``ValueError``, ``IndexError`` as :func:`export_text` and the file system do."""
    text = export_text(run, history, fmt, at, trace)
    path = Path(target) if target is not None else Path.cwd()
    path = path.expanduser()
    if path.is_dir():
        path = path / default_filename(run, fmt, at)
    path = path.resolve()
    fd, tmp = tempfile.mkstemp(prefix=".prose-export-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
