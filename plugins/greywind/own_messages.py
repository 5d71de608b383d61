"""The bot's own messages as the platform reports them back.

Implementations report the bot's own messages in one of two ways: as a message from its own account
(an echo), or, with ``report_self_message`` (go-cqhttp's setting, followed by the implementations
after it), as an event with ``post_type`` ``message_sent``.

The adapter has no model for ``message_sent``: it parses such an event as a bare ``Event``, which the
edge, hearing message events, would never hear. The two models here make them message events of their
chat, which the edge takes like an echo: the bot's own message (``from_self``), never addressed, never
answered. Other plugins' message matchers do not see them: NoneBot matches an event by its type, and
theirs is ``message_sent``, not ``message``. In a private chat the report's ``user_id`` is the bot's
own; the chat is the other person's, ``target_id``.

The outbound needs a report sooner than NoneBot hands it over: a send the platform did not answer in
time counts as sent when its report came, and is sent again once when, in a chat whose reports come,
none did (``outbound.py``). Before the edge hears an event, NoneBot asks the platform (``get_msg``)
about a message it quotes, and the bot's first part quotes what it answers: on a platform slow enough
to time the send out, that question is slow too, and the report would come after the resend. So the
frame guard hands each report to the outbound as it reads it (:func:`own_report`, from the raw frame).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nonebot.adapters.onebot.v11 import Adapter, GroupMessageEvent, Message, PrivateMessageEvent

from plugins.greywind.convert import chat_key
from plugins.greywind.frame_lanes import from_self
from runtime.kernel.message import ChatKind
from runtime.unicode_safe import clean_text

__all__ = [
    "GroupMessageSentEvent",
    "OwnReport",
    "PrivateMessageSentEvent",
    "hear_sent_messages",
    "own_report",
]


class GroupMessageSentEvent(GroupMessageEvent):
    """The bot's own group message, reported back."""

    post_type: Literal["message_sent"]  # type: ignore[assignment]


class PrivateMessageSentEvent(PrivateMessageEvent):
    """The bot's own private message, reported back; ``target_id`` is the person it went to."""

    post_type: Literal["message_sent"]  # type: ignore[assignment]
    target_id: int | None = None


def hear_sent_messages() -> None:
    """Have the adapter parse ``message_sent`` events as the models above (idempotent)."""
    Adapter.add_custom_model(GroupMessageSentEvent, PrivateMessageSentEvent)


@dataclass(frozen=True, slots=True)
class OwnReport:
    """The bot's own message read from a raw event frame: its chat, its id and its text."""

    chat_id: str
    message_id: str
    text: str


def own_report(frame: Mapping[str, Any]) -> OwnReport | None:
    """The bot's own message that ``frame`` (a parsed OneBot event) reports, or None: for any other
    frame, and for one that names no chat or message. Never raises.

    The text is the message's text segments joined (the outbound sends a part as one text segment,
    after the quote), in the ``array`` message format or the ``string`` one (CQ codes).
    """
    if not from_self(frame):
        return None
    self_id, message_id = frame.get("self_id"), frame.get("message_id")
    if frame.get("message_type") == "group":
        kind, ident = ChatKind.GROUP, frame.get("group_id")
    else:
        kind, ident = ChatKind.PRIVATE, frame.get("target_id")
    if not _ident(self_id) or not _ident(ident) or not _ident(message_id):
        return None
    try:
        text = _text_of(frame.get("message"))
        chat_id = chat_key(kind, str(ident), str(self_id)).chat_id
    except Exception:  # a message the adapter would refuse too, an ident a chat key cannot hold
        return None
    return OwnReport(chat_id, str(message_id), clean_text(text))


def _text_of(message: object) -> str:
    """The text segments of a message in either format, joined."""
    if isinstance(message, str):  # CQ codes: the adapter's own parser, which unescapes the text
        return "".join(str(s.data.get("text", "")) for s in Message(message) if s.type == "text")
    if not isinstance(message, list):
        return ""
    texts: list[str] = []
    for segment in message:
        if isinstance(segment, Mapping) and segment.get("type") == "text":
            data = segment.get("data")
            if isinstance(data, Mapping) and isinstance(text := data.get("text"), str):
                texts.append(text)
    return "".join(texts)


def _ident(value: object) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool) and str(value).strip() != ""
