"""World-model versions: ``world-models/<hex(node)>/published.json`` and the ``OPWM1`` frames
in ``versions/sha256_<hex>.bin`` (openprose-0.15 reactor.md; the layout read from the
Reactor SDK's FileSystemWorldModelStore files).

A frame is ``b"OPWM1"``, then a little-endian u32 file count, then per file a u32 name
length, the UTF-8 name (a path such as ``state/summary.md``), a u32 data length and the
data. The version id is ``sha256:`` + the SHA-256 of the whole frame file.
``published.json`` is ``{version, fingerprints}``: the node's current published truth.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from prose_tui.backends.common.contained import OUTSIDE_RUN, OutsideRun
from prose_tui.backends.common.text import decode, open_regular

MAGIC = b"OPWM1"
MAX_FRAME = 64 * 1024 * 1024  # larger version files are not decoded
RAW_SHOWN = 16 * 1024  # bytes of a bad frame shown as a hex dump


@dataclass(slots=True)
class FrameFile:
    name: str
    data: bytes


@dataclass(slots=True)
class Published:
    """A node's ``published.json``: ``version`` (a content address such as ``sha256:…``),
    ``fingerprints`` and the version file it names (``None`` when ``version`` is absent)."""

    version: str | None
    fingerprints: dict[str, str]
    file: Path | None


def version_file(node_dir: Path, version: str) -> Path:
    """``versions/sha256_<hex>.bin`` for ``version`` ``sha256:<hex>``."""
    return node_dir / "versions" / (version.replace(":", "_").replace("/", "_") + ".bin")


def read_published(node_dir: Path, root: Path | None = None) -> tuple[Published | None, str | None]:
    """The node's ``published.json`` (``None`` when absent) and a warning when malformed or
    outside ``root`` (the state dir's ``run_root``: never read then)."""
    path = node_dir / "published.json"
    try:
        with open_regular(path, root=root) as fh:
            data = json.loads(fh.read())
    except FileNotFoundError:
        return None, None
    except OutsideRun:
        return None, f"{path.parent.name}/published.json: {OUTSIDE_RUN}"
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return None, f"{path.parent.name}/published.json could not be read: {exc}"
    if not isinstance(data, dict):
        return None, f"{path.parent.name}/published.json is not an object"
    version = data.get("version") if isinstance(data.get("version"), str) else None
    fps = data.get("fingerprints")
    fingerprints = {k: v for k, v in fps.items() if isinstance(v, str)} if isinstance(fps, dict) else {}
    return Published(version, fingerprints, version_file(node_dir, version) if version else None), None


def decode_frame(data: bytes) -> tuple[list[FrameFile], str | None]:
    """The files of an ``OPWM1`` frame and an error sentence (``None`` when it decoded whole).
    Files decoded before a fault are returned with the error."""
    if not data.startswith(MAGIC):
        return [], f"not an OPWM1 frame (starts with {data[:8]!r})"
    files: list[FrameFile] = []
    pos = len(MAGIC)
    if len(data) < pos + 4:
        return [], "the frame ends before its file count"
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    if count > (len(data) - pos) // 8:
        return [], f"the frame says {count} files, more than its {len(data)} bytes can hold"
    for i in range(count):
        parts: list[bytes] = []
        for what in ("name", "data"):
            if len(data) < pos + 4:
                return files, f"file {i + 1} of {count}: the frame ends before its {what} length (byte {pos})"
            (length,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if pos + length > len(data):
                return files, f"file {i + 1} of {count}: its {what} runs past the end of the frame ({length} bytes at byte {pos})"
            parts.append(data[pos : pos + length])
            pos += length
        try:
            name = parts[0].decode("utf-8")
        except UnicodeDecodeError:
            name = decode(parts[0])
        files.append(FrameFile(name, parts[1]))
    if pos != len(data):
        return files, f"{len(data) - pos} bytes follow the last file of the frame"
    return files, None


def read_frame(path: Path, root: Path | None = None) -> tuple[list[FrameFile], bytes, str | None]:
    """Decode the frame file at ``path``: ``(files, raw bytes, error)``. Raises ``OSError``;
    ``OutsideRun`` for a file outside ``root`` (the state dir's ``run_root``)."""
    with open_regular(path, root=root) as fh:
        raw = fh.read(MAX_FRAME + 1)
    if len(raw) > MAX_FRAME:
        return [], raw[:RAW_SHOWN], f"the version file is larger than {MAX_FRAME // (1024 * 1024)} MB; not decoded"
    files, error = decode_frame(raw)
    return files, raw, error


def hexdump(data: bytes, limit: int = RAW_SHOWN) -> str:
    """``data`` (at most ``limit`` bytes) as offset / hex / ASCII lines: safe for a terminal."""
    lines = []
    for off in range(0, min(len(data), limit), 16):
        chunk = data[off : off + 16]
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{off:08x}  {chunk.hex(' '):<47}  {text}")
    if len(data) > limit:
        lines.append(f"… {len(data) - limit} more bytes")
    return "\n".join(lines)


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def render_file(f: FrameFile) -> str:
    """One file of a world model as Markdown: Markdown as written, JSON pretty-printed in a
    fence, other text fenced, binary data as a hex dump."""
    try:
        text = f.data.decode("utf-8")
    except UnicodeDecodeError:
        return _fence(hexdump(f.data))
    text = decode(f.data)
    lower = f.name.lower()
    if lower.endswith(".json"):
        try:
            return _fence(json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json")
        except ValueError:
            return _fence(text, "json")
    if lower.endswith((".md", ".markdown")):
        return text
    return _fence(text)


def render_world_model(files: list[FrameFile], raw: bytes, error: str | None) -> str:
    """The text a value view shows for a version: each file under its name (one file alone
    without a heading); after a frame error, the raw bytes as a hex dump."""
    parts: list[str] = []
    if len(files) == 1 and error is None:
        parts.append(render_file(files[0]))
    else:
        for f in files:
            parts.append(f"### {f.name}\n\n{render_file(f)}")
    if error is not None:
        parts.append(f"**Frame error:** {error}. Raw bytes:\n\n{_fence(hexdump(raw))}")
    if not parts:
        parts.append("(the version holds no files)")
    return "\n\n".join(parts)
