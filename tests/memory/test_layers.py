"""The five layers through the one Context Runtime: which window the router's models call for, the
summary capped by system_prompt_max_tokens in priority order, injection switched off, and the
background job run by a task group."""

from __future__ import annotations

import anyio
import pytest

from runtime.config import parse_config
from runtime.llm.router import ModelRouter
from runtime.memory.layers import memory_layer
from runtime.memory.prompt import COMPRESSION_MARKER
from runtime.store.sqlite import SqliteStore
from tests.support.memory_dialogue import CHAT, FACTS, Dialogue, dialogue_config
from tests.support.openai_server import ScriptedOpenAIServer


def test_a_200k_chat_model_keeps_the_context_runtimes_own_window() -> None:
    wide = {
        "name": "wide",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "wide-200k",
        "context_window": 200_000,
        "roles": ["chat", "compression"],
    }
    config = parse_config({"models": {"providers": [wide]}, "context": {"recent_dialogue_max": 40}})
    router = ModelRouter.from_config(config, env={})
    layer = memory_layer(None, config, router)  # type: ignore[arg-type]
    assert not layer.compensating
    assert layer.dialogue_turns == 40

    narrow = parse_config(
        {
            "models": {"providers": [{**wide, "context_window": 32_768}]},
            "memory_injection": {"injection_strategy": {"sliding_window_rounds": 6}},
        }
    )
    layer = memory_layer(None, narrow, ModelRouter.from_config(narrow, env={}))  # type: ignore[arg-type]
    assert layer.compensating
    assert layer.dialogue_turns == 12


@pytest.mark.asyncio
async def test_the_sliding_window_sends_only_the_last_rounds_raw(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    config = dialogue_config(model.base_url, injection_strategy={"sliding_window_rounds": 3})
    dialogue = Dialogue(sqlite_store, config)
    try:
        sent = await dialogue.run(14)
    finally:
        await dialogue.aclose()
    turns = [m for m in sent[-1] if m["role"] in ("user", "assistant")]
    assert len(turns) == 2 * 3 + 1  # three rounds and the input
    assert "第14轮" in turns[-1]["content"]
    assert "第11轮" in turns[0]["content"]


@pytest.mark.asyncio
async def test_a_small_summary_budget_keeps_decisions_and_drops_lower_sections(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    config = dialogue_config(model.base_url, injection_strategy={"system_prompt_max_tokens": 90})
    dialogue = Dialogue(sqlite_store, config)
    try:
        sent = await dialogue.run(11)
    finally:
        await dialogue.aclose()
    context = sent[-1][1]["content"]
    summary = context.split("# 记忆摘要", 1)[1].split("\n\n#", 1)[0]
    assert "confirmed_decisions" in summary
    assert FACTS[0].marker in summary  # the first, highest-priority items survive
    assert FACTS[-1].marker not in summary
    assert "emotional_signals" not in summary
    assert dialogue.router.estimator.count_text(summary) <= 90 + 10


@pytest.mark.asyncio
async def test_with_injection_disabled_no_summary_is_sent(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url, enabled=False))
    try:
        sent = await dialogue.run(11)
    finally:
        await dialogue.aclose()
    assert "# 记忆摘要" not in "\n".join(m["content"] for m in sent[-1])


@pytest.mark.asyncio
async def test_serve_compresses_in_the_background_of_a_task_group(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    injector = dialogue.layer.injector
    try:
        async with anyio.create_task_group() as group:
            await group.start(injector.serve)
            for _ in range(10):
                await dialogue.step(compress=False)  # the reply path only counts and queues
            with anyio.fail_after(10):
                document = await injector.wait_summary(CHAT.chat_id)
            group.cancel_scope.cancel()
    finally:
        await dialogue.aclose()
    assert len([r for r in model.chat_requests if COMPRESSION_MARKER in r.all_text]) == 1
    assert injector.pending() == ()
    assert all(f.statement in document.summary.confirmed_decisions for f in FACTS)


@pytest.mark.asyncio
async def test_a_new_session_after_a_long_silence_compresses_what_was_left(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    try:
        await dialogue.run(4)
        assert dialogue.session_starts == 1  # the first round; nothing to compress yet
        dialogue.pause(4 * 3600)  # past [context].session_idle_timeout_ms
        sent = await dialogue.step()
        assert dialogue.session_starts == 2
        compressions = [r for r in model.chat_requests if COMPRESSION_MARKER in r.all_text]
        assert len(compressions) == 1
        # Queued when the session opened, run by the background job after the turn: rounds 1–5.
        assert "第 1–5 轮" in compressions[0].last_user_text
    finally:
        await dialogue.aclose()
    # The compression ran off the reply path: the round that started the session was sent without it.
    assert "# 记忆摘要" not in "\n".join(m["content"] for m in sent)
    document = await dialogue.layer.injector.document(CHAT.chat_id)
    assert document.version == 1
    assert [f.statement for f in FACTS[:5]] == list(document.summary.confirmed_decisions)


def test_the_transcript_cap_fits_the_compression_models_window() -> None:
    small = {
        "name": "small",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "small-16k",
        "context_window": 16_384,
        "roles": ["chat", "compression"],
    }
    config = parse_config({"models": {"providers": [small]}})
    layer = memory_layer(None, config, ModelRouter.from_config(config, env={}))  # type: ignore[arg-type]
    settings = layer.injector.settings
    assert settings.transcript_max_tokens == 16_384 - 8_000 - settings.answer_max_tokens - 1_000
    roomy = parse_config({"models": {"providers": [{**small, "context_window": 128_000}]}})
    layer = memory_layer(None, roomy, ModelRouter.from_config(roomy, env={}))  # type: ignore[arg-type]
    assert layer.injector.settings.transcript_max_tokens == 12_000


@pytest.mark.asyncio
async def test_the_five_layers_arrive_in_order_in_what_the_model_is_sent(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    try:
        await dialogue.run(12)
    finally:
        await dialogue.aclose()
    request = [r for r in model.chat_requests if COMPRESSION_MARKER not in r.all_text][-1]
    identity, context, *turns = request.messages
    # Layers 1–2: identity and language style, the stable prefix.
    assert identity["role"] == "system"
    assert "你是灰风" in identity["content"]
    assert "语言风格" in identity["content"]
    # Layers 3–4: the summary, then the profile learned from it (nickname from the messages).
    text = context["content"]
    assert text.index("# 记忆摘要") < text.index("# 对话者：阿澈（10001）")
    assert "tech_level: 中级" in text.split("# 对话者", 1)[1]
    # Layer 5: the raw rounds, then this round's input.
    assert [m["role"] for m in turns[:2]] == ["user", "assistant"]
    assert turns[-1]["content"].startswith("阿澈: 第12轮")
