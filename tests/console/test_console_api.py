"""The console's API over a running runtime: every route under /api/ refuses an anonymous request,
changes need the CSRF token, logins are rate-limited, and the pages show and steer the runtime
through its admin control."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import FastAPI
from starlette.routing import Mount, Route

from runtime.console.auth import LOGIN_FAILURES
from runtime.console.security import OPEN_ROUTES
from tests.app.conftest import SELF_ID
from tests.console.conftest import PASSWORD, console_for

pytestmark = pytest.mark.asyncio

CHAT = "group:500"


def flatten(routes: list[Any]) -> list[Any]:
    """The application's routes, included routers opened (no router here adds a prefix)."""
    out: list[Any] = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        out.extend(flatten(list(inner.routes)) if inner is not None else [route])
    return out


def api_routes(app: FastAPI) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for route in flatten(list(app.routes)):
        if isinstance(route, Route) and route.path.startswith("/api/"):
            found.extend((route.path, method) for method in sorted(route.methods or ()) if method != "HEAD")
        assert not (isinstance(route, Mount) and route.path.startswith("/api")), route
    return found


async def test_every_api_route_answers_401_without_a_session(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        routes = api_routes(console.app)
        assert len(routes) >= 10  # the pages' routes are all seen
        for path, method in routes:
            if (path, method) in OPEN_ROUTES:
                continue
            response = await console.client.request(method, "/console" + path + "?chat=" + CHAT, json={})
            assert response.status_code == 401, (path, method, response.status_code)
        # A forged cookie is no session either.
        console.client.cookies.set("greywind_console", "forged")
        assert (await console.client.get("/console/api/overview")).status_code == 401


async def test_login_sets_a_strict_httponly_cookie_and_changes_need_the_csrf_token(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        response = await console.client.post("/console/api/login", json={"password": PASSWORD})
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        assert "path=/console" in cookie
        assert "secure" not in cookie  # plain http here; over TLS it is Secure
        assert (await console.client.get("/console/api/overview")).status_code == 200
        refused = await console.client.post("/console/api/group/enabled", json={"chat": CHAT, "on": False})
        assert refused.status_code == 403
        assert console.harness.runtime.bot.core.groups.enabled(CHAT)
        console.client.headers["X-CSRF-Token"] = response.json()["csrf"]
        done = await console.client.post("/console/api/group/enabled", json={"chat": CHAT, "on": False})
        assert done.status_code == 200
        assert "已停用" in done.json()["answer"]
        assert not console.harness.runtime.bot.core.groups.enabled(CHAT)


async def test_failed_logins_are_limited_per_address_even_with_the_right_password_after(
    tmp_path: Path,
) -> None:
    async with console_for(tmp_path) as console:
        for _ in range(LOGIN_FAILURES):
            assert (
                await console.client.post("/console/api/login", json={"password": "nope"})
            ).status_code == 401
        limited = await console.client.post("/console/api/login", json={"password": PASSWORD})
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) > 0


async def test_pages_carry_a_strict_csp_and_the_login_page_is_a_password_form(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        page = await console.client.get("/console/login.html")
        assert page.status_code == 200
        assert 'type="password"' in page.text
        assert "<form" in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert "<script>" not in page.text  # scripts are files, never inline
        index = await console.client.get("/console/")
        assert index.status_code == 200
        assert "overview.js" in index.text


async def test_the_live_view_shows_a_message_with_its_decision_and_reasons(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        await console.login()
        await console.harness.say("灰风 你们在聊什么？", addressed=True)
        recent = (await console.client.get("/console/api/live/recent", params={"chat": CHAT})).json()
        [message] = recent["messages"]
        assert message["decision"] == "forced"
        assert message["reasons_zh"]
        assert message["text"] == "灰风 你们在聊什么？"
        groups = (await console.client.get("/console/api/groups")).json()["groups"]
        assert groups[0]["chat_id"] == CHAT
        assert groups[0]["per_minute"] == 1


async def test_a_threshold_override_changes_the_decision_and_survives_in_the_data_dir(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        await console.login()
        harness = console.harness
        before = await harness.say("今天的天气怎么样？")
        low = harness.runtime.bot.core.why.get(CHAT, before.message_id)
        assert low is not None
        assert low.attention.decision.value == "low"
        answer = await console.client.post(
            "/console/api/group/thresholds", json={"chat": CHAT, "high": 0.9, "medium": 0.01}
        )
        assert answer.status_code == 200
        assert answer.json()["thresholds"]["medium"] == {
            "value": 0.01,
            "origin": "group",
            "config": 0.35,
            "default": 0.35,
        }
        after = await harness.say("明天的天气怎么样？")
        scored = harness.runtime.bot.core.why.get(CHAT, after.message_id)
        assert scored is not None
        assert scored.attention.decision.value == "medium"
        assert (harness.data_dir / "thresholds.json").read_text(
            encoding="utf-8"
        ) == '{"group:500": {"high": 0.9, "medium": 0.01}}'
        bad = await console.client.post(
            "/console/api/group/thresholds", json={"chat": CHAT, "high": 0.1, "medium": 0.5}
        )
        assert "没有改" in bad.json()["answer"]
        assert harness.runtime.kernel.thresholds(CHAT).medium == 0.01


async def test_mute_lexicon_and_overview_go_through_the_admin_control(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        await console.login()
        muted = await console.client.post("/console/api/group/mute", json={"chat": CHAT, "minutes": 5})
        assert "安静 5 分钟" in muted.json()["answer"]
        group = (await console.client.get("/console/api/group", params={"chat": CHAT})).json()
        assert group["gate"]["open"] is False
        await console.client.post("/console/api/group/unmute", json={"chat": CHAT})
        added = await console.client.post(
            "/console/api/group/lexicon", json={"chat": CHAT, "action": "add", "term": "原神"}
        )
        assert "已加入" in added.json()["answer"]
        await console.client.post(
            "/console/api/group/lexicon", json={"chat": CHAT, "action": "pin", "term": "原神"}
        )
        group = (await console.client.get("/console/api/group", params={"chat": CHAT})).json()
        assert group["gate"]["open"] is True
        assert [(t["text"], t["status"]) for t in group["lexicon"]] == [("原神", "pinned")]
        overview = (await console.client.get("/console/api/overview")).json()
        titles = [card["title"] for card in overview["cards"]]
        assert titles == ["connections", "messages", "model", "health", "extensions"]


async def test_config_is_shown_masked_and_an_edited_copy_is_validated_by_the_bots_validator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-console-secret-1234")
    async with console_for(tmp_path) as console:
        await console.login()
        console.harness.runtime.edge.config_path.write_text(
            "[attention]\nhigh = 0.7\n# key once pasted here: sk-console-secret-1234\n", encoding="utf-8"
        )
        shown = (await console.client.get("/console/api/config")).json()
        assert "sk-console-secret-1234" not in str(shown)
        assert "***" in shown["text"]
        assert shown["effective"]["attention"]["high"] == 0.65  # the running config, not the file
        bad = (
            await console.client.post(
                "/console/api/config/validate", json={"text": "[attention]\nhigh = 2\n"}
            )
        ).json()
        assert bad["ok"] is False
        assert bad["keys"] == ["attention.high"]
        unknown = (
            await console.client.post(
                "/console/api/config/validate", json={"text": "[attention]\nhihg = 1\n"}
            )
        ).json()
        assert "unknown key" in unknown["error"]
        good = (
            await console.client.post("/console/api/config/validate", json={"text": shown["text"]})
        ).json()
        assert good == {"ok": True, "error": None, "keys": []}


async def test_the_log_tail_filters_by_level_and_chat_and_gives_only_what_is_new(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        await console.login()
        tail = console.app.state.console.logs
        tail({"event": "sent", "level": "info", "chat_id": CHAT, "parts": 1})
        tail({"event": "store_slow", "level": "warning"})
        tail({"event": "sent", "level": "info", "chat_id": "group:501"})
        lines = (await console.client.get("/console/api/logs", params={"chat": CHAT})).json()["lines"]
        assert [(line["event"], line["chat_id"]) for line in lines] == [("sent", CHAT)]
        warned = (await console.client.get("/console/api/logs", params={"level": "warning"})).json()["lines"]
        assert [line["event"] for line in warned] == ["store_slow"]
        last = warned[-1]["seq"]
        newer = (await console.client.get("/console/api/logs", params={"after": last})).json()["lines"]
        assert [line["chat_id"] for line in newer] == ["group:501"]


async def test_what_if_replays_the_chat_under_changed_thresholds(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        await console.login()
        harness = console.harness
        for text in ("今天天气不错", "是啊挺好", "晚上吃什么", "火锅吧", "好主意"):
            await harness.say(text)
            harness.clock.advance(30)
        # The account's owner, typing on a phone: not one of the bot's sends.
        owner = replace(harness.message("我先下了"), sender_id=SELF_ID, from_self=True, sent_elsewhere=True)
        await harness.runtime.on_message(owner)
        await harness.runtime.writer.flush()
        answer = await console.client.post(
            "/console/api/whatif", json={"chat": CHAT, "hours": 1, "high": 0.01, "medium": 0.0}
        )
        data = answer.json()
        assert data["messages"] == 5
        assert data["actual"]["sent"] == 0
        assert len(data["points"]) == 5
        now, changed = data["runs"]
        assert (now["high"], now["medium"]) == (0.65, 0.35)
        assert now["would_speak"] == 0  # small talk stays below the configured thresholds
        assert changed["would_speak"] >= 1
        refused = await console.client.post(
            "/console/api/whatif", json={"chat": CHAT, "hours": 1, "high": 0.2, "medium": 0.5}
        )
        assert "medium" in refused.json()["error"]


async def test_memory_shows_speaker_and_source_and_forgets_a_user(tmp_path: Path) -> None:
    from runtime.store.records import Memory, ScopeType

    async with console_for(tmp_path) as console:
        await console.login()
        harness = console.harness
        said = await harness.say("我下周去杭州出差", sender="42", name="阿明")
        await harness.say("我喜欢猫", sender="43", name="小红")
        await harness.runtime.writer.flush()
        store = harness.runtime.store
        now = harness.clock()
        await store.upsert_memory(
            Memory(
                "m1",
                ScopeType.CHAT,
                CHAT,
                "fact",
                "阿明下周去杭州",
                0.6,
                now,
                source_message_id=said.message_id,
                source_speaker_id="42",
            )
        )
        await store.upsert_memory(Memory("m2", ScopeType.USER, "42", "preference", "阿明爱吃辣", 0.5, now))
        await store.upsert_memory(Memory("m3", ScopeType.USER, "43", "preference", "小红喜欢猫", 0.5, now))
        shown = (await console.client.get("/console/api/memory", params={"chat": CHAT})).json()
        by_id = {m["id"]: m for m in shown["memories"]}
        assert set(by_id) == {"m1", "m2", "m3"}
        assert by_id["m1"]["speaker"] == "阿明"
        assert by_id["m1"]["source_text"] == "我下周去杭州出差"
        elsewhere = await console.client.post(
            "/console/api/memory/delete", json={"chat": "group:999", "id": "m3"}
        )
        assert elsewhere.json()["deleted"] == 0  # not one of that chat's
        forgot = await console.client.post("/console/api/memory/forget", json={"chat": CHAT, "user": "42"})
        assert forgot.json()["deleted"] == 2
        left = (await console.client.get("/console/api/memory", params={"chat": CHAT})).json()["memories"]
        assert [m["id"] for m in left] == ["m3"]
        await console.client.post("/console/api/memory/delete", json={"chat": CHAT, "id": "m3"})
        assert await store.get_memory("m3") is None


async def test_over_tls_the_session_cookie_is_secure(tmp_path: Path) -> None:
    async with console_for(tmp_path) as console:
        console.client.base_url = "https://127.0.0.1"
        response = await console.client.post("/console/api/login", json={"password": PASSWORD})
        assert "secure" in response.headers["set-cookie"].lower()


async def test_the_overview_shows_each_mcp_servers_state_and_last_error(tmp_path: Path) -> None:
    broken = {
        "servers": [
            {"name": "missing", "command": "/nonexistent/mcp-server", "allow": [500], "timeout_s": 1}
        ],
        "reconnect_min_ms": 5_000,
        "reconnect_max_ms": 10_000,
    }
    async with console_for(tmp_path, mcp=broken) as console:
        await console.login()
        with anyio.fail_after(15):
            while True:
                overview = (await console.client.get("/console/api/overview")).json()
                mcp = {c["title"]: c["rows"] for c in overview["cards"]}.get("mcp")
                if mcp and mcp[0][1]["state"] == "down" and "last_error" in mcp[0][1]:
                    break
                await anyio.sleep(0.05)
        [(name, server)] = mcp
        assert name == "missing"
        assert server["state"] == "down"
        assert server["tools"] == 0
        assert server["withheld"] == 0
        assert "/nonexistent/mcp-server" in server["last_error"]
        titles = [card["title"] for card in overview["cards"]]
        assert titles == ["connections", "messages", "model", "health", "extensions", "mcp"]
