"""Handing values to the user's tools and copying out (issue 15).

The pager and editor are small scripts written to ``tmp_path`` that record what they were
given (argv, the file's content and mode) to a JSON file. Textual's headless test driver
cannot suspend; tests that need a suspend give it one (``suspendable``), and one test
checks what a user sees where the app cannot suspend. OSC 52 output is captured from the
driver's ``write``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest
from app_helpers import make_app, palette_hit, pinned_copy, ready, wait_until
from conftest import FIXTURES
from textual.drivers.headless_driver import HeadlessDriver

from prose_tui.tui import clipboard
from prose_tui.tui.targets import Target
from prose_tui.tui.widgets.value_viewer import ValueViewer

RUN_ID = "20260301-100000-a1b2c3"

RECORDER = """#!{python}
import json, os, stat, sys
path = sys.argv[-1]
st = os.stat(path)
with open(path, encoding="utf-8") as fh:
    content = fh.read()
record = {{"argv": sys.argv[1:], "path": path, "content": content,
          "mode": stat.S_IMODE(st.st_mode), "lesssecure": os.environ.get("LESSSECURE")}}
with open({log!r}, "a", encoding="utf-8") as out:
    out.write(json.dumps(record) + "\\n")
"""


@pytest.fixture
def project(tmp_path):
    return pinned_copy(FIXTURES / "project", tmp_path / "project")


@pytest.fixture
def tool(tmp_path):
    """A fake pager/editor; returns (script path, a function reading what it recorded)."""
    log = tmp_path / "tool-log.jsonl"
    script = tmp_path / "fake-tool"
    script.write_text(RECORDER.format(python=sys.executable, log=str(log)))
    script.chmod(0o755)

    def records() -> list[dict]:
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    return script, records


@pytest.fixture
def suspendable(monkeypatch):
    """Let the headless driver suspend, and count suspends and resumes per app."""
    monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True), raising=False)


@pytest.fixture
def osc52(monkeypatch):
    """Everything the app writes to the terminal, and the OSC 52 payloads in it (decoded)."""
    written: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "write", lambda self, data: written.append(data))

    def payloads() -> list[str]:
        found = re.findall(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", "".join(written))
        return [base64.b64decode(p).decode("utf-8") for p in found]

    return payloads


def _signals(app) -> list[str]:
    seen: list[str] = []
    app.app_suspend_signal.subscribe(app, lambda _app: seen.append("suspend"))
    app.app_resume_signal.subscribe(app, lambda _app: seen.append("resume"))
    return seen


def _messages(app) -> list[str]:
    return list(getattr(app, "notified", None) or (n.message for n in app._notifications))


async def _open_binding(pilot) -> Path:
    """Enter on a trace line that wrote a binding: the value pane shows it (and is active)."""
    await ready(pilot)
    await pilot.press("2", "k", "k", "k", "k", "enter")
    viewer = pilot.app.explorer.query_one(ValueViewer)
    await wait_until(pilot, lambda: viewer.target is not None and viewer.target.kind == "binding",
                     what="a binding in the value pane")
    await pilot.pause()
    assert pilot.app.explorer.active == 4
    return viewer.target.path


async def test_o_opens_the_selected_binding_file_in_the_pager_and_resumes(project, tool, suspendable, monkeypatch):
    script, records = tool
    monkeypatch.setenv("PAGER", f"{script} --flag")
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        seen = _signals(app)
        path = await _open_binding(pilot)
        await pilot.press("o")
        await wait_until(pilot, lambda: seen == ["suspend", "resume"], what="suspend then resume")
        [record] = records()
        assert record["argv"] == ["--flag", str(path)]  # $PAGER is split as a shell would
        assert record["content"] == path.read_text()
        # Back where it was: the same run, the same value, and keys work again.
        assert app.explorer.current_run.id == RUN_ID
        assert app.explorer.query_one(ValueViewer).target.path == path
        await pilot.press("1")
        await wait_until(pilot, lambda: app.explorer.active == 0, what="keys after resuming")


async def test_less_as_the_pager_gets_lesssecure(project, tool, suspendable, monkeypatch, tmp_path):
    script, records = tool
    less = tmp_path / "bin" / "less"
    less.parent.mkdir()
    less.symlink_to(script)
    monkeypatch.setenv("PAGER", str(less))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_binding(pilot)
        await pilot.press("o")
        await wait_until(pilot, lambda: records(), what="the pager to run")
        assert records()[0]["lesssecure"] == "1"  # less's v (edit) and ! (shell) are off


async def test_O_gives_the_editor_a_read_only_copy_removed_afterwards(project, tool, suspendable, monkeypatch):
    script, records = tool
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        seen = _signals(app)
        path = await _open_binding(pilot)
        before = path.read_bytes()
        await pilot.press("O")
        await wait_until(pilot, lambda: seen == ["suspend", "resume"], what="suspend then resume")
        [record] = records()
        copy = Path(record["path"])
        assert copy != path and copy.name == path.name  # same name: the editor picks the syntax
        assert record["mode"] == 0o444
        assert record["content"] == before.decode()
        assert not copy.exists() and not copy.parent.exists()
        assert path.read_bytes() == before


async def test_visual_wins_over_editor(project, tool, suspendable, monkeypatch):
    script, records = tool
    monkeypatch.setenv("VISUAL", str(script))
    monkeypatch.setenv("EDITOR", "/nonexistent/editor")
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_binding(pilot)
        await pilot.press("O")
        await wait_until(pilot, lambda: records(), what="$VISUAL to run")


async def test_a_value_that_is_not_a_file_goes_to_the_copy(project, tool, suspendable, monkeypatch):
    script, records = tool
    monkeypatch.setenv("PAGER", str(script))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        explorer = app.explorer
        explorer.show_target(Target("section", "Failure at event 7", text="# Failure\n\nboom"))
        explorer.activate(4)
        await pilot.pause()
        await pilot.press("o")
        await wait_until(pilot, lambda: records(), what="the pager to run")
        [record] = records()
        assert record["content"] == "# Failure\n\nboom"
        assert record["mode"] == 0o444
        assert Path(record["path"]).name == "Failure-at-event-7.md"
        assert not Path(record["path"]).exists()


async def test_o_in_the_trace_opens_the_run_state_file(project, tool, suspendable, monkeypatch):
    script, records = tool
    monkeypatch.setenv("PAGER", str(script))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2", "o")
        await wait_until(pilot, lambda: records(), what="the pager to run")
        assert records()[0]["path"] == str(project / ".prose" / "runs" / RUN_ID / "state.md")


async def test_editing_the_file_itself_asks_first(project, tool, suspendable, monkeypatch):
    script, records = tool
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        path = await _open_binding(pilot)
        await pilot.press("ctrl+e")
        await pilot.pause()
        from prose_tui.tui.screens.confirm import ConfirmScreen

        assert isinstance(app.screen, ConfirmScreen)
        assert "confuse the VM" in app.screen.body_text
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog to close")
        assert records() == []  # declined: the editor never ran
        await pilot.press("ctrl+e")
        await pilot.pause()
        await pilot.press("y")
        await wait_until(pilot, lambda: records(), what="the editor to run")
        assert records()[0]["path"] == str(path)  # the run's file itself, as asked


async def test_where_the_app_cannot_suspend_it_says_so(project, tool, monkeypatch):
    script, records = tool
    monkeypatch.setenv("PAGER", str(script))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_binding(pilot)
        await pilot.press("o")
        await wait_until(pilot, lambda: any("cannot suspend" in m for m in _messages(app)),
                         what="a notification")
        assert records() == []
        assert app.is_running


async def test_a_missing_pager_is_named(project, suspendable, monkeypatch):
    monkeypatch.setenv("PAGER", "/nonexistent/pager -R")
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        seen = _signals(app)
        await _open_binding(pilot)
        await pilot.press("o")
        await wait_until(pilot, lambda: any("/nonexistent/pager" in m for m in _messages(app)),
                         what="a notification")
        assert seen == ["suspend", "resume"]  # the app came back even though the tool failed


# -- OSC 52 --------------------------------------------------------------------------------------
async def test_y_v_copies_the_selected_value_through_osc52(project, osc52):
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        path = await _open_binding(pilot)
        target = app.explorer.query_one(ValueViewer).target
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("v")
        await wait_until(pilot, lambda: osc52(), what="an OSC 52 write")
        value = path.read_bytes()[target.binding.value_offset:].decode().lstrip("\n")
        assert osc52() == [value]
        await wait_until(pilot, lambda: _messages(app), what="the notification")
        assert any(m.startswith(f"Copied binding {target.title} (") for m in _messages(app))


async def test_copy_the_run_path_and_a_trace_line(project, osc52):
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2", "g", "y")
        await pilot.pause()
        await pilot.press("l")
        await wait_until(pilot, lambda: len(osc52()) == 1, what="the trace line")
        first = app.explorer.current_run.trace[0]
        assert osc52()[0].startswith(first.text.strip())
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("p")
        await wait_until(pilot, lambda: len(osc52()) == 2, what="the run path")
        assert osc52()[1] == str(project / ".prose" / "runs" / RUN_ID)
        await wait_until(pilot, lambda: len(_messages(app)) >= 2, what="the notifications")
        assert any("the path of run" in m and "B)" in m for m in _messages(app))


async def test_a_large_value_is_cut_to_the_limit_and_says_so(project, osc52, monkeypatch):
    monkeypatch.setattr(clipboard, "CLIPBOARD_LIMIT", 64)
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        app.explorer.show_target(Target("section", "big", text="é" * 100))  # 200 bytes of UTF-8
        app.explorer.activate(4)
        await pilot.pause()
        app.action_copy("value")
        await wait_until(pilot, lambda: osc52(), what="an OSC 52 write")
        assert osc52() == ["é" * 32]  # cut at a character boundary
        await wait_until(pilot, lambda: _messages(app), what="the notification")
        assert any("first 64 B of" in m and "200 B in all" in m and "limit" in m for m in _messages(app))


async def test_copy_from_the_palette(project, osc52):
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Copy run's path")
        await wait_until(pilot, lambda: palette_hit(app, "Copy run"), what="the palette's hit")
        await pilot.press("enter")
        await wait_until(pilot, lambda: osc52(), what="an OSC 52 write")
        assert osc52() == [str(project / ".prose" / "runs" / RUN_ID)]


def test_read_only_copy_is_0444_and_gone_after(tmp_path):
    from prose_tui.tui.external import Content, read_only_copy

    with read_only_copy(Content("v.md", "text", 4, False)) as copy:
        assert stat.S_IMODE(os.stat(copy).st_mode) == 0o444
        assert copy.read_text() == "text"
    assert not copy.exists()


# -- what is handed out ------------------------------------------------------------------------------
def test_target_content_reads_a_binding_from_its_value_offset_and_keeps_the_file(tmp_path):
    from prose_tui.model import Binding
    from prose_tui.tui.external import target_content

    path = tmp_path / "result.md"
    path.write_text("kind: let\nsource: x\n---\n\nthe value\n")
    offset = len("kind: let\nsource: x\n---\n")
    content = target_content(Target("binding", "result", path, Binding("result", path, value_offset=offset)))
    assert content.text == "the value\n" and content.file == path and not content.cut
    cut = target_content(Target("binding", "result", path, Binding("result", path, value_offset=offset)), limit=4)
    assert cut.cut and cut.size == len("\nthe value\n")


def test_target_content_uses_a_backends_reader_and_refuses_encrypted_values(tmp_path):
    from prose_tui.model import Binding
    from prose_tui.tui.external import NotReadable, target_content

    content = target_content(Target("binding", "row", tmp_path / "state.db", read=lambda: "from the row"))
    assert content.text == "from the row" and content.file is None and content.name == "row.md"
    secret = Binding("token", tmp_path / "token.md", encrypted=True)
    with pytest.raises(NotReadable, match="SOPS-encrypted"):
        target_content(Target("binding", "token", secret.path, secret))

    def broken() -> str:
        raise RuntimeError("database is locked")

    with pytest.raises(NotReadable, match="database is locked"):
        target_content(Target("binding", "row", read=broken))


def test_a_sqlite_runs_state_is_its_trace_as_text(tmp_path):
    from prose_tui.model import Backend, Run, TraceLine
    from prose_tui.tui.external import state_target, target_content

    run = Run(id="r1", path=tmp_path, backend=Backend.SQLITE, state_file=tmp_path / "state.db",
              trace=[TraceLine(1, "let a = session \"x\"", note="--> a (complete)")])
    content = target_content(state_target(run))
    assert content.file is None and content.text == '   1  let a = session "x"  # --> a (complete)'
