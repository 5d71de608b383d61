"""Work that would hold the event loop every chat shares is done before the bot serves, not on the
path of the first message that needs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.llm import client as client_module
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_the_first_model_call_makes_no_http_client_on_the_loop(
    openai_server: ScriptedOpenAIServer, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = client_module.ChatClient.__init__

    def noting(self: client_module.ChatClient, *args: object, **kwargs: object) -> None:
        made.append(str(kwargs.get("provider")))
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client_module.ChatClient, "__init__", noting)
    openai_server.load({"default": reply("在呢")})
    async with running(make_config(openai_server), data_dir) as h:
        assert made == ["scripted"]  # made at start: a TLS context and the HTTP stack's imports, ~0.1 s
        await h.say("灰风在吗", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["在呢"]
        assert made == ["scripted"]  # the first @ reused it
