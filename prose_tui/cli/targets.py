"""What a command is pointed at, for every command alike: a path, or a PostgreSQL URL (issue 29).

``PATH`` means that path alone: its runs on disk, plus a database named by ``--postgres URL``
or found as the VM finds it (``OPENPROSE_POSTGRES_URL`` in ``.env`` or the environment, then
``DATABASE_URL``; ``--no-postgres``: none). ``URL`` (``postgresql://…``) means that database
alone: no folder is read, no ``.env`` is consulted. ``URL#RUN_ID`` names one run of it.

The URL is parsed once, into a :class:`~prose_tui.backends.common.dburl.DatabaseUrl` (its
``repr`` shows ``db@host`` only), so an argparse ``Namespace`` never holds it as text;
:class:`RedactingArgumentParser` takes it out of argparse's own error messages, which echo
argv. Public for every command, ``serve`` included:

* :func:`target_argument` adds a ``PATH|URL`` positional, :func:`add_postgres_options` the
  options every backend adds (``RunBackend.add_options``: PostgreSQL's
  ``--postgres``/``--postgres-env``/``--no-postgres`` and ``--poll``/``--listen``);
  :func:`resolve_target` gives the target they name together;
* :func:`sources_for` gives the sources of runs off disk (a PostgreSQL database) a target and
  those options ask for, from every backend (``RunBackend.sources_for``);
* :func:`open_target_run` reads the one run a target names (path, ``-`` for stdin, or
  ``URL#RUN_ID``);
* :func:`install_redacting_excepthooks` makes an uncaught exception's traceback pass
  through ``redact`` too (the console entry point installs it).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import NoReturn

from prose_tui.backends.common.dburl import Target, parse_target, redact
from prose_tui.backends.common.status import DEFAULT_STALE_AFTER
from prose_tui.backends.protocol import RunSource
from prose_tui.backends.registry import option_backends
from prose_tui.model import Run

__all__ = ["DEFAULT_TARGET", "RedactingArgumentParser", "TargetError", "add_postgres_options", "any_target",
           "install_redacting_excepthooks", "open_target_run", "resolve_target", "sources_for", "target_argument"]

DEFAULT_TARGET = Target(path=Path("."))  # what an omitted PATH means (the very object, to tell it from ".")


class TargetError(ValueError):
    """The command line names no usable target (the message is safe to print)."""


class RedactingArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose error messages (``invalid int value: '…'``,
    ``unrecognized arguments: …``, which quote argv) pass through
    :func:`~prose_tui.backends.common.dburl.redact`. Subparsers made from it are of this
    class too (argparse's default ``parser_class``)."""

    def error(self, message: str) -> NoReturn:
        super().error(redact(message))


def any_target(text: str | Path) -> Target:
    """:func:`parse_target`, and an ``ssh://[user@]host[:port]/path`` or ``host:path`` target
    (issue 34) as a path that :func:`resolve_target`/:func:`open_target_run` turn into the
    local copy of the remote runs (``prose_tui.remote``). An argparse ``type``."""
    from prose_tui.remote import remote_path

    try:
        remote = remote_path(str(text)) if not isinstance(text, Path) else None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return Target(path=remote) if remote is not None else parse_target(text)


def _localized(target: Target, *, complete: bool = True) -> Target:
    """``target`` with a remote path replaced by its local copy (connecting once; ``complete``:
    see ``prose_tui.remote.localize``); raises :class:`TargetError` with ssh's reason when the
    host cannot be read."""
    from prose_tui.remote import RemoteError, localize

    try:
        path = localize(target.path, complete=complete)
    except RemoteError as exc:
        raise TargetError(str(exc)) from None
    return target if path is target.path else Target(path=path)


def target_argument(parser: argparse.ArgumentParser, dest: str = "path", *, metavar: str = "PATH",
                    default: str | None = ".", what: str = "a project, .prose, runs or run folder") -> None:
    """Add a positional ``PATH|URL`` argument parsed into a :class:`Target` (``default``
    ``None``: required)."""
    kwargs: dict = {}
    if default is not None:
        kwargs = {"nargs": "?", "default": DEFAULT_TARGET if default == "." else parse_target(default)}
    parser.add_argument(dest, type=any_target, metavar=metavar, **kwargs,
                        help=f"{what}, a postgresql:// URL for that database alone, or "
                             "ssh://[user@]host[:port]/path (or host:path) on another machine"
                             + (f" (default: {default})" if default is not None else ""))


