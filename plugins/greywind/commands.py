"""Superuser commands and mute words: parsed into values, dispatched to a :class:`RuntimeControl`.

Commands (prefix ``bot.command_prefix``, default ``/``), from a superuser in any chat::

    /status [g<group>]                 budgets, queue, threads, sessions, tokens today
    /why [message id]                  attention score and reasons of a message (default: the last)
    /mute [g<group>] [30m|2h|1d]       quiet period (no duration: until /unmute)
    /unmute [g<group>]
    /lexicon list [g<group>]
    /lexicon add <term> [weight]       /lexicon pin <term>       /lexicon suppress <term>
    /persona reload
    /bind <topic thread> [vision ...]  bind this group to a topic thread, with its vision
    /help

``g<group>`` (or ``group:<id>``) aims a command at another group heard through the same account as
the command, so it works from a private chat; a whole chat key (``qq:<account>:group:<id>``) aims it
at a chat of another account.

A mute word (``bot.mute_words``: 闭嘴, 安静, 别说话 ...) in a short message addressed to the bot opens a
quiet period of ``bot.quiet_minutes`` for that chat, for anyone; ``bot.unmute_phrase`` (or a superuser's
``/unmute``) ends it. A superuser's ``/mute`` is another kind of quiet period: the phrase does not end
it, only ``/unmute`` does (and a mute word does not replace it). Parsing never raises: a malformed
command is a :class:`Usage` value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from runtime.kernel.message import ChatKey, ChatKind

__all__ = [
    "HELP",
    "Command",
    "RuntimeControl",
    "Usage",
    "dispatch",
    "is_mute_request",
    "is_unmute_request",
    "parse_command",
    "parse_duration",
]

HELP = (
    "命令：/status [g群号] · /why [消息id] · /mute [g群号] [30m|2h|1d] · /unmute [g群号] · "
    "/lexicon list|add <词> [权重]|pin <词>|suppress <词> · /persona reload · /bind <主题> [愿景] · /help"
)
# A mute word inside a long message is probably about something else ("他让我闭嘴，你怎么看").
MUTE_REQUEST_MAX_CHARS = 16
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|秒|m|min|分钟?|h|小时|d|天)?", re.IGNORECASE)
_UNIT_SECONDS = {
    "s": 1,
    "秒": 1,
    "m": 60,
    "min": 60,
    "分": 60,
    "分钟": 60,
    "h": 3600,
    "小时": 3600,
    "d": 86400,
    "天": 86400,
}
_TARGET = re.compile(r"(?:g|group:)(\d{4,12})", re.IGNORECASE)
_PUNCT = re.compile(r"[\s,，.。!！?？~～、…]+")


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed superuser command; ``chat_id`` is the chat it is about."""

    name: str  # status | why | mute | unmute | lexicon_list | lexicon_add | lexicon_pin | ...
    chat_id: str
    args: tuple[str, ...] = ()
    seconds: float | None = None
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """The text was meant as a command but is malformed; ``text`` says how to write it."""

    text: str


class RuntimeControl(Protocol):
    """What the admin commands and mute words reach. Every method returns the text to answer with
    (empty: say nothing). ``until`` is seconds since the epoch, None for "until lifted"."""

    async def status(self, chat_id: str | None) -> str: ...
    async def why(self, chat_id: str, message_id: str | None) -> str: ...
    async def mute(self, chat_id: str, until: float | None, *, by: str, reason: str) -> str: ...
    async def unmute(self, chat_id: str, *, by: str, reason: str) -> str: ...
    async def lexicon_list(self, chat_id: str) -> str: ...
    async def lexicon_add(self, chat_id: str, term: str, weight: float | None) -> str: ...
    async def lexicon_pin(self, chat_id: str, term: str) -> str: ...
    async def lexicon_suppress(self, chat_id: str, term: str) -> str: ...
    async def persona_reload(self) -> str: ...
    async def bind(self, chat_id: str, thread: str, vision: str | None) -> str: ...


