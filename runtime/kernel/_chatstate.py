"""The ThreadTracker's per-chat memory and its scoring rule (private to ``runtime.kernel.threads``).

Everything here is bounded by the caller's settings: a chat holds at most ``max_threads_per_chat``
live threads, ``max_messages_per_chat`` remembered message ids and ``MAX_PEOPLE`` speakers; a thread holds
its last 32 message ids and participants and its last ``max_terms_per_thread`` to twice as many
distinct terms. The chat
keeps an inverted index (term -> threads that used it) so shared vocabulary costs one lookup per
message term instead of one per term per thread. Each live thread of a chat owns one bit of a small
int, and a posting is the union of its threads' bits: adding or dropping a thread's term allocates
no set, and intersecting with the candidates is one ``&``.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from runtime.kernel.message import ChatMessage
    from runtime.kernel.threads import ThreadSettings

# Per-thread memory: the last message ids and participants kept for snapshots and scoring.
RECENT_MESSAGE_IDS = 32
MAX_PARTICIPANTS = 32
# Per-chat memory of who last spoke / was @-ed / talked to whom, and where.
MAX_PEOPLE = 512

K = TypeVar("K", str, tuple[str, str])
_ABSENT = object()


class ThreadState:
    __slots__ = (
        "bit",
        "chat_id",
        "count",
        "id",
        "last_at",
        "message_ids",
        "participants",
        "started_at",
        "terms",
    )

    def __init__(self, thread_id: str, chat_id: str, now: float) -> None:
        self.id = thread_id
        self.bit = 0  # given by ChatState.attach
        self.chat_id = chat_id
        self.started_at = now
        self.last_at = now
        self.count = 0
        self.message_ids: deque[str] = deque(maxlen=RECENT_MESSAGE_IDS)
        self.participants: dict[str, float] = {}
        # the thread's recent vocabulary, least recently used first (an ordered set)
        self.terms: dict[str, None] = {}


class ChatState:
    __slots__ = (
        "addressed",
        "by_bit",
        "free_bits",
        "last_at",
        "messages",
        "pairs",
        "postings",
        "speakers",
        "threads",
    )

    def __init__(self) -> None:
        # Live threads, least recently active first. A plain dict, not an OrderedDict: the candidate
        # loop walks it backwards on every message, and an OrderedDict's iterator looks every key up
        # again (about 1 µs a message); moving a thread to the end is a pop and a reinsert.
        self.threads: dict[str, ThreadState] = {}
        # message id -> (thread id, sender), for replies. Oldest first.
        self.messages: OrderedDict[str, tuple[str, str]] = OrderedDict()
        # user -> (thread id, when): where they last spoke / were last @-ed. Oldest first.
        self.speakers: dict[str, tuple[str, float]] = {}
        self.addressed: dict[str, tuple[str, float]] = {}
        # (user, user) sorted -> (thread id, when) of their last exchange by @. Oldest first.
        self.pairs: dict[tuple[str, str], tuple[str, float]] = {}
        self.last_at = float("-inf")
        # term -> the bits of the live threads whose recent vocabulary holds it (never 0).
        self.postings: dict[str, int] = {}
        # A live thread's bit -> its id; bits of removed threads, to be given again.
        self.by_bit: dict[int, str] = {}
        self.free_bits: list[int] = []

    # -- vocabulary ------------------------------------------------------------------------------

    def term_hits(self, terms: tuple[str, ...], candidates: int) -> tuple[dict[str, float], float]:
        """Per candidate thread (``candidates``: their bits), the summed rarity of the message terms
        it has used; and the terms' total (over every live thread, candidate or not).

        A term's rarity is ``log(threads + 2) - log(users + 1)`` where ``users`` counts the live
        threads whose vocabulary holds it: a word every conversation uses weighs next to nothing,
        a word no conversation uses weighs most (and matches nothing).
        """
        postings = self.postings
        by_bit = self.by_bit
        log = math.log
        base = log(len(self.threads) + 2.0)
        total = 0.0
        hits: dict[str, float] = {}
        for term in terms:
            posting = postings.get(term)
            if posting:
                weight = base - log(posting.bit_count() + 1.0)
                total += weight
                # Only the candidates are scored: a busy chat's common words are used by dozens of
                # threads. The hits dict's order does not matter: choose() reads it by rank.
                shared = posting & candidates
                while shared:
                    low = shared & -shared
                    tid = by_bit[low]
                    hits[tid] = hits.get(tid, 0.0) + weight
                    shared ^= low
            else:
                total += base
        return hits, total

    def learn(self, thread: ThreadState, terms: tuple[str, ...], max_terms: int) -> None:
        """Add a message's terms to the thread's recent vocabulary.

        The vocabulary is kept in order of last use; past ``2 * max_terms`` terms the oldest are
        dropped down to ``max_terms`` (no sorting, and every term is dropped at most once).
        """
        vocabulary = thread.terms
        postings = self.postings
        bit = thread.bit
        for term in terms:
            if vocabulary.pop(term, _ABSENT) is _ABSENT:  # else re-inserted below as the most recent
                postings[term] = postings.get(term, 0) | bit
            vocabulary[term] = None
        excess = len(vocabulary) - max_terms
        if excess > max_terms:
            dropped = list(islice(vocabulary, excess))
            for term in dropped:
                del vocabulary[term]
            self._unpost(dropped, bit)

    def _unpost(self, terms: Iterable[str], bit: int) -> None:
        postings = self.postings
        keep = ~bit
        for term in terms:
            left = postings.get(term, 0) & keep
            if left:
                postings[term] = left
            else:
                postings.pop(term, None)

    # -- threads ---------------------------------------------------------------------------------

    def attach(self, thread: ThreadState) -> None:
        """Make ``thread`` a live thread of this chat, with a bit of its own."""
        free = self.free_bits
        bit = free.pop() if free else 1 << len(self.by_bit)
        thread.bit = bit
        self.by_bit[bit] = thread.id
        self.threads[thread.id] = thread

    def remove(self, thread: ThreadState) -> None:
        del self.threads[thread.id]
        self._unpost(thread.terms, thread.bit)
        del self.by_bit[thread.bit]
        self.free_bits.append(thread.bit)


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
    """The best live thread for ``message`` and the signal that weighed most, or ``None`` for new.

    Per thread: the summed signals (``scores``) and the strongest single signal (``top``, compared
    as ``(value, signal name)``), which names the reason.
    """
    threads = chat.threads
    if not threads:
        return None, "new", 0.0
    horizon = now - s.horizon
    scores: dict[str, float] = {}
    top: dict[str, tuple[float, str]] = {}

    sender = message.sender_id
    people: list[tuple[str, float, str]] = []  # (thread id, value, signal) of the people signals
    for user in message.mentions:
        if user == sender:
            continue
        # Two people who talked to each other before most likely go on in that thread; the @ also
        # pulls the message towards where the named person last spoke.
        pair = chat.pairs.get((sender, user) if sender < user else (user, sender))
        if pair is not None and pair[1] >= horizon:
            people.append((pair[0], s.weight_pair, "mention"))
        spoke = chat.speakers.get(user)
        if spoke is not None and spoke[1] >= horizon:
            people.append((spoke[0], s.weight_mention, "mention"))
    # The speaker's own recent activity counts too, fading over a few minutes so that someone back
    # after a pause may open a new topic.
    own = chat.speakers.get(sender)
    if own is not None:
        people.append((own[0], s.weight_speaker * fade(now - own[1], s.speaker_span), "speaker"))
    asked = chat.addressed.get(sender)
    if asked is not None and (own is None or asked[1] >= own[1]):
        people.append((asked[0], s.weight_addressed * fade(now - asked[1], s.addressed_span), "addressed"))
    for tid, value, why in people:
        if value > 0.0 and tid in threads:
            scores[tid] = scores.get(tid, 0.0) + value
            part = (value, why)
            best_part = top.get(tid)
            if best_part is None or part > best_part:
                top[tid] = part

    gap = s.gap
    max_candidates = s.max_candidates
    # Threads are kept in order of last activity: recency stops at the first one past the gap, and
    # only the ``max_candidates`` most recent (within the horizon) are scored on terms.
    recent = s.weight_recent / gap
    recency = True
    # Most recent first: the bits of the candidates, and their ids in order (which fixes the order of
    # the term signal below, whatever the order of the hits).
    candidates = 0
    ranked: list[str] = []
    for rank, thread in enumerate(reversed(threads.values()), 1):
        if rank > max_candidates:
            break
        last_at = thread.last_at
        tid = thread.id
        if last_at >= horizon:
            candidates |= thread.bit
            ranked.append(tid)
        if recency:
            idle = now - last_at
            if idle < gap:
                value = recent * (gap - idle) / rank
                scores[tid] = scores.get(tid, 0.0) + value
                best_part = top.get(tid)
                if best_part is None or (value, "recent") > best_part:
                    top[tid] = (value, "recent")
            else:
                recency = False
    if terms and candidates and chat.postings:
        hits, total = chat.term_hits(terms, candidates)
        if hits:
            per_hit = s.weight_terms / total
            # In candidate order, so that a tie between threads goes to the most recent one
            # whatever the hash seed (max() keeps the first of equal scores).
            for tid in ranked:
                hit = hits.get(tid)
                if hit is None:
                    continue
                value = per_hit * hit
                scores[tid] = scores.get(tid, 0.0) + value
                best_part = top.get(tid)
                if best_part is None or (value, "terms") > best_part:
                    top[tid] = (value, "terms")
    newest = next(reversed(threads.values()))

    score = 0.0
    if scores:
        best = max(scores, key=scores.__getitem__)
        score = scores[best]
        if score >= s.join_threshold:
            return threads[best], top[best][1], score
    if now - newest.last_at > gap:
        return None, "new", score
    if message.is_private:
        # Two people, one conversation at a time: the ADR's recency rule is right here.
        return newest, "recent", score
    if s.chatter_joins_recent and not terms and not message.mentions:
        # Words-free chatter ("lol", "哈哈", a sticker) carries no topic: it goes with the
        # conversation that spoke last, as the ADR's recency rule has it.
        return newest, "recent", score
    return None, "new", score
