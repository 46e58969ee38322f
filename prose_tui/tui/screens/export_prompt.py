"""Export from the explorer (issue 14): the run on screen, as of the history cursor, as one
HTML page or Markdown file (:mod:`prose_tui.history.exporting`), written off the UI thread;
a notification says where. ``ExportPrompt`` asks for a path first.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from prose_tui.history.exporting import default_filename, write_export

FORMAT_NAMES = {"html": "HTML", "md": "Markdown", "json": "JSON"}


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
    (``ask``: to a path the user types first), then notify the path written or the error."""
    explorer = _explorer(app)
    run = explorer.current_run if explorer is not None else None
    if explorer is None or run is None:
        app.notify("No run to export: choose one in the run list first.", severity="warning", markup=False)
        return
    at = explorer.nav.cursor
    if ask:
        def chosen(target: Path | None) -> None:
            if target is not None:
                _start(app, explorer, fmt, at, target)

        app.push_screen(ExportPrompt(fmt, Path.cwd() / default_filename(run, fmt, at)), chosen)
        return
    _start(app, explorer, fmt, at, None)


def _start(app: App, explorer, fmt: str, at: int | None, target: Path | None) -> None:
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
            path = write_export(full, events, fmt, index, target)
        except Exception as exc:  # noqa: BLE001 - any failure becomes a message, never a traceback
            app.call_from_thread(app.notify, f"Export failed: {exc}", title="Export", severity="error", markup=False)
            return
        when = f" as of event {index}" if index is not None else ""
        app.call_from_thread(app.notify, f"Wrote {run.id}{when} to {path}", title=f"Exported {FORMAT_NAMES[fmt]}",
                             markup=False, timeout=10)

    app.run_worker(work, thread=True, group="export", description=f"export {run.id}")
