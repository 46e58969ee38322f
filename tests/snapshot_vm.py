"""A VM in its own process that rewrites a snapshot ``state.md`` whole, one revision per request.

    python tests/snapshot_vm.py RUN_DIR STATEMENTS

Reads a revision number per line on stdin, writes that revision of ``RUN_DIR/state.md``
(temporary name, then ``os.replace``, as seeds/filesystem.md asks) and answers with the
sha256 of the bytes written. Revision ``k`` has ``min(k + 1, STATEMENTS)`` statements, all
complete but the last, which is executing (all complete from ``k = STATEMENTS`` on), each
complete one with its Index row; ``updated:`` moves a second per revision. Deterministic:
:func:`text` gives the same bytes for the same ``k``.
"""

from __future__ import annotations

import hashlib
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def text(k: int, statements: int, run_id: str = "20260301-090000-50a4e0") -> str:
    reached = min(k + 1, statements)
    trace, rows = [], []
    for i in range(reached):
        name = f"value_{i:04d}"
        last = i == reached - 1 and k < statements
        note = "# <-- EXECUTING" if last else f"# --> bindings/{name}.md"
        trace.append(f"let {name} = session: worker_{i % 7:02d}".ljust(60) + note)
        if not last:
            rows.append(f"| {name} | let | bindings/{name}.md | (root) |")
    updated = START + timedelta(seconds=k)
    return "\n".join([
        "# Execution State", "", f"run: {run_id}", "program: long.prose", f"started: {START:%Y-%m-%dT%H:%M:%SZ}",
        f"updated: {updated:%Y-%m-%dT%H:%M:%SZ}", f"status: {'completed' if k >= statements else 'running'}", "",
        "## Execution Trace", "", "```prose", *trace, "```", "", "## Index", "", "### Bindings", "",
        "| Name | Kind | Path | Execution ID |", "|------|------|------|--------------|", *rows, "",
        "## Notes", "", f"Re-saved {k} times.", ""])


def main() -> None:
    run_dir, statements = Path(sys.argv[1]), int(sys.argv[2])
    run_dir.mkdir(parents=True, exist_ok=True)
    for line in sys.stdin:
        data = text(int(line), statements).encode("utf-8")
        tmp = run_dir / ".state.md.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, run_dir / "state.md")
        print(hashlib.sha256(data).hexdigest(), flush=True)


if __name__ == "__main__":
    main()
