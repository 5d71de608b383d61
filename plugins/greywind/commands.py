"""Commands and mute words at the edge: the declared commands parsed and dispatched, mute words heard.

The commands themselves are declarations in the core (:mod:`runtime.commands`: the built-in admin
commands in ``runtime.commands.admin``, an extension's beside them); this module keeps the edge's
names for them — :func:`parse_command` / :func:`dispatch` over the built-in declarations, ``HELP``
their help text — and the mute words.

A mute word (``bot.mute_words``: 闭嘴, 安静, 别说话 ...) in a short message addressed to the bot opens a
quiet period of ``bot.quiet_minutes`` for that chat, for anyone; ``bot.unmute_phrase`` (or a superuser's
``/unmute``) ends it. A superuser's ``/mute`` is another kind of quiet period: the phrase does not end
it, only ``/unmute`` does (and a mute word does not replace it). Parsing never raises: a malformed
command is a :class:`Usage` value.
"""

from __future__ import annotations

import re

from runtime.commands import (
    Command,
    CommandCall,
    CommandRegistry,
    RuntimeControl,
    Usage,
    admin_registry,
    parse_duration,
)

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

# The built-in admin commands, for an edge whose gateway declares no commands of its own.
ADMIN: CommandRegistry = admin_registry()
HELP = ADMIN.help_text("/")
# A mute word inside a long message is probably about something else ("他让我闭嘴，你怎么看").
MUTE_REQUEST_MAX_CHARS = 16
_PUNCT = re.compile(r"[\s,，.。!！?？~～、…]+")


def parse_command(body: str, *, chat_id: str, prefix: str = "/") -> Command | Usage | None:
    """Parse ``body`` (addressing already removed) as a superuser's built-in command; None when it is
    not a command at all."""
    return ADMIN.parse(body, chat_id=chat_id, prefix=prefix, superuser=True)


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
    """Run a parsed built-in command against ``control`` and return the answer text."""
    return await ADMIN.dispatch(command, CommandCall(control=control, now=now, by=by, origin=""))
