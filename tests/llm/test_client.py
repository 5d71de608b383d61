"""ChatClient against the scripted server: what is sent, what comes back, and every failure mode."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable
from email.utils import formatdate

import anyio
import anyio.lowlevel
import pytest
import pytest_asyncio

from runtime.llm.client import ChatClient, RetryPolicy, parse_retry_after
from runtime.llm.errors import (
    BadResponseError,
    LLMTimeoutError,
    ModelUnavailableError,
    RateLimitedError,
    RequestRejectedError,
)
from tests.support.openai_server import ScriptedOpenAIServer, reference_prompt_tokens, reference_token_count

USER = [{"role": "system", "content": "你是灰风。"}, {"role": "user", "content": "今天天气怎么样？"}]
REPLY_TOOL = {
    "type": "function",
    "function": {
        "name": "reply",
        "description": "say something in the chat",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
}


class SleepLog:
    """Records the waits the client asks for, without spending them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await anyio.lowlevel.checkpoint()


@pytest.fixture
def sleeps() -> SleepLog:
    return SleepLog()


@pytest_asyncio.fixture
async def make_client(
    openai_server: ScriptedOpenAIServer, sleeps: SleepLog
) -> AsyncIterator[Callable[..., ChatClient]]:
    made: list[ChatClient] = []

    def make(**overrides: object) -> ChatClient:
        options: dict[str, object] = {
            "base_url": openai_server.base_url,
            "model": "scripted-chat",
            "api_key": "sk-test-secret",
            "provider": "primary",
            "timeout": 5.0,
            "retry": RetryPolicy(max_retries=2, backoff_base=0.1, backoff_cap=1.0, retry_after_cap=5.0),
            "sleep": sleeps,
        }
        options.update(overrides)
        client = ChatClient(**options)  # type: ignore[arg-type]
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


@pytest.mark.asyncio
async def test_plain_text_answer_and_what_was_sent(openai_server, make_client) -> None:
    openai_server.push({"text": "晴，适合出门。"})
    result = await make_client().chat(USER, temperature=0.3, max_tokens=200)

    assert result.text == "晴，适合出门。"
    assert result.tool_calls == ()
    assert result.finish_reason == "stop"
    assert result.provider == "primary"
    assert result.model == "scripted-chat"
    assert result.attempts == 1
    assert result.usage is not None
    assert result.usage.prompt_tokens == reference_prompt_tokens(USER)
    assert result.usage.completion_tokens == reference_token_count("晴，适合出门。")

    (sent,) = openai_server.chat_requests
    assert sent.body["model"] == "scripted-chat"
    assert sent.messages == USER
    assert sent.body["temperature"] == 0.3
    assert sent.body["max_tokens"] == 200
    assert "tools" not in sent.body
    assert sent.headers["Authorization"] == "Bearer sk-test-secret"


@pytest.mark.asyncio
async def test_tool_calls_are_parsed_and_tools_are_sent(openai_server, make_client) -> None:
    openai_server.push(
        {
            "tool_calls": [
                {"name": "reply", "arguments": {"text": "好的，马上"}, "id": "call_a"},
                {"name": "wait", "arguments": '{"seconds": 30, "reason": "等人回'},  # truncated JSON
                {"name": "observe", "arguments": "[1, 2]"},
                {"name": "expire", "arguments": ""},
            ]
        }
    )
    result = await make_client().chat(USER, tools=[REPLY_TOOL], tool_choice="auto")

    assert result.finish_reason == "tool_calls"
    reply, wait, observe, expire = result.tool_calls
    assert (reply.id, reply.name, dict(reply.arguments or {})) == ("call_a", "reply", {"text": "好的，马上"})
    assert reply.ok
    assert wait.name == "wait"
    assert wait.arguments is None
    assert "not valid JSON" in (wait.error or "")
    assert wait.raw == '{"seconds": 30, "reason": "等人回'
    assert observe.arguments is None
    assert "JSON object" in (observe.error or "")
    assert expire.ok
    assert dict(expire.arguments or {}) == {}

    (sent,) = openai_server.chat_requests
    assert sent.tools == [REPLY_TOOL]
    assert sent.body["tool_choice"] == "auto"

    # The answer can go back into the history verbatim, malformed arguments included.
    echoed = result.assistant_message()
    assert echoed["role"] == "assistant"
    assert [c["function"]["arguments"] for c in echoed["tool_calls"]][1] == wait.raw


