"""What terminal users expect of a TUI: open in the pager or editor, copy out, config, themes.

``HabitsApp`` is the base of ``ProseTUI``: its bindings (``o`` pager, ``O`` editor on a
read-only copy, ``ctrl+e`` the file itself after a confirmation, ``y`` copy menu) work on
every screen that does not bind those keys itself; its palette provider offers the same
actions by name. It applies a ``Config`` (theme, key overrides) on start and keeps the
state glyphs in the theme's colours.

"The selected thing" is what the value pane shows when the Data or Value pane is active
(a binding, memory, segment, table, section), else the current run's state file.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from prose_tui.tui import clipboard
from prose_tui.tui.config import Config
from prose_tui.tui.external import (
    NotReadable,
    editor_command,
    pager_command,
    read_only_copy,
    run_suspended,
    state_target,
    target_content,
    tool_env,
)
from prose_tui.tui.keys import keyed, keymap_clashes
from prose_tui.tui.served import refuse_if_read_only
from prose_tui.tui.targets import Target

if TYPE_CHECKING:  # pragma: no cover
    from prose_tui.tui.screens.explorer import ExplorerScreen

HABIT_BINDINGS = keyed([
    Binding("o", "open_pager", "Open in $PAGER", show=False),
    Binding("O", "open_editor", "Open a read-only copy in $EDITOR", show=False),
    Binding("ctrl+e", "edit_file", "Edit the file itself in $EDITOR (asks first)", show=False),
    Binding("y", "copy_menu", "Copy: value, trace line, failure report, run path", show=False),
])
HABITS_GROUP = "Open & copy (everywhere)"

COPY_CHOICES = {
    "value": "the selected value",
    "line": "the trace line under the cursor",
    "failure": "the failure report",
    "path": "the run's path",
}


def explorer_of(app: App) -> ExplorerScreen | None:
    from prose_tui.tui.screens.explorer import ExplorerScreen

    return next((s for s in reversed(app.screen_stack) if isinstance(s, ExplorerScreen)), None)


def selected_target(app: App) -> Target | None:
    """The value pane's target when the Data or Value pane is active, else the run's state file."""
    explorer = explorer_of(app)
    if explorer is None:
        return None
    from prose_tui.tui.screens.explorer import PANES

    target = explorer.value_target  # the value pane's, also before the pane is composed
    pane = PANES[explorer.active][1] if 0 <= explorer.active < len(PANES) else ""
    if target is not None and (pane in ("data-pane", "value-pane") or explorer.current_run is None):
        return target
    return state_target(explorer.current_run) if explorer.current_run is not None else target


def binding_namespaces(app_class: type[App]) -> list[tuple[str, list[Binding]]]:
    """The bindings Textual looks up together (the app, the explorer screen, each pane's
    widget, Mission Control), each with every binding its class inherits."""
    from prose_tui.tui.screens.explorer import ExplorerScreen
    from prose_tui.tui.screens.explorer_panes import pane_widget_classes
    from prose_tui.tui.screens.mission_control import MissionControlScreen

    out: list[tuple[str, list[Binding]]] = []
    classes: list[type] = [app_class, ExplorerScreen, *pane_widget_classes(), MissionControlScreen]
    for cls in classes:
        bindings = [b for base in reversed(cls.__mro__) for b in base.__dict__.get("BINDINGS", [])
                    if isinstance(b, Binding)]
        title = "Everywhere" if cls is app_class else str(getattr(cls, "HELP_GROUP", cls.__name__))
        out.append((title, bindings))
    return out


class HabitsApp(App[None]):
    """The pager, editor, clipboard, config and theme behaviour of the explorer app."""

    BINDINGS = HABIT_BINDINGS
    read_only = False
    """Served to a browser read-only (``tui.served``): no editor, no config writes."""

    def __init__(self, config: Config | None = None, **app_options: Any) -> None:
        """``config`` as read by ``tui.config``; ``app_options`` go to ``textual.app.App``."""
        super().__init__(**app_options)
        self.config = config if config is not None else Config()
        self._config_notes: list[str] = []
        if self.config.theme:
            if self.config.theme in self.available_themes:
                self.theme = self.config.theme
            else:
                self._config_notes.append(f"config theme: no theme named {self.config.theme!r}; "
                                          "ctrl+p \"Change theme\" lists them")

    def on_mount(self) -> None:
        from prose_tui.tui.theming import apply_app_theme

        apply_app_theme(self)
        if self.config.keys:
            self.set_keymap(dict(self.config.keys))
            self._config_notes += keymap_clashes(binding_namespaces(type(self)), dict(self.config.keys))
        for problem in [*self.config.problems, *self._config_notes]:
            self.notify(problem, title="Config file", severity="warning", timeout=12,
                        markup=False)

    def on_unmount(self) -> None:
        from prose_tui.tui import glyphs

        glyphs.apply_theme(None)  # plain colour names again for headless output in this process

    def watch_theme(self, theme: str) -> None:
        from prose_tui.tui.theming import apply_app_theme

        apply_app_theme(self)

    # -- pager and editor ---------------------------------------------------------------------
    def _content(self, *, limit: int | None = None):
        target = selected_target(self)
        if target is None:
            self.notify("Nothing selected: choose a run, a binding, memory or segment first", markup=False)
            return None
        try:
            return target_content(target, limit=limit)
        except NotReadable as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return None

    def action_open_pager(self) -> None:
        """Show the selected thing in ``$PAGER`` (the run's own file when it is one)."""
        content = self._content()
        if content is None:
            return
        argv = pager_command()
        if content.file is not None:
            run_suspended(self, [*argv, str(content.file)], env=tool_env(argv), what="pager")
            return
        with read_only_copy(content) as copy:
            run_suspended(self, [*argv, str(copy)], env=tool_env(argv), what="pager")

    def action_open_editor(self) -> None:
        """Open a read-only temporary copy of the selected thing in ``$VISUAL``/``$EDITOR``."""
        if refuse_if_read_only(self, "The editor"):
            return
        content = self._content()
        if content is None:
            return
        with read_only_copy(content) as copy:
            run_suspended(self, [*editor_command(), str(copy)], what="editor")

    def action_edit_file(self) -> None:
        """Open the run's file itself in the editor, after a confirmation."""
        if refuse_if_read_only(self, "The editor"):
            return
        content = self._content(limit=1)
        if content is None:
            return
        if content.file is None:
            self.notify(f"{content.name} is not a file of its own (a database row or narrated value): "
                        "O opens a read-only copy", severity="warning", markup=False)
            return
        from prose_tui.tui.screens.confirm import ConfirmScreen

        file = content.file
        explorer = explorer_of(self)
        run = explorer.current_run if explorer is not None else None
        live = run is not None and run.status.value == "running"
        body = ("Editing a live run's file can confuse the VM: it may read your change as its own state, "
                "or write over it. " + ("This run is RUNNING. " if live else "")
                + "O opens a read-only copy instead.\n\n" + str(file))

        def answered(yes: bool | None) -> None:
            if yes:
                run_suspended(self, [*editor_command(), str(file)], what="editor")

        self.push_screen(ConfirmScreen(f"Edit {file.name} itself?", body, yes_label="Edit the file",
                                       no_label="Cancel", danger=True), answered)

    def action_keep_theme(self) -> None:
        """Write the current theme to the config file (other lines and comments kept)."""
        if refuse_if_read_only(self, "Keeping the theme (it writes the config file)"):
            return
        from prose_tui.tui.config import write_setting

        try:
            path = write_setting("theme", self.theme)
        except (ValueError, OSError) as exc:
            self.notify(f"Theme not saved: {exc}", severity="error", markup=False)
            return
        self.notify(f'theme = "{self.theme}" written to {path}', title="Theme kept", markup=False)

    # -- clipboard ---------------------------------------------------------------------------------
    def action_copy_menu(self) -> None:
        from prose_tui.tui.screens.copy_menu import CopyMenu

        def chosen(what: str | None) -> None:
            if what:
                self.action_copy(what)

        self.push_screen(CopyMenu(COPY_CHOICES), chosen)

    def action_copy(self, what: str) -> None:
        """Copy ``what`` (value, line, failure, path) through OSC 52."""
        explorer = explorer_of(self)
        run = explorer.current_run if explorer is not None else None
        if what == "value":
            target = selected_target(self)
            content = self._content(limit=clipboard.CLIPBOARD_LIMIT)
            if content is not None and target is not None:
                label = f"{target.kind} {target.title}"
                if target.kind == "state" and run is not None:
                    label = f"{target.title} of run {run.id}"
                clipboard.copy_text(self, label, content.text, size=content.size, cut=content.cut)
            return
        if run is None or explorer is None:
            self.notify("No run is open", markup=False)
            return
        if what == "path":
            clipboard.copy_text(self, f"the path of run {run.id}", str(run.path))
        elif what == "line":
            from prose_tui.tui.widgets.trace_view import TraceView

            trace = explorer.query_one(TraceView)
            if not trace.lines:
                self.notify("The trace is empty", markup=False)
                return
            line = trace.lines[min(trace.cursor, len(trace.lines) - 1)]
            text = line.text.rstrip() + (f"  # {line.note}" if line.note else "")
            clipboard.copy_text(self, f"trace line {line.line}", text.strip())
        elif what == "failure":
            report = failure_report(explorer)
            if report is None:
                self.notify(f"Run {run.id} has no failure to report", markup=False)
                return
            clipboard.copy_text(self, f"the failure report of run {run.id}", report)


def failure_report(explorer: ExplorerScreen) -> str | None:
    """The failure under the history cursor, else the run's first failure, as Markdown."""
    from prose_tui.history import failure_context
    from prose_tui.tui.screens.history_keys import failure_markdown

    run = explorer.current_run
    nav = explorer.nav
    if run is None:
        return None
    ctx = nav.failure_here(run)
    if ctx is None and nav.history is not None:
        index = nav.history.first_failure()
        if index is not None:
            ctx = failure_context(run, nav.history, index)
    if ctx is None:
        return None
    return f"Run {run.id} ({run.path})\n\n" + failure_markdown(ctx)


class HabitCommands(Provider):
    """Palette commands: open in the pager or editor, copy each thing, config file path."""

    def _commands(self):
        app = self.app
        if not isinstance(app, HabitsApp):
            return
        yield "Open in pager", app.action_open_pager, "$PAGER (default less -R) · key o"
        yield "Open read-only copy in editor", app.action_open_editor, "$VISUAL / $EDITOR · key O"
        yield "Edit the file itself in editor", app.action_edit_file, "Asks first: can confuse a live VM · ctrl+e"
        yield (f"Keep the theme {app.theme}", app.action_keep_theme,
               "Write theme = \"" + app.theme + "\" to the config file, for the next start")
        for what, label in COPY_CHOICES.items():
            yield f"Copy {label.removeprefix('the ')}", partial(app.action_copy, what), "To the clipboard (OSC 52) · y"

    async def discover(self) -> Hits:
        for name, action, help_text in self._commands():
            yield DiscoveryHit(name, action, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, action, help_text in self._commands():
            score = max(matcher.match(name), matcher.match(help_text) * 0.8)
            if score > 0:
                yield Hit(score, matcher.highlight(name), action, help=help_text)
