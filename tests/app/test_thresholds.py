"""Per-chat attention thresholds set through the admin control: kept in the data directory and put
back on start; an unreadable file is logged and the configured thresholds stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.app.control import Control
from tests.app.conftest import make_config, running

pytestmark = pytest.mark.asyncio

CHAT = "group:500"


async def test_a_threshold_override_survives_a_restart_and_can_be_dropped(data_dir: Path) -> None:
    config = make_config(None)
    async with running(config, data_dir, model=False) as harness:
        control = harness.runtime.bot.control
        assert isinstance(control, Control)
        answer = await control.set_thresholds(CHAT, 0.5, None, by="test")
        assert "高 0.50" in answer
        assert harness.runtime.kernel.thresholds("group:501").high == 0.65
    async with running(config, data_dir, model=False) as harness:
        kernel = harness.runtime.kernel
        assert (kernel.thresholds(CHAT).high, kernel.thresholds(CHAT).medium) == (0.5, 0.35)
        await harness.runtime.bot.control.set_thresholds(CHAT, None, None, by="test")
    async with running(config, data_dir, model=False) as harness:
        assert harness.runtime.kernel.thresholds(CHAT).high == 0.65


async def test_an_unreadable_thresholds_file_leaves_the_configured_ones(data_dir: Path) -> None:
    (data_dir / "thresholds.json").write_text('{"group:500": {"high": 0.1, "medium": 0.9}, "x": 3', "utf-8")
    async with running(make_config(None), data_dir, model=False) as harness:
        assert harness.runtime.kernel.thresholds(CHAT).high == 0.65
    (data_dir / "thresholds.json").write_text('{"group:500": {"high": 0.1, "medium": 0.9}}', "utf-8")
    async with running(make_config(None), data_dir, model=False) as harness:
        assert harness.runtime.kernel.thresholds(CHAT).high == 0.65  # medium > high: refused, logged
