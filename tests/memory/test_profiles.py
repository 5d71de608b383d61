"""UserProfiles on both store backends: nicknames from messages, preferences learned (from a summary
only when it is clear whose they are), relationships, and the profile layer the builder reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.kernel.message import ChatKind, ChatMessage
from runtime.memory.profiles import UserProfiles
from runtime.memory.summary import SummaryBody
from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.records import StoredMessage, UserProfile
from runtime.store.sqlite import DB_FILENAME, SqliteStore


@pytest_asyncio.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    backend: Store = (
        MemoryStore() if request.param == "memory" else await SqliteStore.open(tmp_path / DB_FILENAME)
    )
    try:
        yield backend
    finally:
        await backend.close()


def message(sender: str, name: str, *, chat: str = "group:1", from_self: bool = False) -> ChatMessage:
    kind, ident = chat.split(":")
    return ChatMessage(
        message_id=f"m-{sender}-{name}",
        chat_kind=ChatKind(kind),
        chat_ident=ident,
        sender_id=sender,
        sender_name=name,
        time=100.0,
        text="在吗",
        from_self=from_self,
    )


def stored(sender: str, *, from_self: bool = False) -> StoredMessage:
    return StoredMessage("group:1", f"s-{sender}", sender, sender, 1.0, "……", from_self=from_self)


PREFERENCES = SummaryBody.model_validate(
    {"user_preferences": {"communication_style": "简洁直接", "tech_level": "高级"}}
)


@pytest.mark.asyncio
async def test_the_nickname_follows_the_latest_message_and_survives_a_new_cache(store: Store) -> None:
    profiles = UserProfiles(store)
    await profiles.observe(message("42", "小明"), now=1.0)
    await profiles.observe(message("42", "小明"), now=2.0)  # unchanged: no write
    await profiles.observe(message("42", "  明明  同学 "), now=3.0)
    assert profiles.statistics().nickname_writes == 2
    again = await UserProfiles(store).get("42")
    assert again is not None
    assert again.nickname == "明明 同学"
    assert again.updated_at == 3.0


@pytest.mark.asyncio
async def test_the_bots_own_messages_make_no_profile(store: Store) -> None:
    profiles = UserProfiles(store)
    assert await profiles.observe(message("bot", "灰风", from_self=True), now=1.0) is None
    assert await store.get_user_profile("bot") is None


@pytest.mark.asyncio
async def test_learned_preferences_replace_by_key_and_keep_the_newest(store: Store) -> None:
    profiles = UserProfiles(store, max_preferences=3)
    await profiles.observe(message("42", "小明"), now=1.0)
    await profiles.learn("42", {"tech_level": "中级", "design_preference": "暗色系"}, now=2.0)
    await profiles.learn("42", {"tech_level": "高级"}, now=3.0)
    await profiles.learn("42", ["喜欢猫", "喜欢猫", "不吃香菜"], now=4.0)
    found = await store.get_user_profile("42")
    assert found is not None
    assert found.nickname == "小明"
    assert found.preferences == ("tech_level: 高级", "喜欢猫", "不吃香菜")


@pytest.mark.asyncio
async def test_summary_preferences_go_to_the_private_chats_user(store: Store) -> None:
    profiles = UserProfiles(store)
    await profiles.learn_from_summary("private:42", PREFERENCES, [stored("42")], 5.0)
    found = await store.get_user_profile("42")
    assert found is not None
    assert "tech_level: 高级" in found.preferences


@pytest.mark.asyncio
async def test_summary_preferences_in_a_group_need_a_single_speaker(store: Store) -> None:
    profiles = UserProfiles(store)
    await profiles.learn_from_summary("group:1", PREFERENCES, [stored("7"), stored("8")], 5.0)
    assert await store.get_user_profiles(["7", "8"]) == {}
    await profiles.learn_from_summary(
        "group:1", PREFERENCES, [stored("7"), stored("bot", from_self=True)], 6.0
    )
    found = await store.get_user_profile("7")
    assert found is not None
    assert "communication_style: 简洁直接" in found.preferences


@pytest.mark.asyncio
async def test_the_profile_layer_carries_nickname_preferences_and_relationship(store: Store) -> None:
    profiles = UserProfiles(store)
    assert await profiles.profile("42", "group:1") is None
    await profiles.observe(message("42", "小明"), now=1.0)
    await profiles.learn("42", {"tech_level": "高级"}, now=2.0)
    await profiles.set_relationship("42", "项目负责人，灰风的主人", now=3.0)
    slot = await profiles.profile("42", "group:1")
    assert slot is not None
    assert (slot.nickname, slot.preferences, slot.relationship) == (
        "小明",
        ("tech_level: 高级",),
        "项目负责人，灰风的主人",
    )
    assert profiles.statistics().served == 1


class BrokenStore(MemoryStore):
    async def upsert_user_profile(self, profile: UserProfile) -> None:
        raise OSError("disk full")


@pytest.mark.asyncio
async def test_a_store_fault_on_the_message_path_is_logged_not_raised() -> None:
    broken = BrokenStore()
    try:
        profiles = UserProfiles(broken)
        assert await profiles.observe(message("42", "小明"), now=1.0) is None
        assert profiles.statistics().write_failures == 1
    finally:
        await broken.close()
