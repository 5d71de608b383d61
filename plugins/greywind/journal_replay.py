"""Re-delivering the inbound journal at start-up: what a crash left unstored reaches the runtime.

The edge calls :meth:`JournalReplay.run` with the journal's frames after the runtime has started and
before the bot serves. Each frame is parsed by the adapter (its segments repaired as the frame guard
does), converted with the time it was first read, and then:

* a message already in the store (the gateway's ``stored_already``: same chat, id, sender and text), or
  one this replay has already delivered, is skipped — it was stored, ingested and if need be
  answered before the crash, so a replay never does any of that twice;
* a superuser's command is skipped (logged): a command is meant for the moment it is given;
* a message older than ``bot.replay_answer_minutes`` is only stored: it reaches the runtime as not
  addressed (it joins the record and the conversation threads, and is never answered);
* a younger addressed message waits for its account to reconnect (answered while nobody is connected,
  the reply could not be sent), and so does everything after it in the same chat, to keep the chat's
  order; the rest goes to the runtime at once through the normal path.

Every frame is settled in the journal once the edge is done with it, so the segments it came from are
deleted when the store has committed what they became.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import structlog
from nonebot.adapters.onebot.v11 import Adapter, MessageEvent

from plugins.greywind.convert import Inbound, convert_message
from plugins.greywind.journal import JournalEntry, JournalKey, frame_key
from plugins.greywind.onebot_guard import repair_segments
from runtime.kernel.message import ChatMessage
from runtime.ports import StoresInbound

if TYPE_CHECKING:
    from plugins.greywind.edge import Edge

__all__ = ["JournalReplay", "ReplayStatistics", "event_key"]

log = structlog.get_logger("greywind.journal")

# Frames converted, and looked up in the store, at a time.
_BATCH = 500


def event_key(event: MessageEvent) -> JournalKey | None:
    """The journal key of a parsed message event (the same as :func:`frame_key` of its frame): None
    for the bot's own message reported back (``message_sent``), which is not journaled."""
    return frame_key(
        {
            "post_type": event.post_type,
            "self_id": event.self_id,
            "message_type": event.message_type,
            "group_id": getattr(event, "group_id", None),
            "user_id": event.user_id,
            "message_id": event.message_id,
        }
    )


@dataclass(frozen=True, slots=True)
class ReplayStatistics:
    frames: int
    delivered: int
    stored_only: int
    already_stored: int
    commands: int
    unreadable: int
    waiting: int  # addressed messages (and their chats' later ones) waiting for their account


@dataclass(frozen=True, slots=True)
class _Held:
    inbound: Inbound
    key: JournalKey
    received_at: float


class JournalReplay:
    def __init__(self, edge: Edge, *, answer_within: float) -> None:
        self._edge = edge
        self._answer_within = answer_within
        self._held: dict[str, list[_Held]] = {}  # account -> messages waiting for it
        self._counts = dict.fromkeys(
            ("frames", "delivered", "stored_only", "already_stored", "commands", "unreadable"), 0
        )

    async def run(self, entries: Iterable[JournalEntry]) -> None:
        seen: set[tuple[str, str, str, str]] = set()
        held_chats: set[str] = set()
        entries = iter(entries)
        while batch := [(entry, self._convert(entry)) for entry in itertools.islice(entries, _BATCH)]:
            stored = await self._stored_already([inbound.message for _, inbound in batch if inbound])
            for entry, inbound in batch:
                self._counts["frames"] += 1
                if inbound is None:
                    self._counts["unreadable"] += 1
                    self._settle(entry.key)
                    continue
                message = inbound.message
                identity = (message.chat_id, message.message_id, message.sender_id, message.text)
                if next(stored) or identity in seen:
                    self._counts["already_stored"] += 1
                    self._settle(entry.key)
                    continue
                seen.add(identity)
                if self._edge.command_of(inbound) is not None:
                    self._counts["commands"] += 1
                    log.info("replay_command_skipped", chat_id=message.chat_id, message_id=message.message_id)
                    self._settle(entry.key)
                    continue
                young = self._edge.clock() - entry.received_at <= self._answer_within
                if young and (message.addressed or message.chat_id in held_chats):
                    held_chats.add(message.chat_id)
                    account = entry.key[0]
                    self._held.setdefault(account, []).append(_Held(inbound, entry.key, entry.received_at))
                    continue
                await self._deliver(inbound, entry.key, young=young)
        if self._counts["frames"]:
            log.info("journal_replayed", **self._counts, waiting=self.waiting)

    async def _stored_already(self, messages: list[ChatMessage]) -> Iterator[bool]:
        gateway = self._edge.gateway
        if not isinstance(gateway, StoresInbound) or not messages:
            return iter([False] * len(messages))
        return iter(await gateway.stored_already(messages))

    def _settle(self, key: JournalKey) -> None:
        journal = self._edge.journal
        if journal is not None:
            journal.settle(key)

    def _convert(self, entry: JournalEntry) -> Inbound | None:
        frame = dict(entry.frame)
        repair_segments(frame)
        event = Adapter.json_to_event(frame)
        if not isinstance(event, MessageEvent):
            log.warning("replay_frame_unreadable", message_id=entry.key[3])
            return None
        try:
            rules = self._edge._rules_for(str(event.self_id))
            return convert_message(event, rules, now=entry.received_at)
        except Exception:
            log.exception("replay_convert_failed", message_id=entry.key[3])
            return None

    async def _deliver(self, inbound: Inbound, key: JournalKey, *, young: bool) -> None:
        edge = self._edge
        account = key[0]
        if young:
            self._counts["delivered"] += 1
            await edge.deliver(inbound, account, key)
            return
        self._counts["stored_only"] += 1
        message = replace(inbound.message, addressed=False)
        edge.owners.claim(message.chat_id, account)
        await edge.submit_settled(message.chat_id, partial(edge.gateway.on_message, message), key)

    async def connected(self, account: str) -> None:
        """The account is back: hand the runtime what waited for it, in order."""
        held = self._held.pop(account, [])
        for item in held:
            young = self._edge.clock() - item.received_at <= self._answer_within
            await self._deliver(item.inbound, item.key, young=young)
        if held:
            log.info("replay_released", account=account, messages=len(held))

    @property
    def waiting(self) -> int:
        return sum(len(held) for held in self._held.values())

    def statistics(self) -> ReplayStatistics:
        return ReplayStatistics(**self._counts, waiting=self.waiting)
