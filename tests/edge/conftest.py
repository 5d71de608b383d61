"""The edge's modules live in a NoneBot plugin package, which needs an initialised NoneBot to import.

NoneBot is initialised once, with the driver-less ``~none`` driver, and the plugin is loaded the way
``bot.py`` loads it; no server runs, so the plugin's start-up hooks never fire and the tests drive
:class:`plugins.greywind.edge.Edge` directly.
"""

from __future__ import annotations

import nonebot
import pytest

if not getattr(nonebot, "_driver", None):
    nonebot.init(driver="~none")
    nonebot.load_plugin("plugins.greywind")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
