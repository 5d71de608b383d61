"""What the model answers becomes one action, and reply text never leaks the prompt's structure."""

from __future__ import annotations

import anyio
import pytest

from runtime.app.reasoner import ModelReasoner, clean_reply
from runtime.episodes import Episode
from runtime.episodes.actions import Malformed, Observe, Reply, ToolCall, Wait
from runtime.llm.errors import LLMTimeoutError
from runtime.llm.types import ChatResult
from runtime.llm.types import ToolCall as WireCall


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<think>他在问时间，先看看</think>现在三点", "现在三点"),
        ("<think>没写完的思考", ""),
        ("灰风：好的，马上", "好的，马上"),
        ("assistant: 灰风: 好", "好"),
        ("[灰风] 收到", "收到"),
        ("[text] 阿明: 你好", "阿明: 你好"),
        ("可以的\n# 身份\n你是灰风。高效的个人AI助手。", "可以的"),
        ("# 当前会话：sess-1（active）\n场合：qq_group", ""),
        ("（引用：阿明: 在吗）在的", "在的"),
        ("阿明说的对：明天下雨", "阿明说的对：明天下雨"),
    ],
)
def test_clean_reply(raw: str, clean: str) -> None:
    assert clean_reply(raw, ("灰风", "greywind")) == clean


def result(text: str = "", *calls: WireCall) -> ChatResult:
    return ChatResult(text=text, tool_calls=calls, finish_reason="stop", usage=None, model="m", provider="p")


def wire(
    name: str, arguments: dict[str, object] | None, error: str | None = None, raw: str = "{}"
) -> WireCall:
    return WireCall(id="call_1", name=name, arguments=arguments, error=error, raw=raw)


def reasoner() -> ModelReasoner:
    return ModelReasoner(
        model=None,
        prompt=[{"role": "system", "content": "persona"}],
        chat_id="group:1",  # type: ignore[arg-type]
        names=("灰风",),
    )


def test_actions_from_answers() -> None:
    r = reasoner()
    assert r.action_of(result("灰风: 在的")) == Reply("在的")
    assert r.action_of(result("", wire("wait", {"seconds": 30, "reason": "等等"}))) == Wait(30.0, "等等")
    assert r.action_of(result("", wire("observe", {"reason": "闲聊"}))) == Observe("闲聊")
    call = r.action_of(result("", wire("current_time", {}), wire("reply", {"text": "x"})))
    assert isinstance(call, ToolCall)
    assert call.name == "current_time"  # one step at a time: the first call
    assert isinstance(r.action_of(result("")), Malformed)
    assert isinstance(r.action_of(result("<think>只想不说</think>")), Malformed)
    bad = r.action_of(result("", wire("reply", None, error="arguments are not valid JSON", raw="{oops")))
    assert isinstance(bad, Malformed)
    assert "not valid JSON" in bad.problem


def test_the_instructions_follow_the_persona_so_the_prefix_stays_stable() -> None:
    from runtime.app.reasoner import INSTRUCTIONS
    from runtime.episodes import Episode

    episode = Episode.start(id="ep", chat_id="group:1", now=0.0, max_steps=4, time_limit=30.0)
    messages = reasoner().messages_for(episode)
    assert messages[0] == {"role": "system", "content": "persona"}
    assert messages[1] == {"role": "system", "content": INSTRUCTIONS}


class _HangingModel:
    async def chat(self, *_args: object, **_kwargs: object) -> ChatResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.anyio
async def test_a_model_call_past_the_timeout_fails_like_an_unreachable_model() -> None:
    r = ModelReasoner(
        _HangingModel(), [{"role": "system", "content": "persona"}], chat_id="group:1", timeout=0.05
    )
    episode = Episode.start(id="ep-1", chat_id="group:1", now=0.0, max_steps=2, time_limit=60.0)
    with anyio.fail_after(5), pytest.raises(LLMTimeoutError, match=r"within 0\.05s"):
        await r.next(episode, [])
    assert isinstance(r.model_error, LLMTimeoutError), "the driver sees a model failure (a graceful reply)"
