"""A running bot with the scripted model behind it, for scenario tests that share one bot per module.

Each scenario marks its messages with a tag, ``tag("at1")`` -> ``"〈at1〉"``. :class:`TaggedModel`
answers the scripted server's chat requests by the tag they carry (the current input's, else the last
one in the prompt), so scenarios running against the same bot and model server keep to their own
conversations, and a test can ask which requests were made for its tag::

    model = TaggedModel(server)
    model.on("w1", steps(wait_call(2), reply_text("好了〈w1〉")))
    ... post "〈w1〉..." ...
    assert len(model.requests_for("w1")) == 2

Untagged or unscripted episode requests get a plain-text answer naming the tag (a plain answer is a
reply, design/contracts §5), so the test can find the bot's words by tag. Requests without tools (the memory
layer's compression) get a small valid summary.

:func:`connected_peer` opens a :class:`~tests.e2e.onebot_peer.OneBotPeer` and waits until the bot has
registered it (and, on exit, until it has let it go), so consecutive tests can reconnect cleanly.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.e2e.bot_process import BotProcess
from tests.e2e.onebot_peer import ApiCall, OneBotPeer
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

__all__ = [
    "COMPRESSION_ANSWER",
    "Handler",
    "TaggedModel",
    "connected_peer",
    "own_errors",
    "reply_call",
    "reply_text",
    "steps",
    "tag",
    "tool_call",
    "wait_call",
]

Step = Mapping[str, Any]
# (request, how many requests this tag had before it) -> the answer step
Handler = Callable[[RecordedRequest, int], Step]

_TAG = re.compile(r"〈([0-9A-Za-z_-]+)〉")
COMPRESSION_ANSWER: Step = {
    "text": json.dumps(
        {"summary": {"requirements": [], "confirmed_decisions": [], "open_questions": []}},
        ensure_ascii=False,
    )
}


def tag(name: str) -> str:
    return f"〈{name}〉"


def reply_text(text: str) -> Step:
    """A plain answer with no tool call: a reply."""
    return {"text": text}


def reply_call(text: str) -> Step:
    return tool_call("reply", text=text)


def wait_call(seconds: float, reason: str = "等他说完") -> Step:
    return tool_call("wait", seconds=seconds, reason=reason)


def tool_call(name: str, **arguments: Any) -> Step:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def steps(*answers: Step) -> Handler:
    """Answer a tag's requests with ``answers`` in order; the last one repeats."""

    def handler(_request: RecordedRequest, nth: int) -> Step:
        return answers[min(nth, len(answers) - 1)]

    return handler


def tags_in(text: str) -> list[str]:
    return _TAG.findall(text)


class TaggedModel:
    """Routes the scripted server's answers by tag and remembers which request went to which tag."""

    def __init__(self, server: ScriptedOpenAIServer) -> None:
        self.server = server
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = {}
        self._routed: list[tuple[str | None, RecordedRequest]] = []
        server.respond_with(self._answer)

    def on(self, name: str, handler: Handler) -> None:
        with self._lock:
            self._handlers[name] = handler

    @staticmethod
    def route(request: RecordedRequest) -> str | None:
        found = tags_in(request.last_user_text) or tags_in(request.all_text)
        return found[-1] if found else None

    def episode_requests(self) -> list[RecordedRequest]:
        """Requests that offered tools: the episodes' (compression calls offer none)."""
        with self._lock:
            return [request for _, request in self._routed]

    def requests_for(self, name: str) -> list[RecordedRequest]:
        with self._lock:
            return [request for routed, request in self._routed if routed == name]

    def requests_mentioning(self, text: str) -> list[RecordedRequest]:
        return [request for request in self.server.chat_requests if text in request.all_text]

    def _answer(self, request: RecordedRequest) -> Step | None:
        if request.kind != "chat":
            return None  # embeddings: the server computes them
        if not request.tools:
            return COMPRESSION_ANSWER
        name = self.route(request)
        with self._lock:
            nth = sum(1 for routed, _ in self._routed if routed == name)
            self._routed.append((name, request))
            handler = self._handlers.get(name) if name is not None else None
        if handler is not None:
            return handler(request, nth)
        return reply_text(f"收到{tag(name)}" if name else "收到")


def sends_with(peer: OneBotPeer, text: str) -> list[ApiCall]:
    return [call for call in peer.sends() if text in call.text]


@contextlib.asynccontextmanager
async def connected_peer(bot: BotProcess, *, self_id: int, within: float = 10.0) -> AsyncIterator[OneBotPeer]:
    """A peer the bot has registered; on exit, closed and unregistered."""
    connects = _count(bot, "bot_connected")
    disconnects = _count(bot, "bot_disconnected")
    async with OneBotPeer(bot.ws_url, self_id=self_id) as peer:
        await bot.await_log("bot_connected", within=within, count=connects + 1)
        yield peer
    if bot.alive:
        await bot.await_log("bot_disconnected", within=within, count=disconnects + 1)


# The API key the e2e bots are given: a test checks it never appears in their logs.
TEST_API_KEY = "sk-e2e-test-key-1f2e3d"


@contextlib.contextmanager
def scripted_bot(
    workdir: Path, server: ScriptedOpenAIServer, *, config: str, env: Mapping[str, str] | None = None
) -> Iterator[BotProcess]:
    """A real ``bot.py`` on the scripted model server, for a module's scenarios; at the end it must
    have stopped cleanly, never logged the API key and logged no error of its own."""
    process = BotProcess(
        workdir,
        config=config,
        env={
            "GREYWIND_LLM_BASE_URL": server.base_url,
            "GREYWIND_LLM_MODEL": "scripted",
            "GREYWIND_LLM_API_KEY": TEST_API_KEY,
            **(env or {}),
        },
    )
    with process:
        process.wait_for_log("edge_started")
        yield process
    assert process.returncode == 0, process.output()[-4000:]
    assert TEST_API_KEY not in process.output()
    assert own_errors(process) == []


def own_errors(bot: BotProcess) -> list[dict[str, Any]]:
    """Error records the bot's own code logged (NoneBot's, for events a test sent malformed, excluded)."""
    return [
        record
        for record in bot.records()
        if record.get("level") in ("error", "critical") and record.get("source") != "nonebot"
    ]


def _count(bot: BotProcess, event: str) -> int:
    return sum(1 for record in bot.records() if record.get("event") == event)


async def quiet_for(server: ScriptedOpenAIServer, seconds: float, *, within: float = 30.0) -> None:
    """Until the model server has received nothing for ``seconds`` (the bot has settled)."""
    import asyncio

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        requests = server.requests
        last = requests[-1].at if requests else 0.0
        if time.time() - last >= seconds:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the model server kept receiving requests for {within}s")
