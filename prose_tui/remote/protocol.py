"""The framing of the remote reader's protocol, shared by both ends of the ssh connection.

Standard library only and no ``prose_tui`` import: this file's text is sent to the remote
host ahead of ``reader.py`` (see :func:`prose_tui.remote.client.reader_program`), so the two
ends frame messages with the very same code.

A frame on the wire is ``>I`` (4 bytes, big-endian: the length of what follows) and a chunk
of one zlib stream per direction, ended by ``Z_SYNC_FLUSH`` so that the chunk decodes at
once, at level 1 (a 3.4 MB event log compresses three times faster than at level 6 and
only 7 % larger; an appended event costs the same). Both ends keep their compressor or
decompressor for the whole connection: the JSON keys and paths a message repeats cost a
few bits after the first time (a 31-byte appended event line costs about 40 bytes on the
link, frame header included).

Decoded, a frame is one message: a JSON object (UTF-8), then, when the message carries
bytes (a file's content, an appended range), a NUL and those bytes raw (JSON text never
holds a raw NUL). :data:`MAX_FRAME` bounds a frame on the wire and :data:`MAX_MESSAGE` a
decoded message: a larger one is refused (:class:`FrameError`), never buffered; senders cut
file contents into pieces of :data:`CHUNK` bytes.
"""

from __future__ import annotations

import json
import struct
import zlib

PROTOCOL_VERSION = 1
MAX_FRAME = 8 * 1024 * 1024  # bytes of one compressed frame on the wire
MAX_MESSAGE = 8 * 1024 * 1024  # bytes of one decoded message (header and body)
CHUNK = 1024 * 1024  # a file's content goes in pieces of at most this many bytes
_HEADER = struct.Struct(">I")


class FrameError(ValueError):
    """The byte stream is not this protocol: a frame or message over the limits, a zlib
    stream that does not decode, or a message that is not a JSON object."""


class FrameWriter:
    """Encodes messages into frames for one direction of one connection (keeps the zlib
    stream: frames must be sent in the order :meth:`encode` made them)."""

    def __init__(self, level: int = 1) -> None:
        self._z = zlib.compressobj(level)

    def encode(self, message: dict, body: bytes = b"") -> bytes:
        """One frame holding ``message`` (a JSON-able dict) and ``body`` (raw bytes, may be
        empty). Raises :class:`FrameError` when the message is over :data:`MAX_MESSAGE`."""
        head = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(head) + 1 + len(body) > MAX_MESSAGE:
            raise FrameError(f"message of {len(head) + 1 + len(body)} bytes is over the limit of {MAX_MESSAGE}")
        data = self._z.compress(head + b"\0" + body if body else head) + self._z.flush(zlib.Z_SYNC_FLUSH)
        return _HEADER.pack(len(data)) + data


class FrameReader:
    """Decodes frames from a byte stream for one direction of one connection. :meth:`feed`
    takes bytes as they arrive, in pieces of any size (a frame torn across reads waits for
    its rest) and returns the whole messages they completed, as ``(message, body)``."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj()
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[tuple[dict, bytes]]:
        """The messages ``data`` completed, in order. Raises :class:`FrameError` for a frame
        over :data:`MAX_FRAME` (said before its bytes arrive), one that does not decode, or
        one that decodes to more than :data:`MAX_MESSAGE` bytes or to no JSON object."""
        self._buffer += data
        out: list[tuple[dict, bytes]] = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME:
                raise FrameError(f"frame of {size} bytes is over the limit of {MAX_FRAME}")
            if len(self._buffer) < _HEADER.size + size:
                break
            chunk = bytes(self._buffer[_HEADER.size:_HEADER.size + size])
            del self._buffer[:_HEADER.size + size]
            try:
                raw = self._z.decompress(chunk, MAX_MESSAGE + 1)
            except zlib.error as exc:
                raise FrameError(f"frame does not decode: {exc}") from None
            if len(raw) > MAX_MESSAGE or self._z.unconsumed_tail:
                raise FrameError(f"message is over the limit of {MAX_MESSAGE} bytes")
            out.append(_split(raw))
        return out


def _split(raw: bytes) -> tuple[dict, bytes]:
    head, sep, body = raw.partition(b"\0")
    try:
        message = json.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise FrameError("message is not JSON") from None
    if not isinstance(message, dict):
        raise FrameError("message is not a JSON object")
    return message, body if sep else b""
