"""The bot's own messages as the platform reports them back: ``message_sent`` events.

OneBot v11 implementations that report the bot's own messages (the ``report_self_message`` setting
of go-cqhttp and of the implementations that follow it) send each one as an event with ``post_type``
``message_sent``. The adapter has no model for that type: it parses such an event as a bare
``Event``, and the edge, which hears message events, never heard them. So a send the platform did
not answer in time was never known to have gone out, and a reply to the bot's message that came
before the send's answer was not known as one (see ``outbound.py``).

These two models make them message events of their chat, which the edge takes like an echo: the
bot's own message (``from_self``), never addressed, never answered. Other plugins' message matchers
do not see them: NoneBot matches an event by its type, and theirs is ``message_sent``, not
``message``. In a private chat the report's ``user_id`` is the bot's own; the chat is the other
person's, ``target_id``.
"""

from __future__ import annotations

from typing import Literal

from nonebot.adapters.onebot.v11 import Adapter, GroupMessageEvent, PrivateMessageEvent

__all__ = ["GroupMessageSentEvent", "PrivateMessageSentEvent", "hear_sent_messages"]


class GroupMessageSentEvent(GroupMessageEvent):
    """The bot's own group message, reported back."""

    post_type: Literal["message_sent"]  # type: ignore[assignment]


class PrivateMessageSentEvent(PrivateMessageEvent):
    """The bot's own private message, reported back; ``target_id`` is the person it went to."""

    post_type: Literal["message_sent"]  # type: ignore[assignment]
    target_id: int | None = None


def hear_sent_messages(adapter: type[Adapter] = Adapter) -> None:
    """Parse ``message_sent`` events as the models above (idempotent)."""
    adapter.add_custom_model(GroupMessageSentEvent, PrivateMessageSentEvent)
