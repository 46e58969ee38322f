"""A TCP port on 127.0.0.1 that stays the test server's from start to close.

Picking a free port by binding port 0 and closing the socket leaves a window before the
server binds it: another xdist worker's pick, another test run's, or an outgoing connection's
source port can take it, and the server fails to start (or, between a ``stop`` and a
``start`` on the same port, cannot come back). :class:`PortHold` closes that window: it
keeps a socket bound to the port with ``SO_REUSEADDR`` and never listening on it, for as
long as the server may use the port. The kernel then hands that port to nobody else (neither
another ``bind`` to port 0 nor a ``connect``'s source port), a plain ``bind`` to it fails,
and the server, which binds with ``SO_REUSEADDR`` too (sshd and PostgreSQL both do), still
can, again after every restart. Only a foreign program that binds this very port with
``SO_REUSEADDR`` in the instant before the server does can take it: ``startup_lost_port``
recognises that failure so the fixtures start again on another port.
"""

from __future__ import annotations

import socket

ADDRESS_IN_USE = ("Address already in use", "could not create any TCP/IP sockets")


class PortHold:
    """A port of 127.0.0.1 held for a server: ``port`` until :meth:`release`."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = int(self._sock.getsockname()[1])

    def release(self) -> None:
        """Let the port go (after the server has stopped for good). Idempotent."""
        self._sock.close()


def startup_lost_port(message: str) -> bool:
    """Whether a server's start-up error ``message`` says its port was taken."""
    return any(text in message for text in ADDRESS_IN_USE)
