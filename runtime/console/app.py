"""The console's application, built by :func:`console_app` once :mod:`runtime.console.switch` has
decided the console is on.

The application is FastAPI with no docs routes: one router per page (:mod:`runtime.console.pages`)
behind :class:`~runtime.console.security.ConsoleGuard`, and the pages themselves (HTML, one script
and the shared style and script files) as static files, so nothing needs building.

Over several accounts (an :class:`~runtime.app.accounts.AccountsRuntime`) each stack gets its own
view (:class:`~runtime.console.state.ConsoleState`): its runtime, its edge context (its layered
config, its outbound that hears only its chats) and its own live feed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.staticfiles import StaticFiles

from runtime.app.accounts import AccountsRuntime
from runtime.app.runtime import Runtime
from runtime.console.auth import LoginLimiter, Password, Sessions
from runtime.console.feed import LiveFeed
from runtime.console.pages import ROUTERS
from runtime.console.security import ConsoleGuard
from runtime.console.state import ConsoleState, UnknownAccount, known_account
from runtime.logs import add_log_tap
from runtime.ports import ConsoleSite, Outbound

__all__ = ["STATIC", "console_app"]

STATIC = Path(__file__).resolve().parent / "static"


def _feed(runtime: Runtime, outbound: Outbound, clock: Callable[[], float]) -> LiveFeed:
    """A live feed of ``runtime``'s decisions and of what ``outbound`` sent."""
    feed = LiveFeed(runtime.kernel, clock)
    scope = runtime.bot.core.scope
    scope.add(runtime.bot.core.why.subscribe(feed.on_result))
    scope.add(outbound.on_sent(feed.on_sent))
    return feed


def console_app(site: ConsoleSite, gateway: Runtime | AccountsRuntime, password: Password) -> FastAPI:
    """The application itself (the tests build it directly)."""
    clock = site.edge.clock
    sessions = Sessions(clock)
    if isinstance(gateway, AccountsRuntime):
        runtime, home = gateway.default, replace(site, edge=gateway.default.edge)
        outbound = runtime.edge.outbound  # the default stack's: it hears only the chats it serves
    else:
        runtime, home, outbound = gateway, site, site.edge.outbound
    state = ConsoleState(
        site=home,
        runtime=runtime,
        password=password,
        sessions=sessions,
        limiter=LoginLimiter(clock),
        feed=_feed(runtime, outbound, clock),
        clock=clock,
        shared_config=site.edge.config,
    )
    if isinstance(gateway, AccountsRuntime):
        for account, stack in gateway.stacks.items():
            state.accounts[account] = replace(
                state,
                site=replace(site, edge=stack.edge),
                runtime=stack,
                feed=_feed(stack, stack.edge.outbound, clock),
                account=account,
            )
    runtime.bot.core.scope.add(add_log_tap(state.logs))
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.console = state
    for router in ROUTERS:
        app.include_router(router, dependencies=[Depends(known_account)])

    @app.exception_handler(UnknownAccount)
    async def unknown_account(request: Request, exc: UnknownAccount) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=404)

    app.mount("/", StaticFiles(directory=STATIC, html=True), name="static")
    app.add_middleware(ConsoleGuard, sessions=sessions)
    return app
