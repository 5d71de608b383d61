"""The ThreadTracker's per-chat memory and its scoring rule (private to ``runtime.kernel.threads``).

Everything here is bounded by the caller's settings: a chat holds at most ``max_threads_per_chat``
live threads, ``max_messages_per_chat`` remembered message ids and ``MAX_PEOPLE`` speakers; a thread holds
its last 32 message ids and participants and at most ``2 * max_terms_per_thread`` terms. The chat
keeps an inverted index (term -> threads that used it) so shared vocabulary costs one lookup per
message term instead of one per term per thread.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from runtime.kernel.message import ChatMessage
    from runtime.kernel.threads import ThreadSettings

# Per-thread memory: the last message ids and participants kept for snapshots and scoring.
RECENT_MESSAGE_IDS = 32
MAX_PARTICIPANTS = 32
# Per-chat memory of who last spoke / was @-ed / talked to whom, and where.
MAX_PEOPLE = 512
# Term statistics of a chat cover roughly this many recent messages.
DF_WINDOW = 500

K = TypeVar("K", str, tuple[str, str])


class ThreadState:
    __slots__ = ("chat_id", "count", "id", "last_at", "message_ids", "participants", "started_at", "terms")

    def __init__(self, thread_id: str, chat_id: str, now: float) -> None:
        self.id = thread_id
        self.chat_id = chat_id
        self.started_at = now
        self.last_at = now
        self.count = 0
        self.message_ids: deque[str] = deque(maxlen=RECENT_MESSAGE_IDS)
        self.participants: dict[str, float] = {}
        # term -> how much this thread used it (counts, halved when the profile is trimmed)
        self.terms: dict[str, float] = {}


class ChatState:
    __slots__ = (
        "addressed",
        "df",
        "docs",
        "last_at",
        "messages",
        "pairs",
        "postings",
        "speakers",
        "threads",
    )

    def __init__(self) -> None:
        # Live threads, least recently active first.
        self.threads: OrderedDict[str, ThreadState] = OrderedDict()
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
        # term -> {thread id: use}, mirroring the live threads' profiles.
        self.postings: dict[str, dict[str, float]] = {}

    # -- vocabulary ------------------------------------------------------------------------------

    def term_hits(self, terms: tuple[str, ...]) -> tuple[dict[str, float], float]:
        """Per thread, the summed rarity of the message terms it has used; and the terms' total.

        A term's rarity is ``log(docs + 2) - log(df + 1)``: a word every message uses weighs
        nothing, a word the chat has never seen weighs most (and matches no thread).
        """
        df = self.df
        postings = self.postings
        log = math.log
        base = log(self.docs + 2.0)
        total = base * len(terms)
        hits: dict[str, float] = {}
        for term in terms:
            seen = df.get(term)
            weight = base
            if seen:
                common = log(seen + 1.0)
                weight -= common
                total -= common
            posting = postings.get(term)
            if posting:
                for tid, used in posting.items():
                    hits[tid] = hits.get(tid, 0.0) + (weight if used >= 1.0 else weight * used)
        return hits, total

    def learn(self, thread: ThreadState, terms: tuple[str, ...], max_terms: int) -> None:
        """Add a message's terms to the thread's profile and to the chat's term statistics."""
        profile = thread.terms
        postings = self.postings
        df = self.df
        tid = thread.id
        for term in terms:
            used = profile.get(term, 0.0) + 1.0
            profile[term] = used
            posting = postings.get(term)
            if posting is None:
                postings[term] = {tid: used}
            else:
                posting[tid] = used
            df[term] = df.get(term, 0.0) + 1.0
        if len(profile) > 2 * max_terms:
            self._trim(thread, max_terms)
        self.docs += 1.0
        if self.docs >= 2 * DF_WINDOW:
            self.docs /= 2.0
            self.df = {k: v / 2.0 for k, v in self.df.items() if v > 1.0}

    def _trim(self, thread: ThreadState, max_terms: int) -> None:
        # Keep the most used terms, halved, so older vocabulary fades instead of piling up.
        ranked = sorted(thread.terms.items(), key=lambda kv: kv[1], reverse=True)
        postings = self.postings
        tid = thread.id
        for term, _ in ranked[max_terms:]:
            self._unpost(term, tid)
        kept = {term: used / 2.0 for term, used in ranked[:max_terms]}
        for term, used in kept.items():
            postings[term][tid] = used
        thread.terms = kept

    def _unpost(self, term: str, tid: str) -> None:
        posting = self.postings.get(term)
        if posting is not None:
            posting.pop(tid, None)
            if not posting:
                del self.postings[term]

    # -- threads ---------------------------------------------------------------------------------

    def remove(self, thread: ThreadState) -> None:
        del self.threads[thread.id]
        for term in thread.terms:
            self._unpost(term, thread.id)


