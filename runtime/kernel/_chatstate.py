"""The ThreadTracker's per-chat memory and its scoring rule (private to ``runtime.kernel.threads``).

Everything here is bounded by the caller's settings: a chat holds at most ``max_threads_per_chat``
live threads, ``max_messages_per_chat`` remembered message ids and ``MAX_PEOPLE`` speakers; a thread holds
its last 32 message ids and participants and its last ``max_terms_per_thread`` to twice as many
distinct terms (as a log of their uses, at most four times ``max_terms_per_thread`` long). The chat
keeps an inverted index (term -> threads that used it) so shared vocabulary costs one lookup per
message term instead of one per term per thread. Each live thread of a chat owns one bit of a small
int, and a posting is the union of its threads' bits: adding or dropping a thread's term allocates
no set, and intersecting with the candidates is one ``&``.
"""

from __future__ import annotations

import math
from collections import deque
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


class ThreadState:
    __slots__ = (
        "bit",
        "chat_id",
        "count",
        "id",
        "last_at",
        "last_named",
        "last_question",
        "last_sender",
        "last_seq",
        "last_terms",
        "message_ids",
        "participants",
        "started_at",
        "term_count",
        "terms",
    )

    def __init__(self, thread_id: str, chat_id: str, now: float) -> None:
        self.id = thread_id
        self.bit = 0  # given by ChatState.attach
        self.chat_id = chat_id
        self.started_at = now
        self.last_at = now
        self.count = 0
        # The last RECENT_MESSAGE_IDS ids, oldest first. A list, not a bounded deque: every assign()
        # copies it into its snapshot, and tuple(list) is one C copy where tuple(deque) steps an
        # iterator per id.
        self.message_ids: list[str] = []
        self.participants: dict[str, float] = {}
        # The sender of the latest message (the newest participant), None before the first.
        self.last_sender: str | None = None
        # The thread's recent vocabulary as a log of term uses, oldest first: a term may appear more
        # than once, its last appearance is its last use. term_count counts the distinct terms.
        self.terms: list[str] = []
        self.term_count = 0
        # For the learned link scorer: the chat's message number of the thread's latest message,
        # whether that message asked something, whom it @-ed, and its terms.
        self.last_seq = 0
        self.last_question = False
        self.last_named: tuple[str, ...] = ()
        self.last_terms: tuple[str, ...] = ()


