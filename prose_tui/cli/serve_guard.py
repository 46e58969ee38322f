"""The door of ``prose-tui serve``: who may load the page, its assets and its websocket.

One aiohttp middleware (:meth:`Guard.middleware`) sits in front of every route of the
textual-serve application and answers HTTP 403 unless all of these hold:

- **Token.** The request carries the server's secret token, as ``?token=`` in the URL or
  as the cookie the page sets (``HttpOnly``, ``SameSite=Strict``, named after the port, so
  two servers on one host keep theirs apart). Compared with :func:`hmac.compare_digest`.
- **Origin.** A request that names an ``Origin`` (every browser websocket handshake does)
  names the origin the browser used to reach this server (``scheme://`` + the ``Host``
  header) or the ``--public-url``'s. ``null`` and every other origin are refused. A client
  that sends no ``Origin`` (a script, not a browser page) still needs the token.
- **Host.** Served on loopback (no ``--allow-remote``), the ``Host`` header must name a
  loopback address, ``localhost`` or the ``--public-url``'s host: a page on a name that
  was rebound to 127.0.0.1 (DNS rebinding) is refused even before the token is checked.

Responses also say ``Referrer-Policy: no-referrer`` (the token in the page's URL never
leaves in a ``Referer``), forbid framing and, for the page, keep it from any other origin
(``Content-Security-Policy``: scripts, styles, fonts and images from this server only).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from yarl import URL

__all__ = ["TOKEN_ENV", "TOKEN_QUERY", "Guard", "TokenError", "choose_token", "is_loopback", "origin_of"]

TOKEN_ENV = "PROSE_TUI_SERVE_TOKEN"
"""Environment variable that chooses the token (``--token-file`` wins over it)."""
TOKEN_QUERY = "token"
"""The URL query parameter that carries the token."""
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$")

Origin = tuple[str, str, int | None]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class TokenError(ValueError):
    """The chosen token cannot be used (unreadable or empty file, empty variable)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def choose_token(token_file: Path | None, environ: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """The token for this server and where it came from: ``token_file``'s first line, else
    :data:`TOKEN_ENV`, else a fresh ``secrets.token_urlsafe(32)`` (256 bits; origin ``None``).
    Raises :class:`TokenError` for a file that cannot be read or an empty token."""
    env = os.environ if environ is None else environ
    if token_file is not None:
        try:
            lines = token_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
            raise TokenError(f"--token-file {token_file}: {reason}") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise TokenError(f"--token-file {token_file}: the file is empty (write the token on its first line)")
        return token, f"--token-file {token_file}"
    if TOKEN_ENV in env:
        token = env[TOKEN_ENV].strip()
        if not token:
            raise TokenError(f"{TOKEN_ENV} is set but empty")
        return token, TOKEN_ENV
    return secrets.token_urlsafe(32), None


def origin_of(url: str) -> Origin | None:
    """``(scheme, host, port)`` of a URL or ``Origin`` header, lower-cased, ``ws``/``wss``
    as ``http``/``https`` and the scheme's default port filled in; ``None`` when it names
    no host (``null``, a path, garbage)."""
    try:
        parsed = URL(url.strip())
        host = parsed.host
        port = parsed.port
    except (ValueError, TypeError):
        return None
    scheme = {"ws": "http", "wss": "https"}.get(parsed.scheme.lower(), parsed.scheme.lower())
    if scheme not in ("http", "https") or not host:
        return None
    return scheme, host.lower().rstrip("."), port


def host_name(host_header: str) -> str | None:
    """The host part of a ``Host`` header (no port, no brackets), or ``None`` if malformed."""
    match = _HOST.match(host_header.strip())
    return match.group(1).strip("[]").lower().rstrip(".") if match else None


@dataclass
class Guard:
    """The checks for one server. ``token`` is the secret; ``public_url`` the URL given with
    ``--public-url`` (or ``None``); ``allow_remote`` lifts the loopback-``Host`` rule;
    ``cookie_name`` is set once the port is known (:meth:`bind`)."""

    token: str = field(repr=False)
    public_url: str | None = None
    allow_remote: bool = False
    cookie_name: str = "prose-tui-token"
    _public: Origin | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._public = origin_of(self.public_url) if self.public_url else None

    def bind(self, port: int) -> None:
        """Name the cookie after the port the server listens on (cookies ignore ports)."""
        self.cookie_name = f"prose-tui-token-{port}"

    # -- the three checks ---------------------------------------------------------------------
    def token_matches(self, candidate: str | None) -> bool:
        """True when ``candidate`` is the token (constant-time comparison)."""
        if not candidate:
            return False
        return hmac.compare_digest(candidate.encode("utf-8", "replace"), self.token.encode("utf-8"))

    def host_allowed(self, host: str) -> bool:
        """True for a ``Host`` name this server answers to (see the module docstring)."""
        if self.allow_remote or is_loopback(host):
            return True
        return self._public is not None and host == self._public[1]

    def origin_allowed(self, origin: str, request: web.Request) -> bool:
        """True when ``origin`` is the one the browser reached this server at, or the public URL's."""
        given = origin_of(origin)
        if given is None:
            return False
        return given in (origin_of(f"{request.scheme}://{request.host}"), self._public)

    # -- the middleware -----------------------------------------------------------------------
    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        host = host_name(request.host)
        if host is None or not self.host_allowed(host):
            return _refuse(f"this server does not answer to the host {request.host!r}. Open the link "
                           "prose-tui serve printed (or give --public-url for the name you use).")
        origin = request.headers.get("Origin")
        if origin is not None and not self.origin_allowed(origin, request):
            return _refuse("a page from another origin may not use this server.")
        by_query = self.token_matches(request.query.get(TOKEN_QUERY))
        by_cookie = self.token_matches(request.cookies.get(self.cookie_name))
        if not (by_query or by_cookie):
            return _refuse("open the link prose-tui serve printed when it started (it ends in ?token=...).")
        response = await handler(request)
        if not response.prepared:  # a websocket or a streamed download has sent its headers already
            self._secure(request, response, set_cookie=by_query and not by_cookie)
        return response

    def _secure(self, request: web.Request, response: web.StreamResponse, *, set_cookie: bool) -> None:
        headers = response.headers
        headers.setdefault("Referrer-Policy", "no-referrer")
        headers.setdefault("X-Content-Type-Options", "nosniff")
        headers.setdefault("X-Frame-Options", "DENY")
        headers.setdefault("Cache-Control", "no-store")
        if response.content_type == "text/html":
            scheme, rest = (self.public_url or f"{request.scheme}://{request.host}").split("://", 1)
            ws = f"{'wss' if scheme == 'https' else 'ws'}://{rest.split('/', 1)[0]}"
            headers["Content-Security-Policy"] = (
                "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
                f"img-src 'self' data:; font-src 'self'; connect-src 'self' {ws}; "
                "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
        if set_cookie:
            secure = request.secure or (self._public is not None and self._public[0] == "https")
            response.set_cookie(self.cookie_name, self.token, path="/", httponly=True, samesite="Strict",
                                secure=secure)


def _refuse(reason: str) -> web.Response:
    return web.Response(status=403, text=f"403 Forbidden: {reason}\n",
                        headers={"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"})
