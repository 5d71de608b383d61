"""Extensions in the running bot: the built-ins are extensions loaded by the loader (in the order the
model always saw their tools), ``[extensions] disabled`` removes one, a bad extension named in the
config costs nothing but itself, and stopping the bot disposes everything extensions registered."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.app.conftest import make_config, running
from tests.extensions.samples.good import Seen
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

BUILTIN_TOOLS = [
    "memory_search",
    "remember",
    "schedule_message",
    "follow_up",
    "current_time",
    "task_create",
    "task_list",
    "task_update",
    "task_conclude",
    "guess_number_start",
    "guess_number_guess",
    "guess_number_status",
]


def offered(server: ScriptedOpenAIServer, index: int = 0) -> list[str]:
    return [tool["function"]["name"] for tool in server.chat_requests[index].tools or []]


async def test_the_builtins_are_offered_to_the_model_in_their_order(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"tool_calls": [{"name": "reply", "arguments": {"text": "在"}}]})
    async with running(make_config(openai_server), data_dir) as h:
        # The built-ins first; installed distributions (the example dice extension) after them.
        assert h.runtime.extension_loader.loaded()[:7] == [
            "memory_search",
            "remember",
            "schedule_message",
            "follow_up",
            "current_time",
            "tasks",
            "guess_number",
        ]
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["在"]
    names = offered(openai_server)
    assert [name for name in names if name in BUILTIN_TOOLS] == BUILTIN_TOOLS


async def test_a_disabled_builtin_is_gone_for_the_model(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"tool_calls": [{"name": "reply", "arguments": {"text": "在"}}]})
    config = make_config(openai_server, extensions={"disabled": ["guess_number", "current_time"]})
    async with running(config, data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert "guess_number" not in h.runtime.extension_loader.loaded()
    names = offered(openai_server)
    assert "memory_search" in names
    assert not [name for name in names if name.startswith("guess_number") or name == "current_time"]


async def test_the_builtin_game_takes_its_config_section(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    config = make_config(openai_server, extensions={"config": {"guess_number": {"max_attempts": 0}}})
    with capture_logs() as logs:
        async with running(config, data_dir) as h:
            assert "guess_number" not in h.runtime.extension_loader.loaded()
    (line,) = [e for e in logs if e["event"] == "extension_refused"]
    assert "extensions.config.guess_number.max_attempts" in line["error"]


async def test_bad_extensions_cost_only_themselves(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    Seen.messages = []
    Seen.task_cancelled = False
    openai_server.push({"tool_calls": [{"name": "reply", "arguments": {"text": "在的"}}]})
    modules = [
        "tests.extensions.samples.broken_import",
        "tests.extensions.samples.bad:raising_setup",
        "tests.extensions.samples.bad:raising_listener",
        "tests.extensions.samples.bad:hanging_listener",
        "tests.extensions.samples.good:everything",
    ]
    config = make_config(openai_server, extensions={"modules": modules, "listener_timeout_ms": 50})
    with capture_logs() as logs:
        async with running(config, data_dir) as h:
            await h.say("灰风 在吗", addressed=True)
            await h.settle()
            assert h.outbound.texts() == ["在的"]
            for _ in range(100):
                if Seen.messages and any(e["event"] == "listener_slow" for e in logs):
                    break
                await anyio.sleep(0.01)
            assert Seen.messages == ["灰风 在吗"]
            loaded = h.runtime.extension_loader.loaded()
            assert loaded[7:10] == ["raising_listener", "hanging_listener", "everything"]
            tools = [spec.name for spec in h.runtime.tools.list()]
            assert "half_done" not in tools
            assert "everything_hello" in tools
        # Stopping the bot disposes what extensions registered.
        assert "everything_hello" not in h.runtime.tools
        assert len(h.runtime.listeners) == 0
        assert Seen.task_cancelled
    refused = {e["extension"]: e["stage"] for e in logs if e["event"] == "extension_refused"}
    assert refused == {"tests.extensions.samples.broken_import": "import", "raising_setup": "setup"}
    assert any(e["event"] == "listener_failed" and e["extension"] == "raising_listener" for e in logs)


async def test_an_installed_distribution_is_loaded_through_its_entry_point(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"tool_calls": [{"name": "reply", "arguments": {"text": "在"}}]})
    async with running(make_config(openai_server), data_dir) as h:
        assert h.runtime.extension_loader.loaded()[7:] == ["dice"]
        assert "roll" in h.runtime.commands
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
    assert {"dice_roll", "dice_duel_challenge", "dice_duel_roll"} <= set(offered(openai_server))


async def test_entry_points_can_be_switched_off(openai_server: ScriptedOpenAIServer, data_dir: Path) -> None:
    config = make_config(openai_server, extensions={"entry_points": False})
    async with running(config, data_dir) as h:
        assert "dice" not in h.runtime.extension_loader.loaded()
        assert "dice_roll" not in h.runtime.tools