class ChatState:
    __slots__ = (
        "addressed",
        "free_bits",
        "last_at",
        "message_order",
        "messages",
        "pairs",
        "postings",
        "seq",
        "speakers",
        "threads",
    )

    def __init__(self) -> None:
        # Live threads, least recently active first. A plain dict, not an OrderedDict: the candidate
        # loop walks it backwards on every message, and an OrderedDict's iterator looks every key up
        # again (about 1 µs a message); moving a thread to the end is a pop and a reinsert.
        self.threads: dict[str, ThreadState] = {}
        # message id -> (thread id, sender), for replies. Oldest first.
        self.messages: dict[str, tuple[str, str]] = {}
        # The ids in ``messages``, oldest first: a plain dict and a deque cost less per message than
        # an OrderedDict's linked nodes (a node made and freed, an iterator to find the oldest).
        self.message_order: deque[str] = deque()
        # user -> (thread id, when): where they last spoke / were last @-ed. Oldest first.
        self.speakers: dict[str, tuple[str, float]] = {}
        self.addressed: dict[str, tuple[str, float]] = {}
        # (user, user) sorted -> (thread id, when) of their last exchange by @. Oldest first.
        self.pairs: dict[tuple[str, str], tuple[str, float]] = {}
        self.last_at = float("-inf")
        # Messages taken in so far (the learned link scorer's distance in messages).
        self.seq = 0
        # term -> the bits of the live threads whose recent vocabulary holds it (never 0).
        self.postings: dict[str, int] = {}
        # Bits of removed threads, to be given again (the live threads hold all the others below
        # 1 << len(threads)).
        self.free_bits: list[int] = []

    # -- vocabulary ------------------------------------------------------------------------------

    def term_hits(self, terms: tuple[str, ...], candidates: int) -> tuple[dict[int, float], float]:
        """Per candidate thread (``candidates``: their bits), keyed by its bit, the summed rarity of
        the message terms it has used; and the terms' total (over every live thread, candidate or
        not).

        A term's rarity is ``log(threads + 2) - log(users + 1)`` where ``users`` counts the live
        threads whose vocabulary holds it: a word every conversation uses weighs next to nothing,
        a word no conversation uses weighs most (and matches nothing).
        """
        postings = self.postings
        logs = log1p_table(len(self.threads) + 1)
        base = logs[len(self.threads) + 1]
        total = 0.0
        hits: dict[int, float] = {}
        for term in terms:
            posting = postings.get(term)
            if posting:
                weight = base - logs[posting.bit_count()]
                total += weight
                # Only the candidates are scored: a busy chat's common words are used by dozens of
                # threads. The hits dict's order does not matter: choose() reads it by rank.
                shared = posting & candidates
                if shared & (shared - 1):  # several candidates use it
                    while shared:
                        low = shared & -shared
                        hits[low] = hits.get(low, 0.0) + weight
                        shared ^= low
                elif shared:  # one candidate: the usual case
                    hits[shared] = hits.get(shared, 0.0) + weight
            else:
                total += base
        return hits, total

    def learn(self, thread: ThreadState, terms: tuple[str, ...], max_terms: int) -> None:
        """Add a message's (distinct) terms to the thread's recent vocabulary.

        The vocabulary is kept in order of last use; past ``2 * max_terms`` terms the oldest are
        dropped down to ``max_terms`` (and every term is dropped at most once).

        The thread's bit in a term's posting says whether its vocabulary holds the term, so a
        message costs one posting lookup per term (warm: choose() has just read them) and one
        ``list.extend`` of the use log, instead of moving each term to the end of an ordered dict
        (a pop and an insert in a dict that is cold in a busy bot's cache): about 4 µs a message.
        """
        postings = self.postings
        bit = thread.bit
        added = 0
        for term in terms:
            posting = postings.get(term, 0)
            if not posting & bit:
                postings[term] = posting | bit if posting else bit  # a term of one thread: its bit
                added += 1
        log = thread.terms
        log.extend(terms)
        thread.term_count += added
        if thread.term_count > 2 * max_terms:
            self._forget_oldest(thread, max_terms)
        elif len(log) > 4 * max_terms:  # a thread that keeps repeating its words: keep the log short
            thread.terms = _last_uses(log)

    def _forget_oldest(self, thread: ThreadState, keep: int) -> None:
        """Drop all but the ``keep`` most recently used terms of the thread's vocabulary."""
        latest_first = dict.fromkeys(reversed(thread.terms))
        kept = list(islice(latest_first, keep))
        kept.reverse()
        thread.terms = kept
        thread.term_count = len(kept)
        self._unpost(islice(latest_first, keep, None), thread.bit)

    def _unpost(self, terms: Iterable[str], bit: int) -> None:
        postings = self.postings
        keep = ~bit
        bits = _BITS
        for term in terms:
            left = postings.get(term, 0) & keep
            if left & (left - 1):
                postings[term] = left
            elif left:  # one thread left: its shared bit object (see bit_at)
                postings[term] = bits[left.bit_length() - 1]
            else:
                postings.pop(term, None)

    # -- threads ---------------------------------------------------------------------------------

    def attach(self, thread: ThreadState) -> None:
        """Make ``thread`` a live thread of this chat, with a bit of its own."""
        free = self.free_bits
        thread.bit = free.pop() if free else bit_at(len(self.threads))
        self.threads[thread.id] = thread

    def remove(self, thread: ThreadState) -> None:
        del self.threads[thread.id]
        self._unpost(thread.terms, thread.bit)
        self.free_bits.append(thread.bit)


def _last_uses(log: list[str]) -> list[str]:
    """The distinct terms of a use log in order of last use, oldest first."""
    latest_first = list(dict.fromkeys(reversed(log)))
    latest_first.reverse()
    return latest_first


def _reason(
    thread: ThreadState,
    people: list[tuple[str, float, str]],
    recency: dict[ThreadState, float],
    terms: dict[ThreadState, float],
) -> str | None:
    """The name of the strongest single signal of ``thread``: its largest ``(value, name)``,
    compared in the order the signals were added (people, recent, terms), as max() does.

    Only the winner needs a reason, so the parts are not compared on the way for every thread that
    scores (about 1 µs a message).
    """
    tid = thread.id
    parts = [(value, why) for who, value, why in people if who == tid and value > 0.0]
    value = recency.get(thread)
    if value is not None:
        parts.append((value, "recent"))
    value = terms.get(thread)
    if value is not None:
        parts.append((value, "terms"))
    return max(parts)[1] if parts else None


# log(n + 1.0) for n = 0, 1, 2...: a term's rarity is a difference of two of them. Grown on demand
# up to the most live threads a chat has had; the values are math.log's own.
_LOG1P: list[float] = []


def log1p_table(n: int) -> list[float]:
    """The table of ``log(k + 1.0)``, long enough to hold ``k = n``."""
    table = _LOG1P
    while len(table) <= n:
        table.append(math.log(len(table) + 1.0))
    return table


# 1 << k for k = 0, 1, 2...: one int object per bit, shared by every chat. A thread's bit, and the
# postings of the many terms only one thread uses, are read on every message; shared objects stay
# in the CPU's cache where one object per thread and posting would not (about 1.5 µs a message).
_BITS: list[int] = []


