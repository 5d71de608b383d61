"""A command, declared once: its name, aliases, parser, permission, help text and handler.

The edge's dispatch and the help text both read these declarations from a
:class:`~runtime.commands.registry.CommandRegistry`, so a command is written in one place. A parser
turns the words after the name into a :class:`Command` (or a :class:`Usage` saying how to write it);
the handler answers a parsed command with the text to send (empty: say nothing).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from runtime.ports.control import RuntimeControl

__all__ = ["Command", "CommandCall", "CommandSpec", "Handler", "Parser", "Permission", "Usage"]

Permission = Literal["superuser", "member"]
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command; ``chat_id`` is the chat it is about (``g<group>`` may aim it elsewhere)."""

    name: str  # status | why | mute | unmute | lexicon_list | lexicon_add | lexicon_pin | ...
    chat_id: str
    args: tuple[str, ...] = ()
    seconds: float | None = None
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """The text was meant as a command but is malformed; ``text`` says how to write it."""

    text: str


@dataclass(frozen=True, slots=True)
class CommandCall:
    """Who ran a command, when, and what answers it: the runtime's control."""

    control: RuntimeControl
    now: float
    by: str
    origin: str  # the chat the command was said in
    reply_to: str | None = None  # the message the command quotes (replies to), if any


# ``parse(words, target, origin)``: the words after the name (a ``g<group>`` target already taken
# off), the chat the command is about and the chat it was said in.
Parser = Callable[[list[str], str, str], "Command | Usage"]
Handler = Callable[[Command, CommandCall], "Awaitable[str] | str"]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One command. ``help`` is its entry in ``/help`` (``{prefix}`` is the command prefix); without
    ``parse``, the words after the name become ``Command(name, target, tuple(words))``."""

    name: str
    help: str
    handler: Handler
    parse: Parser | None = None
    aliases: tuple[str, ...] = ()
    permission: Permission = "superuser"

    def __post_init__(self) -> None:
        for word in (self.name, *self.aliases):
            if not _NAME.match(word):
                raise ValueError(f"command name {word!r} must match [a-z][a-z0-9_-]{{0,31}}")
        if self.permission not in ("superuser", "member"):
            raise ValueError(f"command {self.name!r}: permission must be 'superuser' or 'member'")
