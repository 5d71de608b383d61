"""Which lane a raw OneBot event frame takes, decided before NoneBot parses it.

Under a flood the frame guard holds events as raw frames. Most of them are chatter, which may wait
and, past the backlog's cap, be dropped. A few ask for the bot, as the edge will tell them addressed:
a private message, an @ of the bot, a reply to one of the bot's own recent messages, text opening with
the persona's name, a command, a poke of the bot. Those take the priority lane: handed to NoneBot
first and never dropped to make room for chatter. A reply to someone else, or the name in passing,
is chatter here (the kernel still weighs it, in its chat's order), and so is the bot's own message
reported back: what the outbound needs of it, it is handed as the guard reads it (:func:`from_self`).
The test looks only at the parsed frame's top level and its segments (a few dict lookups per
segment), so it costs next to nothing beside the JSON parse the guard does anyway. Anyone's text
starting with the command prefix counts; what the message really is, is decided later by the edge.

The priority lane must stay small: every priority frame brings its chat's waiting chatter along (see
below). When any reply and any mention of the name took it, a flood in which one message in fifty
named the bot in passing filled it with most of the backlog (7,000 frames of 16,000), and an @
waited behind them.

:class:`FairFrames` is the priority lane itself: frames by chat, handed out round-robin, so @-spam in
some chats waits behind its own frames and not in front of a quiet chat's one @. :class:`ChatterFrames`
is the other lane, in arrival order. A priority frame never overtakes its own chat's chatter: when it
arrives, the chatter its chat has waiting moves into the priority lane ahead of it
(:meth:`ChatterFrames.take_chat`), so one chat's messages still reach the bot in the order they came
(the model answering an @ sees what was said just before it).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sized
from dataclasses import dataclass
from typing import Generic, TypeVar

from runtime.addressing import opens_with_name

__all__ = [
    "ChatterFrames",
    "FairFrames",
    "LaneRules",
    "chat_key",
    "from_self",
    "is_priority",
    "nested_deeper_than",
]


def _no_message(message_id: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class LaneRules:
    """What makes a frame addressed: the persona's names, the command prefix, and which message ids
    are the bot's own (a reply to one of them asks for the bot)."""

    names: tuple[str, ...] = ()
    command_prefix: str = "/"
    own_message: Callable[[str], bool] = _no_message


def is_priority(event: Mapping[str, object], rules: LaneRules) -> bool:
    """True for an event that asks for the bot (see the module docstring)."""
    post_type = event.get("post_type")
    self_id = str(event.get("self_id", ""))
    if post_type == "message":
        if event.get("message_type") == "private":
            return True
        message = event.get("message")
        if isinstance(message, list):
            return _segments_ask(message, self_id, rules)
        if isinstance(message, str):
            return (
                f"[CQ:at,qq={self_id}]" in message
                or f"[CQ:at,qq={self_id}," in message
                or ((reply := _CQ_REPLY.search(message)) is not None and rules.own_message(reply.group(1)))
                or _text_asks(_CQ_LEADING.sub("", message), rules, first=True)
            )
        return False
    if post_type == "notice":
        return event.get("sub_type") == "poke" and str(event.get("target_id", "")) == self_id
    return False


def from_self(event: Mapping[str, object]) -> bool:
    """Whether the event is the bot's own message reported back: a ``message_sent`` event, or a
    message from the bot's own account (an echo)."""
    post_type = event.get("post_type")
    if post_type != "message_sent" and post_type != "message":
        return False
    self_id = event.get("self_id")
    if self_id is None or self_id == "":
        return False
    return post_type == "message_sent" or str(event.get("user_id", "")) == str(self_id)


def _segments_ask(message: list[object], self_id: str, rules: LaneRules) -> bool:
    first = True
    for segment in message:
        if not isinstance(segment, dict):
            continue
        kind = segment.get("type")
        data = segment.get("data")
        if not isinstance(data, dict):
            continue
        if kind == "reply":
            if rules.own_message(str(data.get("id", ""))):
                return True
            continue
        if kind == "at" and str(data.get("qq", "")) == self_id:
            return True
        if kind == "text":
            text = data.get("text")
            if isinstance(text, str) and _text_asks(text, rules, first=first):
                return True
            first = False
    return False


def _text_asks(text: str, rules: LaneRules, *, first: bool) -> bool:
    """The first text opens with the command prefix or a name (the edge's rule: ``opens_with_name``)."""
    if not first:
        return False
    if rules.command_prefix and text.lstrip().startswith(rules.command_prefix):
        return True
    return opens_with_name(text, rules.names) is not None


_CQ_REPLY = re.compile(r"\[CQ:reply,(?:[^\]]*,)?id=([^,\]]+)")
_CQ_LEADING = re.compile(r"^(?:\s*\[CQ:[^\]]*\])+")


