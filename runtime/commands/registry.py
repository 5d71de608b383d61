"""The CommandRegistry: the declared commands, read by the edge's dispatch and by the help text.

``parse`` finds the command a message is (prefix, name or alias, an optional ``g<group>`` /
``group:<id>`` target anywhere among the arguments, then the command's own parser) and answers None
when the text is not a command this sender may run: a member's ``/status`` is an ordinary message
to ``parse``; ``refusal`` is the plain answer the edge gives instead when such a text is addressed
to the bot (no such command; a command only superusers may run), so no model invents one.
``{prefix}help`` belongs to the registry itself: it lists the declarations the sender may run, in
declaration order, ``help`` last.
``dispatch`` runs a parsed command (a parser may name what it parsed ``<name>_<action>``, as
``lexicon_add``); what a handler raises is the caller's to log. ``register`` returns the disposer
that withdraws the declaration (an extension unloading).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable

import structlog

from runtime.commands.spec import Command, CommandCall, CommandSpec, Usage
from runtime.kernel.message import ChatKey, ChatKind

__all__ = ["FAILED", "SUPERUSERS_ONLY", "UNKNOWN", "CommandRegistry", "DuplicateCommandError"]

log = structlog.get_logger("greywind.commands")

FAILED = "命令执行出错，详情见日志。"
HELP_NAME = "help"
UNKNOWN = "没有这个命令，{prefix}help 看看有哪些"
SUPERUSERS_ONLY = "这个命令只有管理员能用。"
_COMMAND_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(?=\s|$)")
_TARGET = re.compile(r"(?:g|group:)(\d{4,12})", re.IGNORECASE)


class DuplicateCommandError(ValueError):
    """A command name or alias is already declared."""


class CommandRegistry:
    """See the module docstring. ``help_header`` opens the help text."""

    def __init__(self, specs: Iterable[CommandSpec] = (), *, help_header: str = "命令：") -> None:
        self._specs: dict[str, CommandSpec] = {}
        self._words: dict[str, CommandSpec] = {}
        self._help_header = help_header
        for spec in specs:
            self.register(spec)

    def register(self, spec: CommandSpec) -> Callable[[], None]:
        words = (spec.name, *spec.aliases)
        taken = [word for word in words if word in self._words or word == HELP_NAME]
        if taken:
            raise DuplicateCommandError(f"command {taken[0]!r} is already declared")
        self._specs[spec.name] = spec
        for word in words:
            self._words[word] = spec

        def dispose() -> None:
            if self._specs.get(spec.name) is not spec:
                return
            del self._specs[spec.name]
            for word in words:
                self._words.pop(word, None)

        return dispose

    def specs(self) -> list[CommandSpec]:
        return list(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._words

    def help_text(self, prefix: str = "/", *, superuser: bool = True) -> str:
        entries = [
            spec.help.format(prefix=prefix)
            for spec in self._specs.values()
            if superuser or spec.permission == "member"
        ]
        return self._help_header + " · ".join([*entries, f"{prefix}help"])

    def parse(
        self, body: str, *, chat_id: str, prefix: str = "/", superuser: bool = True
    ) -> Command | Usage | None:
        """Parse ``body`` (addressing already removed); None when it is not a command at all."""
        text = body.strip()
        if not text.startswith(prefix) or len(text) <= len(prefix):
            return None
        words = text[len(prefix) :].split()
        if not words:
            return None
        head = words[0].lower()
        if head == HELP_NAME and (superuser or any(s.permission == "member" for s in self._specs.values())):
            return Usage(self.help_text(prefix, superuser=superuser))
        spec = self._words.get(head)
        if spec is None or (spec.permission == "superuser" and not superuser):
            return None
        rest = words[1:]
        # The target may stand anywhere among the arguments ("/lexicon add g1001 原神 0.8"); it is
        # taken off before the command's own parser sees them. Two targets are refused, not guessed.
        targets = [(i, found) for i, word in enumerate(rest) if (found := _target_of(word, chat_id))]
        if len(targets) > 1:
            return Usage("一条命令只能指定一个群：" + "、".join(rest[i] for i, _ in targets))
        target = chat_id
        if targets:
            index, target = targets[0]
            rest = rest[:index] + rest[index + 1 :]
        if spec.parse is None:
            return Command(spec.name, target, tuple(rest))
        return spec.parse(rest, target, chat_id)

    def refusal(self, body: str, *, prefix: str = "/", superuser: bool = True) -> Usage | None:
        """The plain answer to ``body`` when it is written as a command (the prefix, then a latin
        word) that :meth:`parse` does not take from this sender: no such command, or one only a
        superuser may run. None for any other text (``/`` alone, ``今天/明天``, ``/ 空格``)."""
        text = body.strip()
        match = _COMMAND_WORD.match(text[len(prefix) :]) if text.startswith(prefix) else None
        if match is None:
            return None
        head = match.group(0).lower()
        spec = self._words.get(head)
        if spec is not None or head == HELP_NAME:
            return None if superuser else Usage(SUPERUSERS_ONLY)
        return Usage(UNKNOWN.format(prefix=prefix))

    def permission_of(self, command: Command | Usage) -> str:
        spec = self._specs.get(command.name) if isinstance(command, Command) else None
        return spec.permission if spec is not None else "superuser"

    async def dispatch(self, command: Command | Usage, call: CommandCall) -> str:
        """Run a parsed command and return the answer text."""
        if isinstance(command, Usage):
            return command.text
        spec = self._spec_for(command.name)
        if spec is None:
            return self.help_text()
        answer = spec.handler(command, call)
        if inspect.isawaitable(answer):
            answer = await answer
        return str(answer)

    def _spec_for(self, name: str) -> CommandSpec | None:
        """The declaration a parsed name belongs to (``lexicon_add`` is the ``lexicon`` command's)."""
        spec = self._specs.get(name)
        if spec is not None:
            return spec
        head = name.split("_", 1)[0]
        return self._specs.get(head)


def _target_of(word: str, chat_id: str) -> str | None:
    """The chat ``word`` aims a command at, said in ``chat_id``: ``g<group>`` / ``group:<id>`` (another
    group heard through the same account as the command itself) or a whole chat key (a chat of another
    account); None when ``word`` is no target."""
    if (match := _TARGET.fullmatch(word)) is not None:
        return ChatKey.parse(chat_id).sibling(ChatKind.GROUP, match.group(1)).chat_id
    return _bound_key(word)


def _bound_key(word: str) -> str | None:
    """``word`` as a whole bound chat key (``qq:<account>:group:<id>``), else None."""
    try:
        key = ChatKey.parse(word)
    except ValueError:
        return None
    return key.chat_id if key.bound else None
