"""Everything the bot sends goes through here.

* :class:`TokenBucket` — one across all groups and private chats (``outbound.max_per_minute``,
  ``outbound.burst``; accounts connected together share it); QQ restricts accounts that send too fast.
  Waiters are served in call order: each ``acquire()`` reserves the next slot and sleeps until it.
* :class:`ChatGates` — where the bot must not speak: a group that muted the bot (until the ban ends
  or is lifted) and a quiet period, asked for by a member ("闭嘴") or imposed by a superuser (/mute).
* :func:`split_reply` — a long reply is cut to ``bot.max_reply_chars`` and sent as parts of about
  ``bot.split_at`` characters, broken at line or sentence ends where possible.
* :class:`Outbound` — ``await send(chat_id, text, reply_to=...)``: gate, split, rate limit, one retry on
  a failed send (without the quote, which may have been recalled; not after a timeout, when the part
  may have gone out all the same and would be read twice: it counts as sent when the platform's echo
  of it came back meanwhile, :meth:`Outbound.heard_own`, and is retried only in a chat whose echoes
  come; a part given up unanswered whose echo comes later is recorded then), every part recorded
  through the ``on_sent`` callback. Each chat's sends go through the account that owns it, and an
  account whose sends fail like a restricted account's is paused (:mod:`plugins.greywind.restriction`).
  Shadow mode sends nothing and records what would have been sent. Text goes out as a segment array,
  never as a CQ string, so a model writing ``[CQ:at,qq=all]`` cannot @ everyone.

Decisions (gate verdicts, send results) are values; a send that fails twice is a ``SendResult`` with
``reason="failed"`` (``"unanswered"`` when the platform did not answer it in time), never an exception
to the caller.
"""

from __future__ import annotations

import math
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import anyio
import structlog

from plugins.greywind.restriction import (
    AccountCircuitStatistics,
    Outcome,
    RestrictionCircuits,
    is_restriction_like,
    is_timeout,
)
from runtime.kernel.message import ChatKey, ChatKind
from runtime.ports.outbound import GateVerdict, SendResult, SentRecord
from runtime.quiet import QUIET_IMPOSED, QuietBook

# The bot's own messages heard back kept to tell whether a part the platform did not answer in time
# went out: the last this many, over all chats.
ECHOES_KEPT = 256
# A part confirmed without a message id, or given up unanswered, owns the first echo of its words in its
# chat heard within this many seconds of its hand-over (an echo comes within seconds when it comes).
AWAITED_ECHO_WITHIN = 60.0

_GivenUp = tuple[str, str | None]  # a part given up unanswered: its text and the message it quoted

__all__ = [
    "Account",
    "BotApi",
    "ChatGates",
    "GateVerdict",
    "Outbound",
    "OutboundStatistics",
    "SendResult",
    "SentRecord",
    "TokenBucket",
    "TokenBucketStatistics",
    "split_reply",
]

log = structlog.get_logger("greywind.outbound")

Sleep = Callable[[float], Awaitable[None]]
_SENTENCE_ENDS = "。！？!?…~～"
_SOFT_BREAKS = "，,；;、 "
CUT_MARKER = "…"