def chat_key(event: Mapping[str, object]) -> str:
    """The chat a frame belongs to, for round-robin (not the runtime's chat id, just distinct)."""
    group = event.get("group_id")
    if group is not None:
        return f"g{group}"
    return f"u{event.get('user_id')}"


def nested_deeper_than(raw: str | bytes, value: object, limit: int) -> bool:
    """True when ``value`` (parsed from ``raw``) nests containers more than ``limit`` deep.

    A frame cannot nest deeper than it has brackets, so the raw text's bracket count (a C-speed
    count) settles almost every frame without walking it.
    """
    if isinstance(raw, bytes):
        brackets = raw.count(b"[") + raw.count(b"{")
    else:
        brackets = raw.count("[") + raw.count("{")
    if brackets <= limit:
        return False
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


# What a lane holds: a raw frame, or the guard's wrapper of one; its length is the frame's bytes.
F = TypeVar("F", bound=Sized)


class _FramesByChat(Generic[F]):
    """A queue of frames per chat, with the lane's totals (frames and bytes)."""

    __slots__ = ("_chats", "bytes", "count")

    def __init__(self) -> None:
        self._chats: dict[str, deque[F]] = {}
        self.bytes = 0
        self.count = 0

    def __bool__(self) -> bool:
        return self.count > 0

    def __len__(self) -> int:
        return self.count

    def heads(self) -> Iterator[F]:
        """Each waiting chat's oldest frame (a chat's frames wait in the order they came)."""
        return (queue[0] for queue in self._chats.values())

    def _append(self, chat: str, frame: F) -> bool:
        """Queue ``frame`` behind its chat's; True when the chat had nothing waiting."""
        queue = self._chats.get(chat)
        new = queue is None
        if queue is None:
            queue = self._chats[chat] = deque()
        queue.append(frame)
        self.bytes += len(frame)
        self.count += 1
        return new


class FairFrames(_FramesByChat[F]):
    """Frames queued by chat and handed out round-robin; per chat they stay in order."""

    __slots__ = ("_ring",)

    def __init__(self) -> None:
        super().__init__()
        self._ring: deque[str] = deque()

    def push(self, chat: str, frame: F) -> None:
        if self._append(chat, frame):
            self._ring.append(chat)

    def pop(self) -> F:
        """The next chat's oldest frame (the caller checks the lane is not empty)."""
        chat = self._ring.popleft()
        queue = self._chats[chat]
        frame = queue.popleft()
        if queue:
            self._ring.append(chat)
        else:
            del self._chats[chat]
        self.bytes -= len(frame)
        self.count -= 1
        return frame

    def drop_one(self) -> None:
        """Drop the oldest frame of the chat with the most frames waiting (the loudest)."""
        chat = max(self._chats, key=lambda key: len(self._chats[key]))
        queue = self._chats[chat]
        frame = queue.popleft()
        if not queue:
            del self._chats[chat]
            self._ring.remove(chat)
        self.bytes -= len(frame)
        self.count -= 1

    def clear(self) -> None:
        self._chats.clear()
        self._ring.clear()
        self.bytes = self.count = 0


class ChatterFrames(_FramesByChat[F]):
    """Frames in arrival order, with one chat's frames removable at once (:meth:`take_chat`).

    Each chat keeps its own queue; one shared line says which chat's frame is next. A chat taken out
    leaves its entries in the line behind; they are skipped (counted in ``_stale``) when reached.
    """

    __slots__ = ("_line", "_stale")

    def __init__(self) -> None:
        super().__init__()
        self._line: deque[str] = deque()
        self._stale: dict[str, int] = {}

    def push(self, chat: str, frame: F) -> None:
        self._append(chat, frame)
        self._line.append(chat)

    def pop(self) -> F:
        """The oldest frame (the caller checks the lane is not empty)."""
        line = self._line
        while True:
            chat = line.popleft()
            stale = self._stale.get(chat)
            if stale:
                if stale == 1:
                    del self._stale[chat]
                else:
                    self._stale[chat] = stale - 1
                continue
            queue = self._chats[chat]
            frame = queue.popleft()
            if not queue:
                del self._chats[chat]
            self.bytes -= len(frame)
            self.count -= 1
            if not self.count:  # nothing left but stale entries: drop them with the line
                line.clear()
                self._stale.clear()
            return frame

    def take_chat(self, chat: str) -> deque[F]:
        """Remove and return every frame of ``chat``, oldest first (empty when it has none)."""
        queue = self._chats.pop(chat, None)
        if queue is None:
            return deque()
        self._stale[chat] = self._stale.get(chat, 0) + len(queue)
        self.bytes -= sum(len(frame) for frame in queue)
        self.count -= len(queue)
        if not self.count:
            self._line.clear()
            self._stale.clear()
        return queue

    def clear(self) -> None:
        self._chats.clear()
        self._line.clear()
        self._stale.clear()
        self.bytes = self.count = 0
