"""The write order of bindings, kept as the events grow (issue 33: live latency at 100,000 events).

Every live change and every history step asks which binding the run wrote last and in which
order it wrote them. Reading all 100,000 events for that took 160 ms per question, twice per
change, so the events are indexed once and the index grows with them. These tests hold the
index to the definition, event by event: a run growing as a VM appends, a tail parsed again
(rolled back), events prepended (SQLite's older rows read late), and history views as of a
cursor (prefixes of the same events).
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

from prose_tui.model import Binding, Event, EventKind, Run
from prose_tui.model.write_order import (
    _index_for,
    binding_of_event,
    binding_written_last,
    newest_binding,
    ordered_bindings,
    write_order,
)

RUN = Path("/runs/20260301-090000-w0rd3r")
NAMES = ["draft", "review", "parts", "linus", "summary"]


def _bindings() -> list[Binding]:
    """Root bindings, scoped ones (execution ids 1-3) and a contract service's two files."""
    out = [Binding(name=n, path=RUN / "bindings" / f"{n}.md") for n in NAMES[:3]]
    out += [Binding(name="parts", path=RUN / "bindings" / f"parts__{e}.md", execution_id=e) for e in (1, 2, 3)]
    out += [Binding(name=n, path=RUN / "bindings" / "linus" / f"{n}.md", service="linus") for n in ("notes", "verdict")]
    out.append(Binding(name="summary", path=RUN / "bindings" / "summary.md", exists=False))
    return out


def _event(rng: random.Random, seq: int) -> Event:
    kind = rng.choice([EventKind.STATEMENT_STARTED, EventKind.STATEMENT_COMPLETED, EventKind.STATEMENT_FAILED,
                       EventKind.BINDING_WRITTEN, EventKind.NOTE])
    name = rng.choice(NAMES)
    eid = rng.choice([None, None, 1, 2, 3])
    text = f"wrote bindings/{name}__{eid}.md" if kind is EventKind.BINDING_WRITTEN and eid else f"{seq}-> {name}"
    return Event(seq=seq, kind=kind, text=text, name=name, execution_id=eid)


def _defined(run: Run, first: bool) -> dict[int, int]:
    """The order by its definition: for each binding, the positions of every event that
    wrote it (a ``binding_written`` naming it; a statement end named like it in its execution
    id or none, or like its contract service), the earliest or latest; before namesakes and
    the trace fallback, which these runs do not reach (every binding name is written)."""
    placed: dict[int, int] = {}
    for i, b in enumerate(run.bindings):
        at = [n for n, e in enumerate(run.events)
              if (e.kind is EventKind.BINDING_WRITTEN and binding_of_event(e, run.bindings) is b)
              or (e.kind in (EventKind.STATEMENT_COMPLETED, EventKind.STATEMENT_FAILED) and e.name
                  and ((b.service == e.name) or (e.name == b.name and e.execution_id in (None, b.execution_id))))]
        if at:
            placed[i] = min(at) if first else max(at)
    return placed


def _fresh(run: Run, first: bool) -> dict[int, int]:
    """``write_order`` on a copy of every event: nothing the index kept can answer it."""
    copied = Run(id=run.id, path=run.path, bindings=run.bindings, events=[copy.copy(e) for e in run.events])
    return write_order(copied, first=first)


def _check(run: Run) -> None:
    for first in (False, True):
        got = write_order(run, first=first)
        assert got == _fresh(run, first=first)
        defined = _defined(run, first)
        assert {i: n for i, n in got.items() if i in defined} == defined


def test_a_growing_run_orders_its_bindings_as_if_read_whole_after_every_event():
    rng = random.Random(33)
    run = Run(id="w0rd3r", path=RUN, bindings=_bindings())
    for seq in range(250):
        run.events.append(_event(rng, seq))  # the same list, growing, as an event-log tail does
        _check(run)


def test_a_tail_parsed_again_and_events_read_late_give_the_order_of_the_new_events():
    rng = random.Random(35)
    run = Run(id="w0rd3r", path=RUN, bindings=_bindings(), events=[_event(rng, s) for s in range(200)])
    _check(run)
    for _round in range(30):
        cut = rng.randrange(1, len(run.events))
        del run.events[cut:]  # a provisional tail rolled back ...
        run.events.extend(_event(rng, s) for s in range(cut, cut + rng.randrange(1, 20)))  # ... and read again
        _check(run)
    run.events[:0] = [_event(rng, s) for s in range(10)]  # older rows read late (SQLite)
    _check(run)


def test_history_views_as_of_each_cursor_are_ordered_as_the_run_was_then():
    rng = random.Random(36)
    events = [_event(rng, s) for s in range(300)]
    live = Run(id="w0rd3r", path=RUN, bindings=_bindings(), events=events)
    write_order(live)  # the live run indexed first, as the explorer shows it
    for cursor in [*range(0, 300, 7), 299, 150, 3]:
        view = Run(id="w0rd3r", path=RUN, bindings=live.bindings, events=events[: cursor + 1])
        _check(view)
        copied = Run(id=view.id, path=RUN, bindings=view.bindings, events=[copy.copy(e) for e in view.events])
        assert ordered_bindings(view) == ordered_bindings(copied)


def test_a_live_change_costs_the_events_it_added_not_the_whole_run():
    rng = random.Random(37)
    run = Run(id="w0rd3r", path=RUN, bindings=_bindings(), events=[_event(rng, s) for s in range(5000)])
    newest_binding(run)
    index = _index_for(run.events)
    run.events.append(Event(seq=5000, kind=EventKind.STATEMENT_COMPLETED, text="5000-> review ✓", name="review"))
    assert newest_binding(run).name == "review"  # the statement just completed wrote it
    assert _index_for(run.events) is index and index.size == 5001  # grown by one, not read again
    view = Run(id="w0rd3r", path=RUN, bindings=run.bindings, events=run.events[:2500])
    write_order(view)
    assert _index_for(view.events) is index  # a step back in history reuses it too


def test_at_each_past_event_the_value_shown_is_the_binding_the_latest_write_up_to_it_names():
    rng = random.Random(38)
    bindings = _bindings()
    events = [_event(rng, s) for s in range(600)]
    for upto in [*range(0, 600, 13), 599]:
        named = [b for e in events[: upto + 1] if e.kind is EventKind.BINDING_WRITTEN
                 and (b := binding_of_event(e, bindings)) is not None]
        assert binding_written_last(events, bindings, upto) is (named[-1] if named else None)
    assert binding_written_last(events, [], 599) is None
