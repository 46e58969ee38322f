"""The run header above the trace: status (as of the cursor), id, program, format, then why
(or the cursor's moment), metrics and warnings."""

from __future__ import annotations

from typing import Self

from rich.text import Text
from textual.geometry import Region
from textual.widgets import Static

from prose_tui.model import Run
from prose_tui.model.run import program_name
from prose_tui.remote import shown
from prose_tui.tui.glyphs import STATUS_BADGE
from prose_tui.tui.widgets.repaint import show_text


def header_text(run: Run | None, view: Run | None, *, moment: str | None, compact: bool, banner: str | None) -> Text:
    """``view`` is ``run`` as of the cursor; ``moment`` its label when not live (``as of
    event 4 of 0–13 · 12:00:05``). Compact layouts leave the reason and the moment to the
    strip and the title."""
    head = Text(no_wrap=False)
    if run is None or view is None:
        return head
    badge, style = STATUS_BADGE[view.status]
    head.append(badge, style)
    head.append(f" {run.id}", "bold")
    head.append(f"  {program_name(run.program)}  {run.format.value}", "dim")
    if not compact:
        head.append(f"\n{moment}" if moment else f"\n{shown(view.status_reason)}", "bold" if moment else "italic")
    if run.metrics:
        head.append("\n" + " · ".join(f"{k} {v:,.4g}" for k, v in sorted(run.metrics.items())), "cyan")
    for warning in run.warnings[:2]:
        head.append(f"\n⚠ {shown(warning)}", "yellow")  # a remote run: the host's paths
    if banner:
        head.append(f"\n⚠ {banner}", "yellow")
    return head


class RunHeader(Static):
    """``show`` redraws only when the text changed, and lays the screen out only when the
    header needs more rows than it has shown for this run: a shorter text is padded with
    blank rows to the height the header already has (the run going from a long reason,
    ``interrupted``, to a short one, ``running``, on its first live change cost a layout of
    the whole screen, 50-100 ms), but never past the rows of the text it showed last (the
    height may still be an earlier text's, its layout not done yet). The height settles
    back when another run is shown. ``shown`` is the text on screen (without the padding).

    A new text of as many rows repaints only the rows that look different: a snapshot
    rewrite changes the reason line (``line N is EXECUTING``), not the badge line or the
    metrics, and every row repainted costs the frame (5 rows at 200x50 were 1.4 ms of it)."""

    shown: Text = Text()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._key: object = None  # the run whose rows are kept
        self._painted: Text = Text()  # ``shown`` with its padding
        self._painted_rows: tuple[int, int] = (0, 0)  # (width, rows) of ``_painted`` wrapped at it
        self._rows_only = False  # ``show`` is updating: a whole repaint may be the changed rows only

    def show(self, text: Text, *, key: object = None) -> None:
        """Show ``text`` for the run ``key`` (its path; None keeps no rows)."""
        painted = text
        counted = (0, 0)  # (width, rows) of ``painted``, when worked out here
        if key is not None and key == self._key and self.is_mounted and self.display and self.size and text.plain:
            width = self.content_region.width
            if width > 0:
                rows = len(text.wrap(self.app.console, width))
                if self._painted_rows[0] == width:
                    last = self._painted_rows[1]
                else:
                    last = len(self._painted.wrap(self.app.console, width)) if self._painted.plain else 0
                keep = min(self.size.height, last)  # the rows the header has now, kept
                if 0 < rows < keep:
                    painted = text.copy()
                    painted.append("\n" * (keep - rows))
                counted = (width, keep if 0 < rows < keep else rows)
        self._key = key
        self._rows_only = True
        try:
            if show_text(self, painted, shown=self._painted):
                self._painted, self._painted_rows = painted, counted
        finally:
            self._rows_only = False
        self.shown = text

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        if self._rows_only and repaint and not (regions or layout or recompose):
            rows = self._changed_rows()
            if rows is not None:
                if rows:
                    width = self.size.width
                    super().refresh(*(Region(0, y, width, 1) for y in rows))
                    self._dirty_regions.clear()  # the rows were rendered just now (``_changed_rows``)
                return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _changed_rows(self) -> list[int] | None:
        """The rows of the content that look different now (the new content is rendered
        here, as Textual would render it at the next paint), or ``None`` when unknown (not
        painted at this size yet, another row count, a Textual without this cache)."""
        cache = getattr(self, "_render_cache", None)
        size = self.size
        if (cache is None or not size or getattr(cache, "size", None) != size or self._dirty_regions
                or not hasattr(self, "_render_content") or not hasattr(self, "_layout_cache")):
            return None
        old = cache.lines
        self._layout_cache.clear()  # the new content's visual, as ``refresh`` would
        self._render_content()
        new = self._render_cache.lines
        if len(old) != len(new):
            return None
        return [y for y, (was, now) in enumerate(zip(old, new)) if was != now]
