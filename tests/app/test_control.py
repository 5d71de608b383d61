"""Admin commands answered by the runtime: lexicon, persona reload, bind, status."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_a_term_added_by_an_admin_makes_a_question_worth_answering(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我知道一家")})
    async with running(make_config(openai_server), data_dir) as h:
        control = h.runtime.control
        await h.say("有推荐的火锅店吗？", sender="1")
        await h.advance(200)
        assert h.outbound.sent == []
        assert "火锅" in await control.lexicon_add("group:500", "火锅", 0.9)
        assert "火锅" in await control.lexicon_list("group:500")
        await h.say("有推荐的火锅店吗？", sender="2")
        await h.advance(200)
        assert h.outbound.texts() == ["我知道一家"]
        assert "已屏蔽" in await control.lexicon_suppress("group:500", "火锅")
        await h.advance(600)
        await h.say("还有别的火锅店吗？", sender="3")
        await h.advance(200)
        assert h.outbound.texts() == ["我知道一家"]
        assert "钉住" in await control.lexicon_pin("group:500", "烤肉")
        assert "📌烤肉" in await control.lexicon_list("group:500")


async def test_persona_reload_takes_the_new_name_and_refuses_bad_values(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("好")})
    config_file = data_dir / "greywind.toml"
    renamed: list[tuple[str, ...]] = []
    async with running(make_config(openai_server), data_dir, rename=renamed.append) as h:
        control = h.runtime.control
        config_file.write_text('[persona]\nname = ""\n', encoding="utf-8")
        refused = await control.persona_reload()
        assert "persona.name" in refused
        config_file.write_text('[persona]\nname = "小灰"\nrole = "群里的老朋友"\n', encoding="utf-8")
        assert "小灰" in await control.persona_reload()
        assert [names[0] for names in renamed] == ["小灰"]  # the edge addresses by the new name now
        await h.say("在吗", chat="private:9")
        await h.settle()
    system = openai_server.chat_requests[-1].messages[0]["content"]
    assert "你是小灰" in system
    assert "群里的老朋友" in system


async def test_bind_puts_the_vision_into_the_chat_s_packets(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("收到")})
    async with running(make_config(openai_server), data_dir) as h:
        answer = await h.runtime.control.bind("group:500", "读书会", "每周读完一本书并写下三条收获")
        assert "读书会" in answer
        await h.say("灰风 这周我们读哪本书比较好，帮我挑一本", addressed=True)
        await h.settle()
    sent = openai_server.chat_requests[0].all_text
    assert "每周读完一本书并写下三条收获" in sent
    assert "读书会" in sent


async def test_status_of_a_chat_shows_budget_queue_and_tokens(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("在")})
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        status = await h.runtime.control.status("group:500")
    assert "本窗口发言 0（被点名 1）" in status
    assert "队列：空" in status
    tokens = int(status.split("今日 token：")[1].split()[0].split("（")[0])
    assert tokens > 0


async def test_learning_runs_off_the_message_path_and_grows_the_chat_s_lexicon(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    async with running(make_config(openai_server), data_dir) as h:
        for index in range(12):
            await h.say(f"周末的剧本杀谁组局 {index}", sender=str(300 + index % 4))
        assert "组局" not in await h.runtime.control.lexicon_list("group:500")
        learned = await h.runtime.maintenance.learn()
        assert learned == 12
        assert "组局" in await h.runtime.control.lexicon_list("group:500")
        assert "组局" not in await h.runtime.control.lexicon_list("group:600")


async def test_the_status_names_the_configured_persona(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    async with running(make_config(openai_server, persona={"name": "小岚"}), data_dir) as h:
        status = await h.runtime.control.status(None)
    assert status.startswith("小岚在线（正常发言）")
    assert "灰风" not in status


async def test_why_and_status_say_the_kernel_s_reasons_in_chinese(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("在")})
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        why = await h.runtime.control.why("group:500", None)
        status = await h.runtime.control.status("group:500")  # the reply started the cooldown
    assert "被点名（有人直接对我说话）" in why
    assert "forced" not in why
    assert "addressed" not in why
    assert "暂不主动发言：主动发言冷却中（上次发言后 90 秒内）" in status
    assert "cooldown" not in status


async def test_the_whole_bot_status_is_short_and_full_has_the_figures(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("在")})
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        short = await h.runtime.control.status(None)
        full = await h.runtime.control.status(None, full=True)
    lines = short.splitlines()
    assert lines[0] == "灰风在线（正常发言）"
    assert any(line.startswith("模型：") for line in lines)
    assert any(line.startswith("今日 token：") and int(line.split("：")[1]) > 0 for line in lines)
    assert lines[-1] == "详情：/status full"
    assert len(lines) <= 6
    assert "内核：" not in short
    assert "内核：" in full
    assert "回合：" in full


async def test_binding_an_existing_title_rebinds_instead_of_making_a_second_topic(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    async with running(make_config(openai_server), data_dir) as h:
        control = h.runtime.control
        first = await control.bind("group:500", "读书会", "每周读完一本书")
        again = await control.bind("group:500", "读书会", None)
        other = await control.bind("group:600", "读书会", None)
        threads = await h.runtime.store.list_topic_threads()
    assert "新主题" in first
    assert "新主题" not in again
    assert "新主题" not in other
    titled = [t for t in threads if t.title == "读书会"]
    assert len(titled) == 1
    assert {"group:500", "group:600"} <= set(titled[0].chat_ids)
    assert titled[0].vision["origin_goal"] == "每周读完一本书"
