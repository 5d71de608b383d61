"""One router per page of the console, each with its API under ``/api/<page>``; the page itself is
one HTML file and one script in ``runtime/console/static``. :data:`ROUTERS` is the order they mount in."""

from __future__ import annotations

from fastapi import APIRouter

from runtime.console.pages import config, group, live, logs, memory, overview, session, whatif

__all__ = ["ROUTERS"]

ROUTERS: tuple[APIRouter, ...] = (
    session.router,
    overview.router,
    live.router,
    group.router,
    memory.router,
    whatif.router,
    config.router,
    logs.router,
)