def parse_duration(text: str) -> float | None:
    """``"30"`` (minutes), ``"30m"``, ``"2h"``, ``"1d"``, ``"45s"``, ``"10分钟"`` -> seconds, else None."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return None
    value = float(match.group(1))
    unit = (match.group(2) or "m").lower()
    seconds = value * _UNIT_SECONDS[unit]
    return seconds if seconds > 0 else None


def _bound_key(word: str) -> str | None:
    try:
        key = ChatKey.parse(word)
    except ValueError:
        return None
    return key.chat_id if key.bound else None


def parse_command(body: str, *, chat_id: str, prefix: str = "/") -> Command | Usage | None:
    """Parse ``body`` (addressing already removed); None when it is not a command at all."""
    text = body.strip()
    if not text.startswith(prefix) or len(text) <= len(prefix):
        return None
    words = text[len(prefix) :].split()
    if not words:
        return None
    head, rest = words[0].lower(), words[1:]
    target = chat_id
    if rest and (match := _TARGET.fullmatch(rest[0])) is not None:
        # Another group heard through the same account as the command itself.
        target = ChatKey.parse(chat_id).sibling(ChatKind.GROUP, match.group(1)).chat_id
        rest = rest[1:]
    elif rest and (named := _bound_key(rest[0])) is not None:
        target, rest = named, rest[1:]
    if head == "help":
        return Usage(HELP)
    if head == "status":
        # From a private chat without a target: the whole bot, not that private chat.
        whole = target == chat_id and ChatKey.parse(chat_id).is_private
        return Command("status", "" if whole else target)
    if head == "why":
        return Command("why", target, tuple(rest[:1]))
    if head == "mute":
        if not rest:
            return Command("mute", target)
        seconds = parse_duration(rest[0])
        if seconds is None:
            return Usage("用法：/mute [g群号] [30m|2h|1d]（不写时长则直到 /unmute）")
        return Command("mute", target, seconds=seconds)
    if head == "unmute":
        return Command("unmute", target)
    if head == "lexicon":
        return _parse_lexicon(rest, target)
    if head == "persona":
        if rest[:1] == ["reload"]:
            return Command("persona_reload", target)
        return Usage("用法：/persona reload")
    if head == "bind":
        if not rest:
            return Usage("用法：/bind <主题线程> [愿景]")
        return Command("bind", target, (rest[0], " ".join(rest[1:])))
    return None


def _parse_lexicon(rest: list[str], target: str) -> Command | Usage:
    usage = Usage("用法：/lexicon list | add <词> [权重] | pin <词> | suppress <词>")
    if not rest:
        return usage
    action, args = rest[0].lower(), rest[1:]
    if action == "list":
        return Command("lexicon_list", target)
    if action not in {"add", "pin", "suppress"} or not args:
        return usage
    if action == "add" and len(args) >= 2:
        try:
            weight = float(args[-1])
        except ValueError:
            return Command("lexicon_add", target, (" ".join(args),))
        if not 0.0 < weight <= 1.0:
            return Usage("权重应在 (0, 1] 之间")
        return Command("lexicon_add", target, (" ".join(args[:-1]),), weight=weight)
    return Command(f"lexicon_{action}", target, (" ".join(args),))


def _squash(text: str) -> str:
    return _PUNCT.sub("", text).casefold()


def is_mute_request(body: str, mute_words: tuple[str, ...]) -> bool:
    """A short message that contains a mute word (the caller checks it is addressed to the bot)."""
    squashed = _squash(body)
    if not squashed or len(squashed) > MUTE_REQUEST_MAX_CHARS:
        return False
    return any(_squash(word) in squashed for word in mute_words if _squash(word))


def is_unmute_request(text: str, phrase: str) -> bool:
    """The configured phrase, anywhere in a short message (punctuation and case ignored)."""
    key = _squash(phrase)
    squashed = _squash(text)
    return bool(key) and key in squashed and len(squashed) <= len(key) + MUTE_REQUEST_MAX_CHARS


async def dispatch(command: Command | Usage, control: RuntimeControl, *, now: float, by: str) -> str:
    """Run a parsed command against ``control`` and return the answer text."""
    if isinstance(command, Usage):
        return command.text
    chat = command.chat_id
    match command.name:
        case "status":
            return await control.status(chat or None)
        case "why":
            return await control.why(chat, command.args[0] if command.args else None)
        case "mute":
            until = now + command.seconds if command.seconds is not None else None
            return await control.mute(chat, until, by=by, reason="command")
        case "unmute":
            return await control.unmute(chat, by=by, reason="command")
        case "lexicon_list":
            return await control.lexicon_list(chat)
        case "lexicon_add":
            return await control.lexicon_add(chat, command.args[0], command.weight)
        case "lexicon_pin":
            return await control.lexicon_pin(chat, command.args[0])
        case "lexicon_suppress":
            return await control.lexicon_suppress(chat, command.args[0])
        case "persona_reload":
            return await control.persona_reload()
        case "bind":
            thread, vision = command.args
            return await control.bind(chat, thread, vision or None)
    return HELP