class TokenBucket:
    """A token bucket refilled at ``rate_per_minute``, holding at most ``burst`` tokens."""

    __slots__ = ("_burst", "_clock", "_granted", "_rate", "_sleep", "_tokens", "_updated", "_waited")

    def __init__(
        self,
        rate_per_minute: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        if rate_per_minute <= 0 or burst < 1:
            raise ValueError("a token bucket needs a positive rate and a burst of at least 1")
        self._rate = rate_per_minute / 60.0
        self._burst = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._updated = clock()
        self._granted = 0
        self._waited = 0.0

    def _refill(self, now: float) -> None:
        if now > self._updated:
            self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
            self._updated = now

    def reserve(self) -> float:
        """Take the next slot; return how long to wait before using it (0 when a token was free)."""
        self._refill(self._clock())
        self._tokens -= 1.0
        self._granted += 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self._rate

    def acquire_nowait(self) -> bool:
        """Take a token only if one is free now."""
        self._refill(self._clock())
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        self._granted += 1
        return True

    async def acquire(self) -> None:
        """Wait for a token; a cancelled wait gives its slot back."""
        wait = self.reserve()
        if wait <= 0:
            return
        try:
            await self._sleep(wait)
        except BaseException:
            self._tokens += 1.0
            self._granted -= 1
            raise
        self._waited += wait

    def statistics(self) -> TokenBucketStatistics:
        self._refill(self._clock())
        return TokenBucketStatistics(
            tokens=max(self._tokens, 0.0),
            backlog=max(0, math.ceil(-self._tokens)),
            rate_per_minute=self._rate * 60.0,
            burst=int(self._burst),
            granted=self._granted,
            waited_seconds=self._waited,
        )


@dataclass(frozen=True, slots=True)
class TokenBucketStatistics:
    tokens: float
    backlog: int  # reservations waiting for a token
    rate_per_minute: float
    burst: int
    granted: int
    waited_seconds: float


class ChatGates:
    """Per-chat send gates. ``until=None`` means until lifted.

    A quiet period is of one of two kinds: one a member asked for (a mute word) and one a superuser
    imposed (``/mute``). Members lift only the first; an asked one never replaces an imposed one.
    """

    __slots__ = ("_muted", "_quiet")

    def __init__(self) -> None:
        self._muted: dict[str, float | None] = {}
        self._quiet = QuietBook()

    def mute(self, chat_id: str, until: float | None) -> None:
        self._muted[chat_id] = until

    def unmute(self, chat_id: str) -> bool:
        """Lift a ban; False when there was none."""
        if chat_id not in self._muted:
            return False
        del self._muted[chat_id]
        return True

    def quiet(
        self, chat_id: str, until: float | None, kind: str = QUIET_IMPOSED, *, now: float | None = None
    ) -> bool:
        """Open a quiet period; False (nothing changed) when an asked one would replace a live
        imposed one (``now`` None: any imposed one counts as live)."""
        return self._quiet.open(chat_id, until, kind, now=now)

    def unquiet(self, chat_id: str, *, only: str | None = None) -> bool:
        """End a quiet period (``only``: if it is of that kind); False when none was ended."""
        return self._quiet.lift(chat_id, only=only)

    def verdict(self, chat_id: str, now: float) -> GateVerdict:
        if chat_id in self._muted:
            until = self._muted[chat_id]
            if until is None or until > now:
                return GateVerdict(False, "muted", until)
            del self._muted[chat_id]
        quiet = self._quiet.current(chat_id, now)
        if quiet is not None:
            return GateVerdict(False, "quiet", quiet.until, quiet.kind)
        return GateVerdict(True, "open")

    def closed(self, now: float) -> dict[str, GateVerdict]:
        """Every chat currently closed, with why (for the admin ``status``)."""
        chats = set(self._muted) | self._quiet.chats()
        verdicts = {chat: self.verdict(chat, now) for chat in sorted(chats)}
        return {chat: verdict for chat, verdict in verdicts.items() if not verdict.open}


def split_reply(text: str, *, max_chars: int, split_at: int) -> list[str]:
    """Cap ``text`` at ``max_chars`` (marking the cut) and split it into parts of at most ``split_at``.

    Breaks prefer a line end, then a sentence end, then a comma or space in the second half of the
    window; only a run with none of those is cut mid-word.
    """
    text = "\n".join(line.rstrip() for line in text.strip().splitlines()).strip()
    if not text:
        return []
    if len(text) > max_chars:
        text = text[: max_chars - len(CUT_MARKER)].rstrip() + CUT_MARKER
    parts: list[str] = []
    while len(text) > split_at:
        window = text[:split_at]
        cut = _break_point(window, split_at)
        part, text = text[:cut].strip(), text[cut:].strip()
        if part:
            parts.append(part)
    if text:
        parts.append(text)
    return parts


def _break_point(window: str, split_at: int) -> int:
    floor = split_at // 2
    for breaks in ("\n", _SENTENCE_ENDS, _SOFT_BREAKS):
        best = max(window.rfind(ch) for ch in breaks)
        if best >= floor:
            return best + 1
    return split_at


class BotApi(Protocol):
    """The one method of a NoneBot ``Bot`` the outbound uses (tests pass a fake)."""

    async def call_api(self, api: str, **data: Any) -> Any: ...


class Account(NamedTuple):
    """The QQ account a chat's sends go through: its id (``self_id``) and its connection."""

    self_id: str
    bot: BotApi


@dataclass(frozen=True, slots=True)
class OutboundStatistics:
    sent_parts: int
    shadow_parts: int
    refused: Mapping[str, int]
    failed_sends: int
    retries: int
    shadow_mode: bool
    rate: TokenBucketStatistics
    accounts: tuple[AccountCircuitStatistics, ...] = ()


class Outbound:
    """Sends text to chats through the account that owns each; see the module docstring for the rules.

    ``bot(chat_id)`` is that chat's account while it is connected, else None (the send is refused as
    ``no_connection``; no other account stands in).
    """

    def __init__(
        self,
        *,
        bot: Callable[[str], Account | None],
        bucket: TokenBucket,
        gates: ChatGates,
        buckets: Mapping[str, TokenBucket] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = anyio.sleep,
        max_reply_chars: int = 600,
        split_at: int = 200,
        retry_delay: float = 1.5,
        send_timeout: float = 10.0,
        shadow_mode: bool = False,
        on_sent: Callable[[SentRecord], None] | None = None,
        remember_ids: int = 4_096,
        circuits: RestrictionCircuits | None = None,
    ) -> None:
        self._bot = bot
        self.circuits = circuits or RestrictionCircuits(clock=clock)
        self.bucket = bucket
        # An account with its own send rate ([[accounts]]); every other account shares ``bucket``.
        self.buckets: dict[str, TokenBucket] = dict(buckets or {})
        self.gates = gates
        self._clock = clock
        self._sleep = sleep
        self._max_reply_chars = max_reply_chars
        self._split_at = split_at
        self._retry_delay = retry_delay
        self._send_timeout = send_timeout
        self.shadow_mode = shadow_mode
        self._listeners: list[Callable[[SentRecord], None]] = [on_sent] if on_sent else []
        self._own_ids: OrderedDict[str, None] = OrderedDict()
        self._echoes: deque[tuple[str, str, str, float]] = deque(maxlen=ECHOES_KEPT)
        # Parts whose echo has not come (yet), which own it when it comes: (chat, words, handed over at,
        # and for a part given up unanswered its text and quote, recorded as sent when it comes;
        # None for one confirmed without a message id).
        self._awaited: deque[tuple[str, str, float, _GivenUp | None]] = deque(maxlen=ECHOES_KEPT)
        # What this bot sent, against what the account's owner (or another program) sent: the ids of
        # its parts (the last ``remember_ids``), and the parts on their way (chat, words).
        self._sent_ids: OrderedDict[str, None] = OrderedDict()
        self._in_flight: list[tuple[str, str]] = []
        # Waiters for a chat's parts on their way to be answered (:meth:`sent_it_once_answered`).
        self._landed: dict[str, anyio.Event] = {}
        # The chats whose own messages the platform reports back (the last ``remember_ids``).
        self._echo_chats: OrderedDict[str, None] = OrderedDict()
        self._remember_ids = remember_ids
        self._locks: weakref.WeakValueDictionary[str, anyio.Lock] = weakref.WeakValueDictionary()
        self._sent_parts = 0
        self._shadow_parts = 0
        self._refused: dict[str, int] = {}
        self._failed = 0
        self._retries = 0

    def on_sent(self, listener: Callable[[SentRecord], None]) -> Callable[[], None]:
        """Call ``listener`` for every part sent; returns the disposer."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def is_own_message(self, message_id: str) -> bool:
        """Whether ``message_id`` is its account's own (recently: the last ``remember_ids``): a part the
        bot sent, or any message of the account heard back (:meth:`sent_it` tells them apart)."""
        return message_id in self._own_ids

    def heard_own(self, chat_id: str, message_id: str, text: str, at: float) -> None:
        """The bot's own message heard back at ``at`` (an echo, ``message_sent``). Its id is known as
        the bot's at once: the echo may come before the platform confirms the send, and a reply to it
        right after. A part whose send the platform did not answer in time counts as sent when its
        echo came; in a chat whose echoes come, one that did not come means the part did not go out.
        An echo a part awaits (:meth:`_await_echo`) is that part's, and vouches for nothing else.
        """
        _keep_recent(self._echo_chats, chat_id, self._remember_ids)
        if message_id in self._own_ids:
            return  # its send was confirmed (or it was heard already): it tells nothing more
        if message_id:
            _keep_recent(self._own_ids, message_id, self._remember_ids)
        said = text.strip()
        for index, (chat, awaited, since, given_up) in enumerate(self._awaited):
            if chat == chat_id and awaited == said and since <= at <= since + AWAITED_ECHO_WITHIN:
                del self._awaited[index]
                if given_up is not None:  # the part went out after all, after its send was given up
                    self._echoed(chat_id, given_up[0], message_id, given_up[1], since)
                elif message_id:
                    _keep_recent(self._sent_ids, message_id, self._remember_ids)
                return
        self._echoes.append((chat_id, said, message_id, at))

    def sent_it(self, chat_id: str, message_id: str, text: str) -> bool:
        """Whether this bot sent its account's message ``message_id`` (``text`` in ``chat_id``): a part
        it sent (confirmed, or vouched for by its echo), or one on its way, whose echo may come before
        the platform answers. Not what the account's owner typed on another device, nor what another
        program sent through the account."""
        if message_id and message_id in self._sent_ids:
            return True
        return (chat_id, text.strip()) in self._in_flight

    async def sent_it_once_answered(self, chat_id: str, message_id: str, text: str) -> bool:
        """:meth:`sent_it`, asked again once the parts on their way to ``chat_id`` are answered (or
        given up) if it says no while one is. An implementation that changes a part's words on the
        way (its echo does not read as sent) may report the echo before it answers the send with the
        id: the answer tells. Only the account's own messages heard while the bot sends to that chat
        wait, for the sends' time at the most."""
        if self.sent_it(chat_id, message_id, text):
            return True
        if not message_id or not self._sending_to(chat_id):
            return False
        landed = self._landed.get(chat_id)
        if landed is None:
            landed = self._landed[chat_id] = anyio.Event()
        with anyio.move_on_after(2 * self._send_timeout + self._retry_delay):
            await landed.wait()
        return self.sent_it(chat_id, message_id, text)

    def _sending_to(self, chat_id: str) -> bool:
        """Whether a part is on its way to ``chat_id``."""
        return any(chat == chat_id for chat, _ in self._in_flight)

    def _echo_of(self, chat_id: str, text: str, since: float) -> str | None:
        """The id of an echo of ``text`` in ``chat_id`` heard at or after ``since`` (taken: one echo
        answers for one part), or None."""
        wanted = text.strip()
        for index, (chat, said, message_id, at) in enumerate(self._echoes):
            if chat == chat_id and said == wanted and at >= since:
                del self._echoes[index]
                return message_id
        return None

    def _forget_echo(self, message_id: str) -> None:
        """Drop the echo of a send now confirmed: it cannot answer for another part (the same words
        sent again, unanswered, while it came late)."""
        for index, echo in enumerate(self._echoes):
            if echo[2] == message_id:
                del self._echoes[index]
                return

    def _owe_echo(self, chat_id: str, text: str, since: float) -> str:
        """A part confirmed without a message id (some implementations answer so): its echo, come or
        to come, is its own, and cannot vouch for the same words sent again later and unanswered.
        The echo's id when it came already (the part's id after all), else ""."""
        echo = self._echo_of(chat_id, text, since)
        if echo is None:
            self._await_echo(chat_id, text, since, None)
        return echo or ""

    def _await_echo(self, chat_id: str, text: str, since: float, given_up: _GivenUp | None) -> None:
        """The part handed over at ``since`` owns the first echo of ``text`` in ``chat_id`` heard within
        ``AWAITED_ECHO_WITHIN``; ``given_up``: a part given up unanswered, recorded when it comes."""
        self._awaited.append((chat_id, text.strip(), since, given_up))

    def gate(self, chat_id: str) -> GateVerdict:
        """The chat's gate, closed (``restricted``) too while its account's sends are paused."""
        verdict = self.gates.verdict(chat_id, self._clock())
        if verdict.open:
            account = self._bot(chat_id)
            until = self.circuits.paused_until(account.self_id) if account is not None else None
            if until is not None:
                return GateVerdict(False, "restricted", until)
        return verdict

    async def send(
        self, chat_id: str, text: str, *, reply_to: str | None = None, admin: bool = False
    ) -> SendResult:
        """Send ``text`` to ``chat_id`` (split, rate limited, retried once). Never raises on a failed send.

        ``admin`` marks an answer to a superuser's command: it is sent through a quiet period, and in
        shadow mode it is still sent when the chat is private (so an operator can ask for ``/status``
        while the bot stays silent in its groups).
        """
        verdict = self.gate(chat_id)
        if not verdict.open and not (admin and verdict.reason == "quiet"):
            return self._refuse(chat_id, verdict.reason)
        parts = split_reply(text, max_chars=self._max_reply_chars, split_at=self._split_at)
        if not parts:
            return self._refuse(chat_id, "empty")
        if self.shadow_mode and not (admin and ChatKey.parse(chat_id).is_private):
            for index, part in enumerate(parts):
                self._record(chat_id, part, None, reply_to if index == 0 else None, shadow=True)
            self._shadow_parts += len(parts)
            log.info("shadow_send", chat_id=chat_id, parts=len(parts), text=_log_excerpt(parts))
            return SendResult(chat_id, False, "shadow", tuple(parts))
        lock = self._locks.get(chat_id)
        if lock is None:
            lock = self._locks[chat_id] = anyio.Lock()
        async with lock:
            return await self._send_parts(chat_id, parts, reply_to, admin=admin)

    async def _send_parts(
        self, chat_id: str, parts: list[str], reply_to: str | None, *, admin: bool
    ) -> SendResult:
        ids: list[str] = []
        attempts = 0
        for index, part in enumerate(parts):
            # A ban can arrive between parts; the rest of the reply is dropped, not queued.
            verdict = self.gate(chat_id)
            if not verdict.open and not (admin and verdict.reason == "quiet"):
                self._refuse(chat_id, verdict.reason)
                sent = tuple(parts[:index])
                return SendResult(chat_id, bool(ids), verdict.reason, sent, tuple(ids), attempts)
            quote = reply_to if index == 0 else None
            message_id, tries, reason = await self._send_one(chat_id, part, quote)
            attempts += tries
            if message_id is None:
                if reason == "restricted":
                    self._refuse(chat_id, reason)
                else:
                    self._failed += 1
                sent = tuple(parts[:index])
                return SendResult(chat_id, bool(ids), reason, sent, tuple(ids), attempts)
            ids.append(message_id)
            self._sent_parts += 1
        log.info("sent", chat_id=chat_id, parts=len(parts), text=_log_excerpt(parts), admin=admin)
        return SendResult(chat_id, True, "sent", tuple(parts), tuple(ids), attempts)

    async def _send_one(self, chat_id: str, text: str, reply_to: str | None) -> tuple[str | None, int, str]:
        """The part's message id (None when it was not sent), the attempts made and the reason. A sent
        part is recorded as spoken when it was handed to the platform, not when the platform answered:
        another bot's answer to it can be heard before that answer comes back."""
        flight = (chat_id, text.strip())
        self._in_flight.append(flight)  # its echo, heard meanwhile, is this bot's (sent_it)
        try:
            return await self._send_part(chat_id, text, reply_to)
        finally:
            self._in_flight.remove(flight)
            if chat_id in self._landed and not self._sending_to(chat_id):
                self._landed.pop(chat_id).set()

    async def _send_part(self, chat_id: str, text: str, reply_to: str | None) -> tuple[str | None, int, str]:
        key = ChatKey.parse(chat_id)
        text_segment = {"type": "text", "data": {"text": text}}
        if key.kind is ChatKind.GROUP:
            api, target = "send_group_msg", {"group_id": int(key.ident)}
        else:
            api, target = "send_private_msg", {"user_id": int(key.ident)}
        reason = "failed"
        unanswered_since: float | None = None  # when the first attempt, not answered, was handed over
        for attempt in (1, 2):
            # The retry drops the quote: a recalled or expired quoted message is a common cause of failure.
            quote = [{"type": "reply", "data": {"id": reply_to}}] if reply_to and attempt == 1 else []
            params = {**target, "message": [*quote, text_segment]}
            account = self._bot(chat_id)
            if account is None:
                reason = "no_connection"
            else:
                if self.circuits.paused(account.self_id):
                    self.circuits.admit(account.self_id)  # refused: counted
                    return None, attempt - 1, "restricted"
                await self.buckets.get(account.self_id, self.bucket).acquire()
                ticket = self.circuits.admit(account.self_id)  # a pause may have begun meanwhile
                if ticket is None:
                    return None, attempt - 1, "restricted"
                outcome = Outcome.OTHER
                sent_at = self._clock()
                try:
                    with anyio.fail_after(self._send_timeout):
                        result = await account.bot.call_api(api, **params)
                    outcome = Outcome.SENT
                    message_id = _message_id(result)
                    if not message_id:
                        message_id = self._owe_echo(chat_id, text, sent_at)
                    self._record(chat_id, text, message_id or None, reply_to, shadow=False, at=sent_at)
                    return message_id, attempt, "sent"
                except Exception as exc:  # the adapter's ActionFailed / NetworkError, a timeout, ...
                    reason = "failed"
                    unanswered = is_timeout(exc)
                    # Not answered in time, the part may have gone out all the same (a slow
                    # implementation): its echo, come back while the call waited, says it did.
                    echo = self._echo_of(chat_id, text, sent_at) if unanswered else None
                    if echo is not None:
                        outcome = Outcome.SENT
                        self._echoed(chat_id, text, echo, reply_to, sent_at)
                        return echo, attempt, "sent"
                    if is_restriction_like(exc):
                        outcome = Outcome.RESTRICTED
                    log.warning(
                        "send_failed",
                        chat_id=chat_id,
                        account=account.self_id,
                        attempt=attempt,
                        restriction_like=outcome is Outcome.RESTRICTED,
                        unanswered=unanswered,
                        error=repr(exc)[:300],
                    )
                    if unanswered:
                        if chat_id not in self._echo_chats:
                            # The platform does not report this chat's own messages: the part may
                            # have gone out, and sent again the chat would read it twice (a
                            # restricted account would not take it either). An echo that comes
                            # later all the same says it did: it is recorded then.
                            self._await_echo(chat_id, text, sent_at, (text, reply_to))
                            return None, attempt, "unanswered"
                        # This chat's own messages come back and this one has not: it did not go
                        # out. Tried again once, unless its echo comes in the meantime after all.
                        reason = "unanswered"
                        unanswered_since = sent_at
                finally:
                    self.circuits.report(account.self_id, ticket, outcome)
            if attempt == 1:
                self._retries += 1
                await self._sleep(self._retry_delay)
                if unanswered_since is not None:
                    echo = self._echo_of(chat_id, text, unanswered_since)
                    if echo is not None:
                        self._echoed(chat_id, text, echo, reply_to, unanswered_since)
                        return echo, attempt, "sent"
        if reason == "unanswered" and unanswered_since is not None:
            self._await_echo(chat_id, text, unanswered_since, (text, reply_to))  # as above
        return None, 2, reason

    def _echoed(self, chat_id: str, text: str, echo: str, reply_to: str | None, at: float) -> None:
        """A part the platform did not answer, sent all the same: its echo ``echo`` came back."""
        log.info("send_echoed", chat_id=chat_id, message_id=echo)
        self._record(chat_id, text, echo, reply_to, shadow=False, at=at)

    def _record(
        self,
        chat_id: str,
        text: str,
        message_id: str | None,
        reply_to: str | None,
        *,
        shadow: bool,
        at: float | None = None,
    ) -> None:
        if message_id:
            _keep_recent(self._own_ids, message_id, self._remember_ids)
            _keep_recent(self._sent_ids, message_id, self._remember_ids)
            self._forget_echo(message_id)
        record = SentRecord(chat_id, text, message_id, self._clock() if at is None else at, reply_to, shadow)
        for listener in tuple(self._listeners):
            try:
                listener(record)
            except Exception:
                log.exception("sent_listener_failed", chat_id=chat_id)

    def _refuse(self, chat_id: str, reason: str) -> SendResult:
        self._refused[reason] = self._refused.get(reason, 0) + 1
        log.info("send_refused", chat_id=chat_id, reason=reason)
        return SendResult(chat_id, False, reason)

    def statistics(self) -> OutboundStatistics:
        return OutboundStatistics(
            sent_parts=self._sent_parts,
            shadow_parts=self._shadow_parts,
            refused=dict(self._refused),
            failed_sends=self._failed,
            retries=self._retries,
            shadow_mode=self.shadow_mode,
            rate=self.bucket.statistics(),
            accounts=self.circuits.statistics(),
        )


def _keep_recent(recent: OrderedDict[str, None], key: str, most: int) -> None:
    """Note ``key`` as the most recent of ``recent``, which keeps the last ``most``."""
    recent[key] = None
    recent.move_to_end(key)
    while len(recent) > most:
        recent.popitem(last=False)


def _message_id(result: Any) -> str:
    if isinstance(result, Mapping) and result.get("message_id") is not None:
        return str(result["message_id"])
    # Some implementations answer without an id; the send still happened.
    return ""


LOG_TEXT_CHARS = 120


def _log_excerpt(parts: list[str]) -> str:
    """What a send line shows of the text: its start, cut short (the whole reply is in the store)."""
    text = " / ".join(parts)
    return text if len(text) <= LOG_TEXT_CHARS else text[: LOG_TEXT_CHARS - 1] + "…"
