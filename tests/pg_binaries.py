"""Which PostgreSQL binaries the test server runs, and as whom.

The ``pgserver`` wheel (a test extra) bundles a PostgreSQL build. It cannot run where the
wheel was unpacked on a ``noexec`` mount (a clone with its venv under such a /tmp) or, as
root, below a folder the unprivileged server user cannot enter (``/root`` is mode 700): both
fail with "Permission denied". :func:`find_binaries` then copies the build to an exec-able
cache folder once per pgserver version, and falls back to the system's PostgreSQL; what it
tried is returned so a skip can say why no server could start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def server_user() -> str | None:
    """The user the server runs as: ``pgserver`` when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam("pgserver")
    except KeyError:
        made = subprocess.run(["useradd", "-s", "/bin/false", "pgserver"], capture_output=True)
        if made.returncode != 0:
            try:
                pwd.getpwnam("pgserver")  # another test process made it meanwhile
            except KeyError:
                raise subprocess.CalledProcessError(made.returncode, made.args, made.stdout, made.stderr) from None
    return "pgserver"


def _cannot_run(bindir: Path, user: str | None) -> str | None:
    """Why ``bindir/initdb --version`` cannot run as ``user``, or ``None`` when it runs.

    A wheel unpacked on a ``noexec`` mount (a venv under such a /tmp) or below a folder the
    server user cannot enter (``/root``, mode 700) fails here with "Permission denied"."""
    kwargs: dict = {"user": user} if user else {}
    try:
        subprocess.run([str(bindir / "initdb"), "--version"], check=True, capture_output=True, timeout=60, **kwargs)
    except subprocess.CalledProcessError as exc:
        return (exc.stderr or b"").decode(errors="replace").strip()[-200:] or f"exit status {exc.returncode}"
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None


def _bundled() -> Path | None:
    """The ``pgserver`` wheel's ``pginstall`` folder (bin, lib, share), or ``None``."""
    try:
        from pgserver import _commands  # the wheel's own PostgreSQL build
    except Exception:  # noqa: BLE001 - not installed or no build for this platform
        return None
    root = Path(_commands.POSTGRES_BIN_PATH).parent
    return root if (root / "bin" / "pg_ctl").exists() else None


def _exec_homes(user: str | None) -> list[Path]:
    """Folders an executable copy of the wheel's binaries may go to, best first: on a
    filesystem that allows exec, and (as root) that the ``pgserver`` user can enter.
    ``PROSE_TUI_PG_BIN_CACHE`` comes first when set."""
    import pwd

    homes: list[Path] = []
    if os.environ.get("PROSE_TUI_PG_BIN_CACHE"):
        homes.append(Path(os.environ["PROSE_TUI_PG_BIN_CACHE"]))
    if user is None:  # the real home, not a test's $HOME
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache")
        homes.append(Path(cache) / "prose-tui")
    else:
        homes += [Path("/var/cache/prose-tui"), Path("/opt/prose-tui")]
    return homes


def _noexec(path: Path) -> bool:
    """``path`` (or its nearest existing ancestor) is on a filesystem mounted ``noexec``."""
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return bool(os.statvfs(path).f_flag & os.ST_NOEXEC)
    except OSError:
        return True


def _exec_copy(pginstall: Path, user: str | None) -> tuple[Path | None, list[str]]:
    """Copy the wheel's ``pginstall`` (and the ``pgserver.libs`` its binaries' RPATH
    ``$ORIGIN/../../../pgserver.libs`` names) to an exec-able folder, once per version:
    ``(its bin folder, the folders that failed and why)``, or ``(None, ...)``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tag = "pgserver-" + version("pgserver")
    except PackageNotFoundError:
        tag = "pgserver"
    libs = pginstall.parent.parent / "pgserver.libs"
    tried: list[str] = []
    for home in _exec_homes(user):
        dest = home / tag
        bindir = dest / "pgserver" / "pginstall" / "bin"
        if _noexec(home):
            tried.append(f"{home}: mounted noexec")
            continue
        try:
            if not (dest / ".complete").exists():
                _copy_build(pginstall, libs, dest)
        except OSError as exc:
            tried.append(f"{home}: {exc}")
            continue
        why = _cannot_run(bindir, user)
        if why is None:
            return bindir, tried
        tried.append(f"{bindir}: {why}")
    return None, tried


def _copy_build(pginstall: Path, libs: Path, dest: Path) -> None:
    """Copy bin, lib, share and the wheel's ``pgserver.libs`` to ``dest`` in the same relative
    layout, readable and runnable by every user; built aside and renamed into place, so a
    half-made copy is never used and two processes copying at once both end with one."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.parent.chmod(0o755)
    work = dest.with_name(f"{dest.name}.part-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    try:
        for part in ("bin", "lib", "share"):
            shutil.copytree(pginstall / part, work / "pgserver" / "pginstall" / part, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, work / "pgserver.libs", symlinks=True)
        for item in [work, *work.rglob("*")]:
            if not item.is_symlink():
                mode = item.stat().st_mode
                item.chmod(mode | (0o755 if item.is_dir() or mode & 0o100 else 0o644))
        (work / ".complete").write_text(f"{pginstall}\n")
        if (dest / ".complete").exists():
            return  # another process finished first
        shutil.rmtree(dest, ignore_errors=True)  # a half-made copy from an interrupted run
        try:
            work.rename(dest)
        except OSError:
            if not (dest / ".complete").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _system_bins() -> list[Path]:
    """The system PostgreSQL's bin folders (Debian's ``postgresql`` package, or on PATH)."""
    found = shutil.which("pg_ctl")
    bins = [Path(found).resolve().parent] if found else []
    bins += sorted((c for c in Path("/usr/lib/postgresql").glob("*/bin") if (c / "pg_ctl").exists()), reverse=True)
    return list(dict.fromkeys(bins))


_CHOSEN: tuple[Path | None, str] | None = None


def find_binaries(user: str | None) -> tuple[Path | None, str]:
    """A bin folder with ``initdb``/``pg_ctl`` that runs as ``user``, and what was tried.

    Order: the ``pgserver`` wheel's build where it was installed; a copy of it in an
    exec-able cache (a venv on a ``noexec`` /tmp, or below a folder the server user cannot
    enter); the system's PostgreSQL. Chosen once per process."""
    global _CHOSEN
    if _CHOSEN is not None:
        return _CHOSEN
    tried: list[str] = []
    bindir: Path | None = None
    pginstall = _bundled()
    if pginstall is None:
        tried.append("pgserver: not installed (the test extras install it)")
    else:
        why = _cannot_run(pginstall / "bin", user)
        if why is None:
            bindir = pginstall / "bin"
        else:
            tried.append(f"pgserver at {pginstall / 'bin'}: {why}")
            bindir, more = _exec_copy(pginstall, user)
            tried += more
    if bindir is None:
        system = _system_bins()
        for cand in system:
            why = _cannot_run(cand, user)
            if why is None:
                bindir = cand
                break
            tried.append(f"system PostgreSQL at {cand}: {why}")
        if not system:
            tried.append("system PostgreSQL: not installed (apt-get install postgresql)")
    _CHOSEN = (bindir, "; ".join(tried))
    return _CHOSEN
