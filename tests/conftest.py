"""Shared fixtures: where the real corpus lives, and a clean user state directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pg_fixtures import cluster, db, sources  # noqa: F401 (the PostgreSQL tests' fixtures)

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
CORPUS = Path(
    os.environ.get("PROSE_TUI_CORPUS", HERE.parent.parent / "shared" / "corpus" / "real")
).resolve()


def pytest_configure(config) -> None:
    from app_helpers import use_short_idle_window
    from hypothesis import settings

    use_short_idle_window()  # Textual's pilot: 5 ms idle windows instead of 20 ms (app_helpers)
    # The property tests try the same examples on every run (the suite's verdict does not
    # depend on the draw); PROSE_TUI_EXAMPLES=N searches afresh with N examples a test.
    settings.register_profile("suite", derandomize=True)
    settings.register_profile("search", derandomize=False)
    settings.load_profile("search" if os.environ.get("PROSE_TUI_EXAMPLES") else "suite")


def corpus_or_skip() -> Path:
    """The real-run corpus folder, or skip the test saying where it was looked for."""
    if not CORPUS.is_dir():
        pytest.skip(f"real corpus not found at {CORPUS} (set PROSE_TUI_CORPUS)")
    return CORPUS


@pytest.fixture
def corpus() -> Path:
    return corpus_or_skip()


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Keep journals, config and ~/.prose lookups out of the real home directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    return home
