"""Logging in and out: ``POST /api/login`` (JSON ``{"password"}``, rate-limited per address),
``POST /api/logout``, ``GET /api/session`` (the CSRF token for a page that reloaded)."""

from __future__ import annotations

import math
from typing import Any

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from runtime.console.auth import SESSION_IDLE
from runtime.console.security import COOKIE
from runtime.console.state import console_state, session_of

__all__ = ["router"]

log = structlog.get_logger("greywind.console")
router = APIRouter()


class Login(BaseModel):
    password: str = Field(max_length=1024)


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


@router.post("/api/login")
async def login(body: Login, request: Request) -> JSONResponse:
    state = console_state(request)
    address = _address(request)
    wait = state.limiter.retry_after(address)
    if wait > 0:
        log.warning("console_login_limited", address=address, retry_after=round(wait))
        return JSONResponse(
            {"error": "too many failed logins", "retry_after": math.ceil(wait)},
            status_code=429,
            headers={"Retry-After": str(math.ceil(wait))},
        )
    if not state.password.check(body.password):
        state.limiter.failed(address)
        log.warning("console_login_failed", address=address)
        return JSONResponse({"error": "wrong password"}, status_code=401)
    state.limiter.succeeded(address)
    session = state.sessions.open()
    log.info("console_login", address=address)
    response = JSONResponse({"csrf": session.csrf})
    response.set_cookie(
        COOKIE,
        session.token,
        max_age=int(SESSION_IDLE),
        path=request.scope.get("root_path") or "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/api/logout")
async def logout(request: Request) -> JSONResponse:
    state = console_state(request)
    state.sessions.close(session_of(request).token)
    response = JSONResponse({"ok": True})
    response.delete_cookie(COOKIE, path=request.scope.get("root_path") or "/")
    return response


@router.get("/api/session")
async def current(request: Request) -> dict[str, Any]:
    state = console_state(request)
    edge = state.site.edge
    return {
        "csrf": session_of(request).csrf,
        "persona": edge.config.persona.name,
        "shadow_mode": edge.shadow_mode,
        # The header's account selector: the account this page works on (None: the default stack)
        # and every listed account (empty with one account: no selector).
        "account": state.account,
        "accounts": [
            {"id": account, "persona": view.site.edge.config.persona.name}
            for account, view in state.accounts.items()
        ],
    }
