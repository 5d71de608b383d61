"""Who may use the console: the password, the sessions, the login rate limit, CSRF tokens.

The console is a new way into the bot, so it is off unless an operator set a password: the
``GREYWIND_CONSOLE_PASSWORD`` environment variable, or an argon2 hash in the data directory
(``console_password``, written by ``python -m runtime.console set-password``; the file wins over the
variable). The variable's value is hashed once at start and never kept in the clear.

A login gives a random session token in an ``HttpOnly``, ``SameSite=Strict`` cookie scoped to the
console's path (``Secure`` when the request came over TLS) and a CSRF token the page sends back in the
``X-CSRF-Token`` header with every state-changing request. Sessions live in memory (a restart logs
everyone out), idle ones expire, and there are at most :data:`MAX_SESSIONS` (the oldest goes).
Failed logins are counted per client address: after :data:`LOGIN_FAILURES` within
:data:`LOGIN_WINDOW` seconds that address is refused (HTTP 429) until the window has passed, even
with the right password.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from argon2 import PasswordHasher

__all__ = [
    "LOGIN_FAILURES",
    "LOGIN_WINDOW",
    "MAX_SESSIONS",
    "PASSWORD_ENV",
    "PASSWORD_FILE",
    "LoginLimiter",
    "Password",
    "Session",
    "Sessions",
    "load_password",
    "write_password",
]

PASSWORD_ENV = "GREYWIND_CONSOLE_PASSWORD"
PASSWORD_FILE = "console_password"
MIN_PASSWORD = 8
LOGIN_FAILURES = 5
LOGIN_WINDOW = 300.0
MAX_SESSIONS = 64
SESSION_IDLE = 12 * 3600.0


@cache
def _hasher() -> PasswordHasher:
    """argon2's hasher with its default (RFC 9106 low-memory) parameters, loaded on first use."""
    from argon2 import PasswordHasher

    return PasswordHasher()


class Password:
    """An argon2 hash and the check against it (constant time, by the library)."""

    __slots__ = ("_hash", "origin")

    def __init__(self, hashed: str, origin: str) -> None:
        self._hash = hashed
        self.origin = origin  # "env" or the file's path, for the start-up log

    @classmethod
    def from_plain(cls, plain: str, origin: str) -> Password:
        return cls(_hasher().hash(plain), origin)

    def check(self, plain: str) -> bool:
        from argon2.exceptions import InvalidHashError, VerificationError

        try:
            return _hasher().verify(self._hash, plain)
        except (VerificationError, InvalidHashError):  # a mismatch is a VerificationError
            return False


def load_password(data_dir: Path, environ: Mapping[str, str] = os.environ) -> Password | None:
    """The console's password: the hash file in ``data_dir``, else the environment variable; None
    when neither is set (the console stays off). A file that is not an argon2 hash raises ValueError."""
    path = data_dir / PASSWORD_FILE
    if path.is_file():
        hashed = path.read_text(encoding="utf-8").strip()
        if not hashed.startswith("$argon2"):
            how = "set it again with python -m runtime.console set-password"
            raise ValueError(f"{path} does not hold an argon2 hash: {how}")
        return Password(hashed, str(path))
    plain = environ.get(PASSWORD_ENV, "")
    if plain:
        return Password.from_plain(plain, PASSWORD_ENV)
    return None


def write_password(data_dir: Path, plain: str) -> Path:
    """Hash ``plain`` into the data directory's password file (owner-only); raises ValueError when it
    is shorter than :data:`MIN_PASSWORD` characters."""
    if len(plain) < MIN_PASSWORD:
        raise ValueError(f"the console password needs at least {MIN_PASSWORD} characters")
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / PASSWORD_FILE
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(_hasher().hash(plain) + "\n")
    os.replace(temporary, path)
    return path


@dataclass(slots=True)
class Session:
    token: str
    csrf: str
    created: float
    seen: float

    def csrf_ok(self, header: str | None) -> bool:
        return header is not None and hmac.compare_digest(header.encode(), self.csrf.encode())


class Sessions:
    """Logged-in sessions by token, in memory, bounded, expiring when idle."""

    def __init__(
        self, clock: Callable[[], float], *, idle: float = SESSION_IDLE, most: int = MAX_SESSIONS
    ) -> None:
        self._clock = clock
        self._idle = idle
        self._most = most
        self._by_token: OrderedDict[str, Session] = OrderedDict()

    def open(self) -> Session:
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now, now)
        self._by_token[session.token] = session
        while len(self._by_token) > self._most:
            self._by_token.popitem(last=False)
        return session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        session = self._by_token.get(token)
        if session is None:
            return None
        now = self._clock()
        if now - session.seen > self._idle:
            del self._by_token[token]
            return None
        session.seen = now
        self._by_token.move_to_end(token)
        return session

    def close(self, token: str | None) -> None:
        if token:
            self._by_token.pop(token, None)

    def __len__(self) -> int:
        return len(self._by_token)


class LoginLimiter:
    """Failed logins per client address within a sliding window; bounded in addresses."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        failures: int = LOGIN_FAILURES,
        window: float = LOGIN_WINDOW,
        addresses: int = 4_096,
    ) -> None:
        self._clock = clock
        self._failures = failures
        self._window = window
        self._addresses = addresses
        self._by_address: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, address: str) -> float:
        """Seconds until ``address`` may try again (0: now)."""
        times = self._by_address.get(address)
        if not times:
            return 0.0
        now = self._clock()
        while times and now - times[0] >= self._window:
            times.popleft()
        if len(times) < self._failures:
            return 0.0
        return max(0.0, times[0] + self._window - now)

    def failed(self, address: str) -> None:
        times = self._by_address.get(address)
        if times is None:
            times = self._by_address[address] = deque(maxlen=self._failures)
            while len(self._by_address) > self._addresses:
                self._by_address.popitem(last=False)
        self._by_address.move_to_end(address)
        times.append(self._clock())

    def succeeded(self, address: str) -> None:
        self._by_address.pop(address, None)
