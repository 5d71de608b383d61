"""The edge's addressing verdict (``plugins/greywind/convert.py``), without NoneBot.

Addressed = a private chat, an @ of the bot, a reply to one of the bot's messages, or the persona's
name / an alias opening the message. Text longer than ``[bot].max_message_chars`` reaches the kernel cut,
with a marker naming the original length. The rules themselves live in ``runtime.addressing``, shared
with the edge; this adds the verdict over plain values, since the edge's module imports NoneBot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runtime.addressing import opens_with_name, truncate_text

__all__ = ["Addressing", "opens_with_name", "truncate_text"]


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