def remember(table: dict[K, tuple[str, float]], key: K, value: tuple[str, float], cap: int) -> None:
    """Set ``table[key]`` as the newest entry, dropping the oldest past ``cap``."""
    table.pop(key, None)
    table[key] = value
    if len(table) > cap:
        del table[next(iter(table))]


def fade(age: float, span: float) -> float:
    """1 for something that just happened, falling linearly to 0 at ``span`` seconds old."""
    return 1.0 - age / span if age < span else 0.0


def choose(
    chat: ChatState, message: ChatMessage, terms: tuple[str, ...], now: float, s: ThreadSettings
) -> tuple[ThreadState | None, str, float]:
    """The best live thread for ``message`` and the signal that weighed most, or ``None`` for new."""
    threads = chat.threads
    if not threads:
        return None, "new", 0.0
    horizon = now - s.horizon
    scores: dict[str, float] = {}
    strongest: dict[str, tuple[float, str]] = {}

    def add(tid: str, value: float, why: str) -> None:
        if value <= 0.0 or tid not in threads:
            return
        scores[tid] = scores.get(tid, 0.0) + value
        if value > strongest.get(tid, (0.0, ""))[0]:
            strongest[tid] = (value, why)

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
        # An @ names the conversation outright; otherwise the speaker's own recent activity counts,
        # fading over a few minutes so that someone back after a pause may open a new topic.
        own = chat.speakers.get(sender)
        if own is not None:
            add(own[0], s.weight_speaker * fade(now - own[1], s.speaker_span), "speaker")
        asked = chat.addressed.get(sender)
        if asked is not None and (own is None or asked[1] >= own[1]):
            add(asked[0], s.weight_addressed * fade(now - asked[1], s.addressed_span), "addressed")

    hits: dict[str, float] = {}
    total = 0.0
    if terms and chat.postings:
        hits, total = chat.term_hits(terms)
    newest: ThreadState | None = None
    gap = s.gap
    weight_recent = s.weight_recent
    terms_per_hit = s.weight_terms / total if total > 0.0 else 0.0
    for rank, thread in enumerate(reversed(threads.values())):
        if rank >= s.max_candidates or thread.last_at < horizon:
            break
        if newest is None:
            newest = thread
        idle = now - thread.last_at
        if idle <= gap:
            add(thread.id, weight_recent * (1.0 - idle / gap) / (1 + rank), "recent")
        if hits:
            hit = hits.get(thread.id)
            if hit:
                add(thread.id, terms_per_hit * hit, "terms")

    score = 0.0
    if scores:
        tid = max(scores, key=scores.__getitem__)
        score = scores[tid]
        if score >= s.join_threshold:
            return threads[tid], strongest[tid][1], score
    if (
        s.chatter_joins_recent
        and not terms
        and not message.mentions
        and newest is not None
        and now - newest.last_at <= gap
    ):
        # Words-free chatter ("lol", "哈哈", a sticker) carries no topic: it goes with the
        # conversation that spoke last, as the ADR's recency rule has it.
        return newest, "recent", score
    return None, "new", score
