"""The console's guard, in front of every route: security headers on every answer, and under
``/api/`` a logged-in session (401 otherwise) and, for anything but GET/HEAD, the session's CSRF
token in ``X-CSRF-Token`` (403 otherwise). Only the login itself is open, and it takes JSON only
(a cross-site form cannot send it without the browser asking first).

The Content-Security-Policy allows scripts, styles and connections from the console's own origin
only, no inline script and no framing; chat text is always set as text by the pages, so a message
holding markup stays inert even if it reached the DOM.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette._utils import get_route_path

from runtime.console.auth import Sessions

__all__ = ["COOKIE", "CSP", "OPEN_ROUTES", "ConsoleGuard"]

COOKIE = "greywind_console"
CSRF_HEADER = b"x-csrf-token"
# Every route under /api/ needs a session except these (path, method).
OPEN_ROUTES = frozenset({("/api/login", "POST")})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
_SAFE = frozenset({"GET", "HEAD"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def _cookie(scope: Scope, name: str) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                k, _, v = part.strip().partition("=")
                if k == name:
                    return str(v)
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class ConsoleGuard:
    """ASGI middleware; see the module docstring."""

    def __init__(self, app: App, sessions: Sessions) -> None:
        self._app = app
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = get_route_path(scope)
        api = path.startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                headers.extend(_HEADERS)
                if api:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        if api and (path, scope["method"]) not in OPEN_ROUTES:
            session = self._sessions.get(_cookie(scope, COOKIE))
            if session is None:
                await _refuse(send_with_headers, 401, "login required")
                return
            if scope["method"] not in _SAFE and not session.csrf_ok(_header(scope, CSRF_HEADER)):
                await _refuse(send_with_headers, 403, "missing or wrong CSRF token")
                return
            scope["greywind.session"] = session
        await self._app(scope, receive, send_with_headers)


async def _refuse(send: Send, status: int, error: str) -> None:
    body = json.dumps({"error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
