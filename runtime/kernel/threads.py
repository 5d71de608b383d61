"""Conversation threads (design/0002 §4): which reply chain inside a chat a message belongs to.

The rule of design/0002 §4 is the floor: a reply joins its target's thread; otherwise the chat's most recent
thread within the gap; otherwise a new thread. In a busy group "the most recent thread" chains
unrelated conversations together, so :class:`ThreadTracker` scores the chat's recent threads on the
signals people use to follow a chat, and the best thread scoring ``join_threshold`` or more wins:

- **reply**: a reply always joins the thread of the message it quotes;
- **mention**: an @ pulls the message towards where the two people last talked by @ (strongest)
  and towards where the named person last spoke;
- **addressed**: someone who was @-ed or replied to in thread T and now speaks is most likely
  answering in T (a reply also counts as an exchange between the two for **mention**);
- **speaker**: people go on with their own conversation (fading over ``speaker_span``);
- **terms**: shared content words (CJK bigrams, ASCII words), weighted by rarity in the chat;
- **recent**: recency within the gap, strongest for the thread that spoke last. In a group it only
  adds to the other signals by default; with ``weight_recent >= join_threshold`` it decides alone,
  which is the plain rule of design/0002 §4. A private chat always follows that rule (two people, one
  conversation at a time); ``chatter_joins_recent`` sends word-free group chatter the same way.

By default (``scorer = "learned"``) the link scorer of ``_links``, fitted on annotated IRC chat, chooses
instead, these signals deciding first where they rest on QQ's structure, which IRC lacks (the @-ed
person answering, an @ between two who talked by @, a newcomer's shared words), and a thread idle past
the gap that holds none of a message's words is not joined without an @ (see ``ThreadTracker._link``).

Measured on real chat logs by ``bench/disentangle.py``; the defaults here equal ``[threads]``'s.

Everything is bounded: per chat, the number of live threads, of remembered message ids (for
:meth:`ThreadTracker.thread_of`) and of speakers; per thread, recent message ids, participants and
vocabulary; per message, the characters and terms read and the threads scored. Threads idle past the
horizon are pruned; a chat silent for a day is forgotten. Chats never share threads.

Threads survive a restart: :meth:`ThreadTracker.restore` rebuilds them from the messages stored with
their thread ids (:class:`RestoredMessage`), under the same bounds, keeping the ids.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from runtime.kernel._build import builder
from runtime.kernel._chatstate import (
    MAX_PARTICIPANTS,
    MAX_PEOPLE,
    RECENT_MESSAGE_IDS,
    ChatState,
    Probe,
    ThreadState,
    choose,
    remember,
    strongest_signal,
)
from runtime.kernel._features import extract_terms
from runtime.kernel._links import SHARE_EDGES, LinkWeights, asks, choose_link, link_options, load_weights
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.kernel.message import ChatMessage

__all__ = [
    "REPLY_SCORE",
    "ConversationThread",
    "RestoredMessage",
    "ThreadAssignment",
    "ThreadSettings",
    "ThreadTracker",
    "ThreadTrackerStatistics",
]

# How a message that is not a reply finds its thread: the summed signals with their configured weights
# (``_chatstate.choose``), or the learned link scorer (``_links``) framed by them (the default).
SCORERS = ("signals", "learned")
# The score reported for a reply: finite, so it serialises as JSON, and above any usual sum.
REPLY_SCORE = 100.0
# A chat silent this long forgets which thread its messages went to (a reply can revive a pruned
# thread until then).
_FORGET_CHAT_AFTER = 86_400.0


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
    scorer: Literal["signals", "learned"]
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
    weight_mention: float = 1.2
    weight_pair: float = 1.5
    weight_speaker: float = 0.6
    weight_addressed: float = 0.4
    weight_terms: float = 0.6
    weight_recent: float = 0.25
    join_threshold: float = 0.4
    speaker_span: float = 300.0
    addressed_span: float = 1_200.0
    chatter_joins_recent: bool = False
    scorer: str = "learned"  # signals | learned
    max_threads_per_chat: int = 64
    max_messages_per_chat: int = 500
    max_candidates: int = 12
    max_terms_per_thread: int = 32
    max_feature_chars: int = 1_000
    max_terms_per_message: int = 16
    max_chats: int = 20_000

    def __post_init__(self) -> None:
        if self.gap <= 0:
            raise InvalidSetting("threads.gap", "must be positive")
        if self.horizon < self.gap:
            raise InvalidSetting("threads.horizon", "must not be shorter than threads.gap")
        if self.scorer not in SCORERS:
            raise InvalidSetting("threads.scorer", f"must be one of {', '.join(SCORERS)}")
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
            scorer=cfg.scorer,
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
    """Where a message went: the thread, whether it was new, and the signal that decided it.

    ``score`` is the summed signal of the chosen thread (for a new thread: of the best thread that
    fell short of ``join_threshold``, or 0); a reply, which always wins, scores :data:`REPLY_SCORE`.
    """

    thread: ConversationThread
    created: bool
    reason: str  # reply | mention | addressed | speaker | terms | recent | new
    score: float

    @property
    def thread_id(self) -> str:
        return self.thread.id


@dataclass(frozen=True, slots=True)
class RestoredMessage:
    """A message from before a restart and the conversation thread it went to then."""

    message: ChatMessage
    thread_id: str


@dataclass(frozen=True, slots=True)
class ThreadTrackerStatistics:
    chats: int
    threads: int
    assigned: int
    created: int
    pruned: int
    by_reason: tuple[tuple[str, int], ...]
    remembered_messages: int  # message ids kept for reply lookup, all chats
    indexed_terms: int  # distinct terms in the chats' thread vocabularies
    restored: int = 0  # messages taken back in by restore()


# Positional builders (every field, set through the slots): assign() makes one of each.
_thread_value = builder(ConversationThread)
_assignment = builder(ThreadAssignment)


def _snapshot(thread: ThreadState) -> ConversationThread:
    return _thread_value(
        thread.id,
        thread.chat_id,
        thread.started_at,
        thread.last_at,
        thread.count,
        tuple(thread.message_ids),
        tuple(thread.participants),
    )


class ThreadTracker:
    """Assigns every message of every chat to a conversation thread of that chat."""

    def __init__(
        self,
        settings: ThreadSettings | None = None,
        *,
        ids: IdFactory | None = None,
        link_weights: tuple[float, ...] | None = None,
    ) -> None:
        self._settings = settings or ThreadSettings()
        self._learned = self._settings.scorer == "learned"
        # The link scorer's weights: the shipped ones unless given (to compare other fits).
        self._weights = LinkWeights(link_weights) if link_weights is not None else _shipped_weights()
        self._ids = ids if ids is not None else counter_ids()
        self._chats: OrderedDict[str, ChatState] = OrderedDict()
        self._threads: dict[str, ThreadState] = {}
        self._assigned = 0
        self._created = 0
        self._pruned = 0
        self._reasons: dict[str, int] = {}
        # Thread ids put back by restore() -> their chat: never issued again, never shared by chats.
        self._restored_ids: dict[str, str] = {}
        self._restored = 0

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

        terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
        replied = chat.messages.get(message.reply_to) if message.reply_to is not None else None
        target, reason, score = None, "reply", REPLY_SCORE
        if replied is not None:
            target = chat.threads.get(replied[0])
            if target is None:  # pruned while idle: the reply brings it back under its old id
                target = self._revive(chat, replied[0], chat_id, now)
        if target is None:
            if self._learned:
                target, reason, score = self._link(chat, message, terms, now)
            else:
                target, reason, score = choose(chat, message, terms, now, s)
        created = False
        if target is None:
            target = self._new_thread(chat, chat_id, now)
            created = True
            reason = "new"
        self._absorb(chat, target, message, terms, now)
        self._assigned += 1
        self._reasons[reason] = self._reasons.get(reason, 0) + 1
        _note_people(chat, message, replied, target.id, now)
        return _assignment(_snapshot(target), created, reason, score)

    def _link(
        self, chat: ChatState, message: ChatMessage, terms: tuple[str, ...], now: float
    ) -> tuple[ThreadState | None, str, float]:
        """The learned scorer's choice, framed by what QQ shows and IRC logs do not.

        The scorer was fitted on IRC, where an answer names its addressee in words; a QQ group says
        more in its structure, so the summed signals (``choose``) decide first where they rest on it:
        someone @-ed or replied to who now speaks answers in that thread, an @ between two people who
        already talked by @ goes on where they did, and a newcomer's words join the thread that uses
        them. The scorer's thread is named by its strongest signal (``strongest_signal``: the one
        ``choose`` would name, read for that thread alone instead of scoring every thread), or, where
        no signal points to it, by the scorer's table that weighed most.
        A thread idle past the gap that holds next to none of a message's words (under the lowest
        share the scorer buckets) is not joined by a message with no @, unless the scorer's table
        that weighed most is a mention or addressed one: in a quiet group the same
        few people start one topic after another, and "the thread they spoke in" would chain them.
        "New" within the gap of the latest thread still joins it in a private chat (design/0002 §4's
        rule: two people, one conversation at a time) and, with ``chatter_joins_recent``, for
        word-free chatter.
        """
        s = self._settings
        if not chat.threads:
            return None, "new", 0.0
        # Both scorers read the same people, threads and postings: once (see Probe). The signals are
        # asked only when their choice can rest on QQ's structure.
        probe = Probe(chat, message, terms, now, s)
        if probe.may_rule(terms, now, s):
            ruled = choose(chat, message, terms, now, s, probe)
            if ruled[0] is not None and _explicit(chat, message, ruled[1], now, s):
                return ruled
        choice = link_options(chat, message, terms, now, s, probe)
        target, weighed, score = choose_link(choice, self._weights)
        reason = weighed
        if target is not None:
            reason = strongest_signal(probe, target, now, s) or weighed
        if (
            target is not None
            and terms
            and weighed not in ("mention", "addressed")
            and now - target.last_at > s.gap
            and not message.mentions
            and _share(probe, target) < SHARE_EDGES[0]
        ):
            target, reason = None, "new"
        if target is None:
            newest = next(reversed(chat.threads.values()))
            if now - newest.last_at <= s.gap and (
                message.is_private or (s.chatter_joins_recent and not terms and not message.mentions)
            ):
                return newest, "recent", score
        return target, reason, score

    def link_features(self, message: ChatMessage) -> tuple[tuple[str, ...], list[tuple[int, ...]]]:
        """For fitting the link scorer: the candidate threads' ids for ``message`` and every option's
        feature ids (the candidates', then "new"'s), from the tracker's state as it stands. Every
        recent thread within the horizon is a candidate here (see ``link_options``'s ``every``).
        Changes nothing."""
        s = self._settings
        chat = self._chats.get(message.chat_id) or ChatState()
        terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
        choice = link_options(chat, message, terms, message.time, s, every=True)
        return tuple(thread.id for thread in choice.threads), choice.features

    def restore(self, messages: Iterable[RestoredMessage], now: float) -> int:
        """Rebuild threads from messages stored before a restart; returns how many were taken in.

        The messages are replayed in time order into the threads they went to then, ids kept:
        threads, participants, vocabularies, who spoke / was @-ed where, and the message ids that
        replies look up come back as if the messages had just been assigned, under the same bounds.
        Threads idle past the horizon at ``now`` are then dropped (a reply to one of their remembered
        messages still brings it back, as it would have before the restart). A restored id is never
        issued to a new thread. A message whose thread id belongs to another chat is left out: chats
        never share threads. Call it on start, before the first :meth:`assign`.
        """
        s = self._settings
        taken = 0
        for item in sorted(messages, key=lambda r: (r.message.time, r.message.message_id)):
            message, thread_id = item.message, item.thread_id
            chat_id = message.chat_id
            owner = self._restored_ids.get(thread_id)
            live = self._threads.get(thread_id)
            if (owner is not None and owner != chat_id) or (live is not None and live.chat_id != chat_id):
                continue
            self._restored_ids[thread_id] = chat_id
            when = message.time
            chat = self._chat(chat_id)
            thread = chat.threads.get(thread_id)
            if thread is None:
                thread = self._revive(chat, thread_id, chat_id, when)
            replied = chat.messages.get(message.reply_to) if message.reply_to is not None else None
            terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
            self._absorb(chat, thread, message, terms, when)
            _note_people(chat, message, replied, thread_id, when)
            taken += 1
        self._restored += taken
        self._expire(now)
        return taken

    def _absorb(
        self, chat: ChatState, thread: ThreadState, message: ChatMessage, terms: tuple[str, ...], now: float
    ) -> None:
        s = self._settings
        if now > thread.last_at:
            thread.last_at = now
        thread.count += 1
        message_id = message.message_id
        sender = message.sender_id
        message_ids = thread.message_ids
        message_ids.append(message_id)
        if len(message_ids) > RECENT_MESSAGE_IDS:
            del message_ids[0]
        participants = thread.participants
        participants.pop(sender, None)
        participants[sender] = now
        if len(participants) > MAX_PARTICIPANTS:
            del participants[next(iter(participants))]
        thread.last_sender = sender
        if terms:
            chat.learn(thread, terms, s.max_terms_per_thread)
        threads = chat.threads
        thread_id = thread.id
        if next(reversed(threads)) != thread_id:  # most messages go on in the latest thread
            threads[thread_id] = threads.pop(thread_id)
        if now > chat.last_at:
            chat.last_at = now
        chat.seq += 1  # what the learned scorer reads of the thread's latest message
        thread.last_seq = chat.seq
        thread.last_question = asks(message.text, s.max_feature_chars)
        thread.last_named = message.mentions
        thread.last_terms = terms
        messages = chat.messages
        known = len(messages)
        messages[message_id] = (thread.id, sender)
        if len(messages) > known:  # a new id (a repeated one keeps its place, as in an OrderedDict)
            order = chat.message_order
            order.append(message_id)
            if known >= s.max_messages_per_chat:
                del messages[order.popleft()]

    # -- lookups ---------------------------------------------------------------------------------

    def thread_of(self, chat_id: str, message_id: str) -> str | None:
        """The thread a remembered message of ``chat_id`` went to (for reply lookup)."""
        chat = self._chats.get(chat_id)
        remembered = None if chat is None else chat.messages.get(message_id)
        return None if remembered is None else remembered[0]

    def get(self, thread_id: str) -> ConversationThread | None:
        thread = self._threads.get(thread_id)
        return None if thread is None else _snapshot(thread)

    def __contains__(self, thread_id: object) -> bool:
        """Whether ``thread_id`` is a live thread: :meth:`get` without building its snapshot."""
        return thread_id in self._threads

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
            out.append(_snapshot(thread))
        return out

    # -- housekeeping ----------------------------------------------------------------------------

    def prune(self, now: float) -> int:
        """Drop threads idle past the horizon, and chats silent for a day; returns threads dropped."""
        dropped = self._expire(now)
        self._pruned += dropped
        return dropped

    def _expire(self, now: float) -> int:
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
        return dropped

    def statistics(self) -> ThreadTrackerStatistics:
        return ThreadTrackerStatistics(
            chats=len(self._chats),
            threads=len(self._threads),
            assigned=self._assigned,
            created=self._created,
            pruned=self._pruned,
            by_reason=tuple(sorted(self._reasons.items())),
            remembered_messages=sum(len(c.messages) for c in self._chats.values()),
            indexed_terms=sum(len(c.postings) for c in self._chats.values()),
            restored=self._restored,
        )

    # -- internals -------------------------------------------------------------------------------

    def _chat(self, chat_id: str) -> ChatState:
        chat = self._chats.get(chat_id)
        if chat is None:
            chat = self._chats[chat_id] = ChatState()
            if len(self._chats) > self._settings.max_chats:
                _, evicted = self._chats.popitem(last=False)
                for thread in list(evicted.threads.values()):
                    self._drop(evicted, thread)
                    self._pruned += 1
        else:
            self._chats.move_to_end(chat_id)
        return chat

    def _new_thread(self, chat: ChatState, chat_id: str, now: float) -> ThreadState:
        thread_id = self._ids("th")
        while thread_id in self._threads or thread_id in self._restored_ids:
            thread_id = self._ids("th")
        self._created += 1
        return self._revive(chat, thread_id, chat_id, now)

    def _revive(self, chat: ChatState, thread_id: str, chat_id: str, now: float) -> ThreadState:
        thread = ThreadState(thread_id, chat_id, now)
        chat.attach(thread)
        self._threads[thread_id] = thread
        if len(chat.threads) > self._settings.max_threads_per_chat:
            self._drop(chat, next(iter(chat.threads.values())))
            self._pruned += 1
        return thread

    def _drop(self, chat: ChatState, thread: ThreadState) -> None:
        chat.remove(thread)
        self._threads.pop(thread.id, None)


_WEIGHTS: list[LinkWeights] = []


def _shipped_weights() -> LinkWeights:
    """The shipped link weights, read once per process."""
    if not _WEIGHTS:
        _WEIGHTS.append(LinkWeights(load_weights()))
    return _WEIGHTS[0]


def _explicit(chat: ChatState, message: ChatMessage, reason: str, now: float, s: ThreadSettings) -> bool:
    """Whether the signals' choice for ``message`` (named by ``reason``) rests on QQ's structure:
    the @-ed (or replied-to) person answering, an @ between two who talked by @ there, a newcomer's
    shared words; or the plain recency rule, when configured (``weight_recent >= join_threshold``)."""
    if reason == "addressed":
        return True
    if reason == "mention":
        sender = message.sender_id
        horizon = now - s.horizon
        for user in message.mentions:
            if user != sender:
                pair = chat.pairs.get((sender, user) if sender < user else (user, sender))
                if pair is not None and pair[1] >= horizon:
                    return True
        return False
    if reason == "terms":
        own = chat.speakers.get(message.sender_id)
        return own is None or now - own[1] > s.horizon
    return s.weight_recent >= s.join_threshold


def _share(probe: Probe, thread: ThreadState) -> float:
    """The rarity-weighted share of the message's terms that ``thread``'s vocabulary holds (a
    thread the link scorer could choose, so one the probe read the postings for)."""
    total = probe.total
    return probe.hits.get(thread.bit, 0.0) / total if total else 0.0


def _note_people(
    chat: ChatState, message: ChatMessage, replied: tuple[str, str] | None, thread_id: str, now: float
) -> None:
    """Remember where the sender spoke and whom the message spoke to (its @s, the replied author)."""
    sender = message.sender_id
    remember(chat.speakers, sender, (thread_id, now), MAX_PEOPLE)
    spoken_to = message.mentions if replied is None else (*message.mentions, replied[1])
    for user in spoken_to:
        if user != sender:
            remember(chat.addressed, user, (thread_id, now), MAX_PEOPLE)
            pair_key = (sender, user) if sender < user else (user, sender)
            remember(chat.pairs, pair_key, (thread_id, now), MAX_PEOPLE)
