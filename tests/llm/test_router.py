"""ModelRouter: chains, the 200k preference, fallback, env overrides, accounting, no keys in logs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import anyio
import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from runtime.config import parse_config
from runtime.config.models import ModelsConfig
from runtime.llm.errors import FallbackExhaustedError, NotConfiguredError, RequestRejectedError
from runtime.llm.router import ModelRouter, apply_env_overrides
from runtime.llm.tokens import TokenLedger
from tests.support.openai_server import ScriptedOpenAIServer

MESSAGES = [{"role": "user", "content": "灰风，帮我记一下：周五下午三点开会。"}]
KEY = "sk-router-secret-123"
# 2026-11-29 20:00 UTC is already 2026-11-30 at UTC+8.
LATE_EVENING_UTC = 1_795_982_400.0


def provider(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "base_url": url, "model": f"{name}-model", "max_retries": 0, **extra}


def models(*providers: dict[str, Any], **extra: Any) -> ModelsConfig:
    section = {"providers": list(providers), "retry_backoff_ms": 1, "retry_after_cap_ms": 10, **extra}
    return parse_config({"models": section}).models


@pytest.fixture
def second_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest_asyncio.fixture
async def make_router() -> AsyncIterator[Callable[..., ModelRouter]]:
    made: list[ModelRouter] = []

    def make(config: ModelsConfig, env: Mapping[str, str] | None = None, **options: Any) -> ModelRouter:
        router = ModelRouter(config, env=env or {}, wall=lambda: LATE_EVENING_UTC, **options)
        made.append(router)
        return router

    yield make
    for router in made:
        await router.aclose()


# -- configuration -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_no_provider_is_reported_not_crashed(make_router) -> None:
    router = make_router(ModelsConfig())
    assert router.configured is False
    assert router.problem is not None
    assert "[[models.providers]]" in router.problem
    assert "GREYWIND_LLM_BASE_URL" in router.problem
    with pytest.raises(NotConfiguredError, match="GREYWIND_LLM_BASE_URL"):
        await router.chat(MESSAGES)
    assert router.statistics().configured is False


@pytest.mark.asyncio
async def test_a_provider_whose_key_variable_is_unset_is_named_and_skipped(
    openai_server, make_router
) -> None:
    config = models(
        provider("paid", "http://127.0.0.1:9/v1", api_key_env="PAID_KEY"),
        provider("local", openai_server.base_url),
    )
    router = make_router(config)
    assert router.configured is True
    assert "PAID_KEY" in (router.problem or "")
    assert [p.name for p in router.chain("chat")] == ["local"]
    openai_server.push({"text": "在"})
    assert (await router.chat(MESSAGES)).provider == "local"


def test_env_overrides_point_every_role_at_one_endpoint() -> None:
    config = models(
        provider("a", "http://a.example/v1", roles=["chat"], context_window=200_000),
        provider("b", "http://b.example/v1", roles=["compression", "embedding"]),
    )
    env = {
        "GREYWIND_LLM_BASE_URL": "http://override.example/v1/",
        "GREYWIND_LLM_API_KEY": KEY,
        "GREYWIND_LLM_MODEL": "override-model",
    }
    (only,) = apply_env_overrides(config, env).providers
    assert only.base_url == "http://override.example/v1"
    assert only.model == "override-model"
    assert only.api_key_env == "GREYWIND_LLM_API_KEY"
    assert set(only.roles) == {"chat", "compression", "embedding"}
    assert only.context_window == config.env_context_window  # unknown model: a modest window assumed

    # Only the model set: the configured chat endpoint and key variable stay, every role uses it.
    (swapped,) = apply_env_overrides(config, {"GREYWIND_LLM_MODEL": "a-model"}).providers
    assert (swapped.base_url, swapped.model, swapped.context_window) == (
        "http://a.example/v1",
        "a-model",
        200_000,
    )

    # Nothing set (or set empty): the config is untouched.
    assert apply_env_overrides(config, {"GREYWIND_LLM_MODEL": ""}) is config

    with pytest.raises(NotConfiguredError, match="GREYWIND_LLM_BASE_URL"):
        apply_env_overrides(ModelsConfig(), {"GREYWIND_LLM_API_KEY": KEY})


@pytest.mark.asyncio
async def test_env_override_serves_chat_and_embeddings(openai_server, second_server, make_router) -> None:
    config = models(provider("configured", second_server.base_url, roles=["chat", "embedding"]))
    env = {
        "GREYWIND_LLM_BASE_URL": openai_server.base_url,
        "GREYWIND_LLM_API_KEY": KEY,
        "GREYWIND_LLM_MODEL": "env-model",
    }
    router = make_router(config, env)
    openai_server.push({"text": "收到"})
    result = await router.chat(MESSAGES)
    vectors = await router.embed(["周五开会"])

    assert (result.text, result.provider) == ("收到", "env")
    assert len(vectors.vectors) == 1
    assert second_server.requests == []
    chat, embed = openai_server.requests
    assert chat.model == embed.model == "env-model"
    assert chat.headers["Authorization"] == f"Bearer {KEY}"


# -- routing -------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_chat_prefers_a_window_reaching_the_target(openai_server, second_server, make_router) -> None:
    config = models(
        provider("small", second_server.base_url, context_window=32_768),
        provider("large", openai_server.base_url, context_window=200_000),
    )
    router = make_router(config)
    assert [p.name for p in router.chain("chat")] == ["large", "small"]
    assert router.needs_memory_compensation is False
    assert router.context_window() == 200_000

    openai_server.push({"text": "长窗口"})
    assert (await router.chat(MESSAGES)).provider == "large"
    assert second_server.requests == []


def test_without_a_200k_model_memory_compensation_is_needed(make_router) -> None:
    config = models(
        provider("a", "http://a.example/v1", context_window=128_000),
        provider("b", "http://b.example/v1", context_window=32_768),
    )
    router = make_router(config)
    assert router.needs_memory_compensation is True
    assert [p.name for p in router.chain("chat")] == ["a", "b"]  # file order when none qualifies
    assert router.context_window() == 128_000
    assert router.statistics().needs_memory_compensation is True


@pytest.mark.asyncio
async def test_falls_back_to_the_second_provider(openai_server, second_server, make_router) -> None:
    config = models(provider("first", openai_server.base_url), provider("second", second_server.base_url))
    router = make_router(config)
    openai_server.push({"status": 500})
    second_server.push({"text": "备用模型在"})

    result = await router.chat(MESSAGES)
    assert (result.text, result.provider, result.model) == ("备用模型在", "second", "second-model")
    assert len(openai_server.chat_requests) == 1
    assert second_server.chat_requests[0].messages == MESSAGES

    stats = router.statistics()
    assert (stats.calls, stats.failed_calls, stats.fallbacks) == (1, 0, 1)
    by_provider = {s.provider: s for s in stats.served}
    assert (by_provider["first"].calls, by_provider["first"].failures) == (0, 1)
    assert (by_provider["second"].calls, by_provider["second"].failures) == (1, 0)


@pytest.mark.asyncio
async def test_every_provider_failing_is_one_clear_error(openai_server, second_server, make_router) -> None:
    config = models(provider("first", openai_server.base_url), provider("second", second_server.base_url))
    router = make_router(config)
    openai_server.push({"status": 401, "error": "bad key"})
    second_server.push({"raw": "<html>"})
    with pytest.raises(FallbackExhaustedError) as info:
        await router.chat(MESSAGES)
    assert [f.provider for f in info.value.failures] == ["first", "second"]
    assert isinstance(info.value.failures[0], RequestRejectedError)
    assert "every provider for chat failed" in str(info.value)
    assert router.statistics().failed_calls == 1


@pytest.mark.asyncio
async def test_a_prompt_too_big_for_a_window_skips_that_provider(
    openai_server, second_server, make_router
) -> None:
    config = models(
        provider("tiny", second_server.base_url, context_window=256),
        provider("roomy", openai_server.base_url, context_window=8_192),
    )
    router = make_router(config)
    long_history = [{"role": "user", "content": "很长的聊天记录。" * 60}]
    openai_server.push({"text": "装得下"})
    assert (await router.chat(long_history)).provider == "roomy"
    assert second_server.requests == []


@pytest.mark.asyncio
async def test_compression_prefers_the_named_model_then_the_chat_chain(
    openai_server, second_server, make_router
) -> None:
    config = models(
        provider("main", openai_server.base_url, context_window=200_000),
        provider("quick_reply", second_server.base_url),
    )
    router = make_router(config, compression_model="quick_reply")
    # No provider has the compression role: compression falls back to the chat chain, preferring the name.
    assert [p.name for p in router.chain("compression", "quick_reply")] == ["quick_reply", "main"]
    second_server.push({"text": '{"version": 1}'})
    assert (await router.chat(MESSAGES, role="compression")).provider == "quick_reply"
    assert openai_server.requests == []


@pytest.mark.asyncio
async def test_embedding_without_a_provider_says_which_role(openai_server, make_router) -> None:
    router = make_router(models(provider("chat-only", openai_server.base_url)))
    with pytest.raises(NotConfiguredError, match="'embedding'"):
        await router.embed(["x"])


# -- accounting and logs --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_tokens_go_to_the_ledger_and_calibrate_the_estimate(openai_server, make_router) -> None:
    ledger = TokenLedger(daily_cap_per_chat=60, utc_offset_hours=8)
    router = make_router(
        models(provider("main", openai_server.base_url, price_per_1k_input=2.0, price_per_1k_output=8.0)),
        ledger=ledger,
    )
    openai_server.push({"text": "记下了，周五下午三点。"}, {"text": "好"})
    first = await router.chat(MESSAGES, chat_id="group:42")
    assert first.usage is not None
    day = "2026-11-30"  # the UTC+8 day of LATE_EVENING_UTC
    assert ledger.used("group:42", day) == first.usage.total_tokens
    assert ledger.used("group:42", "2026-11-29") == 0
    assert ledger.over_cap("group:42", day) is False

    await router.chat(MESSAGES * 3, chat_id="group:42")
    assert ledger.over_cap("group:42", day) is True
    assert ledger.over_cap("group:7", day) is False

    stats = router.statistics()
    (served,) = stats.served
    assert served.prompt_tokens > 0
    assert served.cost == pytest.approx((served.prompt_tokens * 2.0 + served.completion_tokens * 8.0) / 1000)
    assert [c.model for c in stats.estimator.calibrations] == ["main-model"]


@pytest.mark.asyncio
async def test_calls_are_logged_by_model_and_keys_never_are(
    openai_server, second_server, make_router
) -> None:
    config = models(
        provider("first", openai_server.base_url, api_key_env="FIRST_KEY"),
        provider("second", second_server.base_url, api_key_env="SECOND_KEY"),
    )
    router = make_router(config, {"FIRST_KEY": KEY, "SECOND_KEY": KEY + "-2"})
    openai_server.push({"status": 403, "error": f"key {KEY} is not allowed"})
    second_server.push({"text": "ok"})
    with capture_logs() as logs:
        await router.chat(MESSAGES, chat_id="group:1")

    events = [entry["event"] for entry in logs]
    assert events == ["llm.provider_failed", "llm.call"]
    call = logs[-1]
    assert (call["provider"], call["model"], call["fallback"], call["chat_id"]) == (
        "second",
        "second-model",
        1,
        "group:1",
    )
    assert KEY not in repr(logs)
    assert second_server.chat_requests[0].headers["Authorization"] == f"Bearer {KEY}-2"


@pytest.mark.asyncio
async def test_a_provider_without_usage_still_counts_against_the_cap(openai_server, make_router) -> None:
    ledger = TokenLedger(daily_cap_per_chat=40)
    router = make_router(models(provider("terse", openai_server.base_url)), ledger=ledger)
    openai_server.push({"text": "好的，我记住了。", "usage": False})
    result = await router.chat(MESSAGES, chat_id="group:5")
    assert result.usage is None
    estimate = router.estimator.estimate_messages(MESSAGES)
    assert ledger.used("group:5", "2026-11-30") >= estimate > 0
    assert router.statistics().estimator.calibrations == ()  # nothing to calibrate from


@pytest.mark.asyncio
async def test_from_config_takes_the_compression_model_from_memory_injection(
    openai_server, make_router
) -> None:
    config = parse_config(
        {
            "models": {
                "providers": [provider("main", openai_server.base_url), provider("cheap", "http://x/v1")]
            },
            "memory_injection": {"compression_model": "cheap-model"},
        }
    )
    router = ModelRouter.from_config(config, env={})
    try:
        assert router.compression_model == "cheap-model"
        assert [p.name for p in router.chain("compression", router.compression_model)] == ["cheap", "main"]
    finally:
        await router.aclose()


def test_a_named_compression_model_serves_even_without_the_role(make_router) -> None:
    config = models(
        provider("main", "http://main/v1", roles=["chat"]),
        provider("summariser", "http://sum/v1", roles=["compression"]),
        provider("quick_reply", "http://quick/v1", roles=["chat"]),
    )
    router = make_router(config, compression_model="quick_reply")
    assert [p.name for p in router.chain("compression", "quick_reply")] == ["quick_reply", "summariser"]
    assert [p.name for p in router.chain("compression", "no-such-model")] == ["summariser"]


@pytest.mark.asyncio
@pytest.mark.parametrize(("keepalive_ms", "connections"), [(60_000, 1), (0, 2)])
async def test_a_providers_keepalive_decides_whether_the_next_call_reuses_its_connection(
    openai_server, make_router, keepalive_ms: int, connections: int
) -> None:
    openai_server.push({"text": "一"}, {"text": "二"})
    router = make_router(models(provider("main", openai_server.base_url, keepalive_ms=keepalive_ms)))
    await router.chat(MESSAGES)
    await anyio.sleep(0.2)
    await router.chat(MESSAGES)
    assert openai_server.connections_opened == connections


def test_a_providers_keepalive_defaults_to_ninety_seconds_and_refuses_nonsense() -> None:
    assert models(provider("main", "http://127.0.0.1:9/v1")).providers[0].keepalive_ms == 90_000
    with pytest.raises(ValueError, match="keepalive_ms"):
        models(provider("main", "http://127.0.0.1:9/v1", keepalive_ms=-1))
