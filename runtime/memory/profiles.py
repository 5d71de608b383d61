"""UserProfiles: design/001 layer 3 (用户画像) — who the person speaking is, kept in SQLite by the store.

A profile is per QQ user, across chats: a nickname, preferences learned, and a relationship line.

- **Nickname** from every message the edge hands over (:meth:`UserProfiles.observe`): written when it
  changes, never for the bot's own messages; reads are served from a small cache.
- **Preferences** from a compression's ``user_preferences`` (:meth:`learn_from_summary`, the
  injector's listener) and from anything else that calls :meth:`learn`. A preference is a line
  ``key: value``; a newer value replaces the older one with the same key, and the newest
  ``max_preferences`` are kept. A summary's preferences are the person's only where it is clear whose
  they are: a private chat's user, or in a group the single person who spoke in the compressed rounds;
  otherwise they stay in the group's summary alone.
- **Relationship** is set by whoever knows it (an admin command, a game): :meth:`set_relationship`.

:meth:`profile` is the ContextBuilder's ``ProfileProvider``. Store faults on the message path are
logged and swallowed: a nickname not saved this time is saved by the next message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import anyio
import structlog

from runtime.context.packet import UserProfileSlot
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.memory.summary import SummaryBody
from runtime.store.records import StoredMessage, UserProfile
from runtime.store.roles import MemoryLayerRows

__all__ = ["ProfileStatistics", "UserProfiles"]

log = structlog.get_logger("greywind.memory")

_NAME_MAX = 64
_LINE_MAX = 120


@dataclass(frozen=True, slots=True)
class ProfileStatistics:
    cached: int
    nickname_writes: int
    preference_writes: int
    served: int
    write_failures: int


def _key_of(line: str) -> str | None:
    key, sep, _ = line.partition(":")
    return key.strip() if sep and key.strip() else None


class UserProfiles:
    """Reads and updates user profiles; a bounded cache in front of the store."""

    def __init__(self, store: MemoryLayerRows, *, max_preferences: int = 12, cache_size: int = 2_048) -> None:
        self._store = store
        self._max_preferences = max_preferences
        self._cache_size = cache_size
        self._cache: OrderedDict[str, UserProfile | None] = OrderedDict()
        self._lock = anyio.Lock()
        self._nickname_writes = self._preference_writes = self._served = self._failures = 0

    async def get(self, user_id: str) -> UserProfile | None:
        if user_id in self._cache:
            self._cache.move_to_end(user_id)
            return self._cache[user_id]
        found = await self._store.get_user_profile(user_id)
        self._remember(user_id, found)
        return found

    async def observe(self, message: ChatMessage | StoredMessage, *, now: float) -> UserProfile | None:
        """Keep the sender's nickname current; returns the profile (``None`` for the bot's own)."""
        if message.from_self or not message.sender_id:
            return None
        name = " ".join(message.sender_name.split())[:_NAME_MAX] or message.sender_id
        try:
            async with self._lock:
                found = await self.get(message.sender_id)
                if found is not None and found.nickname == name:
                    return found
                updated = (
                    replace(found, nickname=name, updated_at=now)
                    if found is not None
                    else UserProfile(user_id=message.sender_id, nickname=name, updated_at=now)
                )
                await self._write(updated)
                self._nickname_writes += 1
                return updated
        except Exception:
            self._failures += 1
            log.exception("memory.profile_observe_failed", user_id=message.sender_id)
            return None

    async def learn(
        self, user_id: str, preferences: Mapping[str, str] | Sequence[str], *, now: float
    ) -> UserProfile:
        """Merge preferences (``{"tech_level": "高级"}`` or lines) into the user's profile."""
        lines = (
            [f"{k}: {v}" for k, v in preferences.items()]
            if isinstance(preferences, Mapping)
            else list(preferences)
        )
        lines = [" ".join(line.split())[:_LINE_MAX] for line in lines]
        lines = [line for line in lines if line]
        async with self._lock:
            found = await self.get(user_id)
            current = list(found.preferences) if found is not None else []
            for line in lines:
                key = _key_of(line)
                current = [old for old in current if old != line and (key is None or _key_of(old) != key)]
                current.append(line)
            kept = tuple(current[-self._max_preferences :])
            if found is not None and kept == found.preferences:
                return found
            updated = (
                replace(found, preferences=kept, updated_at=now)
                if found is not None
                else UserProfile(user_id=user_id, nickname=user_id, updated_at=now, preferences=kept)
            )
            await self._write(updated)
            self._preference_writes += 1
            return updated

    async def set_relationship(self, user_id: str, relationship: str, *, now: float) -> UserProfile:
        async with self._lock:
            found = await self.get(user_id)
            text = " ".join(relationship.split())[:_LINE_MAX]
            updated = (
                replace(found, relationship=text, updated_at=now)
                if found is not None
                else UserProfile(user_id=user_id, nickname=user_id, updated_at=now, relationship=text)
            )
            await self._write(updated)
            return updated

    async def learn_from_summary(
        self, conversation: str, body: SummaryBody, messages: Sequence[StoredMessage], now: float
    ) -> None:
        """The injector's listener: a new summary's ``user_preferences`` go to the person they describe."""
        preferences = body.user_preferences.items()
        if not preferences:
            return
        user_id = self._owner(conversation, messages)
        if user_id is not None:
            await self.learn(user_id, preferences, now=now)

    async def profile(self, user_id: str, chat_id: str) -> UserProfileSlot | None:
        """Layer 3 of design/001 for the ContextBuilder (its ``ProfileProvider``)."""
        found = await self.get(user_id)
        if found is None:
            return None
        self._served += 1
        return UserProfileSlot(found.user_id, found.nickname, found.preferences, found.relationship)

    def statistics(self) -> ProfileStatistics:
        return ProfileStatistics(
            cached=len(self._cache),
            nickname_writes=self._nickname_writes,
            preference_writes=self._preference_writes,
            served=self._served,
            write_failures=self._failures,
        )

    # -- internals -----------------------------------------------------------------------------------

    @staticmethod
    def _owner(conversation: str, messages: Sequence[StoredMessage]) -> str | None:
        try:
            key = ChatKey.parse(conversation)
        except ValueError:
            key = None
        if key is not None and key.is_private:
            return key.ident
        speakers = {m.sender_id for m in messages if not m.from_self and m.sender_id}
        return next(iter(speakers)) if len(speakers) == 1 else None

    async def _write(self, profile: UserProfile) -> None:
        await self._store.upsert_user_profile(profile)
        self._remember(profile.user_id, profile)

    def _remember(self, user_id: str, profile: UserProfile | None) -> None:
        self._cache[user_id] = profile
        self._cache.move_to_end(user_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
