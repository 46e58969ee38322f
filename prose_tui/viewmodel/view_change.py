"""The record the explorer's model hands its views: what one change changed for them.

``ExplorerModel.show`` (a run read, or a live change to it), ``apply`` (a live ``Delta``)
and ``repaint`` (a history move, a toggle) each return one ``ViewChange``; the screen's
painter (``tui.screens.explorer_panes.Panes.paint``) hands each widget its part. A part that
is ``None`` (or ``False``) is left as the widget shows it. Textual-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prose_tui.model import Binding, Event, Run, TraceLine, ValueWindow

__all__ = ["TraceRepaint", "Touch", "ValueChange", "ViewChange"]


@dataclass(frozen=True, slots=True)
class Touch:
    """What one change to the shown run touches: ``same`` run as before, ``live`` change
    (``changed`` files given), ``only_bindings`` when nothing but binding files changed;
    ``follow``: whether the trace follows the executing statement from now on (``None``:
    as it was, the user's ``f`` stands); ``failed``: the run is seen failed for the first
    time, so the cursor goes to its failure (``failure_line``, then its failure event)."""

    same: bool
    live: bool
    only_bindings: bool
    follow: bool | None = None
    failed: bool = False


@dataclass(frozen=True, slots=True)
class ValueChange:
    """What the value pane does after a change: ``show`` ``binding`` (``None``: nothing),
    ``reload`` the file it shows (``binding``: that file's new read, for its offsets), or
    ``keep`` what it shows. ``window``: the start of the value as the live worker read it
    with the change (the pane then reads no file), else ``None``."""

    action: Literal["show", "reload", "keep"]
    binding: Binding | None = None
    window: ValueWindow | None = None


@dataclass(frozen=True, slots=True)
class TraceRepaint:
    """What the trace widget does: show ``lines``, a list it does not hold yet (``new``), or
    repaint ``rows`` of the list it holds, which changed in place (indexes; ``None``: any
    may have). The model decides this in one place (``ExplorerModel.trace_repaint``)."""

    lines: list[TraceLine]
    new: bool
    rows: set[int] | None = None


@dataclass(frozen=True, slots=True)
class ViewChange:
    """What changed for the views.

    * ``run``: the run shown (``None``: none; the panes say why); ``view``: it as of the
      history cursor (the run itself when live), which every pane renders.
    * ``header_only``: a status tick (nothing on disk changed): the header, titles, strip
      and status line alone.
    * ``trace``: the trace's repaint (``None``: none); ``stack``: the call stack, nodes
      and constructs again (``False`` when only binding files changed).
    * ``events``/``position``: the history (timeline) and its cursor, as loaded; the
      history's length is ``len(events)``. ``history_later``: seconds after which the
      history is built off the UI thread (a journal replay or a reconstruction reads the
      disk; ``ExplorerModel.adopt_history`` takes it), ``None`` when it was loaded.
    * ``touch``: for a run shown or changed, the follow policy and a first failure (the
      trace cursor then goes to ``failure_cursor``, an index in the lines shown); ``value``: what the value pane does
      (``None``: nothing); ``full_read``: the run is the workspace's full read of its path.
    """

    run: Run | None
    view: Run | None = None
    header_only: bool = False
    trace: TraceRepaint | None = None
    stack: bool = False
    events: list[Event] | None = None
    position: int = -1
    history_later: float | None = None
    touch: Touch | None = None
    failure_cursor: int | None = None
    value: ValueChange | None = None
    full_read: bool = False
