"""OneBot v11 message events -> the kernel's :class:`ChatMessage`.

The conversion reads ``event.original_message`` (the segments as the platform sent them): the adapter
strips a leading @-bot, the reply segment and the nickname out of ``event.message`` before matchers
run, and the kernel needs to know they were there.

Rules, each one a complaint seen in comparable bots:

* Only an ``at`` *segment* is a mention. Text that looks like a CQ code (``[CQ:at,qq=123]`` typed by a
  user inside a text segment) stays text.
* Non-text segments become typed placeholders (``[图片]``, ``[语音]``, ...); an unknown segment type
  becomes ``[未知消息:type]`` rather than an error.
* Addressed = private chat, an @ of the bot anywhere, a reply to one of the bot's messages (known from
  the adapter's ``get_msg`` result, or from the ids the bot itself sent when ``get_msg`` failed), or the
  persona's name / an alias opening the message.
* Text beyond ``max_chars`` is cut with a marker saying how long the original was, so a 200,000
  character paste costs the kernel no more than a normal message.
* Lone surrogates (valid JSON, not encodable UTF-8) become U+FFFD in the text, the names and the ids,
  and a nickname or group card is cut to ``NAME_MAX_CHARS`` (``runtime.unicode_safe``): an odd
  character or a 100,000-character name costs a replacement, never the message or the user's replies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nonebot.adapters.onebot.v11 import (
    GroupMessageEvent,
    Message,
    MessageEvent,
    MessageSegment,
    PokeNotifyEvent,
)

from runtime.addressing import opens_with_name, truncate_text
from runtime.kernel.message import ChatKey, ChatKind, ChatMessage
from runtime.unicode_safe import cap_name, clean_text

__all__ = [
    "PLACEHOLDERS",
    "AddressingRules",
    "Inbound",
    "convert_message",
    "convert_poke",
    "opens_with_name",
    "truncate_text",
]

PLACEHOLDERS: Mapping[str, str] = {
    "image": "[图片]",
    "record": "[语音]",
    "video": "[视频]",
    "file": "[文件]",
    "forward": "[聊天记录]",
    "node": "[聊天记录]",
    "face": "[表情]",
    "mface": "[表情]",
    "marketface": "[表情]",
    "dice": "[骰子]",
    "rps": "[猜拳]",
    "poke": "[戳一戳]",
    "shake": "[窗口抖动]",
    "share": "[链接]",
    "music": "[音乐]",
    "location": "[位置]",
    "contact": "[名片]",
    "json": "[卡片消息]",
    "xml": "[卡片消息]",
    "markdown": "[卡片消息]",
    "redbag": "[红包]",
    "anonymous": "",
}
POKE_TEXT = "[戳一戳]"
#: The platform this edge speaks for, as chat keys name it (``qq:<self_id>:group:<group_id>``).
PLATFORM = "qq"
MAX_MENTIONS = 64
_SAFE_TYPE = re.compile(r"[A-Za-z0-9_.-]{1,24}")
# After the bot's name these do not make it another word: "灰风，", "greywind: ", "灰风?".
_NAME_BOUNDARY = frozenset(" \t\r\n,，.。:：!！?？~～、;；")


@dataclass(frozen=True, slots=True)
class AddressingRules:
    """Who the bot is, for deciding whether a message is aimed at it."""

    self_id: str
    names: tuple[str, ...]
    max_chars: int = 4_000
    # The bot's own sent message ids; a reply to one addresses the bot even when get_msg failed.
    is_own_message: Callable[[str], bool] = lambda _message_id: False


@dataclass(frozen=True, slots=True)
class Inbound:
    """A converted message plus what the edge itself needs from it.

    ``body`` is the text with the addressing removed (a leading @-bot, the bot's name), for mute words
    and admin commands; ``truncated`` says the kernel saw a cut version.
    """

    message: ChatMessage
    body: str
    truncated: bool
    how_addressed: str  # "private" | "mention" | "reply" | "name" | "" (not addressed)


def _placeholder(segment: MessageSegment) -> str:
    known = PLACEHOLDERS.get(segment.type)
    if known is not None:
        return known
    kind = segment.type if _SAFE_TYPE.fullmatch(segment.type or "") else "?"
    return f"[未知消息:{kind}]"


def _display_name(event: MessageEvent) -> str:
    if isinstance(event, GroupMessageEvent) and event.anonymous is not None:
        return cap_name(event.anonymous.name)
    sender = event.sender
    return cap_name((sender.card or sender.nickname or str(event.user_id)).strip() or str(event.user_id))


def _render(
    segments: Message, rules: AddressingRules, persona: str
) -> tuple[list[str], list[str], str | None, int]:
    """Text parts, mentioned ids, the reply target, and how many leading parts address the bot."""
    parts: list[str] = []
    mentions: list[str] = []
    reply_to: str | None = None
    leading = 0
    still_leading = True
    for segment in segments:
        data = segment.data if isinstance(segment.data, dict) else {}
        kind = segment.type
        if kind == "text":
            text = data.get("text")
            parts.append(text if isinstance(text, str) else "")
            if still_leading and not parts[-1].strip():
                leading += 1
            else:
                still_leading = False
        elif kind == "at":
            qq = str(data.get("qq", "")).strip()
            if qq == "all":
                parts.append("@全体成员 ")
                still_leading = False
            elif qq:
                mentions.append(qq)
                name = persona if qq == rules.self_id else str(data.get("name") or qq)
                parts.append(f"@{name} ")
                if still_leading and qq == rules.self_id:
                    leading += 1
                else:
                    still_leading = False
            else:
                parts.append(_placeholder(segment))
                still_leading = False
        elif kind == "reply":
            ident = data.get("id")
            if reply_to is None and ident is not None and str(ident).strip():
                reply_to = str(ident).strip()
            parts.append("")
            if still_leading:
                leading += 1
        else:
            parts.append(_placeholder(segment))
            still_leading = False
    return parts, mentions, reply_to, leading


def convert_message(event: MessageEvent, rules: AddressingRules, *, now: float) -> Inbound:
    """Convert one message event. Never raises on odd segment data; ``now`` is the receipt time
    (when its frame was read off the socket, or when the edge handles it).

    The kernel's clock is the process's clock, so ``time`` is when the edge received the message, not
    the platform's second-resolution (and sometimes skewed) timestamp.
    """
    persona = rules.names[0] if rules.names else "bot"
    segments = event.original_message if event.original_message else event.message
    parts, mentions, reply_to, leading = _render(segments, rules, persona)
    full = clean_text(_join(parts).strip())
    body = clean_text(_join(parts[leading:]).strip())
    mentions = [clean_text(m) for m in mentions]
    reply_to = clean_text(reply_to) if reply_to is not None else None

    private = event.message_type == ChatKind.PRIVATE.value
    how = ""
    if private:
        how = "private"
    elif rules.self_id in mentions:
        how = "mention"
    elif _replies_to_bot(event, reply_to, rules):
        how = "reply"
    if (name := opens_with_name(body, rules.names)) is not None:
        how = how or "name"
        body = body.lstrip()[len(name.strip()) :].lstrip("".join(_NAME_BOUNDARY))
    if not how and event.to_me:
        # The adapter's own verdict (its NICKNAME setting, an @ at the end, a reply it resolved).
        how = "reply" if event.reply is not None else "mention"

    text, truncated = truncate_text(full, rules.max_chars)
    body, _ = truncate_text(body, rules.max_chars)
    sender_id = clean_text(str(event.user_id))
    from_self = sender_id == rules.self_id
    if isinstance(event, GroupMessageEvent):
        chat_ident = str(event.group_id)
    else:
        # The bot's own private message reported back names the person it went to (``target_id``);
        # its ``user_id`` is the bot's.
        target = getattr(event, "target_id", None) if from_self else None
        chat_ident = str(target if target is not None else event.user_id)
    message = ChatMessage(
        message_id=clean_text(str(event.message_id)),
        chat_kind=ChatKind.PRIVATE if private else ChatKind.GROUP,
        chat_ident=chat_ident,
        sender_id=sender_id,
        sender_name=_display_name(event),
        time=now,
        text=text,
        mentions=_capped_mentions(mentions, rules.self_id),
        reply_to=reply_to,
        addressed=bool(how) and not from_self,  # the bot's own echo never calls for an answer
        from_self=from_self,
        platform=PLATFORM,
        account=rules.self_id,
    )
    return Inbound(message=message, body=body, truncated=truncated, how_addressed="" if from_self else how)


def chat_key(kind: ChatKind, ident: int | str, self_id: int | str) -> ChatKey:
    """The key of a chat heard through the account ``self_id``."""
    return ChatKey.of(kind, ident, platform=PLATFORM, account=str(self_id))


def _capped_mentions(mentions: list[str], self_id: str) -> tuple[str, ...]:
    """Distinct mentions, at most ``MAX_MENTIONS`` (an @ of the bot always kept): a message that @s a
    whole member list should not hand the kernel thousands of ids."""
    distinct = list(dict.fromkeys(mentions))
    if len(distinct) <= MAX_MENTIONS:
        return tuple(distinct)
    kept = distinct[:MAX_MENTIONS]
    if self_id in distinct and self_id not in kept:
        kept[-1] = self_id
    return tuple(kept)


def _join(parts: list[str]) -> str:
    """Join rendered parts; an @ is rendered with a trailing space, so the text after it loses one."""
    out: list[str] = []
    for part in parts:
        if out and out[-1].startswith("@") and out[-1].endswith(" ") and part[:1].isspace():
            part = part[1:]
        out.append(part)
    return "".join(out)


def _replies_to_bot(event: MessageEvent, reply_to: str | None, rules: AddressingRules) -> bool:
    if event.reply is not None and event.reply.sender.user_id is not None:
        return str(event.reply.sender.user_id) == rules.self_id
    return reply_to is not None and rules.is_own_message(reply_to)


def convert_poke(event: PokeNotifyEvent, rules: AddressingRules, *, now: float) -> ChatMessage | None:
    """A poke of the bot, as an addressed message; a poke of someone else is None (not ours to answer)."""
    if str(event.target_id) != rules.self_id or str(event.user_id) == rules.self_id:
        return None
    group = event.group_id
    return ChatMessage(
        message_id=f"poke-{event.time}-{event.user_id}",
        chat_kind=ChatKind.GROUP if group else ChatKind.PRIVATE,
        chat_ident=str(group) if group else str(event.user_id),
        sender_id=str(event.user_id),
        sender_name=str(event.user_id),
        time=now,
        text=POKE_TEXT,
        mentions=(rules.self_id,),
        addressed=True,
        platform=PLATFORM,
        account=rules.self_id,
    )
