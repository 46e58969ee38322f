"""The config file, key overrides, ``config``/``completion`` commands and ``--help`` (issue 15)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from app_helpers import keep_notifications, make_app, palette_hit, pinned_copy, ready, wait_until
from conftest import FIXTURES

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.cli.main import main
from prose_tui.tui.app import ProseTUI
from prose_tui.tui.config import Config, config_path, load_config, parse_config, template
from prose_tui.tui.widgets.trace_view import TraceView


@pytest.fixture
def project(tmp_path):
    return pinned_copy(FIXTURES / "project", tmp_path / "project")


def write_config(text: str) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- parsing ---------------------------------------------------------------------------------------
def test_the_file_lives_in_the_user_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "prose-tui" / "config.toml"


def test_no_file_gives_the_defaults():
    config = load_config()
    assert config == Config()
    assert config.stale_after == DEFAULT_STALE_AFTER and config.problems == ()


def test_every_key_is_read():
    config = parse_config('layout = "narrow"\nstale_after = 600\npoll_interval = 2.5\ntheme = "nord"\n'
                          'follow_on_start = false\n[keys]\ntoggle_follow = "F"\nopen_pager = "v, ctrl+o"\n',
                          known_actions=ProseTUI.action_names())
    assert config.problems == ()
    assert (config.layout, config.stale_after, config.poll_interval, config.theme, config.follow_on_start) == \
        ("narrow", 600.0, 2.5, "nord", False)
    assert config.keys == {"toggle_follow": "F", "open_pager": "v,ctrl+o"}


def test_the_template_is_valid_and_says_the_defaults():
    config = parse_config(template(), known_actions=ProseTUI.action_names())
    assert config.problems == ()
    assert config.stale_after == DEFAULT_STALE_AFTER and config.layout == "auto" and config.keys == {}


def test_a_malformed_file_is_one_line_with_its_line_number_and_gives_the_defaults():
    path = write_config('theme = "nord"\nstale_after = = 3\n')
    config = load_config()
    assert config.theme is None and config.stale_after == DEFAULT_STALE_AFTER
    [problem] = config.problems
    assert str(path) in problem and "line 2" in problem and "using the defaults" in problem
    assert "\n" not in problem


def test_an_unknown_key_is_named_with_its_line_and_the_rest_is_kept():
    config = parse_config('theme = "nord"\n\nstale_afer = 60\n', path=Path("c.toml"))
    assert config.theme == "nord" and config.stale_after == DEFAULT_STALE_AFTER
    assert config.problems == ("c.toml line 3: stale_afer: unknown key (did you mean stale_after?); ignored",)


def test_a_wrong_type_is_named_with_its_line():
    config = parse_config('layout = "wide"\npoll_interval = "soon"\nfollow_on_start = 1\n', path=Path("c.toml"))
    assert config.layout == "wide" and config.poll_interval == 5.0 and config.follow_on_start is True
    assert config.problems[0].startswith("c.toml line 2: poll_interval: must be a positive number")
    assert config.problems[1].startswith("c.toml line 3: follow_on_start: must be true or false")


def test_an_unknown_action_in_keys_is_named():
    config = parse_config('[keys]\ntoggle_folow = "F"\nquit = "Q"\n', path=Path("c.toml"),
                          known_actions=ProseTUI.action_names())
    assert config.keys == {"quit": "Q"}
    assert config.problems == ("c.toml line 2: [keys] toggle_folow: no such action (did you mean toggle_follow?); ignored",)


def test_an_unreadable_file_is_a_problem_not_a_crash(tmp_path):
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    config = load_config(folder)
    assert config == Config(path=folder, problems=config.problems) and len(config.problems) == 1


# -- the app ---------------------------------------------------------------------------------------
async def test_key_overrides_rebind_by_action_name(project):
    config = parse_config('[keys]\ntoggle_follow = "F"\n', known_actions=ProseTUI.action_names())
    app = ProseTUI(project, watch=False, clock=make_app(project).workspace.clock, config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2")
        trace = app.explorer.query_one(TraceView)
        await wait_until(pilot, lambda: trace.following, what="following")
        await pilot.press("f")  # the old key no longer toggles
        await pilot.pause()
        assert trace.following
        await pilot.press("F")
        await wait_until(pilot, lambda: not trace.following, what="F to toggle follow")
        groups = dict(app.help_groups())
        assert any(b.key == "F" and b.action == "toggle_follow" for b in groups["Panes & live"])


async def test_a_bad_config_starts_with_the_defaults_and_says_so_once(project):
    write_config("layout = narrow\n")  # not TOML: a bare word
    config = load_config(known_actions=ProseTUI.action_names())
    app = ProseTUI(project, watch=False, config=config)
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app._notifications, what="the config notification")
        [note] = [n.message for n in app._notifications]
        assert "line 1" in note and "using the defaults" in note
        assert not app.explorer.narrow  # the default layout at 160 columns: side by side


async def test_layout_follow_and_theme_from_the_config(project):
    config = parse_config('layout = "narrow"\nfollow_on_start = false\ntheme = "gruvbox"\n')
    app = ProseTUI(project, watch=False, config=config)
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot)
        assert app.explorer.narrow  # one pane at a time although the terminal is wide
        assert app.theme == "gruvbox"
        assert not app.explorer.query_one(TraceView).following


async def test_an_unknown_theme_is_named_and_the_default_kept(project):
    app = ProseTUI(project, watch=False, config=Config(theme="no-such-theme"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app._notifications, what="the notification")
        assert "no-such-theme" in next(iter(app._notifications)).message
        assert app.theme == "textual-dark"


def test_flags_override_the_config(monkeypatch):
    from prose_tui.cli import launch

    write_config('theme = "nord"\nlayout = "wide"\nstale_after = 99\n')
    seen: dict = {}

    class Fake:
        action_names = ProseTUI.action_names

        def __init__(self, path, **kwargs):
            seen.update(kwargs)

        def run(self):
            pass

    monkeypatch.setattr("prose_tui.tui.app.ProseTUI", Fake)
    assert main([str(FIXTURES / "project"), "--theme", "dracula", "--stale-after", "5"]) == 0
    assert seen["config"].theme == "dracula" and seen["config"].layout == "wide"
    assert seen["stale_after"] == 5.0
    assert launch._with_flags(argparse.Namespace(config=Config(theme="nord"), theme=None, layout=None)).theme == "nord"


def test_headless_commands_take_stale_after_from_the_config(capsys):
    write_config("stale_after = 1e12\n")
    assert main(["runs", str(FIXTURES / "project")]) == 0
    out = capsys.readouterr().out
    assert "STOPPED" not in out  # a 1e12-second stale window: nothing counts as interrupted


# -- commands --------------------------------------------------------------------------------------
def test_config_path_and_show(capsys):
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(config_path())
    write_config('theme = "nord"\n[keys]\ntoggle_follow = "F"\n')
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert 'theme = "nord"' in out and 'toggle_follow = "F"' in out and "open_pager" in out


def test_config_show_exits_1_naming_each_problem(capsys):
    write_config('them = "nord"\n')
    assert main(["config", "show"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 1: them: unknown key (did you mean theme?)" in err


def test_config_edit_creates_the_template_and_runs_the_editor(tmp_path, monkeypatch, capsys):
    log = tmp_path / "edited"
    editor = tmp_path / "ed"
    editor.write_text(f"#!/bin/sh\necho \"$@\" > {log}\n")
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor))
    assert main(["config", "edit"]) == 0
    assert log.read_text().strip() == str(config_path())
    assert config_path().read_text() == template()
    assert "is valid" in capsys.readouterr().err


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell, capsys):
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    for word in ("runs", "show", "config", "completion", "--stale-after"):
        assert word in script
    checker = shutil.which(shell)
    if checker is not None:  # the shell is installed: the script must at least parse
        subprocess.run([checker, "-n"] if shell != "fish" else [checker, "--no-execute"],
                       input=script, text=True, check=True)


def test_help_has_examples_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "exit status:" in out and "prose-tui config edit" in out
    for command in ("runs", "show", "record", "agent", "config", "completion"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        sub = capsys.readouterr().out
        assert "examples:" in sub and f"prose-tui {command}" in sub and "exit status:" in sub, command


def test_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("prose-tui ")


def test_the_console_script_runs():
    done = subprocess.run([sys.executable, "-m", "prose_tui", "completion", "bash"], capture_output=True, text=True)
    assert done.returncode == 0 and "prose-tui" in done.stdout


def test_argparse_usage_error_is_2():
    with pytest.raises(SystemExit) as exit_:
        main(["completion", "powershell-not"])
    assert exit_.value.code == 2


async def test_a_key_taken_from_another_action_is_said_once(project):
    config = parse_config('[keys]\nrescan = "f"\n', known_actions=ProseTUI.action_names())
    app = keep_notifications(ProseTUI(project, watch=False, config=config))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("2")
        trace = app.explorer.query_one(TraceView)
        following = trace.following
        await pilot.press("f", "f")
        # the log of notifications, not the toasts: under load a toast can time out first
        await wait_until(pilot, lambda: app.notified, what="the clash notification")
        await pilot.pause()
        assert trace.following == following  # f rescans now; it no longer toggles follow
        notes = [n for n in app.notified if "toggle_follow" in n]
        assert notes == ["config [keys]: 'f' (Panes & live) is now rescan; toggle_follow lost it: give it another key"]


def test_config_show_names_a_key_taken_from_another_action(capsys):
    write_config('[keys]\nopen_pager = "q"\n')
    assert main(["config", "show"]) == 1
    assert "'q' (Everywhere) is now open_pager; quit lost it" in capsys.readouterr().err


async def test_layout_wide_keeps_panes_side_by_side_at_80_columns(project):
    app = ProseTUI(project, watch=False, config=Config(layout="wide"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert not app.explorer.narrow
        assert app.explorer.query_one("#trace-pane").display and app.explorer.query_one("#runs-pane").display


def test_write_setting_keeps_every_other_line(tmp_path):
    from prose_tui.tui.config import write_setting

    path = tmp_path / "config.toml"
    path.write_text('# mine\nlayout = "wide"  # my layout\n\n[keys]\ntoggle_follow = "F"\n')
    write_setting("theme", "nord", path)
    assert path.read_text() == '# mine\nlayout = "wide"  # my layout\ntheme = "nord"\n\n[keys]\ntoggle_follow = "F"\n'
    write_setting("theme", "dracula", path)
    assert parse_config(path.read_text()).theme == "dracula"
    assert path.read_text().count("theme =") == 1
    fresh = tmp_path / "new" / "config.toml"
    write_setting("theme", "gruvbox", fresh)  # from the template: its commented slot is used
    assert parse_config(fresh.read_text()).theme == "gruvbox"
    assert fresh.read_text().replace('theme = "gruvbox"', '# theme = "nord"') == template()
    broken = tmp_path / "broken.toml"
    broken.write_text("layout = = 1\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        write_setting("theme", "nord", broken)
    assert broken.read_text() == "layout = = 1\n"


async def test_keep_the_theme_from_the_palette(project):
    app = ProseTUI(project, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        app.theme = "nord"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Keep the theme")
        await wait_until(pilot, lambda: palette_hit(app, "Keep the theme"), what="the palette's hit")
        await pilot.press("enter")
        await wait_until(pilot, lambda: config_path().exists(), what="the config file")
    assert load_config().theme == "nord"
