"""Which backend claims a path: nothing claims a path where nothing is (a run folder that
vanished, a mistyped path), and a database key (``postgres:/…``) is the PostgreSQL
backend's alone, whatever is or is not on disk."""

from __future__ import annotations

from pathlib import Path

from prose_tui.backends import registry
from prose_tui.backends.postgres.run import run_path
from prose_tui.history.sources import source_for


def test_a_path_where_nothing_is_is_not_claimed(tmp_path):
    gone = tmp_path / ".prose" / "runs" / "20260305-120000-abcdef"
    assert registry.backend_for(gone) is None
    assert source_for(gone) is None
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    assert registry.backend_for(tmp_path / "file.txt" / "below") is None  # under a file: nothing there either


def test_a_folder_is_still_claimed(tmp_path):
    run = tmp_path / ".prose" / "runs" / "20260305-120000-abcdef"
    run.mkdir(parents=True)
    (run / "state.md").write_text("# run:20260305-120000-abcdef x.prose\n1→ a ✓\n", encoding="utf-8")
    assert registry.backend_for(run).name == "filesystem"


def test_a_database_key_is_only_the_postgres_backends():
    key = run_path("openprose@localhost:5432/prose", "20260305-120000-abcdef")
    assert key.parts[0] == "postgres:"
    assert registry.backend_for(key) is None  # no database attached here: nobody reads it (was: the filesystem)
