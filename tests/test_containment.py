"""A run is other people's text: nothing outside the run is read on its say-so (issue 29).

Each case builds, in ``tmp_path``, a run as a VM following the specs would write it
(seeds/filesystem.md snapshot runs with ``bindings/``, ``agents/*/memory.md`` and
segments, ``imports/``; an openprose-0.15 skill run's ``world-model/`` and ``receipts/``;
a Reactor state dir; an SQLite run's attachment), plus a secret file *beside* the run,
which the run points at by symlink, by ``../`` and by absolute path. Whatever the view or
export (``export --format html|md|json``, ``show --json``, the explorer's value viewer),
the secret never appears and the note "outside the run: not read" does. A symlink that
stays inside the run still reads.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from app_helpers import make_app, ready, wait_until
from conftest import FIXTURES

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun, check_open, inside, run_root
from prose_tui.backends.common.text import open_regular, read_window
from prose_tui.cli.main import main
from prose_tui.tui.widgets.binding_tree import BindingTree
from prose_tui.tui.widgets.value_viewer import ValueViewer

RUN_ID = "20260301-100000-c0ffee"
SECRET = "TOPSECRET-7f3a9c"  # the content of files outside the run: must reach no output
SECRET_IMPORT = "TOPSECRET-IMPORT-41d2"
INSIDE_VALUE = "a value that stays inside the run"


# -- building runs ----------------------------------------------------------------------------------
def secret_file(tmp_path: Path, name: str = "secret.txt", text: str = SECRET) -> Path:
    path = tmp_path / "home" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{text}\n", encoding="utf-8")
    return path


def binding_md(name: str, value: str) -> str:
    return f"# {name}\n\nkind: let\n\nsource:\n```prose\nlet {name} = session \"x\"\n```\n\n---\n\n{value}\n"


def snapshot_run(tmp_path: Path) -> Path:
    """``project/.prose/runs/{RUN_ID}/`` (seeds/filesystem.md, generation 1) whose bindings,
    agent memory, segment, import and program point outside it, beside ones that do not."""
    secret = secret_file(tmp_path)
    run = tmp_path / "project" / ".prose" / "runs" / RUN_ID
    (run / "bindings").mkdir(parents=True)
    (run / "bindings" / "kept.md").write_text(binding_md("kept", INSIDE_VALUE), encoding="utf-8")
    (run / "bindings" / "alias.md").symlink_to("kept.md")  # a symlink inside the run: fine
    (run / "bindings" / "linked.md").symlink_to(secret)  # absolute symlink out
    depth = len(run.relative_to(tmp_path).parts)
    (run / "bindings" / "climb.md").symlink_to(Path(*[".."] * (depth + 1), "home", "secret.txt"))  # ../ chain
    (tmp_path / "home" / "hop.md").symlink_to(secret)
    (run / "bindings" / "chain.md").symlink_to(tmp_path / "home" / "hop.md")  # a chain of symlinks
    agent = run / "agents" / "captain"
    agent.mkdir(parents=True)
    (agent / "memory.md").symlink_to(secret)
    (agent / "captain-001.md").symlink_to(secret)
    (agent / "captain-002.md").write_text("timestamp: 2026-03-01T10:02:00Z\nprompt: inside\n\nsegment body\n")
    other = tmp_path / "elsewhere" / "acme"
    (other / "bindings").mkdir(parents=True)
    (other / "bindings" / "x.md").write_text(binding_md("x", SECRET_IMPORT), encoding="utf-8")
    (other / "state.md").write_text(f"# Execution State\n\nrun: {SECRET_IMPORT}\n", encoding="utf-8")
    (run / "imports").mkdir()
    (run / "imports" / "acme").symlink_to(other, target_is_directory=True)
    (run / "program.prose").symlink_to(secret)
    rows = [("kept", "bindings/kept.md"), ("alias", "bindings/alias.md"), ("linked", "bindings/linked.md"),
            ("climb", "bindings/climb.md"), ("chain", "bindings/chain.md"),
            ("dotdot", "../../../../home/secret.txt"), ("absolute", str(secret))]
    index = "\n".join(f"| {name} | let | {path} |" for name, path in rows)
    (run / "state.md").write_text(
        "# Execution State\n\n"
        f"run: {RUN_ID}\nprogram: demo.prose\nstarted: 2026-03-01T10:00:00Z\nupdated: 2026-03-01T10:07:00Z\n\n"
        "## Execution Trace\n\n```prose\n"
        'let kept = session "k"  # --> bindings/kept.md (complete)\n'
        'let linked = session "l"  # --> bindings/linked.md (complete)\n'
        'session "z"  # <-- EXECUTING\n'
        "```\n\n## Index\n\n### Bindings\n\n| Name | Kind | Path |\n|---|---|---|\n" + index + "\n\n"
        "### Agents\n\n| Name | Scope | Path |\n|---|---|---|\n| captain | execution | agents/captain/ |\n\n"
        "## Call Stack\n\n(empty)\n", encoding="utf-8")
    return run


def outputs(run: Path, tmp_path: Path, capsys) -> dict[str, str]:
    """What a user shares or reads of ``run``: the three exports and ``show --json``."""
    out: dict[str, str] = {}
    for fmt in ("html", "md", "json"):
        target = tmp_path / f"report.{fmt}"
        assert main(["export", str(run), "--format", fmt, "-o", str(target)]) == 0
        out[fmt] = target.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["show", "--json", str(run)]) == 0
    out["show"] = capsys.readouterr().out
    return out


def assert_contained(out: dict[str, str], *secrets: str) -> None:
    for name, text in out.items():
        for secret in secrets or (SECRET,):
            assert secret not in text, f"{name} holds the content of a file outside the run"
        assert OUTSIDE_RUN in text, f"{name} does not say a file is outside the run"


# -- the check itself ---------------------------------------------------------------------------------
def test_inside_follows_dotdot_absolute_paths_symlink_chains_and_symlinked_folders(tmp_path):
    secret = secret_file(tmp_path)
    run = tmp_path / "run"
    (run / "bindings").mkdir(parents=True)
    (run / "bindings" / "a.md").write_text("a")
    (run / "bindings" / "in.md").symlink_to("a.md")
    (run / "bindings" / "out.md").symlink_to(secret)
    (run / "hop").symlink_to(run / "bindings" / "out.md")
    (run / "dir").symlink_to(tmp_path / "home", target_is_directory=True)
    (run / "loop").symlink_to(run / "loop")
    root = run_root(run)
    assert inside(run / "bindings" / "a.md", root) and inside(run / "bindings" / "in.md", root)
    assert inside(run / "bindings" / "not-yet.md", root)  # a file still to come: nothing to follow
    assert not inside(run / "bindings" / "out.md", root)
    assert not inside(run / "hop", root)  # a chain whose last link leaves
    assert not inside(run / "dir" / "secret.txt", root)  # a symlinked folder in between
    assert not inside(run / "dir" / "missing.md", root)
    assert not inside(run / "bindings" / ".." / ".." / "home" / "secret.txt", root)
    assert not inside(secret, root)
    assert not inside(run / "loop", root)
    # A run reached through a symlinked folder (/tmp -> /private/tmp, a linked project) is inside itself.
    (tmp_path / "link").symlink_to(run, target_is_directory=True)
    via = run_root(tmp_path / "link")
    assert inside(tmp_path / "link" / "bindings" / "in.md", via)
    assert not inside(tmp_path / "link" / "bindings" / "out.md", via)


def test_open_regular_refuses_a_file_outside_and_names_the_run_s_path_not_the_target(tmp_path):
    secret = secret_file(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "linked.md").symlink_to(secret)
    with pytest.raises(OutsideRun) as caught:
        read_window(run / "linked.md", root=run_root(run))
    assert caught.value.strerror == OUTSIDE_RUN
    assert str(secret) not in str(caught.value) and caught.value.filename == str(run / "linked.md")
    assert read_window(run / "linked.md")[0].startswith(SECRET)  # the user's own file, no root: read


def test_the_opened_file_is_checked_again_so_a_swapped_symlink_is_caught(tmp_path):
    secret = secret_file(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    fd = os.open(secret, os.O_RDONLY)  # as if the link changed between the check and open()
    try:
        with pytest.raises(OutsideRun):
            check_open(fd, run / "value.md", run_root(run))
    finally:
        os.close(fd)
    (run / "value.md").write_text("ok")
    with open_regular(run / "value.md", root=run_root(run)) as fh:
        assert fh.read() == b"ok"


# -- filesystem runs: exports and show --json --------------------------------------------------------
def test_exports_and_show_json_never_hold_a_file_outside_the_run(tmp_path, capsys):
    run = snapshot_run(tmp_path)
    out = outputs(run, tmp_path, capsys)
    assert_contained(out, SECRET, SECRET_IMPORT)
    for name in ("html", "md"):  # (the json export carries no values: show --json plus the history)
        assert INSIDE_VALUE in out[name]  # kept.md and the alias that links to it inside the run
    shown = json.loads(out["show"])
    by_name = {b["name"]: b for b in shown["bindings"]}
    for name in ("linked", "climb", "chain", "dotdot", "absolute"):
        assert by_name[name]["outside"] is True and by_name[name]["warning"] == OUTSIDE_RUN, name
        assert by_name[name]["bytes"] == 0, name  # not even the size of the target
    assert "outside" not in by_name["alias"] and by_name["alias"]["bytes"] > 0
    warnings = shown["warnings"]
    for rel in ("bindings/linked.md", "agents/captain/memory.md", "agents/captain/captain-001.md", "imports/acme",
                "program.prose"):
        assert f"{rel}: {OUTSIDE_RUN}" in warnings, rel
    (acme,) = shown["imports"]
    assert acme["status_reason"] == OUTSIDE_RUN
    md = out["md"]
    assert md.count(f"warning: `{OUTSIDE_RUN}`") >= 4  # each outside binding's value, and the memory


def test_a_run_reached_through_a_symlinked_folder_reads_its_own_files(tmp_path, capsys):
    run = snapshot_run(tmp_path)
    link = tmp_path / "linked-project"
    link.symlink_to(tmp_path / "project", target_is_directory=True)
    out = outputs(link / ".prose" / "runs" / RUN_ID, tmp_path, capsys)
    assert_contained(out, SECRET, SECRET_IMPORT)
    assert INSIDE_VALUE in out["md"] and "segment body" not in out["md"]  # (segments are listed, not exported)
    assert run.is_dir()


def test_an_agent_named_dotdot_reads_no_memory_outside_its_scope(tmp_path, capsys, monkeypatch):
    """A project- or user-scope agent is found by the name the run gives it: ``..`` or ``a/b``
    names no folder (else ``~/.prose/agents/..`` would read ``~/.prose/memory.md``)."""
    home = tmp_path / "userhome"
    (home / ".prose").mkdir(parents=True)
    (home / ".prose" / "memory.md").write_text(SECRET)
    (home / ".prose" / "agents").mkdir()
    monkeypatch.setenv("HOME", str(home))
    run = tmp_path / "project" / ".prose" / "runs" / RUN_ID
    run.mkdir(parents=True)
    (run / "state.md").write_text(
        f"# Execution State\n\nrun: {RUN_ID}\n\n## Execution Trace\n\n```prose\nsession \"z\"  # <-- EXECUTING\n```\n\n"
        "## Index\n\n### Agents\n\n| Name | Scope | Path |\n|---|---|---|\n| .. | user | x |\n", encoding="utf-8")
    out = outputs(run, tmp_path, capsys)
    for name, text in out.items():
        assert SECRET not in text, name


def test_a_binding_that_arrives_as_a_link_out_while_watched_is_not_read(tmp_path):
    """The live path: a binding file written (here: linked) after the run was read is read
    again by the backend's ``apply`` with the run's root, and its value is not prefetched."""
    from prose_tui.backends.filesystem.backend import FilesystemBackend

    run_dir = snapshot_run(tmp_path)
    backend = FilesystemBackend()
    run = backend.open(run_dir)
    late = run_dir / "bindings" / "late.md"
    late.symlink_to(tmp_path / "home" / "secret.txt")
    (run_dir / "bindings" / "fresh.md").write_text(binding_md("fresh", INSIDE_VALUE), encoding="utf-8")
    delta = backend.apply(run, {late, run_dir / "bindings" / "fresh.md"})
    by_path = {b.path: b for b in delta.run.bindings}
    assert by_path[late].outside and by_path[late].warning == OUTSIDE_RUN
    assert late not in delta.values and INSIDE_VALUE in delta.values[run_dir / "bindings" / "fresh.md"].text
    assert f"bindings/late.md: {OUTSIDE_RUN}" in delta.run.warnings


def test_the_journal_keeps_nothing_of_a_state_file_or_binding_outside_the_run(tmp_path):
    """``record`` keeps each revision of ``state.md`` and the size of each binding file in the
    user's state folder: a state.md or binding that links out is neither read nor measured."""
    from datetime import datetime, timezone

    from prose_tui.history import Journal

    run_dir = snapshot_run(tmp_path)
    state = tmp_path / "home" / "state.md"
    state.write_text((run_dir / "state.md").read_text().replace("demo.prose", SECRET))
    (run_dir / "state.md").unlink()
    (run_dir / "state.md").symlink_to(state)
    journal = Journal(tmp_path / "journal")
    journal.record(run_dir, set(), datetime(2026, 3, 1, 10, 8, tzinfo=timezone.utc))
    kept = [p for p in (tmp_path / "journal").rglob("*") if p.is_file()]
    assert kept  # the run's own bindings were recorded
    for path in kept:
        assert SECRET.encode() not in path.read_bytes(), path.name
    index = "".join(p.read_text() for p in kept if p.name == "index.jsonl")
    assert "bindings/kept.md" in index and "bindings/linked.md" not in index  # not even its size


