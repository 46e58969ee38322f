"""The built-in demo: a simulated OpenProse VM writing a seed-format run (no Textual here)."""

from prose_tui.demo.simulator import (
    DemoStep,
    DemoVM,
    write_demo_project,
    write_history_runs,
)

__all__ = ["DemoStep", "DemoVM", "write_demo_project", "write_history_runs"]
