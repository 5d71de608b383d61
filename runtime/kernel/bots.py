"""Other bots in a chat: who they are, and when the bot stops answering them.

Bots answer bots: two of them in one group, each answering whatever the other says, talk forever.
The :class:`BotRoster` knows which senders are bots and breaks such an exchange:

* **known bots** — ``[bots] ids``, plus what the composition root adds with :meth:`BotRoster.add_known`
  (the other accounts of this process, heard in a group they share);
* **detected bots** — an account that behaves like one: each of its last ``detect_runs`` messages
  *answered* someone else's within ``detect_latency`` seconds. People do not answer within a second,
  every time, for long runs; bots do. A message counts as an answer when the one before it was the
  bot's own, or came after a pause longer than ``detect_latency``: in a burst where everyone writes
  within a second of everyone else, speed proves nothing, and a busy group of people is not taken
  for a room of bots. ``detect_runs`` messages in a row that are no fast answer take the label off
  again (``0`` turns detection off).

Every message from a bot adds one to its chat's count of *bot turns*; a message from a person sets it
back to zero. Once the count passes ``max_turns`` the kernel only records a bot's messages (reason
``bot exchange``) until a person speaks: the bot answers at most ``max_turns`` bot messages in a row.
A known bot is held to that anywhere; a detected one — a guess from timing — only where the bot has
spoken since a person last did (it is in the exchange), so a misjudged person in a chat the bot has
kept out of is never silenced. The bot's own messages are no turns (the kernel never scores them) but
they are the chat's latest message, so an account answering them within a second is timed against them.

Everything is per message and O(1): one chat entry and one sender entry looked up and written; the
sender entries are bounded (``max_tracked``; past it the sender first heard longest ago is forgotten).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runtime.kernel.errors import InvalidSetting

__all__ = ["BOT_EXCHANGE", "BotRoster", "BotRosterStatistics", "BotSettings"]

#: The kernel's reason for recording a bot's message without scoring it for an answer.
BOT_EXCHANGE = "bot exchange"
_OWN = "\x00self"  # the chat's latest message was the bot's own (no platform id looks like this)


@dataclass(frozen=True, slots=True)
class BotSettings:
    """``[bots]`` in kernel units (seconds)."""

    ids: tuple[str, ...] = ()
    max_turns: int = 2
    detect_runs: int = 6
    detect_latency: float = 1.0
    max_tracked: int = 10_000

    def __post_init__(self) -> None:
        if self.max_turns < 0:
            raise InvalidSetting("bots.max_turns", "must not be negative")
        if self.detect_runs < 0:
            raise InvalidSetting("bots.detect_runs", "must not be negative")
        if not self.detect_latency >= 0:
            raise InvalidSetting("bots.detect_latency_ms", "must not be negative")
        if self.max_tracked < 1:
            raise InvalidSetting("bots.max_tracked", "must be at least 1")


@dataclass(frozen=True, slots=True)
class BotRosterStatistics:
    known: int
    detected: int
    tracked_senders: int
    bot_messages: int
    held_back: int  # bot messages only recorded because the exchange ran past max_turns
    chats_in_exchange: int


class BotRoster:
    """See the module docstring. The kernel calls :meth:`observe` for every message from someone else
    and :meth:`note_own` for each of the bot's own; the composition root calls :meth:`add_known`."""

    __slots__ = (
        "_bot_messages",
        "_detected",
        "_engaged",
        "_held",
        "_known",
        "_last",
        "_runs",
        "_settings",
        "_turns",
    )

    def __init__(self, settings: BotSettings | None = None) -> None:
        self._settings = s = settings or BotSettings()
        self._known: set[str] = {str(i) for i in s.ids}
        self._detected: set[str] = set()
        self._runs: dict[str, list[int]] = {}  # sender -> [fast answers in a row, slow ones in a row]
        # chat id -> (time, sender, whether it came after a pause or was the bot's own) of its latest message
        self._last: dict[str, tuple[float, str, bool]] = {}
        self._engaged: set[str] = set()  # chats where the bot has spoken since a person last did
        self._turns: dict[str, int] = {}  # chat id -> bot messages since a person last spoke
        self._bot_messages = 0
        self._held = 0

    @property
    def max_turns(self) -> int:
        return self._settings.max_turns

    def add_known(self, ids: Iterable[str | int]) -> None:
        """Senders that are bots whatever they do (the other accounts of this process, for one)."""
        self._known.update(str(i) for i in ids)

    def is_bot(self, sender_id: str) -> bool:
        return sender_id in self._known or sender_id in self._detected

    def known(self) -> frozenset[str]:
        return frozenset(self._known)

    def detected(self) -> frozenset[str]:
        return frozenset(self._detected)

    def turns(self, chat_id: str) -> int:
        """The chat's bot messages since a person last spoke."""
        return self._turns.get(chat_id, 0)

    def note_own(self, chat_id: str, now: float) -> None:
        """The bot's own message is the chat's latest (an answer to it is timed from it), and the
        bot is in whatever exchange the chat has until a person speaks."""
        self._last[chat_id] = (now, _OWN, True)
        self._engaged.add(chat_id)

    def observe(self, chat_id: str, sender_id: str, now: float) -> int:
        """Take in a message from someone else: 0 for a person, else the chat's bot turns with it."""
        s = self._settings
        previous = self._last.get(chat_id)
        self._last[chat_id] = (now, sender_id, previous is None or now - previous[0] > s.detect_latency)
        if s.detect_runs and sender_id not in self._known:
            self._time(sender_id, previous, now)
        if sender_id not in self._known and sender_id not in self._detected:
            if chat_id in self._turns:
                del self._turns[chat_id]
            self._engaged.discard(chat_id)
            return 0
        self._bot_messages += 1
        turns = self._turns[chat_id] = self._turns.get(chat_id, 0) + 1
        return turns

    def holds_back(self, chat_id: str, sender_id: str, turns: int) -> bool:
        """Whether a bot message that made ``turns`` in ``chat_id`` is only recorded (counted when it
        is): past ``max_turns`` — for a detected bot (a guess) only in an exchange the bot is part of."""
        if turns <= self._settings.max_turns:
            return False
        if sender_id not in self._known and chat_id not in self._engaged:
            return False
        self._held += 1
        return True

    def _time(self, sender_id: str, previous: tuple[float, str, bool] | None, now: float) -> None:
        s = self._settings
        runs = self._runs.get(sender_id)
        if runs is None:
            if len(self._runs) >= s.max_tracked:  # the sender first heard longest ago goes
                forgotten = next(iter(self._runs))
                del self._runs[forgotten]
                self._detected.discard(forgotten)
            runs = self._runs[sender_id] = [0, 0]
        fast = (
            previous is not None
            and previous[1] != sender_id
            and previous[2]  # an answer to a message worth answering, not one more line of a burst
            and 0.0 <= now - previous[0] <= s.detect_latency
        )
        if fast:
            runs[0] += 1
            runs[1] = 0
            if runs[0] >= s.detect_runs:
                self._detected.add(sender_id)
        else:
            runs[0] = 0
            runs[1] += 1
            if runs[1] >= s.detect_runs:
                self._detected.discard(sender_id)

    def prune(self, before: float) -> None:
        """Forget the latest message of chats silent since ``before`` (it times nothing any more)."""
        for chat_id in [c for c, (at, _, _) in self._last.items() if at < before]:
            del self._last[chat_id]
            self._engaged.discard(chat_id)

    def statistics(self) -> BotRosterStatistics:
        return BotRosterStatistics(
            known=len(self._known),
            detected=len(self._detected),
            tracked_senders=len(self._runs),
            bot_messages=self._bot_messages,
            held_back=self._held,
            chats_in_exchange=len(self._turns),
        )