@pytest.mark.asyncio
async def test_server_errors_are_retried_with_growing_backoff(openai_server, make_client, sleeps) -> None:
    openai_server.push({"status": 500}, {"status": 503}, {"text": "终于好了"})
    client = make_client()
    result = await client.chat(USER)

    assert result.text == "终于好了"
    assert result.attempts == 3
    assert len(openai_server.chat_requests) == 3
    first, second = sleeps.waits
    assert 0.05 <= first <= 0.1  # equal jitter around base 0.1: at least half the step
    assert 0.1 <= second <= 0.2
    stats = client.statistics()
    assert (stats.calls, stats.succeeded, stats.http_requests, stats.retries) == (1, 1, 3, 2)


@pytest.mark.asyncio
async def test_server_errors_past_the_retries_raise_model_unavailable(openai_server, make_client) -> None:
    openai_server.push({"status": 502}, {"status": 502}, {"status": 502}, {"text": "too late"})
    client = make_client()
    with pytest.raises(ModelUnavailableError) as info:
        await client.chat(USER)
    assert info.value.status == 502
    assert info.value.provider == "primary"
    assert len(openai_server.chat_requests) == 3
    assert client.statistics().failed == 1


@pytest.mark.asyncio
async def test_retry_after_is_honoured_in_real_time(openai_server, make_client) -> None:
    openai_server.push({"status": 429, "headers": {"Retry-After": "0.4"}}, {"text": "ok"})
    client = make_client(sleep=None)  # the real anyio.sleep
    started = time.monotonic()
    result = await client.chat(USER)
    elapsed = time.monotonic() - started

    assert result.text == "ok"
    assert elapsed >= 0.4
    first, second = openai_server.chat_requests
    assert second.at - first.at >= 0.4


@pytest.mark.asyncio
async def test_retry_after_is_capped(openai_server, make_client, sleeps) -> None:
    openai_server.push({"status": 429, "headers": {"Retry-After": "3600"}}, {"text": "ok"})
    client = make_client(retry=RetryPolicy(max_retries=1, retry_after_cap=0.25))
    assert (await client.chat(USER)).text == "ok"
    assert sleeps.waits == [0.25]


@pytest.mark.asyncio
async def test_retry_after_ms_and_http_date(openai_server, make_client, sleeps) -> None:
    now = 1_800_000_000.0
    openai_server.push(
        {"status": 429, "headers": {"retry-after-ms": "1500"}},
        {"status": 503, "headers": {"Retry-After": formatdate(now + 3, usegmt=True)}},
        {"text": "ok"},
    )
    client = make_client(wall=lambda: now)
    assert (await client.chat(USER)).text == "ok"
    assert sleeps.waits == [1.5, pytest.approx(3.0)]


def test_parse_retry_after_forms() -> None:
    now = 1_800_000_000.0
    assert parse_retry_after({"retry-after": "7"}, now) == 7.0
    assert parse_retry_after({"retry-after": formatdate(now + 10, usegmt=True)}, now) == pytest.approx(10.0)
    assert parse_retry_after({"retry-after": formatdate(now - 10, usegmt=True)}, now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}, now) is None
    assert parse_retry_after({}, now) is None


@pytest.mark.asyncio
async def test_rate_limit_on_the_last_attempt_raises_with_retry_after(openai_server, make_client) -> None:
    for _ in range(3):
        openai_server.push({"status": 429, "headers": {"Retry-After": "2"}})
    with pytest.raises(RateLimitedError) as info:
        await make_client().chat(USER)
    assert info.value.retry_after == 2.0
    assert isinstance(info.value, ModelUnavailableError)


@pytest.mark.asyncio
async def test_timeout_is_retried_then_raised(openai_server, make_client) -> None:
    openai_server.push({"delay": 3.0, "text": "late"}, {"delay": 3.0, "text": "late"})
    client = make_client(timeout=0.2, retry=RetryPolicy(max_retries=1, backoff_base=0.0))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        await client.chat(USER)
    assert time.monotonic() - started < 2.0
    assert len(openai_server.chat_requests) == 2


@pytest.mark.asyncio
async def test_timeout_then_success(openai_server, make_client) -> None:
    openai_server.push({"delay": 3.0, "text": "late"}, {"text": "在的"})
    result = await make_client(timeout=0.2).chat(USER)
    assert result.text == "在的"
    assert result.attempts == 2


@pytest.mark.asyncio
async def test_invalid_json_is_a_bad_response_and_not_retried(openai_server, make_client) -> None:
    openai_server.push({"raw": "<html>gateway</html>"}, {"text": "never reached"})
    with pytest.raises(BadResponseError, match="not JSON"):
        await make_client().chat(USER)
    assert len(openai_server.chat_requests) == 1


