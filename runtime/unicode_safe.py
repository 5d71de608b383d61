"""Text that every layer can encode: lone surrogates replaced, names kept to a sane length.

JSON may carry a lone UTF-16 surrogate (``"\\ud83d"``, half an emoji cut by a client); Python decodes
it into a ``str`` that no UTF-8 encoder accepts. Left in, it fails far from where it came in: the
SQLite store refuses the row, the model's HTTP request cannot be encoded, the reply is never sent.
The edge cleans what it receives (``plugins/greywind/convert.py``) and the store cleans what it
writes, so one odd character costs a replacement character (U+FFFD), never a message.
"""

from __future__ import annotations

import re

__all__ = ["NAME_MAX_CHARS", "REPLACEMENT", "cap_name", "clean_text"]

REPLACEMENT = "\ufffd"
# A display name (nickname, group card) longer than this is cut: it rides along in every packet.
NAME_MAX_CHARS = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD (the same object when clean)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def cap_name(name: str, limit: int = NAME_MAX_CHARS) -> str:
    """A cleaned display name of at most ``limit`` characters (an ellipsis marks a cut)."""
    name = clean_text(name)
    return name if len(name) <= limit else name[: limit - 1] + "…"
