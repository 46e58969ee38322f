"""Command palette (ctrl+p): open any run by id or program, and every explorer action."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from prose_tui.model.run import program_name
from prose_tui.tui.served import is_read_only


class ExplorerCommands(Provider):
    """Runs of the workspace and the explorer's actions, fuzzy-matched."""

    def _explorer(self):
        from prose_tui.tui.screens.explorer import ExplorerScreen

        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, ExplorerScreen):
                return screen
        return None

    def _commands(self):
        explorer = self._explorer()
        if explorer is None:
            return
        yield "Toggle follow", explorer.action_toggle_follow, "Follow the executing statement, or stop following"
        yield "Search the current pane", explorer.action_search, "Like pressing /"
        yield "Rescan runs", explorer.action_rescan, "Look for runs again below the path"
        from prose_tui.tui.widgets.trace_view import TraceView
        from prose_tui.tui.widgets.value_viewer import ValueViewer

        yield "Jump to executing statement", explorer.query_one(TraceView).action_jump_executing, "In the trace"
        # The value pane's widget may be composed later (issue 33): toggled once it is there.
        yield ("Toggle raw / Markdown value",
               lambda: explorer.when_rest_composed(lambda: explorer.query_one(ValueViewer).action_toggle_raw()),
               "In the value viewer")
        for i, name in enumerate(("Runs", "Trace", "Call stack", "Bindings and agents", "Value", "History")):
            yield f"Go to {name} pane", partial(explorer.activate, i), f"Key {i + 1}"
        yield "Zoom the active pane", explorer.action_zoom, "Key z (again or Esc: back)"
        yield "Help: keys", self.app.action_help, "Every key binding"
        yield from self._share_commands(explorer)
        for run in explorer.workspace.sorted_runs():
            yield (f"Open run {run.id}", partial(self._open, run.path),
                   f"{program_name(run.program)} · {run.status.value} · {run.format.value}")
            for child in run.imports:
                handle = child.import_handle or child.id
                yield (f"Open import {handle} of {run.id}", partial(explorer.open_import, run.path, handle),
                       f"{program_name(child.program)} · {child.status.value} · import")

    def _share_commands(self, explorer):
        """Export and compare (issue 14)."""
        app = self.app
        export = getattr(app, "action_export", None)
        if export is None or explorer.current_run is None:
            return
        read_only = is_read_only(app)
        here = "as of the history cursor, " + ("as a download in your browser" if read_only else "into the current folder")
        yield "Export run as HTML", partial(export, "html"), f"One self-contained page, {here} (E)"
        yield "Export run as Markdown", partial(export, "md"), f"For an issue or a pull request, {here}"
        if not read_only:  # served read-only, nothing is written on the server: no path to type
            yield "Export run as HTML to…", partial(export, "html", True), "Type the file or folder to write"
            yield "Export run as Markdown to…", partial(export, "md", True), "Type the file or folder to write"
        yield "Compare with run…", partial(self._pick_other, explorer), "Pick the run to compare this one with"

    def _pick_other(self, explorer) -> None:
        current = explorer.current_run
        compare = getattr(self.app, "action_compare", None)
        if current is None or compare is None:
            return
        choices = [(f"{run.id}", partial(compare, run.path),
                    f"{program_name(run.program)} · {run.status.value}"
                    + (" · same program" if program_name(run.program) == program_name(current.program) else ""))
                   for run in explorer.workspace.sorted_runs() if run.path != current.path]
        if not choices:
            self.app.notify("No other run in this workspace to compare with.", severity="warning", markup=False)
            return
        self.app.search_commands(choices, placeholder=f"Compare {current.id} with…")

    def _open(self, path) -> None:
        explorer = self._explorer()
        if explorer is not None:
            from prose_tui.tui.widgets.run_list import RunList

            explorer.query_one(RunList).select_path(path)
            explorer.open_run_at(path)

    async def discover(self) -> Hits:
        for name, action, help_text in self._commands():
            yield DiscoveryHit(name, action, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, action, help_text in self._commands():
            score = max(matcher.match(name), matcher.match(help_text) * 0.8)
            if score > 0:
                yield Hit(score, matcher.highlight(name), action, help=help_text)


class OrderedCommands(Provider):
    """Every palette command through one provider, ours first: the explorer's (runs, panes,
    export), the habits' (pager, editor, copy), Mission Control's, then Textual's own
    (theme, keys, maximize, screenshot, quit).

    The palette lists the hits of an empty query in the order they arrive from its providers,
    which it runs side by side: as providers of their own, Textual's quick ones came first.
    Here they are asked one after the other."""

    def _parts(self) -> list[Provider]:
        from textual.system_commands import SystemCommandsProvider

        from prose_tui.tui.habits import HabitCommands
        from prose_tui.tui.screens.mission_control import MissionControlCommands

        return [cls(self.screen, self.match_style)
                for cls in (ExplorerCommands, HabitCommands, MissionControlCommands, SystemCommandsProvider)]

    async def discover(self) -> Hits:
        for part in self._parts():
            await part.startup()
            async for hit in part.discover():
                yield hit

    async def search(self, query: str) -> Hits:
        for part in self._parts():
            await part.startup()
            async for hit in part.search(query):
                yield hit
