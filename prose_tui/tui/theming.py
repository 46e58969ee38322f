"""State glyphs follow the Textual theme.

``glyphs`` keeps its styles as theme roles; here the app's current theme gives them colours
(``$success``, ``$warning``, ``$error``, ``$accent``, ``$primary``, ``$secondary`` from
``App.get_css_variables``), and the explorer's views that draw glyphs are redrawn. With
``NO_COLOR`` set Textual filters every colour out of the output whatever the theme, so
nothing here needs to know about it.
"""

from __future__ import annotations

from textual.app import App

from prose_tui.tui import glyphs


def theme_colors(app: App) -> dict[str, str]:
    """The current theme's colour (``#RRGGBB``) for each glyph role."""
    variables = app.get_css_variables()
    return {role: variables[role] for role in glyphs.ROLES if variables.get(role)}


def apply_app_theme(app: App) -> None:
    """Resolve the glyph tables for ``app``'s theme and redraw what shows them."""
    glyphs.apply_theme(theme_colors(app))
    from prose_tui.tui.screens.explorer import ExplorerScreen
    from prose_tui.tui.widgets.run_list import RunList
    from prose_tui.tui.widgets.timeline import Timeline
    from prose_tui.tui.widgets.trace_view import TraceView

    for screen in app.screen_stack:
        if not isinstance(screen, ExplorerScreen) or not screen.is_mounted:
            continue
        for run_list in screen.query(RunList):
            run_list.set_runs(run_list.runs, clock=screen.workspace.clock)
        for timeline in screen.query(Timeline):
            timeline.set_events(timeline.events, timeline.cursor, live=timeline.live)
        for trace in screen.query(TraceView):
            trace.notify_style_update()
            trace.refresh()
        if screen.query("#run-head"):
            screen.refresh_view()