# -- 0.15 skill runs: world model and receipts ------------------------------------------------------------
def test_world_model_and_receipts_outside_a_skill_run_are_not_read(tmp_path, capsys):
    src = FIXTURES / "skill" / "completed" / "runs" / "20260702-091500-a1b2c3"
    run = tmp_path / "runs" / src.name
    shutil.copytree(src, run)
    secret = secret_file(tmp_path)
    (run / "world-model" / "caller" / "question.md").unlink()
    (run / "world-model" / "caller" / "question.md").symlink_to(secret)
    ledger = tmp_path / "home" / "critic.jsonl"
    line = json.loads((run / "receipts" / "critic.jsonl").read_text().splitlines()[0])
    ledger.write_text(json.dumps({**line, "content_hash": f"sha256:{SECRET}"}) + "\n")
    (run / "receipts" / "critic.jsonl").unlink()
    (run / "receipts" / "critic.jsonl").symlink_to(ledger)
    out = outputs(run, tmp_path, capsys)
    assert_contained(out)
    shown = json.loads(out["show"])
    assert f"receipts/critic.jsonl: {OUTSIDE_RUN}" in shown["warnings"]
    assert any(b["name"] == "question" and b.get("outside") for b in shown["bindings"])
    assert any(r["node"] == "researcher" for r in shown["receipts"])  # the receipts inside still read


