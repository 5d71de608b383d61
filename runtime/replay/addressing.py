"""The edge's conversion rules (``plugins/greywind/convert.py``), without NoneBot.

Addressed = a private chat, an @ of the bot, a reply to one of the bot's messages, or the persona's
name / an alias opening the message. Text longer than ``[bot].max_message_chars`` reaches the kernel cut,
with a marker naming the original length. The edge's module imports NoneBot's adapter, which a
command-line tool must not need, so the rules are written here as pure functions over plain values.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Addressing", "opens_with_name", "truncate_text"]


def truncate_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``text`` to ``max_chars`` characters plus a marker that names the original length."""
    if len(text) <= max_chars:
        return text, False
    return f"{text[:max_chars]}…[消息过长已截断，原文{len(text)}字]", True


def opens_with_name(text: str, names: Iterable[str]) -> str | None:
    """The name (or alias) ``text`` starts with, case-insensitively, or None.

    A name ending in a CJK character may run straight into the sentence ("灰风在吗"); an ASCII name
    must not run into more ASCII letters, so "greywind" does not address the bot inside "greywinds".
    """
    stripped = text.lstrip()
    folded = stripped.casefold()
    for name in sorted(names, key=len, reverse=True):
        key = name.strip().casefold()
        if not key or not folded.startswith(key):
            continue
        rest = stripped[len(key) :]
        if not rest or _is_cjk(key[-1]) or not (rest[0].isascii() and rest[0].isalnum()):
            return name
    return None


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in {"W", "F"}


@dataclass(frozen=True, slots=True)
class Addressing:
    """Who the bot is: its account id and the names it answers to (persona name first)."""

    self_id: str
    names: tuple[str, ...]
    max_chars: int = 4_000  # [bot].max_message_chars

    def how(self, *, private: bool, mentions: Iterable[str], replies_to_bot: bool, text: str) -> str:
        """``private`` | ``mention`` | ``reply`` | ``name``, or ``""`` when the message is not for the bot."""
        if private:
            return "private"
        if self.self_id in mentions:
            return "mention"
        if replies_to_bot:
            return "reply"
        if opens_with_name(text, self.names) is not None:
            return "name"
        return ""
