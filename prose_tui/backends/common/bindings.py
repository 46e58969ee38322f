"""Binding files (seeds/filesystem.md, ``bindings/{name}.md`` and Scoped Bindings).

The header is ``# name``, ``kind:`` (``binding:`` in vm.log generations), optional
``execution_id:``, ``source:`` with a fenced ``prose`` block (or inline, ``source: caller``),
other ``key: value`` lines (``exit_code:``, ``stderr:``), then ``---`` and the value.
Real-world dialects handled: no header at all (the whole file is the value), YAML front
matter, ``.json`` bindings, ``bindings/{service}/{name}.md`` (contract runs), SOPS-encrypted
files. Only the head of a file is read to find the header; values are read on demand, in
windows, by ``read_value``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun, inside
from prose_tui.backends.common.encryption import looks_encrypted
from prose_tui.backends.common.text import open_regular, visible, visible_name
from prose_tui.model import Binding
from prose_tui.model.binding import natural_key

HEAD_BYTES = 16 * 1024
MAX_BINDING_DEPTH = 8  # folders below bindings/ that are searched for binding files
_SCOPED = re.compile(r"^(?P<name>.+?)__(?P<eid>\d+)$")
_FIELD = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_BINDING_SUFFIXES = (".md", ".json", ".txt", ".yaml", ".yml")


def name_and_scope(stem: str) -> tuple[str, int | None]:
    """``result__43`` -> (``result``, 43); ``research`` -> (``research``, None)."""
    m = _SCOPED.match(stem)
    if m:
        return m.group("name"), int(m.group("eid"))
    return stem, None


def parse_binding_head(head: str) -> tuple[dict[str, str], str | None, int | None, str | None]:
    """Parse the header of a binding file from its first bytes, decoded.

    Returns ``(fields, source, value_offset_chars, warning)``. ``value_offset_chars`` is
    the character offset of the value in ``head`` (``None`` when no header was found: the
    whole file is the value). Never raises.
    """
    if head.startswith("---\n") or head.startswith("---\r\n"):
        import frontmatter  # and PyYAML: only for a head that has front matter (start-up, issue 33)

        try:
            meta, _body = frontmatter.parse(head)
        except Exception:  # front matter that YAML rejects: show the file whole
            meta = {}
        if meta:
            end = head.find("\n---", 3)
            offset = head.find("\n", end + 1) + 1 if end >= 0 else 0
            return {str(k).lower(): str(v) for k, v in meta.items()}, None, offset, None
    lines = head.splitlines(keepends=True)
    fields: dict[str, str] = {}
    source_lines: list[str] = []
    in_fence = False
    pos = 0
    saw_field = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        pos += len(raw)
        if in_fence:
            if line.strip().startswith("```"):
                in_fence = False
            else:
                source_lines.append(line)
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "---":
            if saw_field:
                source = "\n".join(source_lines) if source_lines else fields.get("source") or None
                return fields, source, pos, None
            break
        if stripped.startswith("```"):
            if "source" in fields or saw_field:
                in_fence = True
                continue
            break
        if stripped.startswith("# ") and not saw_field and "title" not in fields:
            fields["title"] = stripped[2:].strip()
            continue
        m = _FIELD.match(stripped)
        if m:
            fields[m.group(1).lower()] = m.group(2).strip()
            saw_field = True
            continue
        break
    return {}, None, None, "no binding header (kind/source); the whole file is shown as the value"


_EXIT = re.compile(r"^\W*(?:exit[_ ]?code|exit[_ ]?status|returncode|rc)\W*[:=]\s*(-?\d+)", re.IGNORECASE | re.MULTILINE)
_ERROR_LINE = re.compile(
    r"^(?:.*\*\*\* .*\bError \d+.*"  # make: *** [all] Error 1
    r"|(?:error|fatal|fatal error)(?:\[\w+\])?:\s.+"  # error: x / fatal: x / error[E0425]: x
    r"|Traceback \(most recent call last\):"
    r"|npm ERR! .+"
    r"|(?:FAILED|FAIL)\b.+"
    r"|Command failed.+|.*\bexited with (?:code|status) [1-9]\d*.*)$", re.IGNORECASE | re.MULTILINE)


def failure_of(fields: dict[str, str], text: str) -> str | None:
    """What a binding records as failed: a non-zero exit code (a header field or a line of
    the value such as ``exit_code: 2``) and the first error line (``make: *** [all] Error 2``,
    ``error: …``, ``Traceback …``, ``npm ERR! …``, ``FAILED …``). ``None`` when neither.
    Real-world dialect: VMs that record a shell command's outcome in its binding."""
    code: int | None = None
    for key in ("exit_code", "exit-code", "exitcode", "exit_status", "returncode", "exit"):
        if key in fields and (m := re.match(r"\s*(-?\d+)", fields[key])):
            code = int(m.group(1))
            break
    if code is None and (m := _EXIT.search(text)):
        code = int(m.group(1))
    parts = [f"exit {code}"] if code else []
    if m := _ERROR_LINE.search(text):
        parts.append(m.group(0).strip()[:160])
    return " · ".join(parts) or None


