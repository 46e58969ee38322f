"""The user's configuration file: ``config.toml`` in the platform's user config folder.

Textual-free, so both the TUI and the headless CLI read it. The file is TOML (read with the
standard library's ``tomllib``); every key is optional::

    layout = "auto"          # auto | wide | narrow (one pane at a time)
    stale_after = 1800       # seconds without change before a running run counts as interrupted
    poll_interval = 5        # seconds between status refreshes and rescans
    theme = "nord"           # any Textual theme name (the command palette lists them)
    follow_on_start = true   # the trace follows the executing statement when a run opens

    [keys]                   # key overrides by action name (``prose-tui config show`` lists them)
    toggle_follow = "F"
    open_pager = "o,v"       # several keys: comma-separated

A file that is not valid TOML is ignored as a whole (one problem line, with the line
number ``tomllib`` reports); a key with a wrong type or an unknown name is ignored alone
(one problem line naming it and its line). Nothing here raises on bad input: problems are
returned for the caller to show. Command-line flags override what the file says.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platformdirs import user_config_dir

from prose_tui.backends.common.status import DEFAULT_STALE_AFTER

APP_NAME = "prose-tui"
LAYOUTS = ("auto", "wide", "narrow")
DEFAULT_POLL_INTERVAL = 5.0
CONFIG_ENV = "PROSE_TUI_CONFIG"  # a path that replaces the default location (tests, several setups)

TEMPLATE = """\
# prose-tui configuration (TOML). Every key is optional; delete a line to get the default.
# Command-line flags override these values. Check this file with: prose-tui config show

# auto: five panes side by side from 110 columns, one pane at a time below that.
# wide: always side by side. narrow: always one pane at a time.
layout = "auto"

# Seconds without a change before a running run is shown as interrupted.
stale_after = {stale_after:g}

# Seconds between status refreshes (ages, staleness) and rescans for new runs folders.
poll_interval = {poll_interval:g}

# A Textual theme: textual-dark, textual-light, nord, gruvbox, dracula, tokyo-night,
# monokai, flexoki, catppuccin-mocha, solarized-light, ... (ctrl+p "Change theme" lists them).
# theme = "nord"

# Whether the trace follows the executing statement when a run opens (f toggles).
follow_on_start = true

[keys]
# Key overrides by action name (the names `prose-tui config show` lists). Several keys: "o,v".
# toggle_follow = "F"
# open_pager = "v"
"""


@dataclass(frozen=True)
class Config:
    """What the config file says, defaults filled in.

    ``stale_after`` and ``poll_interval`` are seconds; ``theme`` is a Textual theme name or
    ``None`` for Textual's default; ``keys`` maps action names to Textual key strings
    (``"F"``, ``"ctrl+e"``, ``"o,v"``). ``path`` is the file read (``None`` when there was
    none) and ``problems`` one human line per thing in it that was ignored.
    """

    layout: str = "auto"
    stale_after: float = DEFAULT_STALE_AFTER
    poll_interval: float = DEFAULT_POLL_INTERVAL
    theme: str | None = None
    follow_on_start: bool = True
    keys: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    problems: tuple[str, ...] = ()

    def as_toml(self) -> str:
        """The effective settings as TOML (what ``prose-tui config show`` prints)."""
        lines = [f'layout = "{self.layout}"', f"stale_after = {self.stale_after:g}",
                 f"poll_interval = {self.poll_interval:g}"]
        lines.append(f'theme = "{self.theme}"' if self.theme else "# theme: Textual's default")
        lines.append(f"follow_on_start = {'true' if self.follow_on_start else 'false'}")
        lines += ["", "[keys]"]
        lines += [f"{action} = {_toml_string(keys)}" for action, keys in sorted(self.keys.items())]
        return "\n".join(lines) + "\n"


def config_path() -> Path:
    """Where the config file is: ``$PROSE_TUI_CONFIG`` if set, else
    ``user_config_dir("prose-tui")/config.toml`` (``~/.config/prose-tui/config.toml`` on
    Linux, honouring ``XDG_CONFIG_HOME``; ``~/Library/Application Support/prose-tui`` on macOS)."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    return Path(user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


def template() -> str:
    """A commented starting file with every key at its default (for ``config edit``)."""
    return TEMPLATE.format(stale_after=DEFAULT_STALE_AFTER, poll_interval=DEFAULT_POLL_INTERVAL)


