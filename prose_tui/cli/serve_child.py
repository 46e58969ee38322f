"""One browser tab's explorer as ``prose-tui serve`` starts it:
``python -m prose_tui.cli.serve_child PATH [options]``.

A PostgreSQL URL holds a password, and a process's argv is readable by every user of the
machine (``ps``, ``/proc/PID/cmdline``). So ``serve`` hands the URL over in the environment
(readable by the same user only): :data:`DATABASE_ENV` for a URL given as the target
(``serve URL``), :data:`POSTGRES_ENV` for ``serve --postgres URL``. This module takes them
out of its environment and calls the command line's ``main`` with them in the argument list
it passes in memory, so the explorer reads them exactly as ``prose-tui URL`` and
``prose-tui PATH --postgres URL`` would, and nothing it starts inherits them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping, Sequence

from prose_tui.cli.serve import DATABASE_ENV, POSTGRES_ENV

__all__ = ["DATABASE_ENV", "POSTGRES_ENV", "explorer_arguments", "main"]



def explorer_arguments(argv: Sequence[str], environ: MutableMapping[str, str]) -> list[str]:
    """``argv`` (``PATH [options]``) with the URLs of ``environ`` put back in: the database
    URL replaces PATH, the ``--postgres`` URL is appended. Both variables are removed from
    ``environ``."""
    args = list(argv)
    database = environ.pop(DATABASE_ENV, None)
    postgres = environ.pop(POSTGRES_ENV, None)
    if database:
        args[:1] = [database]
    if postgres:
        args += ["--postgres", postgres]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from prose_tui.cli.main import main as cli_main

    return cli_main(explorer_arguments(sys.argv[1:] if argv is None else argv, os.environ))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
