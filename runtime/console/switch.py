"""Whether the console is on: :func:`build_console` decides from the password and the listening host,
logs the decision, and only when it is on loads the application (:mod:`runtime.console.app`), so a
bot without a console password carries none of it.

On only with a password (:mod:`runtime.console.auth`). With none, the console is off and the start-up
log says how to turn it on (``console_off``); when the server listens off loopback and there is no
password, that line is an error (``console_refused``): the console would be a way into the bot for
anyone who reaches the port. A password file that cannot be read is an error line too, and the bot
runs on without the console.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Any

import structlog

from runtime.console.auth import PASSWORD_ENV, load_password
from runtime.ports import ConsoleSite

__all__ = ["HOW_TO", "build_console", "is_loopback"]

log = structlog.get_logger("greywind.console")
HOW_TO = f"set {PASSWORD_ENV}, or run: python -m runtime.console set-password"


def is_loopback(host: str) -> bool:
    text = host.strip().strip("[]")
    if text == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _running(gateway: object) -> bool:
    """Whether the gateway has started: the one runtime, or every account's stack."""
    stacks = getattr(gateway, "all_stacks", None)
    if callable(stacks):
        return all(getattr(stack, "running", False) for stack in stacks())
    return bool(getattr(gateway, "running", False))


def build_console(site: ConsoleSite, environ: Mapping[str, str] = os.environ) -> Any:
    """The console's ASGI application for ``site``, or None (off; logged)."""
    if not _running(site.gateway):
        log.warning("console_off", reason="no running runtime behind the edge")
        return None
    try:
        password = load_password(site.edge.data_dir, environ)
    except (OSError, ValueError) as exc:
        log.error("console_off", reason=str(exc))
        return None
    if password is None:
        if is_loopback(site.host):
            log.info("console_off", reason="no console password", how=HOW_TO)
        else:
            log.error(
                "console_refused",
                reason=f"HOST={site.host} is not loopback and no console password is set",
                how=HOW_TO,
            )
        return None
    from runtime.app.accounts import AccountsRuntime
    from runtime.app.runtime import Runtime
    from runtime.console.app import console_app

    gateway = site.gateway
    if not isinstance(gateway, Runtime | AccountsRuntime):
        log.warning("console_off", reason="the gateway is not GreyWind's runtime")
        return None
    app = console_app(site, gateway, password)
    log.info("console_on", path="/console/", password=password.origin)
    return app
