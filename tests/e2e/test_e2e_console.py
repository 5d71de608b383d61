"""The console in a real headless Chromium against the real ``bot.py``: log in, watch a message arrive
in the live view with its decision and reasons, see a hostile message stay inert text, disable a group
and see the bot stay silent there, edit a threshold and see the next message answered. Each page is
saved as a screenshot under ``tests/artifacts/console/``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.browser import chromium_page, screenshot
from tests.e2e.live import (
    TaggedModel,
    connected_peer,
    quiet_for,
    reply_text,
    scripted_bot,
    steps,
    tag,
    tool_call,
)
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio, pytest.mark.timeout(120)]

SELF_ID = 10_000
PASSWORD = "console-e2e-password"
CONFIG = """
[scheduling]
high_delay_ms = 100
medium_delay_ms = 100
"""


@pytest.fixture(scope="module")
def model() -> Iterator[TaggedModel]:
    with ScriptedOpenAIServer() as server:
        yield TaggedModel(server)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory, model: TaggedModel) -> Iterator[BotProcess]:
    with scripted_bot(
        tmp_path_factory.mktemp("console"),
        model.server,
        config=CONFIG,
        env={"GREYWIND_CONSOLE_PASSWORD": PASSWORD},
    ) as process:
        yield process


def chat_of(group: int) -> str:
    return f"qq:{SELF_ID}:group:{group}"


def console_url(bot: BotProcess, page: str = "") -> str:
    return f"http://127.0.0.1:{bot.port}/console/{page}"


async def log_in(page: Any, bot: BotProcess, *, shot: bool = False) -> None:
    await page.goto(console_url(bot))
    await page.wait_for_url("**/login.html")
    assert await page.get_attribute("input#password", "type") == "password"
    if shot:
        await screenshot(page, "login")
    await page.fill("input#password", PASSWORD)
    await page.click("button[type=submit]")
    await page.wait_for_url("**/index.html")
    await page.wait_for_selector("#card-connections")


async def test_log_in_and_watch_a_message_arrive_with_its_decision_and_reasons(
    bot: BotProcess, model: TaggedModel, tmp_path: Path
) -> None:
    group = 800_601
    model.on("lv1", steps(reply_text(f"在的{tag('lv1')}")))
    model.on("lv2", steps(reply_text(f"我看到了{tag('lv2')}")))
    async with connected_peer(bot, self_id=SELF_ID) as peer, chromium_page(tmp_path / "profile") as page:
        await peer.say_in_group(group, 7001, ob.at(SELF_ID), f" 在吗{tag('lv1')}")
        await peer.wait_for_call("send_group_msg", lambda c: tag("lv1") in c.text, within=15)
        await log_in(page, bot, shot=True)
        await page.wait_for_selector("#card-messages dd")
        # One account: no account selector, the header as it always was.
        assert await page.locator("select#account").count() == 0
        assert "null" not in await page.inner_text("nav#nav")
        assert await page.evaluate(
            "() => [...document.getElementById('nav').childNodes].every((n) => n.nodeType === 1)"
        )
        await screenshot(page, "overview")
        await page.goto(console_url(bot, f"live.html?chat={chat_of(group)}"))
        await page.wait_for_selector("li.msg[data-message-id]")
        await asyncio.sleep(0.5)  # the stream is open once the page has drawn the recent messages
        message_id = await peer.say_in_group(group, 7002, ob.at(SELF_ID), f" 你看得到我吗{tag('lv2')}")
        row = page.locator(f'li.msg[data-message-id="{message_id}"]')
        await row.wait_for(timeout=10_000)
        assert tag("lv2") in await row.locator(".text").inner_text()
        assert await row.locator(".decision").inner_text() == "被点名"
        assert "被点名" in await row.locator(".reasons").inner_text()
        assert "注意力" in await row.locator(".score").inner_text()
        # The reply arrives in the same view, then the message's activation shows it was answered.
        await page.locator("li.msg.reply", has_text=tag("lv2")).wait_for(timeout=15_000)
        await page.wait_for_function(
            f"""() => {{ const r = document.querySelector('li.msg[data-message-id="{message_id}"] .state');
                        return r && r.textContent.includes('已回复'); }}""",
            timeout=10_000,
        )
        await screenshot(page, "live")
        # English is a click away; the kernel's own codes are shown then.
        await page.click("#lang")
        await page.wait_for_selector("text=Live")
        # No script error and no CSP violation (the 401 before logging in is the page's own redirect).
        assert [e for e in page.errors if "status of 401" not in e] == []


async def test_a_hostile_message_is_shown_as_inert_text(bot: BotProcess, tmp_path: Path) -> None:
    group = 800_602
    hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    async with connected_peer(bot, self_id=SELF_ID) as peer, chromium_page(tmp_path / "profile") as page:
        await peer.say_in_group(group, 7003, "大家好")
        await log_in(page, bot)
        await page.goto(console_url(bot, f"live.html?chat={chat_of(group)}"))
        await page.wait_for_selector("li.msg[data-message-id]")
        await asyncio.sleep(0.5)
        message_id = await peer.say_in_group(group, 7004, hostile)
        row = page.locator(f'li.msg[data-message-id="{message_id}"]')
        await row.wait_for(timeout=10_000)
        assert await row.locator(".text").inner_text() == hostile
        assert await page.locator("#messages img, #messages script").count() == 0
        await asyncio.sleep(0.5)
        assert await page.evaluate("window.__pwned") is None
        await screenshot(page, "live-hostile")


async def test_disabling_a_group_in_the_console_keeps_the_bot_silent_there(
    bot: BotProcess, model: TaggedModel, tmp_path: Path
) -> None:
    group = 800_603
    model.on("off1", steps(reply_text(f"不该出现{tag('off1')}")))
    async with connected_peer(bot, self_id=SELF_ID) as peer, chromium_page(tmp_path / "profile") as page:
        await peer.say_in_group(group, 7005, "有人吗")
        await log_in(page, bot)
        await page.goto(console_url(bot, f"group.html?chat={chat_of(group)}"))
        await page.wait_for_selector("#toggle-enabled")
        await screenshot(page, "group")
        await page.click("#toggle-enabled")
        await page.wait_for_selector("#answer:has-text('已停用')")
        await page.wait_for_selector("#enabled-state.warn")
        await screenshot(page, "group-disabled")
        await peer.say_in_group(group, 7006, ob.at(SELF_ID), f" 在吗{tag('off1')}")
        await quiet_for(model.server, 1.5)
        assert model.requests_for("off1") == []
        assert [c for c in peer.sends() if c.params.get("group_id") == group] == []


async def test_a_threshold_edited_in_the_console_takes_effect_on_the_next_message(
    bot: BotProcess, model: TaggedModel, tmp_path: Path
) -> None:
    group = 800_604
    model.on("th1", steps(reply_text(f"不该出现{tag('th1')}")))
    model.on("th2", steps(reply_text(f"我也觉得{tag('th2')}")))
    async with connected_peer(bot, self_id=SELF_ID) as peer, chromium_page(tmp_path / "profile") as page:
        # Unaddressed small talk scores low under the configured thresholds: no model call.
        await peer.say_in_group(group, 7007, f"今天好热啊{tag('th1')}")
        await quiet_for(model.server, 1.0)
        assert model.requests_for("th1") == []
        await log_in(page, bot)
        await page.goto(console_url(bot, f"group.html?chat={chat_of(group)}"))
        await page.wait_for_selector("#high")
        await page.fill("#high", "0.01")
        await page.fill("#medium", "0")
        await page.click("#save-thresholds")
        await page.wait_for_selector("#answer:has-text('阈值')")
        await page.wait_for_selector("text=本群")
        await screenshot(page, "group-thresholds")
        await peer.say_in_group(group, 7008, f"今天也好热{tag('th2')}")
        answer = await peer.wait_for_call("send_group_msg", lambda c: tag("th2") in c.text, within=15)
        assert answer.params.get("group_id") == group


async def test_memory_what_if_config_and_logs_pages(
    bot: BotProcess, model: TaggedModel, tmp_path: Path
) -> None:
    group = 800_605
    model.on(
        "mem1",
        steps(
            tool_call("remember", content="阿明下周去杭州出差", scope="user"),
            reply_text(f"记住了{tag('mem1')}"),
        ),
    )
    async with connected_peer(bot, self_id=SELF_ID) as peer, chromium_page(tmp_path / "profile") as page:
        for text in ("今天吃什么", "火锅吧", "好啊好啊"):
            await peer.say_in_group(group, 7009, text, nickname="小红")
        await peer.say_in_group(
            group, 7010, ob.at(SELF_ID), f" 记一下，我下周去杭州出差{tag('mem1')}", nickname="阿明"
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("mem1") in c.text, within=15)
        await log_in(page, bot)
        await page.goto(console_url(bot, f"memory.html?chat={chat_of(group)}"))
        row = page.locator("#memories tr", has_text="阿明下周去杭州出差")
        await row.wait_for(timeout=10_000)
        assert "阿明" in await row.locator("td").nth(1).inner_text()  # the speaker
        assert "杭州出差" in await row.locator("td").nth(2).inner_text()  # the message it came from
        await screenshot(page, "memory")

        await page.goto(console_url(bot, f"whatif.html?chat={chat_of(group)}"))
        await page.wait_for_selector("#run")
        await asyncio.sleep(1.5)  # the store writer has committed the messages
        await page.fill("#high", "0.05")
        await page.fill("#medium", "0.01")
        await page.click("#run")
        await page.wait_for_selector("#whatif-plot circle")
        assert "重放了 4 条消息" in await page.inner_text("#replayed")  # the bot's own reply is not counted
        await screenshot(page, "whatif")

        await page.goto(console_url(bot, "config.html"))
        await page.wait_for_selector("#effective dt")
        text = await page.input_value("#config-text")
        await page.fill("#config-text", text + "\n[attention]\nhigh = 7\n")
        await page.click("#validate")
        await page.wait_for_selector("#validation.warn")
        assert "attention" in await page.inner_text("#validation")
        await screenshot(page, "config")

        await page.goto(console_url(bot, "logs.html"))
        await page.wait_for_selector("#log-lines tr")
        await page.fill("#chat", chat_of(group))
        await asyncio.sleep(0.5)
        await screenshot(page, "logs")
        assert [e for e in page.errors if "status of 401" not in e] == []


ACCOUNTS_CONFIG = (
    CONFIG
    + f"""
