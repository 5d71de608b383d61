"""Proactive speech from the LifeDirector, recalled messages, and shadow mode with a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.extensions import LifeContext, LifeSourceSpec, Proposal
from runtime.ports import Recalled
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_a_life_source_speaks_only_in_a_live_chat(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("今天冬至，记得吃饺子")})
    config = make_config(openai_server, life={"enabled": True, "quiet_hours": ""})

    def poll(context: LifeContext) -> list[Proposal]:
        return [Proposal(chat, "今天是冬至") for chat in ("group:500", "group:404")]

    async with running(config, data_dir) as h:
        rt = h.runtime
        rt.bot.core.extensions.register_life_source(
            rt.bot.core.scope.child("solar-terms"), LifeSourceSpec("solar_terms", poll, 3600)
        )
        await h.say("下午好", chat="group:500")
        await h.advance(30)
        await rt.maintenance.life()
        await h.advance(30)
        assert h.outbound.texts("group:500") == ["今天冬至，记得吃饺子"]
        assert h.outbound.texts("group:404") == []  # silence is not activity: nobody spoke there
    request = openai_server.chat_requests[0]
    assert "今天是冬至" in request.last_user_text


async def test_a_recalled_message_is_not_answered(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我知道一家")})
    async with running(make_config(openai_server, lexicon={"terms": ["火锅"]}), data_dir) as h:
        asked = await h.say("有推荐的火锅店吗？")
        await h.runtime.on_notice(Recalled("group:500", asked.message_id, "42", h.clock()))
        await h.advance(200)
        assert h.outbound.sent == []
    assert openai_server.chat_requests == []


async def test_a_mention_recalled_while_its_chat_is_busy_is_not_answered(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": {"delay": 0.3, **reply("在")}})
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 第一个问题", addressed=True)
        recalled = await h.say("灰风 第二个问题", sender="43", addressed=True)
        await h.runtime.on_notice(Recalled("group:500", recalled.message_id, "43", h.clock()))
        await h.settle()
        await h.advance(30)
        assert h.outbound.texts() == ["在"]
    assert len(openai_server.chat_requests) == 1


async def test_shadow_mode_asks_the_model_and_sends_nothing(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("在的")})
    async with running(make_config(openai_server), data_dir, shadow=True) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.sent == []
        assert len(h.outbound.shadow) == 1
    assert len(openai_server.chat_requests) == 1
