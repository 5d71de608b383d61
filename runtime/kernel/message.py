"""The message value the edge hands to the kernel, and the key that names its chat.

A chat is a group or a private chat with one user, *as one account of the bot sees it*: the same
group heard through two accounts is two chats (each account has its own threads, budgets, memories
and quiet periods, and a chat's messages leave through its own account only). :class:`ChatKey` holds
the four parts — platform, account, kind, ident — and has one canonical string form, the ``chat_id``
every part of the runtime keys by and stores:

* bound: ``"<platform>:<account>:<kind>:<ident>"``, e.g. ``"qq:10001:group:123"``;
* unbound: ``"<kind>:<ident>"``, e.g. ``"group:123"`` — a chat whose account is not known (a chat log
  replayed offline, data written before chats carried their account, a test's message).

Both forms parse back (:meth:`ChatKey.parse`); the kind keeps the group and private id spaces apart.
The kernel never interprets the platform or the account: they are names the edge gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ChatKind(StrEnum):
    GROUP = "group"
    PRIVATE = "private"


_KINDS = frozenset(kind.value for kind in ChatKind)

# Where the model reads a message of the bot's account that the bot did not send
# (``ChatMessage.sent_elsewhere``), this label stands before it instead of the bot's own mark.
SENT_ELSEWHERE_LABEL = "(your account, sent by someone else, not by you)"


def _check_part(what: str, value: str) -> None:
    if not value or ":" in value or value in _KINDS:
        raise ValueError(f"a chat key's {what} must be a non-empty name without ':': {value!r}")


@dataclass(frozen=True, slots=True)
class ChatKey:
    """Which chat: ``kind`` and ``ident`` (the group's or the user's id on the platform), and the
    ``platform`` and ``account`` it is heard through — both empty for an unbound key."""

    platform: str
    account: str
    kind: ChatKind
    ident: str

    def __post_init__(self) -> None:
        if self.kind.__class__ is not ChatKind:
            object.__setattr__(self, "kind", ChatKind(self.kind))
        if not self.ident or ":" in self.ident:
            raise ValueError(f"a chat key's ident must be non-empty without ':': {self.ident!r}")
        if self.platform or self.account:
            _check_part("platform", self.platform)
            _check_part("account", self.account)

    @classmethod
    def of(cls, kind: ChatKind | str, ident: int | str, *, platform: str = "", account: str = "") -> ChatKey:
        return cls(platform, account, ChatKind(kind), str(ident))

    @classmethod
    def parse(cls, chat_id: str) -> ChatKey:
        """The key of a ``chat_id`` in either form; ``ValueError`` for anything else."""
        parts = chat_id.split(":")
        try:
            if len(parts) == 2:
                return cls("", "", ChatKind(parts[0]), parts[1])
            if len(parts) == 4:
                return cls(parts[0], parts[1], ChatKind(parts[2]), parts[3])
        except ValueError:
            pass
        raise ValueError(f"not a chat id: {chat_id!r}")

    @property
    def bound(self) -> bool:
        return bool(self.account)

    @property
    def is_private(self) -> bool:
        return self.kind is ChatKind.PRIVATE

    @property
    def chat_id(self) -> str:
        return chat_id_for(self.kind, self.ident, platform=self.platform, account=self.account)

    def bind(self, platform: str, account: str) -> ChatKey:
        """The same chat heard through ``account`` on ``platform``."""
        return ChatKey(platform, account, self.kind, self.ident)

    def unbound(self) -> ChatKey:
        return ChatKey("", "", self.kind, self.ident)

    def sibling(self, kind: ChatKind | str, ident: int | str) -> ChatKey:
        """Another chat heard through the same account (an admin command aimed at another group)."""
        return ChatKey(self.platform, self.account, ChatKind(kind), str(ident))

    def __str__(self) -> str:
        return self.chat_id


def chat_id_for(kind: ChatKind | str, ident: int | str, *, platform: str = "", account: str = "") -> str:
    """The canonical string of a chat key: ``qq:10001:group:123``, or unbound ``group:123``.

    The hot path's formatter (every message's :attr:`ChatMessage.chat_id`): no validation, which
    :class:`ChatKey` does once where a key is made from outside input.
    """
    if kind.__class__ is not ChatKind:  # a member formats as its value; the call is the slow part
        kind = ChatKind(kind)
    if account:
        return f"{platform}:{account}:{kind}:{ident}"
    return f"{kind}:{ident}"


def parse_chat_id(chat_id: str) -> tuple[ChatKind, str]:
    """The kind and the platform id of a chat id in either form (see :meth:`ChatKey.parse`)."""
    key = ChatKey.parse(chat_id)
    return key.kind, key.ident


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One incoming (or, with ``from_self``, outgoing) chat message, already converted by the edge.

    ``text`` is plain text with non-text segments rendered as typed placeholders (``[图片]``...).
    ``mentions`` holds the user ids @-mentioned (the bot's own id included when it is @-ed).
    ``addressed`` is the edge's verdict that the message is aimed at the bot: an @ of the bot, a reply
    to one of the bot's messages, the persona's name at the start, a poke, or any private message.
    ``platform`` and ``account`` say through which of the bot's accounts it was heard; empty (an
    unbound chat) when that is not known. ``sent_elsewhere`` (with ``from_self``): the account's own
    message that this bot did not send, typed on another device or sent by another program on the
    account; the kernel takes it as the bot's own all the same (never scored, never answered), and
    the model reads it as said by the account, not by itself.
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
    platform: str = ""
    account: str = ""
    sent_elsewhere: bool = False

    @property
    def chat_id(self) -> str:
        return chat_id_for(self.chat_kind, self.chat_ident, platform=self.platform, account=self.account)

    @property
    def key(self) -> ChatKey:
        return ChatKey(self.platform, self.account, self.chat_kind, self.chat_ident)

    @property
    def is_private(self) -> bool:
        return self.chat_kind is ChatKind.PRIVATE
