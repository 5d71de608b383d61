"""Process-wide logging: structlog, JSON in production, secrets never written.

``configure_logging(...)`` is called once by ``bot.py`` before NoneBot starts. Loggers are named per
subsystem (``structlog.get_logger("greywind.outbound")``) and bind their context once (``group``,
``thread_id``, ``episode_id``).

* **Format.** JSON lines when stderr is not a terminal or ``GREYWIND_LOG_FORMAT=json``; a readable
  console format on a terminal or with ``GREYWIND_LOG_FORMAT=console``.
* **Secrets.** Two layers: a value under a key that names a secret (``token``, ``api_key``,
  ``authorization``, ``secret``, ``password``) is replaced by ``"***"``; and every registered secret value
  (the OneBot access token, model API keys) is masked wherever it appears in any string, including
  NoneBot's own log lines (its DEBUG start-up line prints the whole config, token included).
* **NoneBot.** NoneBot and uvicorn log through loguru; :func:`route_loguru` replaces loguru's handlers
  with one that forwards to structlog, so the process writes one format. NoneBot's line for every
  event it receives ("OneBot V11 … | [message.group.normal]: Message …", at SUCCESS) and its two
  lines per matcher run ("Event will be handled by …", "… running complete") are dropped unless the
  level is DEBUG: the bot's own lines say what happened to a message, and rendering a line per
  message cost about as much as NoneBot's handling of it. The filter runs before anything is
  formatted or rendered; :func:`event_lines_written` says whether the event line is written at a
  level, so the edge can spare NoneBot building it at all.
* **Shutdown.** Once :func:`note_shutdown` is called (the edge does, on SIGTERM or Ctrl-C), NoneBot's
  "WebSocket ... closed by peer" warning is an info line: the server closing its connections on the
  way out is not a fault.
* **Taps.** :func:`add_log_tap` hears every line's fields once they are masked (the web console's
  live tail keeps the last ones in a bounded buffer).
* **Time.** JSON lines carry ISO UTC timestamps; the console format shows local time, as an operator
  reads a clock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, TextIO

import structlog

__all__ = [
    "REDACTED",
    "Redactor",
    "add_log_tap",
    "configure_logging",
    "event_lines_written",
    "note_shutdown",
    "route_loguru",
    "secret_values_from_env",
]

REDACTED = "***"
_SECRET_KEY = re.compile(r"(token|secret|password|passwd|api_?key|authorization|credential)", re.IGNORECASE)
# Values shorter than this are not masked inside other strings (too many false hits, little to leak).
_MIN_SECRET_LEN = 4
_LOGURU_METHODS = {5: "debug", 10: "debug", 20: "info", 25: "info", 30: "warning", 40: "error", 50: "error"}
# NoneBot's line for a connection closed under it: expected while the process stops.
_CLOSED_BY_PEER = re.compile(r"closed by peer")
_stopping = threading.Event()


def note_shutdown() -> None:
    """The process is stopping: connections closing from here on are expected."""
    _stopping.set()


# NoneBot's two INFO lines per matcher run.
_MATCHER_LINE = re.compile(r"^Event will be handled by |running complete$")
# NoneBot's SUCCESS line for every event received: "<adapter> <self id> | [message.group.normal]: ...".
_EVENT_LINE = re.compile(r" \| \[(?:message|notice|request)\.")
_LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "SUCCESS": 25, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


class Redactor:
    """A structlog processor that masks secret keys and known secret values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._pattern: re.Pattern[str] | None = None
        self._secrets: set[str] = set()
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        self._secrets.update(s for s in secrets if s and len(s) >= _MIN_SECRET_LEN)
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def mask(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern is not None else text

    def _clean(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            return self.mask(value)
        if depth < 4 and isinstance(value, dict):
            return {k: _masked(k, v) or self._clean(v, depth + 1) for k, v in value.items()}
        if depth < 4 and isinstance(value, list | tuple):
            return type(value)(self._clean(v, depth + 1) for v in value)
        if self._pattern is not None and not isinstance(value, int | float | bool | type(None)):
            return self.mask(repr(value))
        return value

    def __call__(
        self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key, value in list(event_dict.items()):
            event_dict[key] = _masked(key, value) or self._clean(value)
        return event_dict


def _is_secret_key(key: object) -> bool:
    return isinstance(key, str) and _SECRET_KEY.search(key) is not None


def _masked(key: object, value: Any) -> str | None:
    # Only text is a secret: "tokens_today = 1234" is a count, not a credential.
    return REDACTED if isinstance(value, str) and value and _is_secret_key(key) else None


def secret_values_from_env(
    env: MutableMapping[str, str] | None = None, extra_names: Iterable[str] = ()
) -> list[str]:
    """The values of every variable whose name says it is a secret, plus ``extra_names``."""
    env = os.environ if env is None else env
    names = {name for name in env if _is_secret_key(name)} | set(extra_names)
    return [env[name] for name in names if env.get(name)]


_taps: list[Callable[[Mapping[str, Any]], None]] = []


def add_log_tap(tap: Callable[[Mapping[str, Any]], None]) -> Callable[[], None]:
    """Hear every log line as its (masked) fields, before it is rendered (the console's log tail);
    returns the disposer. A tap must be quick; one that raises is ignored for that line."""
    _taps.append(tap)

    def dispose() -> None:
        if tap in _taps:
            _taps.remove(tap)

    return dispose


def _tap(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for tap in tuple(_taps):
        with contextlib.suppress(Exception):  # a tap's fault must not lose the line
            tap(event_dict)
    return event_dict


def configure_logging(
    *,
    level: str = "INFO",
    json: bool | None = None,
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> Redactor:
    """Configure structlog for the process; returns the redactor so more secrets can be added later."""
    stream = stream or sys.stderr
    if json is None:
        wanted = os.environ.get("GREYWIND_LOG_FORMAT", "").lower()
        json = wanted == "json" or (wanted != "console" and not stream.isatty())
    redactor = Redactor(secrets)
    renderer: Any = (
        structlog.processors.JSONRenderer(ensure_ascii=False)
        if json
        else structlog.dev.ConsoleRenderer(colors=stream.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            (
                structlog.processors.TimeStamper(fmt="iso", utc=True)
                if json
                else structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S", utc=False)
            ),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            redactor,
            _tap,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_level_number(level)),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    return redactor


def _level_number(level: str) -> int:
    """The number of a level's name, any case; an unknown name is INFO."""
    return _LEVELS.get(level.upper(), logging.INFO)


def event_lines_written(level: str) -> bool:
    """Whether :func:`route_loguru` at ``level`` writes NoneBot's line per event received (and its
    lines per matcher run): at DEBUG and below only."""
    return _level_number(level) <= _LEVELS["DEBUG"]


def route_loguru(redactor: Redactor, *, level: str = "INFO") -> None:
    """Send loguru's records (NoneBot, uvicorn) through structlog, masked like everything else."""
    from loguru import logger as loguru_logger  # NoneBot's dependency; imported only when routing

    target = structlog.get_logger("nonebot")
    threshold = _level_number(level)
    debugging = event_lines_written(level)

    def sink(message: Any) -> None:
        record = message.record
        if record["level"].no < threshold:
            return
        method = _LOGURU_METHODS.get(record["level"].no, "info")
        if method == "warning" and _stopping.is_set() and _CLOSED_BY_PEER.search(str(record["message"])):
            method = "info"
        fields: dict[str, Any] = {"source": record["name"]}
        if record["exception"] is not None and record["exception"].value is not None:
            fields["error"] = redactor.mask(repr(record["exception"].value))[:2000]
        getattr(target, method)(redactor.mask(str(record["message"])), **fields)

    def wanted(record: Any) -> bool:
        if debugging or not str(record["name"]).startswith("nonebot"):
            return True
        level = record["level"].no
        if level <= _LEVELS["INFO"]:
            return _MATCHER_LINE.search(record["message"]) is None
        return level != _LEVELS["SUCCESS"] or _EVENT_LINE.search(record["message"]) is None

    loguru_logger.remove()
    # The level given to loguru too, so records below it are dropped before they are formatted
    # (NoneBot logs every event at SUCCESS; formatting them all costs more than handling them).
    loguru_logger.add(sink, level=threshold, filter=wanted, colorize=False, backtrace=False, diagnose=False)
