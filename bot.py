"""GreyWind's entry point: ``python bot.py``.

Serves the OneBot v11 reverse WebSocket at ``ws://HOST:PORT/onebot/v11/ws`` (NoneBot's ``HOST`` and
``PORT``, default 127.0.0.1:8080), checking ``ONEBOT_ACCESS_TOKEN`` when it is set; ``SUPERUSERS``
(a JSON list of QQ ids) may use the admin commands. GreyWind's own environment:

* ``GREYWIND_CONFIG``   the TOML config (default ``config/greywind.toml``), refused at start with a
  message naming any unknown key or bad value;
* ``GREYWIND_DATA_DIR`` the SQLite database and exports (default ``./data``);
* ``GREYWIND_LLM_BASE_URL`` / ``GREYWIND_LLM_API_KEY`` / ``GREYWIND_LLM_MODEL`` one OpenAI-compatible
  endpoint for every model role. With no model at all the bot still starts, says what to set, and runs
  in shadow mode (reads and decides, sends nothing).

The OneBot adapter is NoneBot's own behind a guard (``plugins/greywind/onebot_guard.py``): frames that
are not JSON (or nest absurdly deep) are skipped instead of closing the connection, and under a flood
events wait in a bounded backlog instead of spawning without limit, those addressed to the bot in a
lane of their own that is served first. Frames up to ``bot.max_frame_mb`` (64 MiB) are read. The
runtime (``runtime.app``) is wired in with ``use_runtime`` once the plugin is loaded.

Logs are structlog lines on stderr: JSON when stderr is not a terminal (``GREYWIND_LOG_FORMAT=json|
console`` to choose); the access token and API keys are masked everywhere. SIGTERM (or Ctrl-C) stops
the server, runs the shutdown hooks (state saved) and exits with status 0.

Off loopback the bot refuses to start without ``ONEBOT_ACCESS_TOKEN``: whoever reaches the port could
otherwise connect as an account and speak as any user, superusers included. Only the reverse WebSocket
is served (the adapter's HTTP event routes are not: they do not check the token).

``SUPERUSERS`` and ``PORT`` are read as people write them (``SUPERUSERS=12345``, ``12345,67890``,
``[12345]`` or NoneBot's own JSON list of strings), from the environment or NoneBot's ``.env`` files;
anything else is refused with one line naming the variable. The port is tried before anything starts.

The web console (``runtime.console``) is served at ``http://HOST:PORT/console/`` when
``GREYWIND_CONSOLE_PASSWORD`` is set or ``python -m runtime.console set-password`` has written a hash
into the data directory; otherwise it is off and the log says so (an error line off loopback).

With ``[store] backend = "postgresql"`` the accounts' leases are checked before anything starts too
(``lease_accounts``, or the ``[[accounts]]`` ids when it is empty): another live process serving one of
them is refused with one line saying which process and until when.

Exit status: 0 after a clean stop, 2 when the configuration is refused, 3 when the port is taken, 4 when
another process holds the lease of an account this one would serve, 5 when the PostgreSQL server cannot
be reached.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import signal
import socket
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.config import GreyWindConfig

HERE = Path(__file__).resolve().parent
DRIVER = "~fastapi+~websockets"
EXIT_CONFIG = 2
EXIT_PORT_BUSY = 3
EXIT_LEASE_HELD = 4
EXIT_STORE_UNREACHABLE = 5
# A QQ id, or NoneBot's ``adapter:id`` form of a superuser.
_SUPERUSER = re.compile(r"[A-Za-z0-9_.\-]+(?::[A-Za-z0-9_.\-]+)?")


class LaunchError(ValueError):
    """A launch variable that cannot be read; the message names it."""


def _config_file() -> Path:
    """``GREYWIND_CONFIG``, else ``config/greywind.toml`` here or beside this file."""
    if os.environ.get("GREYWIND_CONFIG"):
        return Path(os.environ["GREYWIND_CONFIG"])
    local = Path("config/greywind.toml")
    return local if local.exists() else HERE / local


def listen_refusal(host: object, access_token: str | None) -> str | None:
    """Why the bot must not listen on ``host`` (None when it may): off loopback, a token is required."""
    if access_token:
        return None
    text = str(host).strip().strip("[]")
    if text == "localhost":
        return None
    try:
        if ipaddress.ip_address(text).is_loopback:
            return None
    except ValueError:
        pass  # a host name: it may resolve to anything
    return (
        f"HOST={text} is not a loopback address and ONEBOT_ACCESS_TOKEN is not set: anyone who can reach "
        "the port could connect as the bot's account. Set ONEBOT_ACCESS_TOKEN (and the same token in the "
        "OneBot implementation), or listen on 127.0.0.1."
    )


def nonebot_setting(name: str, environ: Mapping[str, str], cwd: Path) -> str | None:
    """A NoneBot setting as NoneBot will see it: the environment first, then ``.env.<ENVIRONMENT>``,
    then ``.env`` (in the working directory)."""
    if name in environ:
        return environ[name]
    from dotenv import dotenv_values

    base = dotenv_values(cwd / ".env") if (cwd / ".env").is_file() else {}
    environment = environ.get("ENVIRONMENT") or base.get("ENVIRONMENT") or "prod"
    specific = cwd / f".env.{environment}"
    for values in (dotenv_values(specific) if specific.is_file() else {}, base):
        for key, value in values.items():
            if key.upper() == name and value is not None:
                return value
    return None


def parse_superusers(text: str) -> list[str]:
    """``12345``, ``12345,67890``, ``12345 67890``, ``[12345]``, ``["12345"]`` -> ids as strings."""
    stripped = text.strip()
    items: list[object]
    if stripped.startswith("["):
        try:
            loaded = json.loads(stripped)
        except json.JSONDecodeError:
            loaded = None
        if not isinstance(loaded, list):
            raise LaunchError(f"SUPERUSERS={text!r} is not a list of QQ ids (write SUPERUSERS=12345,67890)")
        items = loaded
    else:
        items = [part for part in re.split(r"[\s,，]+", stripped) if part]
    ids: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | str):
            raise LaunchError(f"SUPERUSERS={text!r}: {item!r} is not a QQ id")
        ident = str(item).strip()
        if not _SUPERUSER.fullmatch(ident):
            raise LaunchError(f"SUPERUSERS={text!r}: {ident!r} is not a QQ id")
        ids.append(ident)
    return list(dict.fromkeys(ids))


def parse_port(text: str) -> int:
    try:
        port = int(text.strip())
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise LaunchError(f"PORT={text!r} is not a port number (1-65535)")
    return port


def normalise_launch_environment(environ: MutableMapping[str, str], cwd: Path) -> None:
    """Rewrite ``SUPERUSERS`` and ``PORT`` into the forms NoneBot reads (the environment wins over its
    ``.env`` files, so a value read from a file is settled there too). Raises :class:`LaunchError`."""
    superusers = nonebot_setting("SUPERUSERS", environ, cwd)
    if superusers is not None:
        environ["SUPERUSERS"] = json.dumps(parse_superusers(superusers))
    port = nonebot_setting("PORT", environ, cwd)
    if port is not None:
        environ["PORT"] = str(parse_port(port))


def port_taken(host: str, port: int) -> str | None:
    """Why the bot cannot listen on ``host:port`` (None when it can), found before anything starts."""
    text = host.strip().strip("[]") or "127.0.0.1"
    family = socket.AF_INET6 if ":" in text else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server itself will
        try:
            probe.bind((text, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"PORT={port} on {text} is already in use: stop what listens there or set another PORT"
            return None  # e.g. a host name: the server will say
    return None


def store_refusal(config: GreyWindConfig) -> tuple[int, str] | None:
    """For a shared PostgreSQL store: why this start must not go on (exit status, one line), or None."""
    from runtime.config import ConfigError

    if config.store.backend != "postgresql":
        return None
    import asyncio

    from runtime.store.backends import postgres_dsn, process_leases
    from runtime.store.errors import StoreError, StoreLeaseError

    try:
        dsn = postgres_dsn(config.store)
        from runtime.store.postgres.lease import check_free

        asyncio.run(check_free(dsn, process_leases(config.store, config.account_ids())))
    except ConfigError as exc:
        return EXIT_CONFIG, str(exc)
    except ImportError as exc:
        return EXIT_CONFIG, (
            f"store.backend: 'postgresql' needs asyncpg ({exc}): pip install 'greywind[postgresql]'"
        )
    except StoreLeaseError as exc:
        return EXIT_LEASE_HELD, str(exc)
    except StoreError as exc:
        return EXIT_STORE_UNREACHABLE, str(exc)
    return None


def _install_stop_handlers() -> list[int]:
    """Uvicorn re-raises the signal that stopped it once shutdown is done; catching it here turns a
    completed graceful shutdown into exit status 0 instead of death by SIGTERM."""
    received: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    signal.signal(signal.SIGTERM, note)
    signal.signal(signal.SIGINT, note)
    return received


def main() -> int:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))

    from runtime.config import ConfigError, load_config
    from runtime.config.accounts import persona_names
    from runtime.logs import configure_logging, event_lines_written, route_loguru, secret_values_from_env

    path = _config_file()
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"greywind: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    refused = store_refusal(config)
    if refused is not None:
        print(f"greywind: {refused[1]}", file=sys.stderr)
        return refused[0]
    os.environ["GREYWIND_CONFIG"] = str(path)  # the plugin reads the same file
    try:
        normalise_launch_environment(os.environ, Path.cwd())
    except LaunchError as exc:
        print(f"greywind: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    level = os.environ.get("LOG_LEVEL", "INFO").upper()
    key_vars = [provider.api_key_env for provider in config.models.providers if provider.api_key_env]
    redactor = configure_logging(level=level, secrets=secret_values_from_env(extra_names=key_vars))

    import nonebot  # adds loguru's default handler on import; route_loguru replaces it
    import structlog

    route_loguru(redactor, level=level)

    log = structlog.get_logger("greywind.bot")
    nonebot.init(driver=DRIVER)
    driver = nonebot.get_driver()
    from nonebot.adapters.onebot.v11.config import Config as OneBotConfig

    refusal = listen_refusal(driver.config.host, nonebot.get_plugin_config(OneBotConfig).onebot_access_token)
    if refusal is not None:
        print(f"greywind: {refusal}", file=sys.stderr)
        return EXIT_CONFIG
    busy = port_taken(str(driver.config.host), int(driver.config.port))
    if busy is not None:
        print(f"greywind: {busy}", file=sys.stderr)
        return EXIT_PORT_BUSY
    nonebot.load_plugin("plugins.greywind")
    # Imported after the plugin is loaded: importing a plugin's module first would bypass NoneBot's loader.
    from plugins.greywind.console import use_console
    from plugins.greywind.event_lines import skip_event_lines
    from plugins.greywind.frame_lanes import LaneRules
    from plugins.greywind.gateway import use_runtime
    from plugins.greywind.onebot_guard import GuardedAdapter
    from plugins.greywind.validation_cache import install as keep_type_adapters
    from runtime.app import build_runtime
    from runtime.console import build_console

    keep_type_adapters()  # NoneBot's per-event validation, without a new pydantic schema each time
    if not event_lines_written(level):
        skip_event_lines()  # NoneBot's line per event, which the log would drop, is not built at all

    use_runtime(build_runtime)
    use_console(build_console)

    GuardedAdapter.configure(
        max_events_in_flight=config.bot.max_events_in_flight,
        max_backlog_bytes=config.bot.event_backlog_mb * 1024 * 1024,
        # Every account's persona names ([[accounts]]) take the priority lane, not only the shared one's.
        lanes=LaneRules(names=persona_names(config), command_prefix=config.bot.command_prefix),
    )
    driver.register_adapter(GuardedAdapter)

    received = _install_stop_handlers()
    log.info(
        "starting",
        config=str(path),
        listen=f"ws://{driver.config.host}:{driver.config.port}/onebot/v11/ws",
        access_token=bool(nonebot.get_plugin_config(OneBotConfig).onebot_access_token),
        superusers=len(driver.config.superusers),
    )
    # Uvicorn's own limit is 16 MiB; a frame above the configured one closes the connection (1009).
    # Uvicorn accepts permessage-deflate whenever the client offers it, which OneBot implementations'
    # WebSocket clients do by default: on by config only.
    nonebot.run(
        ws_max_size=config.bot.max_frame_mb * 1024 * 1024,
        ws_per_message_deflate=config.bot.ws_compression,
    )
    log.info("stopped", signal=signal.Signals(received[0]).name if received else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