def bit_at(k: int) -> int:
    """The shared int object ``1 << k``."""
    while len(_BITS) <= k:
        _BITS.append(1 << len(_BITS))
    return _BITS[k]


def remember(table: dict[K, tuple[str, float]], key: K, value: tuple[str, float], cap: int) -> None:
    """Set ``table[key]`` as the newest entry, dropping the oldest past ``cap``."""
    table.pop(key, None)
    table[key] = value
    if len(table) > cap:
        del table[next(iter(table))]


def fade(age: float, span: float) -> float:
    """1 for something that just happened, falling linearly to 0 at ``span`` seconds old."""
    return 1.0 - age / span if age < span else 0.0


class Probe:
    """What one message reads of its chat before it is placed: read once, used by both scorers.

    The summed signals (:func:`choose`) and the learned link scorer (``_links.link_options``) look
    up the same people (where the sender last spoke and was last @-ed; for each @ of someone else,
    where that person last spoke and last talked with the sender by @), walk the same most recent
    threads and read the same postings. The learned scorer consults the signals as well, so reading
    all of it once saves a second walk over the postings of every message term.

    ``hits`` is :meth:`ChatState.term_hits` over the bits of every thread either scorer may score
    (the recent threads within the horizon and the threads the people point to): a thread's hit
    sum does not depend on which other threads are scored with it, and the terms' total does not
    depend on the candidates at all, so each scorer reads exactly what its own call would return.
    """

    __slots__ = ("asked", "hits", "horizon", "named", "own", "tail", "total")

    def __init__(
        self, chat: ChatState, message: ChatMessage, terms: tuple[str, ...], now: float, s: ThreadSettings
    ) -> None:
        threads = chat.threads
        horizon = self.horizon = now - s.horizon
        sender = message.sender_id
        speakers = chat.speakers
        self.own = own = speakers.get(sender)  # where the sender last spoke, however long ago
        self.asked = asked = chat.addressed.get(sender)  # where they were last @-ed or replied to
        # Per @ of someone else, in order: (user, their last exchange by @ with the sender, where
        # they last spoke), each None unless within the horizon.
        named: list[tuple[str, tuple[str, float] | None, tuple[str, float] | None]] = []
        for user in message.mentions:
            if user == sender:
                continue
            pair = chat.pairs.get((sender, user) if sender < user else (user, sender))
            spoke = speakers.get(user)
            named.append(
                (
                    user,
                    pair if pair is not None and pair[1] >= horizon else None,
                    spoke if spoke is not None and spoke[1] >= horizon else None,
                )
            )
        self.named = named
        # Threads are kept in order of last activity: the ``max_candidates`` most recent, newest first.
        self.tail = tail = list(islice(reversed(threads.values()), s.max_candidates))
        self.hits: dict[int, float] = {}
        self.total = 0.0
        if terms and chat.postings:
            bits = 0
            for thread in tail:
                if thread.last_at >= horizon:
                    bits |= thread.bit
            pointed = [own, asked]  # the threads the people signals point to
            for _, pair, spoke in named:
                pointed += (pair, spoke)
            for entry in pointed:
                if entry is not None:
                    extra = threads.get(entry[0])
                    if extra is not None and extra.last_at >= horizon:
                        bits |= extra.bit
            if bits:
                self.hits, self.total = chat.term_hits(terms, bits)

    def may_rule(self, terms: tuple[str, ...], now: float, s: ThreadSettings) -> bool:
        """Whether the signals' choice can rest on QQ's structure (``threads._explicit``): false
        means it cannot, so the learned scorer need not ask the signals before choosing.

        Each of ``_explicit``'s cases needs its premise here: "addressed" an @ of the sender (or a
        reply to them) that they have not spoken since, within ``addressed_span`` (the signal is
        there only then: ``choose`` adds it under these conditions, and it fades to nothing at the
        span); "mention" an @ of someone who talked with the sender by @ within the horizon;
        "terms" a message with words from a newcomer; any other reason the recency rule
        (``weight_recent >= join_threshold``).
        """
        if s.weight_recent >= s.join_threshold:
            return True
        own, asked = self.own, self.asked
        if asked is not None and (own is None or asked[1] >= own[1]) and now - asked[1] < s.addressed_span:
            return True
        for _, pair, _ in self.named:
            if pair is not None:
                return True
        return bool(terms) and (own is None or now - own[1] > s.horizon)


