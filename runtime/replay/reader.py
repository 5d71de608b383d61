"""Chat logs in JSON lines -> the kernel's :class:`ChatMessage`, the way the edge would convert them.

One JSON object a line::

    {"ts": 1767225600.0, "group_id": 123, "user_id": 42, "nickname": "alice",
     "message_id": 7, "text": "...", "at": [10000], "reply_to": 5}

``ts``, ``group_id`` (``null`` for a private chat), ``user_id``, ``message_id`` and ``text`` are required;
``nickname``, ``at`` and ``reply_to`` may be left out; other keys are ignored. A line that is not JSON,
misses a field or holds a value of the wrong type is a :class:`Problem` (its line number and why) and is
skipped; the rest of the log is still read. Blank lines are skipped silently.

Messages are replayed in timestamp order (a stable sort, so equal timestamps keep the file's order):
logs joined from several exports need not be merged by hand. A message from ``self_id`` is the bot's
own; a reply to one of them addresses the bot, as do an @ of ``self_id``, a private chat and the
persona's name opening the text (:mod:`runtime.replay.addressing`); text longer than the edge lets
through is cut as the edge cuts it. A private message *from* the bot cannot be placed (the log names no
peer), so it is reported and skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.kernel.message import ChatKind, ChatMessage, chat_id_for
from runtime.replay.addressing import Addressing, truncate_text

__all__ = ["LogLine", "Problem", "SourceMessage", "parse_line", "read_log"]


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """A message ready for the kernel, and how the source named it (for the output lines)."""

    message: ChatMessage
    ref: int | str  # the message id exactly as the source wrote it
    group: int | str | None  # the group id as written; None for a private chat
    line: int | None  # line of the log; None when read from the database
    how_addressed: str = ""  # "private" | "mention" | "reply" | "name" | "edge" (stored verdict) | ""


@dataclass(frozen=True, slots=True)
class Problem:
    """A line that was skipped, and why."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class LogLine(BaseModel):
    """One line of a chat log, validated strictly: ``"42"`` is not a user id, ``true`` is not a time."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    ts: float = Field(allow_inf_nan=False)
    group_id: int | None
    user_id: int
    nickname: str = ""
    message_id: int | str
    text: str
    at: list[int | str] = Field(default_factory=list)
    reply_to: int | str | None = None


# Pydantic names the member of a union it tried inside the error's location ("at.0.int").
_UNION_MEMBERS = frozenset({"int", "str", "float", "bool", "none"})


def _describe(exc: ValidationError) -> str:
    problems: dict[str, list[str]] = {}
    got: dict[str, str] = {}
    for err in exc.errors():
        path = [str(p) for p in err["loc"] if str(p) not in _UNION_MEMBERS]
        loc = ".".join(path) or "(line)"
        if err["type"] == "missing":
            problems.setdefault(loc, []).append("missing")
            continue
        problems.setdefault(loc, []).append(err["msg"])
        text = repr(err.get("input"))
        got[loc] = text if len(text) <= 40 else text[:37] + "..."
    parts: list[str] = []
    for loc, messages in problems.items():
        if "missing" in messages:
            parts.append(f"missing field '{loc}'")
        elif len(messages) == 1:
            parts.append(f"field '{loc}': {messages[0]} (got {got[loc]})")
        else:
            parts.append(f"field '{loc}': wrong type (got {got[loc]})")
    return "; ".join(parts)


def parse_line(text: str) -> LogLine | str:
    """The validated line, or why it cannot be used."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return f"not JSON ({exc})"
    if not isinstance(data, dict):
        return f"not a JSON object (got {type(data).__name__})"
    try:
        line = LogLine.model_validate(data)
    except ValidationError as exc:
        return _describe(exc)
    if isinstance(line.message_id, str) and not line.message_id.strip():
        return "field 'message_id': must not be empty"
    return line


def _key(value: int | str) -> str:
    return str(value).strip()


def read_log(
    lines: Iterable[bytes | str], addressing: Addressing
) -> tuple[list[SourceMessage], list[Problem]]:
    """Every usable message of the log in replay order, and the lines skipped (by line number)."""
    problems: list[Problem] = []
    parsed: list[tuple[int, LogLine]] = []
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(Problem(number, f"not UTF-8 ({exc.reason} at byte {exc.start})"))
                continue
        else:
            text = raw
        if number == 1:
            text = text.removeprefix("\ufeff")
        if not text.strip():
            continue
        result = parse_line(text)
        if isinstance(result, str):
            problems.append(Problem(number, result))
        else:
            parsed.append((number, result))
    parsed.sort(key=lambda item: item[1].ts)

    messages: list[SourceMessage] = []
    first_line: dict[tuple[str, str], int] = {}  # (chat, message id) -> the line that used it
    bot_messages: set[tuple[str, str]] = set()
    self_id = addressing.self_id
    for number, line in parsed:
        private = line.group_id is None
        kind = ChatKind.PRIVATE if private else ChatKind.GROUP
        ident = str(line.user_id) if line.group_id is None else str(line.group_id)
        chat_id = chat_id_for(kind, ident)
        message_id = _key(line.message_id)
        seen = first_line.get((chat_id, message_id))
        if seen is not None:
            problems.append(
                Problem(number, f"message_id {line.message_id!r} already used in {chat_id} (line {seen})")
            )
            continue
        first_line[(chat_id, message_id)] = number
        sender = str(line.user_id)
        from_self = sender == self_id
        if from_self and private:
            problems.append(
                Problem(number, "a private message from the bot itself names no peer to place it")
            )
            continue
        if from_self:
            bot_messages.add((chat_id, message_id))
        mentions = tuple(dict.fromkeys(_key(a) for a in line.at if _key(a)))
        reply_to = _key(line.reply_to) if line.reply_to is not None else None
        how = ""
        if not from_self:
            how = addressing.how(
                private=private,
                mentions=mentions,
                replies_to_bot=reply_to is not None and (chat_id, reply_to) in bot_messages,
                text=line.text,
            )
        text, _ = truncate_text(line.text, addressing.max_chars)
        message = ChatMessage(
            message_id=message_id,
            chat_kind=kind,
            chat_ident=ident,
            sender_id=sender,
            sender_name=line.nickname.strip() or sender,
            time=line.ts,
            text=text,
            mentions=mentions,
            reply_to=reply_to,
            addressed=bool(how),
            from_self=from_self,
        )
        messages.append(SourceMessage(message, line.message_id, line.group_id, number, how))
    problems.sort(key=lambda p: p.line)
    return messages, problems
