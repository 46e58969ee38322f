"""Export from the explorer (issue 14): the run on screen, as of the history cursor, as one
HTML page or Markdown file (:mod:`prose_tui.history.exporting`), written off the UI thread;
a notification says where. ``ExportPrompt`` asks for a path first; an existing file is
replaced only after a confirmation.

Served read-only to a browser (``tui.served``), nothing is written on the server: the
export is handed to the browser as a download (``App.deliver_text``, which textual-serve
turns into a ``/download/KEY`` URL the page opens).
"""

from __future__ import annotations

import io
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from prose_tui.history.exporting import default_filename, export_text, write_export
from prose_tui.remote import mirror_of, shown
from prose_tui.viewmodel.explorer_model import trace_as_shown
from prose_tui.tui.screens.confirm import ConfirmScreen
from prose_tui.tui.served import is_read_only, refuse_if_read_only

FORMAT_NAMES = {"html": "HTML", "md": "Markdown", "json": "JSON"}
MIME_TYPES = {"html": "text/html", "md": "text/markdown", "json": "application/json"}


class ExportPrompt(ModalScreen[Path | None]):
    """Asks where to write the export; dismisses with the path, or ``None`` on Escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ExportPrompt { align: center middle; }
    ExportPrompt > Vertical { width: 80%; max-width: 100; height: auto; border: round $accent;
                              background: $surface; padding: 1 2; }
    ExportPrompt Label { color: $text-muted; }
    """

    def __init__(self, fmt: str, suggestion: Path) -> None:
        super().__init__()
        self.fmt = fmt
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Export run as {FORMAT_NAMES[self.fmt]} to (a file, or a folder):", markup=False)
            yield Input(str(self.suggestion), id="export-path")
            yield Label("Enter writes · Escape cancels", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(Path(value).expanduser() if value else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _explorer(app: App):
    from prose_tui.tui.screens.explorer import ExplorerScreen

    return next((s for s in reversed(app.screen_stack) if isinstance(s, ExplorerScreen)), None)


def export_current(app: App, fmt: str = "html", *, ask: bool = False) -> None:
    """Export the explorer's current run as of its history cursor to the current folder
    (``ask``: to a path the user types first), asking before it replaces a file, then
    notify the path written or the error. Served read-only: a browser download instead."""
    explorer = _explorer(app)
    run = explorer.current_run if explorer is not None else None
    if explorer is None or run is None:
        app.notify("No run to export: choose one in the run list first.", severity="warning", markup=False)
        return
    at = explorer.nav.cursor
    if is_read_only(app):
        if app.is_web:
            _start(app, explorer, fmt, at, None, download=True)
        else:  # read-only outside a browser: there is nowhere to send it but this disk
            refuse_if_read_only(app, "Export to this machine's disk")
        return
    if ask:
        def chosen(target: Path | None) -> None:
            if target is not None:
                _confirm_then_start(app, explorer, fmt, at, target)

        app.push_screen(ExportPrompt(fmt, Path.cwd() / default_filename(run, fmt, at)), chosen)
        return
    _confirm_then_start(app, explorer, fmt, at, Path.cwd())


def _confirm_then_start(app: App, explorer, fmt: str, at: int | None, target: Path) -> None:
    """Write to ``target`` (a file, or a folder for the default name), after a confirmation
    when that file exists already."""
    path = target.expanduser()
    if path.is_dir():
        path = path / default_filename(explorer.current_run, fmt, at)
    if not path.exists():
        _start(app, explorer, fmt, at, path)
        return

    def answered(yes: bool | None) -> None:
        if yes:
            _start(app, explorer, fmt, at, path)
        else:
            app.notify(f"Export cancelled: {path} was kept.", title="Export", markup=False)

    app.push_screen(ConfirmScreen(f"Replace {path.name}?", f"{path} exists. The export replaces it whole.",
                                  yes_label="Replace", no_label="Keep it", danger=True), answered)


def _start(app: App, explorer, fmt: str, at: int | None, target: Path | None, *, download: bool = False) -> None:
    run = explorer.current_run
    detailed = run.path in explorer.workspace.detailed
    history = explorer.nav.history if detailed else None
    journal = explorer.journal
    workspace = explorer.workspace

    def work() -> None:
        from prose_tui.backends import open_run
        from prose_tui.history import history_of

        try:
            full = run if detailed else open_run(run.path, now=workspace.clock(), stale_after=workspace.stale_after)
            events = history if history is not None else history_of(full, journal=journal)
            index = at if at is not None and at < len(events.events) else None
            trace = trace_as_shown(full, index, journal) if fmt != "json" else None  # the marks the trace shows
            if download:
                text = shown(export_text(full, events, fmt, index, trace))  # a remote run: the host's paths
            else:
                path = write_export(full, events, fmt, index, target, trace)
                if mirror_of(full.path) is not None:  # a remote run: the host's paths, not the local copy's
                    path.write_text(shown(path.read_text(encoding="utf-8")), encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - any failure becomes a message, never a traceback
            app.call_from_thread(app.notify, f"Export failed: {exc}", title="Export", severity="error", markup=False)
            return
        when = f" as of event {index}" if index is not None else ""
        if download:
            name = default_filename(run, fmt, index)
            app.call_from_thread(app.deliver_text, io.StringIO(text), save_filename=name,
                                 mime_type=MIME_TYPES[fmt], encoding="utf-8")
            app.call_from_thread(app.notify, f"Sent {run.id}{when} to your browser as {name}",
                                 title=f"Exported {FORMAT_NAMES[fmt]}", markup=False, timeout=10)
            return
        app.call_from_thread(app.notify, f"Wrote {run.id}{when} to {path}", title=f"Exported {FORMAT_NAMES[fmt]}",
                             markup=False, timeout=10)

    app.run_worker(work, thread=True, group="export", description=f"export {run.id}")
