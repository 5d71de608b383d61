"""OneBot v11 notices the runtime cares about, read into the values of :mod:`runtime.ports.notices`.

* ``group_recall`` / ``friend_recall`` -> :class:`Recalled` (the runtime marks the message recalled;
  a recalled message must not be quoted back or answered).
* ``group_ban`` of the bot (or of the whole group) -> :class:`BotMuted`; ``lift_ban`` ->
  :class:`BotUnmuted`. The edge closes that chat's gate itself (:func:`apply_to_gates`): nothing is sent
  there until the ban is lifted or its duration passes.
* ``group_decrease`` with the bot leaving or kicked -> :class:`BotRemoved` (the gate stays closed).
* A poke is not a notice here: it addresses the bot, so it becomes a message
  (:func:`plugins.greywind.convert.convert_poke`).
"""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import (
    FriendRecallNoticeEvent,
    GroupBanNoticeEvent,
    GroupDecreaseNoticeEvent,
    GroupRecallNoticeEvent,
    NoticeEvent,
)

from plugins.greywind.convert import chat_key
from plugins.greywind.outbound import ChatGates
from runtime.kernel.message import ChatKind
from runtime.ports.notices import BotMuted, BotRemoved, BotUnmuted, Notice, Recalled

__all__ = ["BotMuted", "BotRemoved", "BotUnmuted", "Notice", "Recalled", "apply_to_gates", "interpret_notice"]


def interpret_notice(event: NoticeEvent, self_id: str, *, now: float) -> Notice | None:
    """The notice's meaning for the runtime, or None when it has none."""
    if isinstance(event, GroupRecallNoticeEvent):
        chat = chat_key(ChatKind.GROUP, event.group_id, self_id).chat_id
        return Recalled(chat, str(event.message_id), str(event.operator_id), now)
    if isinstance(event, FriendRecallNoticeEvent):
        chat = chat_key(ChatKind.PRIVATE, event.user_id, self_id).chat_id
        return Recalled(chat, str(event.message_id), str(event.user_id), now)
    if isinstance(event, GroupBanNoticeEvent):
        # user_id 0 is a whole-group ban (全员禁言): it silences the bot too unless it is an admin,
        # and the edge cannot know that, so it stays quiet.
        if str(event.user_id) not in {self_id, "0"}:
            return None
        chat = chat_key(ChatKind.GROUP, event.group_id, self_id).chat_id
        if event.sub_type == "lift_ban":
            return BotUnmuted(chat, str(event.operator_id), now)
        until = now + event.duration if event.duration > 0 else None
        return BotMuted(chat, until, str(event.operator_id), str(event.user_id) == "0", now)
    if isinstance(event, GroupDecreaseNoticeEvent) and str(event.user_id) == self_id:
        chat = chat_key(ChatKind.GROUP, event.group_id, self_id).chat_id
        return BotRemoved(chat, str(event.operator_id), now)
    return None


def apply_to_gates(notice: Notice, gates: ChatGates) -> None:
    """Close or open the chat's send gate as the notice says."""
    if isinstance(notice, BotMuted):
        gates.mute(notice.chat_id, notice.until)
    elif isinstance(notice, BotUnmuted):
        gates.unmute(notice.chat_id)
    elif isinstance(notice, BotRemoved):
        gates.mute(notice.chat_id, None)
