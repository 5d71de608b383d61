"""Who a message is aimed at, as pure rules over plain text: shared by the edge and the replay tool.

The edge (``plugins/greywind/convert.py``) and ``python -m runtime.replay`` must agree on when the
persona's name opens a message and how an over-long message is cut, or a replay would not show what the
bot really decided. Both import these functions; neither needs NoneBot to use them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["opens_with_name", "truncate_text"]


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
