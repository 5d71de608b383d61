"""The console over several accounts (``[[accounts]]``): every page and API works on the account
``?account=`` picks, an account the process does not serve is a 404 naming those it does (and still a
401 to an anonymous request), and the overview lists the accounts with their connection state and
where each value that is not the built-in default comes from.

The gateway is the real :class:`~runtime.app.accounts.AccountsRuntime` with two account stacks and
the default one, over the fake edge, as ``tests/app/test_accounts.py`` builds it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from structlog.testing import capture_logs

from runtime.config import GreyWindConfig, parse_config
from runtime.console.auth import PASSWORD_ENV
from runtime.console.security import OPEN_ROUTES
from runtime.console.switch import build_console
from runtime.ports import ConsoleSite
from tests.app.conftest import make_config
from tests.app.test_accounts import A, Accounts, B, chat, serving
from tests.console.conftest import PASSWORD, mounted
from tests.console.test_console_api import api_routes

pytestmark = pytest.mark.asyncio

UNKNOWN = "99999"


def two_accounts() -> GreyWindConfig:
    data = make_config(None, budget={"window_ms": 120_000}).model_dump(mode="json", exclude={"accounts"})
    data["accounts"] = [
        {
            "id": A,
            "persona": {"name": "小灰", "aliases": []},
            "budget": {"max_per_window": 1},
            "attention": {"high": 0.8},
        },
        {"id": B, "persona": {"name": "阿蓝", "aliases": []}},
    ]
    return parse_config(data)


def edge_figures() -> dict[str, Any]:
    """What the edge reports: A connected, B connected but paused by a restriction, one more account
    connected that no table lists."""
    return {
        "connected_bots": [A, B, "10003"],
        "outbound": {"accounts": [{"account": B, "state": "open"}]},
    }


@contextlib.asynccontextmanager
async def console_over_accounts(tmp_path: Path) -> AsyncIterator[tuple[Accounts, FastAPI, httpx.AsyncClient]]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    async with serving(two_accounts(), data_dir) as h:
        site = ConsoleSite(h.gateway, h.gateway.edge, "127.0.0.1", edge_figures)
        async with mounted(site) as (app, client):
            yield h, app, client


async def login(client: httpx.AsyncClient) -> None:
    response = await client.post("/console/api/login", json={"password": PASSWORD})
    assert response.status_code == 200, response.text
    client.headers["X-CSRF-Token"] = response.json()["csrf"]


def card(overview: dict[str, Any], title: str) -> dict[str, Any]:
    rows = next(c for c in overview["cards"] if c["title"] == title)["rows"]
    return dict(rows)


async def test_the_console_is_on_over_several_accounts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    async with serving(two_accounts(), data_dir) as h:
        with capture_logs() as logs:
            app = build_console(
                ConsoleSite(h.gateway, h.gateway.edge, "127.0.0.1"), {PASSWORD_ENV: "s3cret-enough"}
            )
        assert app is not None
        assert [entry["event"] for entry in logs] == ["console_on"]


async def test_every_route_refuses_an_unknown_account_with_404_and_anonymous_with_401(tmp_path: Path) -> None:
    async with console_over_accounts(tmp_path) as (_, app, client):
        routes = [route for route in api_routes(app) if route not in OPEN_ROUTES]
        assert len(routes) >= 10
        query = f"?chat={chat(A)}&account={UNKNOWN}"
        for path, method in routes:
            response = await client.request(method, "/console" + path + query, json={})
            assert response.status_code == 401, (path, method, response.status_code)
        await login(client)
        for path, method in routes:
            response = await client.request(method, "/console" + path + query, json={})
            assert response.status_code == 404, (path, method, response.status_code)
            error = response.json()["error"]
            assert UNKNOWN in error
            assert A in error
            assert B in error
        # The session survived the refused logout, and a known account answers.
        known = await client.get("/console/api/overview", params={"account": A})
        assert known.status_code == 200


async def test_the_header_lists_the_accounts_and_each_page_works_on_the_one_picked(tmp_path: Path) -> None:
    async with console_over_accounts(tmp_path) as (h, _, client):
        await login(client)
        session = (await client.get("/console/api/session", params={"account": A})).json()
        assert session["account"] == A
        assert session["persona"] == "小灰"
        assert session["accounts"] == [{"id": A, "persona": "小灰"}, {"id": B, "persona": "阿蓝"}]
        assert (await client.get("/console/api/session")).json()["account"] is None

        await h.say("今天吃什么", account=A)
        await h.settle()
        live_a = (await client.get("/console/api/live/recent", params={"chat": chat(A), "account": A})).json()
        assert [m["text"] for m in live_a["messages"]] == ["今天吃什么"]
        live_b = (await client.get("/console/api/live/recent", params={"chat": chat(A), "account": B})).json()
        assert live_b["messages"] == []
        groups_a = (await client.get("/console/api/groups", params={"account": A})).json()["groups"]
        assert [g["chat_id"] for g in groups_a] == [chat(A)]
        assert (await client.get("/console/api/groups", params={"account": B})).json()["groups"] == []

        # A change through account B's page reaches B's stack only.
        answer = await client.post(
            "/console/api/group/lexicon",
            params={"account": B},
            json={"chat": chat(B), "action": "add", "term": "原神"},
        )
        assert "已加入" in answer.json()["answer"]
        group_b = (await client.get("/console/api/group", params={"chat": chat(B), "account": B})).json()
        assert [t["text"] for t in group_b["lexicon"]] == ["原神"]
        group_a = (await client.get("/console/api/group", params={"chat": chat(B), "account": A})).json()
        assert group_a["lexicon"] == []

        config_b = (await client.get("/console/api/config", params={"account": B})).json()
        assert config_b["effective"]["persona"]["name"] == "阿蓝"


async def test_group_settings_show_the_account_layer_in_each_values_origin(tmp_path: Path) -> None:
    async with console_over_accounts(tmp_path) as (_, _, client):
        await login(client)
        group_a = (await client.get("/console/api/group", params={"chat": chat(A), "account": A})).json()
        assert group_a["thresholds"]["high"]["origin"] == "account"
        assert group_a["thresholds"]["high"]["value"] == 0.8
        assert group_a["thresholds"]["medium"]["origin"] == "default"
        budget = group_a["budget"]
        assert budget["max_per_window"] == {"value": 1, "origin": "account"}
        assert budget["window_ms"] == {"value": 120_000, "origin": "config"}
        assert budget["min_interval_ms"]["origin"] == "default"
        group_b = (await client.get("/console/api/group", params={"chat": chat(B), "account": B})).json()
        assert group_b["thresholds"]["high"]["origin"] == "default"
        assert group_b["budget"]["max_per_window"]["origin"] == "default"
        # A chat's own override still wins, and says so.
        await client.post(
            "/console/api/group/thresholds", params={"account": A}, json={"chat": chat(A), "high": 0.7}
        )
        group_a = (await client.get("/console/api/group", params={"chat": chat(A), "account": A})).json()
        assert group_a["thresholds"]["high"] == {
            **group_a["thresholds"]["high"],
            "value": 0.7,
            "origin": "group",
        }


async def test_the_overview_lists_the_accounts_and_where_values_come_from(tmp_path: Path) -> None:
    async with console_over_accounts(tmp_path) as (_, _, client):
        await login(client)
        overview = (await client.get("/console/api/overview", params={"account": A})).json()
        assert overview["account"] == A
        assert overview["persona"] == "小灰"
        assert overview["cards"][0]["title"] == "accounts"
        accounts = card(overview, "accounts")
        assert accounts == {f"{A} 小灰": "online", f"{B} 阿蓝": "restricted", "unlisted": ["10003"]}
        origins = card(overview, "origins")
        assert origins["budget.max_per_window"] == {"value": 1, "origin": "account"}
        assert origins["attention.high"] == {"value": 0.8, "origin": "account"}
        assert origins["persona.name"] == {"value": "小灰", "origin": "account"}
        assert origins["budget.window_ms"] == {"value": 120_000, "origin": "config"}
        assert "attention.medium" not in origins  # the built-in default: not listed
        shared = card((await client.get("/console/api/overview")).json(), "origins")
        assert {v["origin"] for v in shared.values()} == {"config"}
        assert "budget.max_per_window" not in shared
