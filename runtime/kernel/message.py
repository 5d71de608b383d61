"""The message value the edge hands to the kernel.

A chat is either a QQ group or a private chat with one user. Everything that is "per group" in the
kernel (threads, budgets, the group lexicon scope) is keyed by :attr:`ChatMessage.chat_id`, a string
``"group:<group_id>"`` or ``"private:<user_id>"`` so the two id spaces never collide.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ChatKind(StrEnum):
    GROUP = "group"
    PRIVATE = "private"


def chat_id_for(kind: ChatKind | str, ident: int | str) -> str:
    """The kernel's chat key: ``group:123`` or ``private:42``."""
    if kind.__class__ is not ChatKind:  # a member formats as its value; the call is the slow part
        kind = ChatKind(kind)
    return f"{kind}:{ident}"


def parse_chat_id(chat_id: str) -> tuple[ChatKind, str]:
    """Split a chat key back into its kind and the platform id."""
    kind, _, ident = chat_id.partition(":")
    return ChatKind(kind), ident


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One incoming (or, with ``from_self``, outgoing) chat message, already converted by the edge.

    ``text`` is plain text with non-text segments rendered as typed placeholders (``[图片]``...).
    ``mentions`` holds the user ids @-mentioned (the bot's own id included when it is @-ed).
    ``addressed`` is the edge's verdict that the message is aimed at the bot: an @ of the bot, a reply
    to one of the bot's messages, the persona's name at the start, a poke, or any private message.
    """

    message_id: str
    chat_kind: ChatKind
    chat_ident: str
    sender_id: str
    sender_name: str
    time: float
    text: str
    mentions: tuple[str, ...] = ()
    reply_to: str | None = None
    addressed: bool = False
    from_self: bool = False

    @property
    def chat_id(self) -> str:
        return chat_id_for(self.chat_kind, self.chat_ident)

    @property
    def is_private(self) -> bool:
        return self.chat_kind is ChatKind.PRIVATE