@pytest.mark.asyncio
async def test_wrong_shape_is_a_bad_response(openai_server, make_client) -> None:
    openai_server.push({"raw": '{"choices": []}'}, {"raw": '{"error": {"message": "upstream down"}}'})
    client = make_client()
    with pytest.raises(BadResponseError, match="choices"):
        await client.chat(USER)
    with pytest.raises(BadResponseError, match="upstream down"):
        await client.chat(USER)


@pytest.mark.asyncio
async def test_client_errors_are_not_retried_and_never_show_the_key(openai_server, make_client) -> None:
    openai_server.push({"status": 401, "error": "invalid api key sk-test-secret"})
    client = make_client()
    with pytest.raises(RequestRejectedError) as info:
        await client.chat(USER)
    assert info.value.status == 401
    assert "sk-test-secret" not in str(info.value)
    assert "sk-test-secret" not in repr(client)
    assert len(openai_server.chat_requests) == 1


@pytest.mark.asyncio
async def test_dropped_connections_are_retried(openai_server, make_client) -> None:
    openai_server.push({"close": True}, {"text": "reconnected"})
    assert (await make_client().chat(USER)).text == "reconnected"


@pytest.mark.asyncio
async def test_a_conversations_next_call_goes_over_the_kept_connection(openai_server, make_client) -> None:
    openai_server.push({"text": "一"}, {"text": "二"}, {"text": "三"})
    client = make_client(keepalive=5.0)
    for _ in range(3):
        await client.chat(USER)
        await anyio.sleep(0.3)  # the next @ comes a while after the answer
    assert openai_server.connections_opened == 1


@pytest.mark.asyncio
async def test_a_connection_idle_past_the_keepalive_is_not_reused(openai_server, make_client) -> None:
    openai_server.push({"text": "一"}, {"text": "二"})
    client = make_client(keepalive=0.1)
    await client.chat(USER)
    await anyio.sleep(0.3)
    await client.chat(USER)
    assert openai_server.connections_opened == 2


@pytest.mark.asyncio
async def test_a_kept_connection_dropped_under_a_call_is_redialled_at_once(
    openai_server, make_client, sleeps
) -> None:
    # The server closes the kept connection as the second call goes out (an idle timeout on its side).
    openai_server.push({"text": "一"}, {"close": True}, {"text": "二"})
    client = make_client()
    assert (await client.chat(USER)).text == "一"
    assert (await client.chat(USER)).text == "二"
    assert sleeps.waits == []  # no backoff: a fresh connection answered
    assert client.statistics().retries == 1
    assert openai_server.connections_opened == 2


@pytest.mark.asyncio
async def test_only_the_first_dropped_connection_of_a_call_skips_the_backoff(
    openai_server, make_client, sleeps
) -> None:
    openai_server.push({"close": True}, {"close": True}, {"text": "终于"})
    assert (await make_client().chat(USER)).text == "终于"
    assert len(sleeps.waits) == 1
    assert sleeps.waits[0] > 0


@pytest.mark.asyncio
async def test_nothing_listening_is_model_unavailable(make_client, sleeps) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = make_client(base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelUnavailableError, match="connection failed"):
        await client.chat(USER)
    assert len(sleeps.waits) == 2


@pytest.mark.asyncio
async def test_embeddings_in_input_order(openai_server, make_client) -> None:
    client = make_client(model="scripted-embed")
    result = await client.embed(["灰风在吗", "灰风在不在", "completely different words"])
    assert len(result.vectors) == 3
    same, near, far = result.vectors

    def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(same, near) > cosine(same, far)
    (sent,) = openai_server.embedding_requests
    assert sent.body == {
        "model": "scripted-embed",
        "input": ["灰风在吗", "灰风在不在", "completely different words"],
    }


@pytest.mark.asyncio
async def test_embeddings_count_mismatch_is_a_bad_response(openai_server, make_client) -> None:
    openai_server.push_embeddings({"embeddings": [[1.0, 0.0]]})
    with pytest.raises(BadResponseError, match="expected 2 embeddings"):
        await make_client().embed(["a", "b"])


@pytest.mark.asyncio
async def test_thinking_in_the_content_never_reaches_the_text(openai_server, make_client) -> None:
    openai_server.push({"text": "<think>用户在问天气，我不知道实时天气。</think>\n我查不到实时天气哦。"})
    result = await make_client().chat(USER)
    assert result.text == "我查不到实时天气哦。"
    assert result.reasoning == "用户在问天气，我不知道实时天气。"
