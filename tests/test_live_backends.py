"""Live SQLite and narration runs: a writer changes the database or transcript while the app is open."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from app_helpers import make_app, wait_until
from conftest import FIXTURES
from sqlite_fixture import build_sqlite_run

from prose_tui.tui.widgets.trace_view import TraceView


def _trace_texts(app) -> list[str]:
    return [t.text.strip() for t in app.explorer.query_one(TraceView).lines]


async def test_a_writer_process_adds_an_execution_row_and_the_trace_shows_it(tmp_path):
    run_dir = build_sqlite_run(tmp_path)
    app = make_app(tmp_path, watch=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        assert app.explorer.current_run.backend.value == "sqlite"
        assert "sqlite" in app.explorer.head_text.plain  # the run header names the format
        writer = (
            "import sqlite3, sys\n"
            "con = sqlite3.connect(sys.argv[1])\n"
            "con.execute(\"INSERT INTO execution (id, statement_index, statement_text, status, started_at) "
            "VALUES (99, 12, 'let verdict = session \\\"Judge the result\\\"', 'executing', '2026-01-16T14:45:00Z')\")\n"
            "con.commit()\n"
        )
        subprocess.run([sys.executable, "-c", writer, str(run_dir / "state.db")], check=True)
        await wait_until(pilot, lambda: any("Judge the result" in t for t in _trace_texts(app)), what="the new row in the trace")


async def test_an_appended_transcript_line_shows_in_the_trace(tmp_path):
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "narration" / "transcript.jsonl", transcript)
    app = make_app(transcript, watch=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the transcript to load")
        await wait_until(pilot, lambda: app.explorer.watcher_state.startswith("watching"), what="the watcher")
        assert app.explorer.current_run.backend.value == "narration"
        before = len(app.explorer.current_run.events)
        entry = {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "[Position] Statement 9: let closing = session \"Write the closing note\""}]}}
        with open(transcript, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        await wait_until(pilot, lambda: any("Write the closing note" in t for t in _trace_texts(app)), what="the appended statement")
        assert len(app.explorer.current_run.events) > before
