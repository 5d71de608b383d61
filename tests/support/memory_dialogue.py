"""A long scripted conversation for the memory layer: ten facts planted early, filler after, questions late.

Used by ``tests/memory`` and ``bench/memory.py``. The pieces:

- :data:`FACTS`: ten facts, each with the words that prove it reached a prompt (``marker``) and a later
  question about it; rounds 1–10 state them ("记住：…").
- :func:`user_text`: what the user says in round ``n`` (facts, then filler, then questions from
  round 55 on).
- :func:`fact_compressor`: a responder for :class:`ScriptedOpenAIServer` that answers compression
  requests *from the request alone*: the confirmed decisions of the old summary it was sent, plus every
  "记住：" line of the new transcript it was sent. A fact reaches a later prompt only if the runtime
  really carried it: transcript → summary → SQLite → the next compression request → the prompt.
- :class:`Dialogue`: drives rounds through the real runtime — store, five-layer Context Runtime,
  ModelRouter over HTTP, MemoryInjector — and returns what each chat request sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.config import parse_config
from runtime.config.schema import GreyWindConfig
from runtime.context.builder import ChatInfo
from runtime.context.setup import ContextRuntime
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.llm.router import ModelRouter
from runtime.memory.layers import MemoryLayer, five_layer_runtime, memory_layer
from runtime.memory.prompt import COMPRESSION_MARKER
from runtime.store.protocol import Store
from runtime.store.records import StoredMessage
from tests.support.openai_server import RecordedRequest

__all__ = [
    "CHAT",
    "FACTS",
    "Dialogue",
    "Fact",
    "dialogue_config",
    "fact_compressor",
    "forgetful_compressor",
    "user_text",
]

CHAT = ChatInfo("private:10001", "private", "")
USER_ID = "10001"
USER_NAME = "阿澈"
THREAD = "conv-1"
T0 = 1_795_000_000.0
ROUND_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class Fact:
    statement: str
    marker: str
    question: str


FACTS: tuple[Fact, ...] = (
    Fact("记住：我家的猫叫团子。", "团子", "我家的猫叫什么来着？"),
    Fact("记住：我的生日是三月十四号。", "三月十四", "我的生日是哪天？"),
    Fact("记住：项目代号叫青鸟。", "青鸟", "项目代号是什么？"),
    Fact("记住：我们用PostgreSQL做数据库。", "PostgreSQL", "数据库用的是哪个？"),
    Fact("记住：评审会定在周五下午三点。", "周五下午三点", "评审会定在什么时候？"),
    Fact("记住：我对花生过敏。", "花生", "我对什么过敏来着？"),
    Fact("记住：服务器放在新加坡机房。", "新加坡", "服务器放在哪个机房？"),
    Fact("记住：预算上限是两万元。", "两万元", "预算上限是多少？"),
    Fact("记住：我喜欢深色主题。", "深色主题", "我喜欢什么主题？"),
    Fact("记住：测试覆盖率目标是百分之九十。", "百分之九十", "测试覆盖率目标是多少？"),
)

_TOPICS = (
    "周末去爬山的路线",
    "新买的机械键盘手感",
    "最近在读的科幻小说",
    "楼下新开的面馆",
    "怎么安排每天的学习时间",
    "换工作要不要考虑通勤",
    "手机拍夜景的技巧",
    "家里绿萝叶子发黄",
    "跑步膝盖疼怎么办",
    "做红烧肉的火候",
    "纪录片推荐",
    "旧电脑要不要升级内存",
)


def user_text(n: int) -> str:
    """Round ``n`` (1-based): facts 1–10, filler, then questions about the facts from round 55."""
    if 1 <= n <= len(FACTS):
        return f"{FACTS[n - 1].statement}顺便说一句，今天天气不错，我们接着聊。"
    if n >= 55:
        return f"对了，{FACTS[(n - 55) % len(FACTS)].question}"
    topic = _TOPICS[n % len(_TOPICS)]
    return f"第{n}轮，换个话题：说说{topic}吧，你有什么建议？越具体越好，我想多了解一点。"


def reply_text(n: int) -> str:
    return f"好的，关于第{n}轮说的事情，我的看法是先把要点列出来，再一步步来，不要着急。"


# --------------------------------------------------------------------------- the scripted compressor

_OLD = re.compile(r"【旧摘要】\n(.*?)\n\n【新的对话】", re.DOTALL)


def _old_summary(text: str) -> dict[str, Any]:
    found = _OLD.search(text)
    if not found:
        return {}
    try:
        loaded = json.loads(found.group(1))
    except json.JSONDecodeError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def forgetful_compressor(keep: int) -> Callable[[RecordedRequest], dict[str, Any] | None]:
    """Like :func:`fact_compressor`, but its summary keeps only the newest ``keep`` facts — a rolling
    summary under pressure, the case retrieval of raw history is there for."""

    def respond(request: RecordedRequest) -> dict[str, Any] | None:
        step = fact_compressor(request)
        if step is None:
            return None
        body = json.loads(step["text"])
        body["confirmed_decisions"] = body["confirmed_decisions"][-keep:] if keep else []
        return {"text": json.dumps(body, ensure_ascii=False)}

    return respond


def fact_compressor(request: RecordedRequest) -> dict[str, Any] | None:
    """Answer a compression request from what it contains; ``None`` for any other request."""
    system = "\n".join(str(m.get("content")) for m in request.messages if m.get("role") == "system")
    if COMPRESSION_MARKER not in system:
        return None
    sent = request.last_user_text
    old = _old_summary(sent)
    decisions = list(old.get("confirmed_decisions", []))
    transcript = sent.split("【新的对话】", 1)[-1]
    for line in transcript.splitlines():
        for fact in re.findall(r"记住：[^。]*。", line):
            if fact not in decisions:
                decisions.append(fact)
    body = {
        "requirements": old.get("requirements", []),
        "confirmed_decisions": decisions,
        "user_preferences": {"communication_style": "简洁直接", "tech_level": "中级"},
        "open_questions": [],
        "emotional_signals": {"overall": "积极", "last_mood": "轻松"},
    }
    return {"text": json.dumps(body, ensure_ascii=False)}


# --------------------------------------------------------------------------- the driver


def dialogue_config(base_url: str, *, timeout_ms: int = 2_000, **memory: Any) -> GreyWindConfig:
    """A config whose one model (32k window, below the 200k target) serves chat and compression."""
    provider = {
        "name": "scripted",
        "base_url": base_url,
        "model": "scripted-32k",
        "context_window": 32_768,
        "roles": ["chat", "compression"],
        "max_retries": 0,
        "timeout_ms": timeout_ms,
    }
    return parse_config(
        {
            "models": {"providers": [provider], "retry_backoff_ms": 1, "retry_after_cap_ms": 50},
            "memory_injection": memory,
        }
    )


class Dialogue:
    """Rounds through the real runtime; ``now`` is a virtual clock advanced two minutes per round."""

    def __init__(
        self,
        store: Store,
        config: GreyWindConfig,
        *,
        data_dir: Path | None = None,
        start_round: int = 1,
        router: ModelRouter | None = None,
        **injector: Any,
    ) -> None:
        self.store = store
        self.config = config
        self.now = T0 + start_round * ROUND_SECONDS
        self.router = router or ModelRouter.from_config(config, env={})
        clock: Callable[[], float] = lambda: self.now  # noqa: E731
        self.layer: MemoryLayer = memory_layer(
            store, config, self.router, clock=clock, data_dir=data_dir, **injector
        )
        self.runtime: ContextRuntime = five_layer_runtime(
            store, config, self.layer, counter=self.router.estimator
        )
        self.round = start_round - 1
        self.offset = 0.0
        self.session_starts = 0

    def pause(self, seconds: float) -> None:
        """Silence before the next round (long enough, and the next round opens a new session)."""
        self.offset += seconds

    async def aclose(self) -> None:
        await self.router.aclose()

    async def step(self, text: str | None = None, *, compress: bool = True) -> list[dict[str, str]]:
        """One round: the user speaks, the context is built and sent, the reply is stored and noted.

        Returns the chat messages the model was sent for this round.
        """
        self.round += 1
        n = self.round
        self.now = T0 + n * ROUND_SECONDS + self.offset
        trigger = ChatMessage(
            message_id=f"u{n}",
            chat_kind=ChatKind.PRIVATE,
            chat_ident=USER_ID,
            sender_id=USER_ID,
            sender_name=USER_NAME,
            time=self.now,
            text=text if text is not None else user_text(n),
            addressed=True,
        )
        stored = StoredMessage.from_chat_message(trigger, thread_id=THREAD)
        await self.store.append_messages([stored])
        await self.layer.profiles.observe(trigger, now=self.now)
        built, prompt = await self.runtime.prepare(
            trigger, chat=CHAT, now=self.now, reason="forced", conversation_thread_id=THREAD
        )
        if built.session_created:  # design/001: force_on_session_start
            self.session_starts += 1
            await self.layer.injector.note_session_start(CHAT.chat_id, now=self.now)
        sent = prompt.as_messages()
        result = await self.router.chat(sent, chat_id=CHAT.chat_id)
        reply = StoredMessage(
            chat_id=CHAT.chat_id,
            message_id=f"b{n}",
            sender_id="bot",
            sender_name="灰风",
            time=self.now + 1,
            text=result.text or reply_text(n),
            thread_id=THREAD,
            from_self=True,
            reply_to=f"u{n}",
        )
        await self.store.append_messages([reply])
        self.now = reply.time  # the injector's clock reads this
        await self.layer.injector.note_round(CHAT.chat_id, [stored, reply], now=self.now)
        if compress:
            await self.layer.injector.run_pending(self.now)
        return sent

    async def run(self, rounds: int) -> list[list[dict[str, str]]]:
        return [await self.step() for _ in range(rounds)]
