"""The built-in admin commands, as declarations (superusers only; prefix ``bot.command_prefix``)::

    /status [g<group>] [full|-v]       budgets, queue, threads, sessions, tokens today (full: all figures)
    /why [message id]                  attention score and reasons of a message (default: the one the
                                       command quotes, else the last)
    /mute [g<group>] [30m|2h|1d]       quiet period (no duration: until /unmute)
    /unmute [g<group>]
    /lexicon list [g<group>]
    /lexicon add <term> [weight]       /lexicon pin <term>       /lexicon suppress <term>
    /persona reload
    /bind <topic thread> [vision ...]  bind this group to a topic thread, with its vision
    /enable [g<group>]                 the bot lives in the group (speaks, spends the model)
    /disable [g<group>]                the bot only listens there (messages stored, commands answered)
    /help

``g<group>`` (or ``group:<id>``) aims a command at another group heard through the same account as
the command, so it works from a private chat; a whole chat key (``qq:<account>:group:<id>``) aims it
at a chat of another account.
Each handler reaches the :class:`~runtime.ports.control.RuntimeControl` of the call. Parsing never
raises: a malformed command is a :class:`Usage` value.
"""

from __future__ import annotations

import re

from runtime.commands.registry import CommandRegistry
from runtime.commands.spec import Command, CommandCall, CommandSpec, Parser, Usage
from runtime.kernel.message import ChatKey

__all__ = ["ADMIN_COMMANDS", "admin_registry", "parse_duration"]

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


def parse_duration(text: str) -> float | None:
    """``"30"`` (minutes), ``"30m"``, ``"2h"``, ``"1d"``, ``"45s"``, ``"10分钟"`` -> seconds, else None."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return None
    value = float(match.group(1))
    unit = (match.group(2) or "m").lower()
    seconds = value * _UNIT_SECONDS[unit]
    return seconds if seconds > 0 else None


# ``/status full`` (or ``-v``): every figure, not the short overview.
_FULL_WORDS = frozenset({"full", "-v", "--verbose", "详细"})


# -- parsers ------------------------------------------------------------------------------------------


def _status(rest: list[str], target: str, origin: str) -> Command:
    # From a private chat without a target: the whole bot, not that private chat.
    whole = target == origin and ChatKey.parse(origin).is_private
    full = any(word.lower() in _FULL_WORDS for word in rest)
    return Command("status", "" if whole else target, ("full",) if full else ())


def _why(rest: list[str], target: str, origin: str) -> Command:
    return Command("why", target, tuple(rest[:1]))


def _mute(rest: list[str], target: str, origin: str) -> Command | Usage:
    if not rest:
        return Command("mute", target)
    seconds = parse_duration(rest[0])
    if seconds is None:
        return Usage("用法：/mute [g群号] [30m|2h|1d]（不写时长则直到 /unmute）")
    return Command("mute", target, seconds=seconds)


def _unmute(rest: list[str], target: str, origin: str) -> Command:
    return Command("unmute", target)


def _lexicon(rest: list[str], target: str, origin: str) -> Command | Usage:
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


def _persona(rest: list[str], target: str, origin: str) -> Command | Usage:
    if rest[:1] == ["reload"]:
        return Command("persona_reload", target)
    return Usage("用法：/persona reload")


def _bind(rest: list[str], target: str, origin: str) -> Command | Usage:
    if not rest:
        return Usage("用法：/bind <主题线程> [愿景]")
    return Command("bind", target, (rest[0], " ".join(rest[1:])))


def _group_switch(on: bool) -> Parser:
    def parse(rest: list[str], target: str, origin: str) -> Command | Usage:
        name = "enable" if on else "disable"
        if rest or ChatKey.parse(target).is_private:
            return Usage(f"用法：/{name} [g群号]（不写群号则是本群）")
        return Command(name, target)

    return parse


# -- handlers -----------------------------------------------------------------------------------------


async def _run_status(command: Command, call: CommandCall) -> str:
    if command.args == ("full",):
        return await call.control.status(command.chat_id or None, full=True)
    return await call.control.status(command.chat_id or None)


async def _run_why(command: Command, call: CommandCall) -> str:
    # QQ shows no message ids: a quoted message is the one to explain (in the chat it was said in).
    quoted = call.reply_to if command.chat_id == call.origin else None
    return await call.control.why(command.chat_id, command.args[0] if command.args else quoted)


async def _run_mute(command: Command, call: CommandCall) -> str:
    until = call.now + command.seconds if command.seconds is not None else None
    return await call.control.mute(command.chat_id, until, by=call.by, reason="command")


async def _run_unmute(command: Command, call: CommandCall) -> str:
    return await call.control.unmute(command.chat_id, by=call.by, reason="command")


async def _run_lexicon(command: Command, call: CommandCall) -> str:
    control, chat = call.control, command.chat_id
    match command.name:
        case "lexicon_list":
            return await control.lexicon_list(chat)
        case "lexicon_add":
            return await control.lexicon_add(chat, command.args[0], command.weight)
        case "lexicon_pin":
            return await control.lexicon_pin(chat, command.args[0])
        case _:
            return await control.lexicon_suppress(chat, command.args[0])


async def _run_persona(command: Command, call: CommandCall) -> str:
    return await call.control.persona_reload()


async def _run_bind(command: Command, call: CommandCall) -> str:
    thread, vision = command.args
    return await call.control.bind(command.chat_id, thread, vision or None)


async def _run_group_switch(command: Command, call: CommandCall) -> str:
    return await call.control.set_group(command.chat_id, command.name == "enable", by=call.by)


ADMIN_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("status", "{prefix}status [g群号]", _run_status, _status),
    CommandSpec("why", "{prefix}why [消息id]", _run_why, _why),
    CommandSpec("mute", "{prefix}mute [g群号] [30m|2h|1d]", _run_mute, _mute),
    CommandSpec("unmute", "{prefix}unmute [g群号]", _run_unmute, _unmute),
    CommandSpec(
        "lexicon", "{prefix}lexicon list|add <词> [权重]|pin <词>|suppress <词>", _run_lexicon, _lexicon
    ),
    CommandSpec("persona", "{prefix}persona reload", _run_persona, _persona),
    CommandSpec("bind", "{prefix}bind <主题> [愿景]", _run_bind, _bind),
    CommandSpec("enable", "{prefix}enable [g群号]", _run_group_switch, _group_switch(True)),
    CommandSpec("disable", "{prefix}disable [g群号]", _run_group_switch, _group_switch(False)),
)


def admin_registry() -> CommandRegistry:
    """A registry holding the built-in admin commands (extensions add theirs to it)."""
    return CommandRegistry(ADMIN_COMMANDS)
