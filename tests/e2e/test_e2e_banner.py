"""What the real ``bot.py`` says when it is ready: one start banner, and the missing model said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bot_process import ROOT, BotProcess
from tests.e2e.live import TEST_API_KEY
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e]


def _named(bot: BotProcess, event: str) -> list[dict[str, object]]:
    return [record for record in bot.records() if record.get("event") == event]


def test_without_a_model_the_start_says_so_once_and_one_banner_tells_what_to_set(tmp_path: Path) -> None:
    with BotProcess(tmp_path) as bot:
        bot.wait_for_log("ready")
        warnings = [r for r in bot.records() if r.get("level") == "warning"]
        (banner,) = _named(bot, "ready")
    assert [r["event"] for r in warnings] == ["no_model"], warnings
    assert banner["listen"] == bot.ws_url
    assert str(banner["model"]).startswith("none: shadow mode")
    assert "GREYWIND_LLM_BASE_URL" in str(banner["model"])
    assert banner["shadow_mode"] is True
    assert banner["groups"] == "every group its accounts have joined"
    assert banner["admin"] == "no superusers: admin commands are off"
    assert bot.returncode == 0


def test_with_a_model_and_a_superuser_the_banner_names_the_model_and_warns_of_nothing(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        env = {
            "GREYWIND_LLM_BASE_URL": server.base_url,
            "GREYWIND_LLM_MODEL": "scripted-chat",
            "GREYWIND_LLM_API_KEY": TEST_API_KEY,
            "SUPERUSERS": "4242",
        }
        shipped = (ROOT / "config" / "greywind.toml").read_text(encoding="utf-8")
        config = shipped.replace("allow = []", "allow = [800501, 800502]", 1).replace(
            "deny = []", "deny = [800503]", 1
        )
        with BotProcess(tmp_path, env=env, config=config) as bot:
            bot.wait_for_log("ready")
            (banner,) = _named(bot, "ready")
            assert _named(bot, "no_model") == []
    assert "scripted-chat" in str(banner["model"])
    assert banner["shadow_mode"] is False
    assert banner["admin"] == "superusers: 1"
    assert banner["groups"] == "only groups 800501, 800502, except 800503"
    assert bot.returncode == 0