# -- Reactor state dirs ------------------------------------------------------------------------------------
def test_a_reactor_version_file_linking_out_of_the_state_dir_is_not_read(tmp_path, capsys):
    project = tmp_path / "newsroom"
    shutil.copytree(FIXTURES / "reactor" / "newsroom", project)
    state = project / "state"
    version = next((state / "world-models").glob("*/versions/*.bin"))
    secret = tmp_path / "home" / "frame.bin"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(version.read_bytes().replace(b"\n", f"\n{SECRET}\n".encode(), 1))
    version.unlink()
    version.symlink_to(secret)
    out = outputs(state, tmp_path, capsys)
    assert_contained(out)
    assert SECRET.encode().hex() not in "".join(out.values()).replace(" ", "")  # nor as a hex dump
    assert any(w.endswith(OUTSIDE_RUN) for w in json.loads(out["show"])["warnings"])


def test_a_reactor_ledger_linking_out_of_the_state_dir_is_not_read(tmp_path, capsys):
    project = tmp_path / "newsroom"
    shutil.copytree(FIXTURES / "reactor" / "newsroom", project)
    ledger = project / "state" / "receipts.json"
    items = json.loads(ledger.read_text())
    items[0]["content_hash"] = f"sha256:{SECRET}"
    outside = tmp_path / "home" / "receipts.json"
    outside.parent.mkdir(parents=True)
    outside.write_text(json.dumps(items))
    ledger.unlink()
    ledger.symlink_to(outside)
    capsys.readouterr()
    assert main(["show", "--json", str(project / "state")]) == 0
    text = capsys.readouterr().out
    assert SECRET not in text and OUTSIDE_RUN in text


