"""The packet the bot would have sent for each ``would_speak``, assembled by the Context Runtime.

A scratch store (the bot's own backend, ``[store] backend``, in a temporary directory) is fed with
the replayed messages as the bot's store writer would feed its database (in batches, flushed before
each packet: one transaction per would-speak rather than one per message), and
:func:`runtime.context.setup.context_runtime` is built from the same config, so each packet is what the
bot would have assembled at that moment: persona, topic thread, session dialogue (the conversation
thread), retrieval, ... The replay has no model, so the bot's own replies are not in
the store and no handoff digest is ever written by a model (the deterministic fallback is used).

Prompt tokens are :class:`runtime.llm.tokens.TokenEstimator`'s estimate of the assembled messages plus
the episode's control tools' schemas (what the first model call of the episode would send).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from runtime.config import GreyWindConfig
from runtime.context.builder import BuildReason, ChatInfo
from runtime.context.setup import ContextRuntime, context_runtime
from runtime.episodes.control_tools import CONTROL_TOOLS
from runtime.kernel.ids import counter_ids
from runtime.kernel.message import ChatMessage
from runtime.llm.tokens import TokenEstimator
from runtime.replay.engine import ActivationLine
from runtime.store.backends import open_store
from runtime.store.protocol import Store
from runtime.store.records import StoredMessage

__all__ = ["PacketAssembler", "PacketStatistics"]


@dataclass(frozen=True, slots=True)
class PacketStatistics:
    packets: int
    files: int
    prompt_tokens: int
    degraded: int


def _reason(line: ActivationLine) -> BuildReason:
    if line.forced:
        return BuildReason.FORCED
    decision = line.event.payload.get("decision")
    if decision in (BuildReason.HIGH.value, BuildReason.MEDIUM.value):
        return BuildReason(str(decision))
    return BuildReason.PROACTIVE


class PacketAssembler:
    """Stores the replayed messages; builds, measures and (with ``directory``) writes each packet.

    The assembler owns ``store`` and closes it in :meth:`aclose`.
    """

    def __init__(self, config: GreyWindConfig, store: Store, *, directory: Path | None = None) -> None:
        self._store = store
        self._pending: list[StoredMessage] = []
        self._estimator = TokenEstimator()
        self._runtime: ContextRuntime = context_runtime(
            self._store, config, ids=counter_ids(), counter=self._estimator
        )
        self._directory = directory
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self._packets = 0
        self._files = 0
        self._tokens = 0
        self._degraded = 0

    @classmethod
    async def open(
        cls, config: GreyWindConfig, *, scratch: Path, directory: Path | None = None
    ) -> PacketAssembler:
        """An assembler over a fresh store of the configured backend in ``scratch`` (a directory the
        caller removes)."""
        store = await open_store(config.store, scratch)
        return cls(config, store, directory=directory)

    def note(self, message: ChatMessage, thread_id: str) -> None:
        """A message the bot saw, stored (at the next packet) as its store writer would store it."""
        self._pending.append(StoredMessage.from_chat_message(message, thread_id=thread_id))

    async def _flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            await self._store.append_messages(batch)

    async def assemble(self, line: ActivationLine, trigger: ChatMessage | None) -> int:
        """Build the packet for a ``would_speak``; its estimated prompt tokens."""
        await self._flush()
        event = line.event
        chat = ChatInfo.for_chat(event.chat_id)
        built, prompt = await self._runtime.prepare(
            trigger,
            chat=chat,
            now=line.time,
            reason=_reason(line),
            conversation_thread_id=event.thread_id,
            cue=None if trigger is not None else event.kind,
        )
        messages = prompt.as_messages()
        tokens = self._estimator.estimate_messages(messages, CONTROL_TOOLS)
        self._packets += 1
        self._tokens += tokens
        if built.degraded:
            self._degraded += 1
        if self._directory is not None:
            self._files += 1
            record = {
                "ts": line.time,
                "chat_id": event.chat_id,
                "event_id": event.id,
                "message_id": trigger.message_id if trigger is not None else None,
                "reason": _reason(line).value,
                "prompt_tokens": tokens,
                "degraded": list(built.degraded),
                "prompt": prompt.debug_dump(),
            }
            name = f"{self._files:05d}-{event.id}.json"
            text = json.dumps(record, ensure_ascii=False, indent=2, sort_keys=True, default=str)
            (self._directory / name).write_text(text + "\n", encoding="utf-8")
        return tokens

    async def aclose(self) -> None:
        await self._store.close()

    def statistics(self) -> PacketStatistics:
        return PacketStatistics(self._packets, self._files, self._tokens, self._degraded)
