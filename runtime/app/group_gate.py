"""The runtime's outbound, closed in the groups the bot does not live in (:mod:`runtime.groups`).

Everything the runtime does in a chat asks ``gate`` first (an episode before its model call, a
reminder before it is sent, a waiting episode before it resumes) and speaks through ``send``; wrapping
the edge's outbound puts the group rule in front of all of them at once. A closed group's verdict is
``disabled`` (no ``until``: a reminder due there is dropped, not postponed). Answers to superusers'
commands (``admin``) still go out, so a group can be enabled from inside it.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime.groups import GroupPolicy
from runtime.ports import GateVerdict, Outbound, QuietGates, SendResult, SentRecord

__all__ = ["DISABLED", "GroupGatedOutbound"]

DISABLED = "disabled"


class GroupGatedOutbound:
    """An :class:`~runtime.ports.Outbound` that refuses what ``policy`` closes; the rest is the edge's."""

    def __init__(self, outbound: Outbound, policy: GroupPolicy) -> None:
        self._outbound = outbound
        self._policy = policy

    @property
    def gates(self) -> QuietGates:
        return self._outbound.gates

    def gate(self, chat_id: str) -> GateVerdict:
        if not self._policy.enabled(chat_id):
            return GateVerdict(False, DISABLED)
        return self._outbound.gate(chat_id)

    async def send(
        self, chat_id: str, text: str, *, reply_to: str | None = None, admin: bool = False
    ) -> SendResult:
        if not admin and not self._policy.enabled(chat_id):
            return SendResult(chat_id, False, DISABLED)
        return await self._outbound.send(chat_id, text, reply_to=reply_to, admin=admin)

    def on_sent(self, listener: Callable[[SentRecord], None]) -> Callable[[], None]:
        return self._outbound.on_sent(listener)
