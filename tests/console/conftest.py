"""The console's application over a running runtime with the fake edge (no NoneBot), driven with
httpx through ASGI: fast, and the same application the bot mounts."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from runtime.app.accounts import AccountsRuntime
from runtime.app.runtime import Runtime
from runtime.console.app import console_app
from runtime.console.auth import Password
from runtime.ports import ConsoleSite
from tests.app.conftest import Harness, make_config, running

PASSWORD = "correct horse battery"


@dataclass
class Console:
    harness: Harness
    app: FastAPI
    client: httpx.AsyncClient

    async def login(self) -> str:
        response = await self.client.post("/console/api/login", json={"password": PASSWORD})
        assert response.status_code == 200, response.text
        csrf: str = response.json()["csrf"]
        self.client.headers["X-CSRF-Token"] = csrf
        return csrf


@contextlib.asynccontextmanager
async def console_for(tmp_path: Path, **sections: Any) -> AsyncIterator[Console]:
    """Entered inside the test (the runtime's task group lives in the test's own task); ``sections``
    are config tables on top of the tests' own."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    async with running(
        make_config(None, scheduling={"high_delay_ms": 100, "medium_delay_ms": 100}, **sections),
        data_dir,
        model=False,
        shadow=True,
    ) as harness:
        site = ConsoleSite(harness.runtime, harness.runtime.edge, "127.0.0.1")
        async with mounted(site) as (inner, client):
            yield Console(harness, inner, client)


@contextlib.asynccontextmanager
async def mounted(site: ConsoleSite) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The console over ``site``'s (started) gateway, mounted as the edge mounts it, and a client."""
    assert isinstance(site.gateway, Runtime | AccountsRuntime)
    inner = console_app(site, site.gateway, Password.from_plain(PASSWORD, "test"))
    outer = FastAPI()
    outer.mount("/console", inner)
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield inner, client