def add_postgres_options(parser: argparse.ArgumentParser, *, live: bool) -> None:
    """The options every backend adds (``RunBackend.add_options``, in registry order): today
    PostgreSQL's ``--postgres URL`` / ``--postgres-env VAR`` / ``--no-postgres`` (and, when
    ``live``, ``--poll``/``--listen``)."""
    for backend in option_backends():
        backend.add_options(parser, live=live)


def resolve_target(args: argparse.Namespace, dest: str = "path", *, complete: bool = True) -> Target:
    """The target ``args`` name: the positional ``PATH|URL``, or the URL in the environment
    variable ``--postgres-env`` names (``complete=False``, the explorer: an ssh target's big
    log may still be copied behind its newest events). Raises :class:`TargetError` (a safe message) when
    both are given or the variable holds no ``postgresql://`` URL."""
    target: Target = getattr(args, dest)
    variable = getattr(args, "postgres_env", None)
    if not variable:
        return _localized(target, complete=complete)
    if target is not DEFAULT_TARGET:
        raise TargetError(f"give {target} or --postgres-env {variable}, not both")
    value = os.environ.get(variable, "").strip()
    named = parse_target(value, f"{variable} in the environment")
    if named.database is None:
        raise TargetError(f"--postgres-env {variable}: the environment variable holds no postgresql:// URL")
    return named


def sources_for(target: Target, args: argparse.Namespace | None = None) -> list[RunSource]:
    """The sources of runs off disk that ``target`` and ``args`` ask for, from every backend
    (``RunBackend.sources_for``; PostgreSQL: the target's database alone for a URL; for a
    path, ``--postgres`` if given, else, unless ``--no-postgres``, the database the VM of
    that path would use). ``[]`` for none. No connection is made here."""
    from prose_tui.remote import mirror_of

    if mirror_of(target.path) is not None:  # a remote target (ssh): no database is looked for
        return []
    return [source for backend in option_backends() for source in backend.sources_for(target, args)]


def open_target_run(target: Target, stale_after: float = DEFAULT_STALE_AFTER) -> Run:
    """The one run ``target`` names, read in full: a run path (``-``: a narration on stdin)
    or ``URL#RUN_ID``. Raises ``NotARunError`` (a safe message) for a path that is not a run,
    a URL without ``#RUN_ID`` or a run the database does not have, ``FileNotFoundError`` for
    a missing path and ``OSError`` (``DatabaseUnavailable``, safe) for a database that cannot
    be read."""
    from prose_tui.backends import NotARunError, open_run
    from prose_tui.backends.common.status import apply_staleness
    from prose_tui.backends.registry import open_text

    target = _localized(target)
    if target.database is None:
        assert target.path is not None
        if str(target.path) == "-":
            run = open_text(sys.stdin.read())  # a narration on stdin (RunBackend.open_text)
            if run is None:
                raise NotARunError("standard input: no backend reads a run from text")
            return run
        return open_run(target.path, stale_after=stale_after)
    source = sources_for(Target(database=target.database))[0]
    if target.run_id is None:
        source.list_runs()  # an unreachable database says so first
        raise NotARunError(f"{source.label}: name the run as URL#RUN_ID (prose-tui runs URL lists them)")
    try:
        run = source.open_id(target.run_id)
    except KeyError:
        raise NotARunError(f"{source.label} has no run {target.run_id!r} (prose-tui runs URL lists them)") from None
    apply_staleness(run, stale_after=stale_after)
    return run


def install_redacting_excepthooks() -> None:
    """Print uncaught exceptions (main thread: ``sys.excepthook``; other threads:
    ``threading.excepthook``) as Python does, through :func:`redact`: a bug's traceback
    quotes exception texts, which may hold a URL. For a process's entry point only (it
    replaces the hooks process-wide)."""

    def main_hook(exc_type, exc, tb) -> None:
        sys.stderr.write(redact("".join(traceback.format_exception(exc_type, exc, tb))))

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "?"
        text = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
        sys.stderr.write(redact(f"Exception in thread {name}:\n{text}"))

    sys.excepthook = main_hook
    threading.excepthook = thread_hook