# -- SQLite attachments ------------------------------------------------------------------------------------
def test_an_sqlite_attachment_path_outside_the_run_is_not_read(tmp_path, capsys):
    from sqlite_fixture import build_sqlite_run

    run = build_sqlite_run(tmp_path, failed=True)
    secret = secret_file(tmp_path)
    with sqlite3.connect(run / "state.db") as db:
        db.execute("UPDATE bindings SET attachment_path = ? WHERE name = 'full_report'", (str(secret),))
    db.close()
    out = outputs(run, tmp_path, capsys)
    for name, text in out.items():
        assert SECRET not in text, name
    for name in ("html", "md"):  # the value: the stored summary, then the note
        assert "Full analysis report (847KB)" in out[name] and OUTSIDE_RUN in out[name], name


# -- the explorer ---------------------------------------------------------------------------------------
async def test_the_value_viewer_says_outside_the_run_and_never_shows_the_file(tmp_path):
    run = snapshot_run(tmp_path)
    app = make_app(run)
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot)
        explorer = app.explorer
        viewer = explorer.query_one(ValueViewer)

        def warning() -> str:
            return str(viewer.query_one("#value-warning").render())

        async def show(path: Path) -> None:
            await wait_until(pilot, lambda: explorer.query_one(BindingTree).select_binding_path(path),
                             what=f"{path.name} in the tree")
            await wait_until(pilot, lambda: viewer.target is not None and viewer.target.path == path
                             and not viewer.reading, what=f"{path.name} read into the viewer")

        for name in ("linked", "climb", "chain"):
            await show(run / "bindings" / f"{name}.md")
            await wait_until(pilot, lambda: OUTSIDE_RUN in warning(), what=f"the note on {name}")
            assert SECRET not in viewer.text and SECRET not in warning()
        await show(run / "bindings" / "alias.md")
        await wait_until(pilot, lambda: INSIDE_VALUE in viewer.text, what="the alias inside the run read")
        await pilot.press("4", "slash", *"memory.md", "enter")
        await wait_until(pilot, lambda: viewer.target is not None and viewer.target.kind == "memory" and not viewer.reading,
                         what="the memory chosen")
        await wait_until(pilot, lambda: OUTSIDE_RUN in warning(), what="the note on memory.md")
        assert SECRET not in viewer.text
        tree = explorer.query_one(BindingTree)
        labels = [str(node.label) for node in _walk(tree.root)]
        for name in ("linked", "climb", "chain", "dotdot", "absolute"):
            assert any(label.startswith(f"{name} ") and OUTSIDE_RUN in label for label in labels), name
        assert any(label.startswith("acme") and OUTSIDE_RUN in label for label in labels)
        assert not any(SECRET in label or SECRET_IMPORT in label for label in labels)


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)
