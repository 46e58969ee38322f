"""Action names for key bindings, so the config file can rebind keys (``[keys]``).

Textual rebinds through binding ids (``App.set_keymap``). ``keyed`` gives every binding
of a ``BINDINGS`` list an id: its action name (``toggle_follow``, ``open_pager``) when the
action takes no arguments, else its description as a name (``cycle_pane(1)`` "Next pane"
becomes ``next_pane``). A binding that already has an id keeps it (and stays the same
object, so lists that include another list's bindings can still be told apart).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from textual.binding import Binding, BindingType
from textual.keys import key_to_character


def action_id(binding: Binding) -> str:
    """The name ``[keys]`` uses for ``binding``."""
    if binding.id:
        return binding.id
    if "(" not in binding.action:
        return binding.action
    slug = re.sub(r"[^a-z0-9]+", "_", binding.description.lower()).strip("_")
    return slug or re.sub(r"\W+", "_", binding.action).strip("_")


def keyed(bindings: Iterable[BindingType]) -> list[BindingType]:
    """``bindings`` with an id on each ``Binding`` (tuples are left as they are)."""
    out: list[BindingType] = []
    for b in bindings:
        if isinstance(b, Binding) and b.id is None:
            b = replace(b, id=action_id(b))
        out.append(b)
    return out


def shown_key(binding: Binding, keymap: dict[str, str]) -> str:
    """The keys that trigger ``binding`` once ``keymap`` (action name -> keys) is applied."""
    return keymap.get(binding.id or "", binding.key)


def _same_key(key: str) -> str:
    key = key.strip()
    return key_to_character(key) or key if "+" not in key else key


def keymap_clashes(groups: Iterable[tuple[str, list[Binding]]], keymap: dict[str, str]) -> list[str]:
    """One line per key that ``keymap`` gives to an action while another action in the same
    group still has it (Textual then silently drops the other action's key)."""
    lines: list[str] = []
    for title, bindings in groups:
        holders: dict[str, list[str]] = {}
        for b in bindings:
            name = action_id(b)
            for key in keymap.get(name, b.key).split(","):
                names = holders.setdefault(_same_key(key), [])
                if name not in names:
                    names.append(name)
        for key, names in holders.items():
            rebound = [n for n in names if n in keymap]
            others = [n for n in names if n not in keymap]
            if rebound and others:
                lines.append(f"config [keys]: {key!r} ({title}) is now {', '.join(rebound)}; "
                             f"{', '.join(others)} lost it: give {'it' if len(others) == 1 else 'them'} another key")
    return lines