def _people(probe: Probe, now: float, s: ThreadSettings) -> list[tuple[str, float, str]]:
    """The people signals of the message: (thread id, value, signal), in the order they add up."""
    people: list[tuple[str, float, str]] = []
    for _, pair, spoke in probe.named:
        # Two people who talked to each other before most likely go on in that thread; the @ also
        # pulls the message towards where the named person last spoke.
        if pair is not None:
            people.append((pair[0], s.weight_pair, "mention"))
        if spoke is not None:
            people.append((spoke[0], s.weight_mention, "mention"))
    # The speaker's own recent activity counts too, fading over a few minutes so that someone back
    # after a pause may open a new topic.
    own = probe.own
    if own is not None:
        people.append((own[0], s.weight_speaker * fade(now - own[1], s.speaker_span), "speaker"))
    asked = probe.asked
    if asked is not None and (own is None or asked[1] >= own[1]):
        people.append((asked[0], s.weight_addressed * fade(now - asked[1], s.addressed_span), "addressed"))
    return people


def strongest_signal(probe: Probe, thread: ThreadState, now: float, s: ThreadSettings) -> str | None:
    """The name of the strongest single signal of ``thread`` (as :func:`choose` names its winner),
    or ``None`` where no signal points to it: what ties the message to a thread another scorer
    chose, without scoring every other thread."""
    people = _people(probe, now, s)
    gap = s.gap
    recent = s.weight_recent / gap
    recency: dict[ThreadState, float] = {}
    terms: dict[ThreadState, float] = {}
    within = True  # choose() gives recency up to the first thread past the gap
    for rank, candidate in enumerate(probe.tail, 1):
        idle = now - candidate.last_at
        within = within and idle < gap
        if candidate is thread:
            if within:
                recency[thread] = recent * (gap - idle) / rank
            hit = probe.hits.get(thread.bit)
            if hit is not None and thread.last_at >= probe.horizon:
                terms[thread] = s.weight_terms / probe.total * hit
            break
    return _reason(thread, people, recency, terms)


def choose(
    chat: ChatState,
    message: ChatMessage,
    terms: tuple[str, ...],
    now: float,
    s: ThreadSettings,
    probe: Probe | None = None,
) -> tuple[ThreadState | None, str, float]:
    """The best live thread for ``message`` and the signal that weighed most, or ``None`` for new.

    Per thread: the summed signals (``scores``); for the winner, the strongest single signal
    (compared as ``(value, signal name)``), which names the reason. ``probe``: what the message
    reads of the chat, if read already.
    """
    threads = chat.threads
    if not threads:
        return None, "new", 0.0
    if probe is None:
        probe = Probe(chat, message, terms, now, s)
    # The summed signals per thread, in the order the threads first scored (max() keeps the first
    # of equal scores). The strongest single signal, which names the reason, is looked for in the
    # winner's parts only (see _reason). Keyed by the thread objects, which hash by identity: a
    # thread id would be one more cold string to read per scoring thread.
    scores: dict[ThreadState, float] = {}
    people = _people(probe, now, s)
    for tid, value, _ in people:
        if value > 0.0:
            scored = threads.get(tid)
            if scored is not None:
                scores[scored] = scores.get(scored, 0.0) + value

    # Only the ``max_candidates`` most recent threads are looked at, most recent first. Recency
    # stops at the first one past the gap, and the term signal takes those within the horizon (in
    # order, which fixes the order of the term signal below whatever the order of the hits).
    tail = probe.tail
    gap = s.gap
    recent = s.weight_recent / gap
    recency_values: dict[ThreadState, float] = {}
    for rank, thread in enumerate(tail, 1):
        idle = now - thread.last_at
        if not idle < gap:
            break
        value = recent * (gap - idle) / rank
        scores[thread] = scores.get(thread, 0.0) + value
        recency_values[thread] = value
    term_values: dict[ThreadState, float] = {}
    hits = probe.hits
    if hits:
        horizon = probe.horizon
        per_hit = s.weight_terms / probe.total
        # In candidate order, so that a tie between threads goes to the most recent one
        # whatever the hash seed (max() keeps the first of equal scores).
        for thread in tail:
            if thread.last_at >= horizon:
                hit = hits.get(thread.bit)
                if hit is None:
                    continue
                value = per_hit * hit
                scores[thread] = scores.get(thread, 0.0) + value
                term_values[thread] = value
    newest = tail[0]

    score = 0.0
    if scores:
        best = max(scores, key=scores.__getitem__)
        score = scores[best]
        if score >= s.join_threshold:
            return best, _reason(best, people, recency_values, term_values) or "recent", score
    if now - newest.last_at > gap:
        return None, "new", score
    if message.is_private:
        # Two people, one conversation at a time: the recency rule of design/0002 §4 is right here.
        return newest, "recent", score
    if s.chatter_joins_recent and not terms and not message.mentions:
        # Words-free chatter ("lol", "哈哈", a sticker) carries no topic: it goes with the
        # conversation that spoke last, as the recency rule of design/0002 §4 has it.
        return newest, "recent", score
    return None, "new", score
