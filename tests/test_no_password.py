"""No command ever prints or stores a database password, and a URL target means that database
alone (issue 29), against a real PostgreSQL server (tests/pg_server.py).

Every command that takes a run or a project is run with a password in its URL in three
cases: nothing listens on the port, the password is wrong, the password is right. Its
stdout, stderr, the files it wrote, the journal (the user state folder) and the config
folder (the whole isolated home, see conftest) are searched for the password, as written
and percent-encoded. ``record`` runs as a real second process, stopped with SIGTERM.
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from app_helpers import wait_until
from pg_server import VmWriter
from ports import PortHold

from prose_tui.backends.common.dburl import parse_target, redact
from prose_tui.backends.postgres import backend as postgres_backend
from prose_tui.cli.main import main
from prose_tui.tui.app import ProseTUI

HERE = Path(__file__).parent
FIXTURE_PROJECT = HERE / "fixtures" / "project"
RUN_A = "20260310-100000-db0a01"
RUN_B = "20260310-110000-db0b02"
# "@" and "/" must be percent-encoded in a URL: the password appears encoded in argv and
# decoded in what the driver sees; both forms are searched for.
PASSWORD = "S3cret@" + secrets.token_hex(6) + "/pw"
ENCODED = quote(PASSWORD, safe="")
NEEDLES = (PASSWORD, ENCODED, PASSWORD.split("@")[1])


def detach_all() -> None:
    for source in list(postgres_backend._SOURCES):
        postgres_backend.detach(source)


def leaks(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


def files_holding_the_password(*roots: Path) -> list[str]:
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found += [f"{path}: {n!r}" for n in NEEDLES if n.encode() in data]
    return found


@functools.cache
def silent_port() -> int:
    """A port of 127.0.0.1 where nothing listens, held for this test process (bound, never
    listening: ``ports.PortHold``) so no other test's server can start there meanwhile."""
    return PortHold().port


@pytest.fixture(scope="module")
def team_db(cluster):
    """A database with the VM's schema, two runs, and a SELECT-only role whose password
    holds characters a URL must encode. Yields (host:port, database name)."""
    from pg_server import VM_SCHEMA

    name = cluster.create_db("team_" + secrets.token_hex(3))
    with psycopg.connect(cluster.url(db=name), autocommit=True) as conn:
        conn.execute(VM_SCHEMA)
        conn.execute(f"CREATE ROLE viewer LOGIN PASSWORD '{PASSWORD}'")
        conn.execute("GRANT USAGE ON SCHEMA openprose TO viewer")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA openprose TO viewer")
    for run_id, status in ((RUN_A, "completed"), (RUN_B, "failed")):
        vm = VmWriter(cluster.url(db=name), run_id)
        vm.start()
        eid = vm.statement('session "write the report"')
        vm.finish(eid, "failed" if status == "failed" else "completed", "timeout" if status == "failed" else None)
        vm.bind("report", "the report text", execution_id=None)
        vm.end(status)
        vm.close()
    return f"127.0.0.1:{cluster.port}", name


def url_for(case: str, team_db) -> str:
    where, name = team_db
    if case == "down":
        where = f"127.0.0.1:{silent_port()}"  # nothing listens there
    password = ENCODED if case != "wrong" else quote("Wr0ng" + PASSWORD, safe="")
    return f"postgresql://viewer:{password}@{where}/{name}"


EXPECTED = {"down": "cannot connect to PostgreSQL", "wrong": "password authentication failed", "ok": RUN_A}


