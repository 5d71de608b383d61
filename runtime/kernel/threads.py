"""Conversation threads (ADR-0002 §4): which reply chain inside a chat a message belongs to.

ADR rule, kept as the floor: a reply joins its target's thread; otherwise the chat's most recent
thread within the gap; otherwise a new thread. In a busy group "the most recent thread" chains
unrelated conversations together, so :class:`ThreadTracker` scores the chat's recent threads on the
signals people use to follow a chat, and the best thread above ``join_threshold`` wins:

- **reply**: a reply always joins the thread of the message it quotes;
- **mention**: an @ of someone pulls the message into the thread where that person last spoke;
- **addressed**: someone who was @-ed in thread T and now speaks is most likely answering in T;
- **speaker**: people tend to go on with their own conversation;
- **terms**: shared content words (CJK bigrams, ASCII words) with the thread's recent vocabulary;
- **recent**: recency within the gap, strongest for the thread that spoke last. When the chat has
  only one live conversation, recency alone is enough to join it (the ADR's rule).

Everything is bounded: per chat, the number of live threads, of remembered message ids (for
:meth:`ThreadTracker.thread_of`) and of speakers; per thread, recent message ids, participants and
vocabulary; per message, the characters and terms read and the threads scored. Threads idle past the
horizon are pruned. Chats never share threads.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Protocol

from runtime.kernel._features import extract_terms
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.kernel.message import ChatMessage

__all__ = [
    "ConversationThread",
    "ThreadAssignment",
    "ThreadSettings",
    "ThreadTracker",
    "ThreadTrackerStatistics",
]

# Per-thread memory: the last message ids and participants kept for snapshots and scoring.
_RECENT_MESSAGE_IDS = 32
_MAX_PARTICIPANTS = 32
# A chat silent this long forgets which thread its messages went to (a reply can revive a pruned
# thread until then).
_FORGET_CHAT_AFTER = 86_400.0
# Term statistics of a chat cover roughly this many recent messages.
_DF_WINDOW = 500


class _ThreadsConfigLike(Protocol):
    """The fields of ``runtime.config.threads.ThreadsConfig`` (durations in milliseconds)."""

    gap_ms: int
    horizon_ms: int
    weight_mention: float
    weight_pair: float
    weight_speaker: float
    weight_addressed: float
    weight_terms: float
    weight_recent: float
    join_threshold: float
    speaker_span_ms: int
    addressed_span_ms: int
    chatter_joins_recent: bool
    max_threads_per_chat: int
    max_messages_per_chat: int
    max_candidates: int
    max_terms_per_thread: int
    max_feature_chars: int
    max_terms_per_message: int
    max_chats: int


@dataclass(frozen=True, slots=True)
class ThreadSettings:
    """The tracker's settings in kernel units (seconds). Defaults equal ``[threads]``'s defaults."""

    gap: float = 300.0
    horizon: float = 1_800.0
    weight_mention: float = 1.0
    weight_pair: float = 1.5
    weight_speaker: float = 0.6
    weight_addressed: float = 0.4
    weight_terms: float = 0.6
    weight_recent: float = 0.25
    join_threshold: float = 0.4
    speaker_span: float = 300.0
    addressed_span: float = 1_200.0
    chatter_joins_recent: bool = False
    max_threads_per_chat: int = 64
    max_messages_per_chat: int = 5_000
    max_candidates: int = 12
    max_terms_per_thread: int = 64
    max_feature_chars: int = 1_000
    max_terms_per_message: int = 48
    max_chats: int = 20_000

    def __post_init__(self) -> None:
        if self.gap <= 0:
            raise InvalidSetting("threads.gap", "must be positive")
        if self.horizon < self.gap:
            raise InvalidSetting("threads.horizon", "must not be shorter than threads.gap")
        for name in (
            "max_threads_per_chat",
            "max_messages_per_chat",
            "max_candidates",
            "max_terms_per_thread",
            "max_feature_chars",
            "max_terms_per_message",
            "max_chats",
        ):
            if getattr(self, name) < 1:
                raise InvalidSetting(f"threads.{name}", "must be at least 1")

    @classmethod
    def from_config(cls, cfg: _ThreadsConfigLike) -> ThreadSettings:
        """Kernel settings from the ``[threads]`` config section (milliseconds -> seconds)."""
        return cls(
            gap=cfg.gap_ms / 1000.0,
            horizon=cfg.horizon_ms / 1000.0,
            weight_mention=cfg.weight_mention,
            weight_pair=cfg.weight_pair,
            weight_speaker=cfg.weight_speaker,
            weight_addressed=cfg.weight_addressed,
            weight_terms=cfg.weight_terms,
            weight_recent=cfg.weight_recent,
            join_threshold=cfg.join_threshold,
            speaker_span=cfg.speaker_span_ms / 1000.0,
            addressed_span=cfg.addressed_span_ms / 1000.0,
            chatter_joins_recent=cfg.chatter_joins_recent,
            max_threads_per_chat=cfg.max_threads_per_chat,
            max_messages_per_chat=cfg.max_messages_per_chat,
            max_candidates=cfg.max_candidates,
            max_terms_per_thread=cfg.max_terms_per_thread,
            max_feature_chars=cfg.max_feature_chars,
            max_terms_per_message=cfg.max_terms_per_message,
            max_chats=cfg.max_chats,
        )


@dataclass(frozen=True, slots=True)
class ConversationThread:
    """A snapshot of one conversation thread. ``message_ids`` holds the most recent ids only."""

    id: str
    chat_id: str
    started_at: float
    last_at: float
    message_count: int
    message_ids: tuple[str, ...]
    participants: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ThreadAssignment:
    """Where a message went: the thread, whether it was new, and the signal that decided it."""

    thread: ConversationThread
    created: bool
    reason: str  # reply | mention | addressed | speaker | terms | recent | new
    score: float

    @property
    def thread_id(self) -> str:
        return self.thread.id


@dataclass(frozen=True, slots=True)
class ThreadTrackerStatistics:
    chats: int
    threads: int
    assigned: int
    created: int
    pruned: int
    by_reason: tuple[tuple[str, int], ...]


class _Thread:
    __slots__ = ("chat_id", "count", "id", "last_at", "message_ids", "participants", "started_at", "terms")

    def __init__(self, thread_id: str, chat_id: str, now: float) -> None:
        self.id = thread_id
        self.chat_id = chat_id
        self.started_at = now
        self.last_at = now
        self.count = 0
        self.message_ids: deque[str] = deque(maxlen=_RECENT_MESSAGE_IDS)
        self.participants: dict[str, float] = {}
        self.terms: dict[str, float] = {}

    def snapshot(self) -> ConversationThread:
        return ConversationThread(
            id=self.id,
            chat_id=self.chat_id,
            started_at=self.started_at,
            last_at=self.last_at,
            message_count=self.count,
            message_ids=tuple(self.message_ids),
            participants=tuple(self.participants),
        )


class _Chat:
    __slots__ = ("addressed", "df", "docs", "last_at", "messages", "pairs", "speakers", "threads")

    def __init__(self) -> None:
        # Live threads, least recently active first.
        self.threads: OrderedDict[str, _Thread] = OrderedDict()
        self.messages: OrderedDict[str, str] = OrderedDict()
        # user -> (thread id, when): where they last spoke / were last @-ed. Oldest first.
        self.speakers: dict[str, tuple[str, float]] = {}
        self.addressed: dict[str, tuple[str, float]] = {}
        # (user, user) sorted -> (thread id, when) of their last exchange by @. Oldest first.
        self.pairs: dict[tuple[str, str], tuple[str, float]] = {}
        self.last_at = float("-inf")
        # How many recent messages used each term (halved now and then, so it forgets slowly).
        self.df: dict[str, float] = {}
        self.docs = 0.0


def _remember(table: dict[str, tuple[str, float]], user: str, value: tuple[str, float], cap: int) -> None:
    table.pop(user, None)
    table[user] = value
    if len(table) > cap:
        del table[next(iter(table))]


class ThreadTracker:
    """Assigns every message of every chat to a conversation thread of that chat."""

    def __init__(self, settings: ThreadSettings | None = None, *, ids: IdFactory | None = None) -> None:
        self._settings = settings or ThreadSettings()
        self._ids = ids if ids is not None else counter_ids()
        self._chats: OrderedDict[str, _Chat] = OrderedDict()
        self._threads: dict[str, _Thread] = {}
        self._assigned = 0
        self._created = 0
        self._pruned = 0
        self._reasons: dict[str, int] = {}

    @property
    def settings(self) -> ThreadSettings:
        return self._settings

    # -- the hot path ----------------------------------------------------------------------------

    def assign(self, message: ChatMessage) -> ThreadAssignment:
        """Put ``message`` into a thread of its chat (an existing one or a new one)."""
        s = self._settings
        now = message.time
        chat_id = message.chat_id
        chat = self._chat(chat_id)
        sender = message.sender_id

        terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
        target, reason, score = self._choose(chat, message, terms, now)
        created = False
        if target is None:
            target = self._new_thread(chat, chat_id, now)
            created = True
            reason = "new"
        self._absorb(chat, target, message, terms, now)
        self._assigned += 1
        self._reasons[reason] = self._reasons.get(reason, 0) + 1
        cap = s.max_messages_per_chat
        _remember(chat.speakers, sender, (target.id, now), cap)
        for user in message.mentions:
            if user != sender:
                _remember(chat.addressed, user, (target.id, now), cap)
                pair_key = (sender, user) if sender < user else (user, sender)
                chat.pairs.pop(pair_key, None)
                chat.pairs[pair_key] = (target.id, now)
                if len(chat.pairs) > cap:
                    del chat.pairs[next(iter(chat.pairs))]
        return ThreadAssignment(target.snapshot(), created, reason, score)

    def _choose(
        self, chat: _Chat, message: ChatMessage, terms: tuple[str, ...], now: float
    ) -> tuple[_Thread | None, str, float]:
        s = self._settings
        threads = chat.threads
        if message.reply_to is not None:
            tid = chat.messages.get(message.reply_to)
            if tid is not None:
                thread = threads.get(tid)
                if thread is None:  # pruned while idle: the reply brings it back under its old id
                    thread = self._revive(chat, tid, message.chat_id, now)
                return thread, "reply", float("inf")
        if not threads:
            return None, "new", 0.0

        horizon = now - s.horizon
        scores: dict[str, float] = {}
        best_reason: dict[str, tuple[float, str]] = {}

        def add(tid: str, value: float, why: str) -> None:
            if value <= 0.0 or tid not in threads:
                return
            scores[tid] = scores.get(tid, 0.0) + value
            if value > best_reason.get(tid, (0.0, ""))[0]:
                best_reason[tid] = (value, why)

        sender = message.sender_id
        mentioned = False
        for user in message.mentions:
            if user == sender:
                continue
            # Two people who talked to each other before most likely go on in that thread; failing
            # that, the @ pulls the message to where the named person last spoke.
            pair = chat.pairs.get((sender, user) if sender < user else (user, sender))
            if pair is not None and pair[1] >= horizon:
                add(pair[0], s.weight_pair, "mention")
                mentioned = True
            spoke = chat.speakers.get(user)
            if spoke is not None and spoke[1] >= horizon:
                add(spoke[0], s.weight_mention, "mention")
                mentioned = True
        if not mentioned:
            # An @ names the conversation outright; otherwise the speaker's own recent activity
            # counts, fading over a few minutes so a later message may open a new topic.
            own = chat.speakers.get(sender)
            if own is not None:
                add(own[0], s.weight_speaker * _fade(now - own[1], s.speaker_span), "speaker")
            asked = chat.addressed.get(sender)
            if asked is not None and (own is None or asked[1] >= own[1]):
                add(asked[0], s.weight_addressed * _fade(now - asked[1], s.addressed_span), "addressed")

        weights, total = _idf(chat, terms) if terms else ((), 0.0)
        newest: _Thread | None = None
        for rank, thread in enumerate(reversed(threads.values())):
            if rank >= s.max_candidates or thread.last_at < horizon:
                break
            if newest is None:
                newest = thread
            idle = now - thread.last_at
            if idle <= s.gap:
                add(thread.id, s.weight_recent * (1.0 - idle / s.gap) / (1 + rank), "recent")
            if weights and thread.terms:
                add(thread.id, s.weight_terms * _overlap(weights, total, thread.terms), "terms")

        if scores:
            tid = max(scores, key=scores.__getitem__)
            score = scores[tid]
            if score >= s.join_threshold:
                return threads[tid], best_reason[tid][1], score
        else:
            score = 0.0
        if (
            s.chatter_joins_recent
            and not terms
            and not message.mentions
            and newest is not None
            and now - newest.last_at <= s.gap
        ):
            # Words-free chatter ("lol", "哈哈", a sticker) carries no topic: it goes with the
            # conversation that spoke last, as the ADR's recency rule has it.
            return newest, "recent", score
        return None, "new", score

    def _absorb(
        self, chat: _Chat, thread: _Thread, message: ChatMessage, terms: tuple[str, ...], now: float
    ) -> None:
        s = self._settings
        thread.last_at = max(thread.last_at, now)
        thread.count += 1
        thread.message_ids.append(message.message_id)
        participants = thread.participants
        participants.pop(message.sender_id, None)
        participants[message.sender_id] = now
        if len(participants) > _MAX_PARTICIPANTS:
            del participants[next(iter(participants))]
        profile = thread.terms
        for term in terms:
            profile[term] = profile.get(term, 0.0) + 1.0
        if len(profile) > 2 * s.max_terms_per_thread:
            keep = sorted(profile.items(), key=lambda kv: kv[1], reverse=True)[: s.max_terms_per_thread]
            thread.terms = {k: v / 2.0 for k, v in keep}  # halve: older vocabulary fades
        df = chat.df
        for term in terms:
            df[term] = df.get(term, 0.0) + 1.0
        chat.docs += 1.0
        if chat.docs >= 2 * _DF_WINDOW:
            chat.docs /= 2.0
            chat.df = {k: v / 2.0 for k, v in df.items() if v > 1.0}
        chat.threads.move_to_end(thread.id)
        chat.last_at = max(chat.last_at, now)
        messages = chat.messages
        messages[message.message_id] = thread.id
        if len(messages) > s.max_messages_per_chat:
            del messages[next(iter(messages))]

    # -- lookups ---------------------------------------------------------------------------------

    def thread_of(self, chat_id: str, message_id: str) -> str | None:
        """The thread a remembered message of ``chat_id`` went to (for reply lookup)."""
        chat = self._chats.get(chat_id)
        return None if chat is None else chat.messages.get(message_id)

    def get(self, thread_id: str) -> ConversationThread | None:
        thread = self._threads.get(thread_id)
        return None if thread is None else thread.snapshot()

    def recent(self, chat_id: str, now: float, limit: int = 8) -> list[ConversationThread]:
        """The chat's threads active within the horizon, most recent first."""
        chat = self._chats.get(chat_id)
        if chat is None:
            return []
        cutoff = now - self._settings.horizon
        out: list[ConversationThread] = []
        for thread in reversed(chat.threads.values()):
            if len(out) >= limit or thread.last_at < cutoff:
                break
            out.append(thread.snapshot())
        return out

    # -- housekeeping ----------------------------------------------------------------------------

    def prune(self, now: float) -> int:
        """Drop threads idle past the horizon, and chats silent for a day; returns threads dropped."""
        cutoff = now - self._settings.horizon
        dropped = 0
        for chat_id in list(self._chats):
            chat = self._chats[chat_id]
            while chat.threads:
                oldest = next(iter(chat.threads.values()))
                if oldest.last_at >= cutoff:
                    break
                self._drop(chat, oldest)
                dropped += 1
            if not chat.threads and chat.last_at < now - _FORGET_CHAT_AFTER:
                del self._chats[chat_id]
        self._pruned += dropped
        return dropped

    def statistics(self) -> ThreadTrackerStatistics:
        return ThreadTrackerStatistics(
            chats=len(self._chats),
            threads=len(self._threads),
            assigned=self._assigned,
            created=self._created,
            pruned=self._pruned,
            by_reason=tuple(sorted(self._reasons.items())),
        )

    # -- internals -------------------------------------------------------------------------------

    def _chat(self, chat_id: str) -> _Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            chat = self._chats[chat_id] = _Chat()
            if len(self._chats) > self._settings.max_chats:
                _, evicted = self._chats.popitem(last=False)
                for thread in list(evicted.threads.values()):
                    self._drop(evicted, thread)
                    self._pruned += 1
        else:
            self._chats.move_to_end(chat_id)
        return chat

    def _new_thread(self, chat: _Chat, chat_id: str, now: float) -> _Thread:
        thread_id = self._ids("th")
        while thread_id in self._threads:
            thread_id = self._ids("th")
        self._created += 1
        return self._revive(chat, thread_id, chat_id, now)

    def _revive(self, chat: _Chat, thread_id: str, chat_id: str, now: float) -> _Thread:
        thread = _Thread(thread_id, chat_id, now)
        chat.threads[thread_id] = thread
        self._threads[thread_id] = thread
        if len(chat.threads) > self._settings.max_threads_per_chat:
            self._drop(chat, next(iter(chat.threads.values())))
            self._pruned += 1
        return thread

    def _drop(self, chat: _Chat, thread: _Thread) -> None:
        del chat.threads[thread.id]
        self._threads.pop(thread.id, None)


def _fade(age: float, span: float) -> float:
    """1 for something that just happened, falling linearly to 0 at ``span`` seconds old."""
    return 1.0 - age / span if age < span else 0.0


def _idf(chat: _Chat, terms: tuple[str, ...]) -> tuple[tuple[tuple[str, float], ...], float]:
    """Each term with its rarity in the chat (common words weigh little) and the weights' sum."""
    df = chat.df
    base = math.log(chat.docs + 2.0)
    pairs = tuple((t, base - math.log(df.get(t, 0.0) + 1.0)) for t in terms)
    return pairs, sum(w for _, w in pairs)


def _overlap(weights: tuple[tuple[str, float], ...], total: float, profile: dict[str, float]) -> float:
    """Shared vocabulary in [0, 1]: the rarity-weighted share of the message's terms the thread used."""
    if total <= 0.0:
        return 0.0
    hits = 0.0
    for term, weight in weights:
        used = profile.get(term)
        if used is not None:
            hits += weight if used >= 1.0 else weight * used
    return hits / total
