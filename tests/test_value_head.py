"""The value pane's header names a binding's place as the bindings tree groups it: a
contract's binding by its service (``service summarize``), another by its scope."""

from __future__ import annotations

from app_helpers import make_app, ready, wait_until
from conftest import FIXTURES

from prose_tui.tui.targets import binding_target
from prose_tui.tui.widgets.value_viewer import ValueViewer

CONTRACT_RUN = FIXTURES / "skill" / "mixed" / "runs" / "20260618-103045-9c8b7a"


async def test_a_service_binding_is_headed_by_its_service_not_root():
    app = make_app(CONTRACT_RUN)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.loaded_run is not None, what="the full read")
        run = app.explorer.current_run
        summary = next(b for b in run.bindings if b.service == "summarize")
        viewer = app.explorer.query_one(ValueViewer)
        viewer.show_target(binding_target(summary, run))
        await wait_until(pilot, lambda: viewer.target is not None and not viewer.reading, what="the binding read")
        head = str(viewer.query_one("#value-head").render())
        assert "output · service summarize" in head, head
        assert "root" not in head, head