def commands(url: str, project: Path, out: Path) -> list[list[str]]:
    """Every command that takes a run or a project, with the URL in each place it may go."""
    return [
        ["runs", url],
        ["runs", url, "--json"],
        ["runs", str(project), "--postgres", url, "--json"],
        ["runs", "--postgres-env", "TEAM_DB_URL", "--json"],
        ["show", f"{url}#{RUN_A}"],
        ["show", f"{url}#{RUN_A}", "--json"],
        ["export", f"{url}#{RUN_A}", "-o", str(out / "report.html")],
        ["export", f"{url}#{RUN_A}", "--format", "md", "-o", "-"],
        ["export", f"{url}#{RUN_A}", "--format", "json", "-o", str(out)],
        ["diff", f"{url}#{RUN_A}", f"{url}#{RUN_B}"],
        ["diff", f"{url}#{RUN_A}", f"{url}#{RUN_B}", "--json"],
    ]


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """``prose-tui ARGV`` in this process: (exit status, stdout, stderr). The databases it
    attached are detached after (a one-shot command's process would end)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    finally:
        detach_all()
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", ["down", "wrong", "ok"])
def test_no_command_prints_or_stores_the_password(case, team_db, tmp_path, capsys, monkeypatch, _isolated_user_dirs):
    url = url_for(case, team_db)
    project = tmp_path / "project"
    shutil.copytree(FIXTURE_PROJECT, project)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    monkeypatch.setenv("TEAM_DB_URL", url)
    said: list[str] = []
    for argv in commands(url, project, out):
        code, stdout, stderr = run_cli(argv, capsys)
        said.append(stdout + stderr)
        shown = redact(" ".join(argv))
        assert not leaks(stdout + stderr), f"{shown} printed the password: {stdout}{stderr}"
        if case == "ok":
            assert code == 0, f"{shown}: {stderr}"
        else:  # runs PATH --postgres URL too: the database was asked for
            assert code == 1 and EXPECTED[case] in stderr, f"{shown}: {code} {stderr}"
    if case == "ok":
        assert RUN_A in said[0] and RUN_B in said[0] and "the report text" in said[7]
        assert (out / "report.html").is_file() and "write the report" in (out / "report.html").read_text()

    # The password in a .env found as the VM finds it; a URL without a run; usage errors
    # (argparse quotes argv); the agent command, which has no use for a URL.
    (project / ".env").write_text(f"OPENPROSE_POSTGRES_URL={url}\n", encoding="utf-8")
    others = [["runs", str(project)], ["show", url], ["agent", "status", url], ["show", f"{url}#{RUN_A}", "--at", url],
              ["export", f"{url}#{RUN_A}", "--format", url], [url, "--layout", url], ["runs", "--postgres", url + "x#1"]]
    for argv in others:
        code, stdout, stderr = run_cli(argv, capsys)
        assert not leaks(stdout + stderr), f"{redact(' '.join(argv))} printed the password: {stdout}{stderr}"
        assert code in (0, 1, 2) and "Traceback" not in stderr

    # record: a real process, stopped as a user stops it.
    for argv in (["record", url], ["record", str(project), "--postgres", url]):
        code, stdout, stderr = record_process(argv, _isolated_user_dirs, ready=case == "ok")
        assert not leaks(stdout + stderr), f"{redact(' '.join(argv))} printed the password: {stdout}{stderr}"
        if case == "ok":
            assert code == 0 and "following 2 runs in PostgreSQL" in stdout and stdout.rstrip().endswith("database run changes"), stdout + stderr
        else:
            assert code == 1 and EXPECTED[case] in stderr, stderr

    # The explorer itself, headless: its screen and the status line's words.
    screen, states = explore(url, monkeypatch)
    assert not leaks(screen) and not leaks(" ".join(states)), states
    if case == "ok":
        assert sorted(explore.runs) == [RUN_A, RUN_B] and "write the report" in screen  # type: ignore[attr-defined]
    else:
        assert any(EXPECTED[case] in s for s in states), states

    # Nothing in the files written, the journal (user state folder) or the config folder.
    (project / ".env").unlink()  # the test's own
    assert files_holding_the_password(out, project, _isolated_user_dirs) == []


def record_process(argv: list[str], home: Path, *, ready: bool) -> tuple[int, str, str]:
    """``prose-tui ARGV`` as its own process; once it says it is following (``ready``),
    SIGTERM. Returns (exit status, stdout, stderr)."""
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state"),
           "XDG_CONFIG_HOME": str(home / ".config"), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "prose_tui.cli.main", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(60, proc.kill)  # a hung recorder fails the test instead of the run
    watchdog.start()
    try:
        first = ""
        if ready:
            first = proc.stdout.readline()  # type: ignore[union-attr]
            if "following" in first:
                proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, first + out, err


def explore(url: str, monkeypatch, *, more: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """``prose-tui URL`` (the explorer's own entry point), run headless until its first read is
    done and the database answered or failed: the screen's text and the status line's words."""
    result: dict[str, object] = {}

    async def drive(app: ProseTUI) -> None:
        async with app.run_test(size=(200, 50)) as pilot:
            def read() -> bool:  # runs listed, or the run header says there are none
                explorer = app.explorer
                return explorer.first_read_done or "No runs found" in str(explorer.query_one("#run-head").render())

            await wait_until(pilot, lambda: read() and not any(s.startswith("not connected") for s in app.workspace.source_states()),
                             what="the first read and an answer from the database", turns=3000)
            await pilot.pause()
            svg = app.export_screenshot()
            result["screen"] = html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ") + svg
            result["states"] = app.workspace.source_states()
            result["runs"] = [r.id for r in app.workspace.sorted_runs()]
            if app.initial_run is not None:
                await wait_until(pilot, lambda: app.explorer.loaded_run == app.initial_run, what="the run named opened",
                                 turns=3000)
            shown = app.explorer.current_run
            result["shown"] = shown.id if shown is not None else None

    def run(self: ProseTUI, *args, **kwargs) -> None:
        asyncio.run(drive(self))

    monkeypatch.setattr(ProseTUI, "run", run)
    try:
        assert main([url, "--no-watch", *more]) == 0
    finally:
        detach_all()
    explore.runs = result["runs"]  # type: ignore[attr-defined]
    explore.shown = result["shown"]  # type: ignore[attr-defined]
    return str(result["screen"]), list(result["states"])  # type: ignore[call-overload]


def test_a_url_target_means_that_database_alone(team_db, tmp_path, capsys, monkeypatch):
    """``runs URL`` (and the explorer given a URL) inside a folder full of runs lists the
    database's runs only; ``runs PATH --postgres URL`` lists both."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURE_PROJECT, project)
    on_disk = {row["id"] for row in json.loads(run_cli(["runs", str(project), "--json", "--no-postgres"], capsys)[1])}
    assert on_disk and not on_disk & {RUN_A, RUN_B}
    monkeypatch.chdir(project)
    # A .env that names another database is not consulted either: the URL is the target.
    (project / ".env").write_text("OPENPROSE_POSTGRES_URL=postgresql://nobody:x@127.0.0.1:1/elsewhere\n")
    url = url_for("ok", team_db)
    code, stdout, stderr = run_cli(["runs", url, "--json"], capsys)
    assert code == 0, stderr
    assert [row["id"] for row in json.loads(stdout)] == [RUN_B, RUN_A]  # newest first, nothing from disk
    explore(url, monkeypatch)
    assert sorted(explore.runs) == [RUN_A, RUN_B]  # type: ignore[attr-defined]
    explore(f"{url}#{RUN_A}", monkeypatch)  # URL#RUN_ID: that run on screen, not the newest
    assert explore.shown == RUN_A  # type: ignore[attr-defined]
    code, stdout, stderr = run_cli(["runs", ".", "--postgres", url, "--json"], capsys)
    assert code == 0, stderr
    assert {row["id"] for row in json.loads(stdout)} == on_disk | {RUN_A, RUN_B}
    # --postgres-env VAR: the URL read from the environment, never on the command line.
    monkeypatch.setenv("TEAM_DB_URL", url)
    code, stdout, stderr = run_cli(["runs", "--postgres-env", "TEAM_DB_URL", "--json"], capsys)
    assert code == 0 and [row["id"] for row in json.loads(stdout)] == [RUN_B, RUN_A], stderr


def test_redact_takes_every_form_of_the_secret_out():
    url = f"postgresql://viewer:{ENCODED}@db.example:5433/team"
    texts = [str(Path(url + "#run")), f"invalid dsn: '{url}?password={ENCODED}'", f"host=db password='{PASSWORD}' user=v",
             f"FATAL: {url} {PASSWORD}"]
    for text in texts:
        assert not leaks(redact(text, url)), text
    for text in texts[:3]:  # without being told the URL: its user:password@ part and password=
        assert not leaks(redact(text)), text
    assert redact(f"at {url}: down", url) == "at team@db.example:5433: down"
    assert str(parse_target(url + "#r1")) == "team@db.example:5433#r1" and not leaks(repr(parse_target(url)))
    assert redact("postgres:/team@db.example:5433/20260301-r1") == "postgres:/team@db.example:5433/20260301-r1"


def test_an_uncaught_exception_is_printed_without_the_password():
    """The console entry point's hooks: a bug's traceback (main thread or another) quotes the
    exception text, which may hold a URL."""
    url = f"postgresql://viewer:{ENCODED}@db.example/team"
    code = ("import sys, threading; from prose_tui.cli.targets import install_redacting_excepthooks as i; i(); "
            f"t = threading.Thread(target=lambda: {{}}[{url!r}]); t.start(); t.join(); "
            f"raise OSError({url!r})")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 1 and proc.stderr.count("postgresql://***@db.example/team") == 2, proc.stderr
    assert not leaks(proc.stderr)


def test_record_url_prints_runs_as_they_appear_and_end(db, sources):
    """``record URL``'s follower: a run the VM starts, then ends, and one it deletes, each one
    line (the database keeps the history itself; nothing is journaled)."""
    from prose_tui.live.record import follow_sources

    source = sources(db, poll_interval=0.05)
    lines: list[str] = []
    seen = threading.Condition()
    ready, stop = threading.Event(), threading.Event()

    def on_line(line: str) -> None:
        with seen:
            lines.append(line)
            seen.notify_all()

    def wait_for_line(text: str) -> None:
        with seen:
            assert seen.wait_for(lambda: any(text in line for line in lines), timeout=60), lines

    worker = threading.Thread(target=follow_sources, args=([source],), kwargs={"stop": stop, "on_line": on_line,
                                                                                "on_watching": ready.set})
    worker.start()
    try:
        assert ready.wait(60)
        vm = VmWriter(db, RUN_A)
        vm.start()
        wait_for_line(f"{RUN_A}: new run (running)")
        vm.end("failed")
        wait_for_line(f"{RUN_A}: running → failed")
        vm.conn.execute("DELETE FROM openprose.run WHERE id = %s", (RUN_A,))
        vm.close()
        wait_for_line(f"{RUN_A}: deleted from {source.label}")
    finally:
        stop.set()
        worker.join(60)
    assert not worker.is_alive()


def test_the_project_env_is_shown_without_its_secrets(tmp_path, capsys):
    """``.prose/.env`` (seeds/filesystem.md) is shown beside a run and reaches ``show --json``
    and every export, which users share: a project keeps its database URL and API keys there."""
    from test_containment import RUN_ID, outputs, snapshot_run

    run = snapshot_run(tmp_path)
    (tmp_path / "project" / ".prose" / ".env").write_text(
        "OPENPROSE_TELEMETRY=enabled\n"
        f"OPENPROSE_POSTGRES_URL=postgresql://viewer:{ENCODED}@db.example/team\n"
        "ANTHROPIC_API_KEY=sk-ant-0123456789abcdef\n"
        f"NOTE=reach postgresql://viewer:{ENCODED}@db.example/team\n", encoding="utf-8")
    shared = outputs(run, tmp_path, capsys)  # the three exports and show --json
    assert RUN_ID in shared["show"]
    for name, text in shared.items():
        assert not leaks(text) and "sk-ant-0123456789abcdef" not in text, f"{name} shows a secret of .env"
    assert "OPENPROSE_TELEMETRY=enabled" in shared["show"], "the harmless .env values are no longer shown"
    assert "ANTHROPIC_API_KEY=***" in shared["show"]