def load_config(path: Path | None = None, *, known_actions: set[str] | None = None) -> Config:
    """Read ``path`` (default ``config_path()``); a missing file gives the defaults.

    ``known_actions`` are the action names ``[keys]`` may override; when given, others
    are reported as unknown. Never raises for what the file contains or for an unreadable
    file: each problem becomes one line in ``Config.problems``.
    """
    path = config_path() if path is None else path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Config(path=path, problems=(f"{path}: cannot read it ({reason}); using the defaults",))
    return parse_config(text, path=path, known_actions=known_actions)


def parse_config(text: str, *, path: Path | None = None, known_actions: set[str] | None = None) -> Config:
    """Parse config ``text`` (see the module docstring for the keys); never raises."""
    where = str(path) if path is not None else "config"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends "(at line N, column M)": keep it, it names the place.
        return Config(path=path, problems=(f"{where}: not valid TOML: {exc}; using the defaults",))
    problems: list[str] = []
    values: dict[str, Any] = {}

    def bad(key: str, message: str, table: str | None = None) -> None:
        line = _line_of(text, key, table)
        at = f" line {line}" if line else ""
        shown = f"[{table}] {key}" if table else key
        problems.append(f"{where}{at}: {shown}: {message}; ignored")

    for key, value in data.items():
        if key == "keys":
            if not isinstance(value, dict):
                bad(key, "must be a table of action = \"key\" lines")
                continue
            keys: dict[str, str] = {}
            for action, keystr in value.items():
                if not isinstance(keystr, str) or not keystr.strip():
                    bad(action, 'must be a key string such as "F" or "ctrl+e"', "keys")
                elif known_actions is not None and action not in known_actions:
                    near = _nearest(action, known_actions)
                    bad(action, "no such action" + (f" (did you mean {near}?)" if near else ""), "keys")
                else:
                    keys[action] = ",".join(k.strip() for k in keystr.split(","))
            values["keys"] = keys
        elif key == "layout":
            if value in LAYOUTS:
                values[key] = value
            else:
                bad(key, f"must be one of {', '.join(LAYOUTS)}, not {value!r}")
        elif key in ("stale_after", "poll_interval"):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                values[key] = float(value)
            else:
                bad(key, f"must be a positive number of seconds, not {value!r}")
        elif key == "theme":
            if isinstance(value, str) and value.strip():
                values[key] = value.strip()
            else:
                bad(key, f"must be a theme name, not {value!r}")
        elif key == "follow_on_start":
            if isinstance(value, bool):
                values[key] = value
            else:
                bad(key, f"must be true or false, not {value!r}")
        else:
            known = ("layout", "stale_after", "poll_interval", "theme", "follow_on_start", "keys")
            near = _nearest(key, set(known))
            bad(key, "unknown key" + (f" (did you mean {near}?)" if near else ""))
    return Config(path=path, problems=tuple(problems), **values)


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line_of(text: str, key: str, table: str | None) -> int | None:
    """The 1-based line where ``key`` is assigned (inside ``[table]`` when given)."""
    current: str | None = None
    assign = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            current = header.group(1).strip('"\'')
            continue
        if current == table and assign.match(line):
            return number
    return None


def _nearest(word: str, choices: set[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def write_setting(key: str, value: str, path: Path | None = None) -> Path:
    """Set top-level ``key = "value"`` in the config file (default ``config_path()``), keeping
    every other line and comment as written: an existing ``key = ...`` line before the first
    table is replaced, else the line goes just before the first table (or at the end).
    A missing file starts from ``template()``. Raises ``ValueError`` (and writes nothing) when
    the file is not valid TOML before or after the change, ``OSError`` when it cannot be written.
    """
    path = config_path() if path is None else path
    text = path.read_text(encoding="utf-8") if path.exists() else template()
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path} is not valid TOML ({exc}): fix it first (prose-tui config edit)") from exc
    line = f"{key} = {_toml_string(value)}"
    lines = text.splitlines()
    first_table = next((i for i, ln in enumerate(lines) if re.match(r"^\s*\[", ln)), len(lines))
    assign = re.compile(rf"^\s*#?\s*{re.escape(key)}\s*=")
    existing = [i for i in range(first_table) if assign.match(lines[i])]
    live = [i for i in existing if not lines[i].lstrip().startswith("#")]
    if live or existing:
        lines[(live or existing)[-1]] = line
    else:
        at = first_table
        while at > 0 and not lines[at - 1].strip():
            at -= 1
        lines[at:at] = [line]
    new = "\n".join(lines) + "\n"
    tomllib.loads(new)  # our own edit must parse; a failure here is a bug, not user input
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return path