def outside_binding(binding: Binding) -> Binding:
    """``binding`` marked as lying outside the run: not read, no size, the note as warning."""
    binding.outside, binding.bytes, binding.warning = True, 0, OUTSIDE_RUN
    return binding


def read_binding(path: Path, bindings_root: Path, root: Path | None = None) -> Binding:
    """Build a ``Binding`` from a file under ``bindings/``. Never raises.

    The name comes from the file name (scoped ``{name}__{execution_id}``); ``service`` is the
    folder between ``bindings/`` and the file for contract runs. With ``root`` (the run's
    ``run_root``), a file that resolves outside it (a symlink to ``~/secret.txt``) is not
    opened nor measured: it is marked ``outside`` (see ``outside_binding``).
    """
    rel = path.relative_to(bindings_root)
    name, eid = name_and_scope(visible_name(path.stem))
    service = visible_name(rel.parts[0]) if len(rel.parts) > 1 else None
    binding = Binding(name=name, path=path, execution_id=eid, service=service)
    try:  # opened first (checked against the root there), then measured by its descriptor
        with open_regular(path, root=root) as fh:
            st = os.fstat(fh.fileno())
            raw = fh.read(HEAD_BYTES)
    except OutsideRun:
        return outside_binding(binding)
    except OSError as exc:  # there but unreadable (permissions, a named pipe): say why; gone: missing
        try:
            st = path.stat()
        except OSError as gone:
            binding.exists = False
            binding.warning = f"cannot read {rel}: {gone.strerror or gone}"
            return binding
        binding.bytes, binding.mtime = st.st_size, st.st_mtime
        binding.warning = f"cannot read {rel}: {exc.strerror or exc}"
        return binding
    binding.bytes, binding.mtime = st.st_size, st.st_mtime
    head = raw.decode("utf-8", errors="replace")  # offsets must stay byte-true; sanitised on display
    if looks_encrypted(head):
        binding.encrypted = True
        binding.warning = "SOPS-encrypted: the value cannot be shown"
        return binding
    if path.suffix == ".json":
        binding.kind = "json"
        return binding
    fields, source, offset, warning = parse_binding_head(head)
    binding.fields = {k: visible(v) for k, v in fields.items() if k not in ("kind", "binding", "execution_id", "source", "title")} or None
    binding.kind = (fields.get("kind") or fields.get("binding") or None)
    if binding.kind:
        binding.kind = binding.kind.split()[0].lower()
    if "execution_id" in fields:
        m = re.search(r"\d+", fields["execution_id"])
        if m:
            binding.execution_id = int(m.group(0))
    binding.source = visible(source) if source else None
    binding.warning = warning
    binding.value_offset = len(head[:offset].encode("utf-8", errors="replace")) if offset else 0
    binding.failure = failure_of(fields, head[offset or 0:])
    return binding


def scan_bindings(run_dir: Path, root: Path | None = None) -> list[Binding]:
    """Every binding file under ``run_dir/bindings`` (recursively), in natural order of their
    paths (``s2`` before ``s10``; never the folder's listing order, which differs between
    filesystems): the order a run's bindings take where it records none. With
    ``root`` (the run's ``run_root``) a file, or a ``bindings/`` folder, that resolves
    outside it is listed ``outside`` and not read."""
    folder = run_dir / "bindings"
    if not folder.is_dir():
        return []
    if root is not None and not inside(folder, root):  # bindings/ itself a symlink elsewhere
        return [outside_binding(Binding(name="bindings", path=folder, exists=True))]
    found: list[Binding] = []
    base = len(folder.parts)
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        # Bindings sit at most a service folder deep; a pathologically deep tree would
        # otherwise exhaust os.walk's recursion (RecursionError) on Python 3.11.
        dirnames[:] = sorted(dirnames, key=lambda n: (natural_key(n), n)) if len(Path(dirpath).parts) - base < MAX_BINDING_DEPTH else []
        for fn in sorted(filenames, key=lambda n: (natural_key(n), n)):
            if fn.startswith(".") or not fn.endswith(_BINDING_SUFFIXES):
                continue
            found.append(read_binding(Path(dirpath) / fn, folder, root))
    return found


def is_binding_name(name: str) -> bool:
    """True when a file called ``name`` below ``bindings/`` is a binding file (its suffix)."""
    return name.endswith(_BINDING_SUFFIXES)


def is_binding_path(path: Path, run_dir: Path) -> bool:
    """True when ``path`` is a binding file of the run at ``run_dir``."""
    try:
        rel = path.relative_to(run_dir / "bindings")
    except ValueError:
        return False
    return bool(rel.parts) and is_binding_name(path.name)
