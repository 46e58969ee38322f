"""What the explorer shows, decided without Textual (issue 31).

The explorer flows one way: a change (a ``prose_tui.model.Delta`` from the live worker, a
run read, a history key) goes to ``ExplorerModel``, which returns one ``ViewChange``
record of what changed for the views (``view_change``); the widgets in ``prose_tui.tui``
draw from that record. Modules, one job each:

* ``explorer_model``: the explorer's state (run shown, history cursor, follow policy) and
  the one place that decides what to repaint;
* ``view_change``: the record and its parts;
* ``navigator``: the history cursor (live, or frozen at one event);
* ``moment``: the moment under a frozen cursor (where the trace cursor and value pane go);
* ``program_trace``: an event-log run's program annotated from its log, failure marks;
* ``statement_clock``: where the time went, per statement;
* ``steps``: how long each step took (the history pane's durations).

An import-linter contract keeps this package free of Textual (``.importlinter``).
"""
