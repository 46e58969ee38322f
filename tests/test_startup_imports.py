"""Starting the explorer imports what its first screen needs, not every reader (issue 33).

``prose-tui PATH`` imports the command line and the Textual app before it shows anything.
Libraries only some runs or panes need (markdown-it-py for a snapshot state file, rich's
Markdown with Pygments for a value shown as Markdown, PyYAML and python-frontmatter for
front matter and reactor.yml, python-dotenv for a project's ``.env``) are imported when
first used, not at start-up: together they were about a fifth of the explorer's import
time. A fresh interpreter, as a user's shell starts it; what is asserted is which modules
are loaded, never a time (the times are in benchmarks/bench_open.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ON_DEMAND = ("markdown_it", "rich.markdown", "rich.syntax", "pygments", "yaml", "frontmatter", "dotenv")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_starting_the_explorer_leaves_the_markdown_yaml_and_dotenv_readers_for_later():
    loaded = _loaded_after("import prose_tui.cli.main, prose_tui.tui.app")
    assert "textual.app" in loaded  # the probe imported the explorer
    assert sorted(m for m in ON_DEMAND if m in loaded) == []


def test_the_readers_still_load_when_a_run_needs_them():
    code = (
        "from prose_tui.backends.filesystem.snapshot import parse_snapshot\n"
        "from prose_tui.backends.common.bindings import parse_binding_head\n"
        # A fence needs markdown-it (plain headings and tables do not: common/markdown.py).
        "state = parse_snapshot('# Execution State\\n\\n## Index\\n\\n### Bindings\\n\\n| Name | Kind |\\n|---|---|\\n| a | let |\\n'\n"
        "                       '\\n## Notes\\n\\n```\\nkept\\n```\\n')\n"
        "assert [r.get('name') for r in state.binding_rows] == ['a'], state\n"
        "fields, _, _, _ = parse_binding_head('---\\nkind: let\\n---\\nvalue\\n')\n"
        "assert fields == {'kind': 'let'}, fields\n"
    )
    assert {"markdown_it", "frontmatter", "yaml"} <= _loaded_after(code)