[[accounts]]
id = {SELF_ID}
[accounts.persona]
name = "小灰"
aliases = []

[[accounts]]
id = 10002
[accounts.persona]
name = "阿蓝"
aliases = []
"""
)


async def test_with_several_accounts_the_header_switches_the_account_every_page_works_on(
    model: TaggedModel, tmp_path: Path
) -> None:
    group = 800_606
    with scripted_bot(
        tmp_path / "accounts",
        model.server,
        config=ACCOUNTS_CONFIG,
        env={"GREYWIND_CONSOLE_PASSWORD": PASSWORD},
    ) as bot:
        async with connected_peer(bot, self_id=SELF_ID) as peer, chromium_page(tmp_path / "profile") as page:
            await peer.say_in_group(group, 7011, "大家晚上好")
            await log_in(page, bot)
            accounts = page.locator("#card-accounts")
            await accounts.wait_for()
            assert "在线" in await accounts.locator("dd").first.inner_text()  # 10000, connected
            assert "离线" in await accounts.locator("dd").nth(1).inner_text()  # 10002, not connected
            await page.select_option("select#account", str(SELF_ID))
            await page.wait_for_url(f"**/index.html?account={SELF_ID}")
            await page.wait_for_selector("h1:has-text('小灰')")
            await page.wait_for_selector("#card-origins dt:has-text('persona.name')")
            assert "本账号" in await page.inner_text("#card-origins")
            await screenshot(page, "overview-accounts")
            # The nav keeps the account: the live view lists this account's chat and its message.
            await page.click("nav#nav a:has-text('实时')")
            await page.wait_for_url(f"**/live.html?account={SELF_ID}")
            await page.goto(console_url(bot, f"live.html?account={SELF_ID}&chat={chat_of(group)}"))
            row = page.locator("li.msg[data-message-id]", has_text="大家晚上好")
            await row.wait_for(timeout=10_000)
            assert await page.input_value("select#account") == str(SELF_ID)
            await screenshot(page, "live-account")
            # The other account never heard it.
            await page.select_option("select#account", "10002")
            await page.wait_for_url("**/live.html?account=10002")
            await page.wait_for_selector("h1, #main *")
            assert await page.locator("li.msg", has_text="大家晚上好").count() == 0
            assert [e for e in page.errors if "status of 401" not in e] == []
            # An account this process does not serve: the page says so.
            await page.goto(console_url(bot, "index.html?account=99999"))
            await page.wait_for_selector("#error:has-text('unknown account')")
