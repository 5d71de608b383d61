"""Fixtures for extension tests: a clock at noon in Shanghai, the real kernel lexicon and scheduler."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pytest

from runtime.extensions import ChatActivityLog, ExtensionRegistry, LifeDirector, LifeSettings, Scope
from runtime.kernel.clock import ManualClock
from runtime.kernel.kernel import Kernel
from runtime.kernel.lexicon import DynamicLexicon, LexiconSettings
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.tools import ToolRegistry

# 2026-11-29 12:00 in Asia/Shanghai.
NOON = datetime(2026, 11, 29, 4, 0, tzinfo=UTC).timestamp()


class SplitSegmenter:
    def cut(self, text: str) -> Iterable[str]:
        return text.split()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOON)


@pytest.fixture
def lexicon() -> DynamicLexicon:
    return DynamicLexicon(LexiconSettings(), segmenter=SplitSegmenter())


@pytest.fixture
def sink() -> Kernel:
    """Where the director's activations go: the kernel, as in the bot."""
    return Kernel(KernelSettings(self_ids=("10001",)))


@pytest.fixture
def tools() -> ToolRegistry:
    return ToolRegistry(default_timeout=0.5)


@pytest.fixture
def registry(tools: ToolRegistry, clock: ManualClock, lexicon: DynamicLexicon) -> ExtensionRegistry:
    return ExtensionRegistry(tools, clock=clock, lexicon=lexicon)


@pytest.fixture
def chats() -> ChatActivityLog:
    return ChatActivityLog()


@pytest.fixture
def life_settings() -> LifeSettings:
    return LifeSettings(
        tick=30.0,
        recent_activity=3_600.0,
        max_proposals_per_tick=3,
        source_timeout=0.2,
        default_deadline=600.0,
    )


@pytest.fixture
def director(
    registry: ExtensionRegistry,
    sink: Kernel,
    chats: ChatActivityLog,
    clock: ManualClock,
    life_settings: LifeSettings,
) -> LifeDirector:
    return LifeDirector(registry, sink, chats, clock=clock, settings=life_settings)


@pytest.fixture
def plugin() -> Scope:
    return Scope("plugin")


def said(clock: ManualClock, chat: str = "1", text: str = "hi", *, from_self: bool = False) -> ChatMessage:
    return ChatMessage(
        message_id=f"m{clock.now()}",
        chat_kind=ChatKind.GROUP,
        chat_ident=chat,
        sender_id="bot" if from_self else "7",
        sender_name="u",
        time=clock.now(),
        text=text,
        from_self=from_self,
    )
