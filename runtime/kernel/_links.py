"""The learned link scorer of the ThreadTracker (private to ``runtime.kernel.threads``).

Summing hand-set signal weights and joining the best thread above a threshold chains conversations
in a quiet chat: there the latest thread is nearly always "recent", and the speaker, a shared word or
an @ push it over the threshold, so one thread swallows the channel. The best disentanglement
systems (Kummerfeld et al., ACL 2019) instead choose, for every message, among its candidate
antecedents and "a new conversation", with a model trained on annotated chat. This module is that
choice at the level of the tracker's threads: the options are the chat's recent live threads (of
the ``max_candidates`` most recent within the horizon, the latest and those the message shares
something with; and any thread the people signals point to) and "new"; each option is described by
a few discrete features, the paper's kind:

- how long the thread has been idle, and its rank by recency;
- the speaker: whether they spoke in the thread, whether it is their latest, how long ago they spoke,
  whether they spoke its last message;
- whether the speaker was last @-ed (or replied to) there, and how long ago;
- the message's @s: whether the named person is in the thread, last spoke there, or last talked
  with the speaker there;
- the share of the message's (rarity-weighted) words the thread's recent vocabulary holds;
- the thread's size, and whether it is so far one person's (the speaker's or another's, with or
  without a content word);
- the speaker's part in it crossed with whether the message asks something and the words shared,
  and with how many of the candidates the speaker is in;
- whom the thread's latest message @-ed: the speaker, only others, or nobody;
- the speaker's part in it crossed with the message's opening cue (``_cues``: "thanks", "yes", "you
  try...", "anyone...", a question word, a greeting, "I...", or none);
- whether the thread's latest message shares a word with this one (an answer repeats the question
  it answers, where the thread's vocabulary as a whole holds every word its conversation used);

crossed with the idle time, which makes a linear model of tables: an option's score is the sum of
one weight per table, looked up. "New" has its own tables (time since the chat's last message, @s,
words, how many threads are live, how long ago the speaker last spoke, the most any candidate shares
of the message's words, the opening cue). The weights are fitted by
``bench/train_links.py`` on the Ubuntu IRC train split (softmax over the options, the annotated
thread as the answer) and shipped as ``link_weights.json`` beside this module. Scoring is pure Python,
bisections and list lookups: no arithmetic per feature beyond one addition.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from importlib import resources
from operator import add, getitem
from typing import TYPE_CHECKING

from runtime.kernel._chatstate import ChatState, Probe, ThreadState
from runtime.kernel._cues import CUES, message_cue

if TYPE_CHECKING:
    from runtime.kernel.message import ChatMessage
    from runtime.kernel.threads import ThreadSettings

__all__ = [
    "FEATURES",
    "TABLES",
    "LinkChoice",
    "LinkWeights",
    "asks",
    "choose_link",
    "link_options",
    "load_weights",
]

# Bucket edges (seconds, counts, shares): a value falls in bucket bisect_right(edges, value).
IDLE_EDGES = (30.0, 90.0, 150.0, 270.0, 450.0, 900.0, 1_500.0)  # 8 buckets
AGE_EDGES = (90.0, 300.0, 900.0)  # 4 buckets
SIZE_EDGES = (2, 3, 5, 10, 20, 50)  # 7 buckets
SHARE_EDGES = (0.15, 0.3, 0.6)  # 4 buckets of a hit share above 0
LIVE_EDGES = (1, 2, 3, 5)  # 5 buckets
RANKS = 7  # ranks 1..6, then 7 and beyond
ALWAYS_SCORED = 1  # the most recent threads scored whatever they share with the message
DISTANCE_EDGES = (2, 3, 4, 6, 11, 21)  # messages since the thread's latest: 7 buckets
HIT_EDGES = (0.5, 1.0, 2.0, 4.0)  # summed rarity of the shared words: 5 buckets above 0

_IDLE = len(IDLE_EDGES) + 1
_AGE = len(AGE_EDGES) + 1

# (table name, rows, columns, the reason it names when it weighs most). Candidate tables first, each
# looked up once per candidate thread; then the "new" tables. The order is the weights file's.
TABLES: tuple[tuple[str, int, int, str], ...] = (
    ("idle_rank", _IDLE, RANKS, "recent"),
    # speaker: 0 not in the thread, 1 in it, 2 + age bucket: the thread is the one they spoke in last
    ("idle_speaker", _IDLE, 2 + _AGE, "speaker"),
    ("idle_last_speaker", _IDLE, 2, "speaker"),
    ("idle_addressed", _IDLE, 1 + _AGE, "addressed"),
    # mention: 0 no @, 1 an @ of someone elsewhere, 2 in the thread, 3 spoke there last, 4 pair there
    ("idle_mention", _IDLE, 5, "mention"),
    # terms: 0 no words, 1 no shared word, 2 + share bucket
    ("idle_terms", _IDLE, 2 + len(SHARE_EDGES) + 1, "terms"),
    ("idle_size", _IDLE, len(SIZE_EDGES) + 1, "recent"),
    ("mention_terms", 5, 2 + len(SHARE_EDGES) + 1, "mention"),
    ("idle_distance", _IDLE, len(DISTANCE_EDGES) + 1, "recent"),
    # the thread's latest message asked something (2) x the speaker spoke it (2) x a question now (2)
    ("idle_question", _IDLE, 8, "recent"),
    ("idle_hits", _IDLE, 1 + len(HIT_EDGES) + 1, "terms"),
    ("speaker_mention", 2 + _AGE, 5, "speaker"),
    ("idle_people", _IDLE, 4, "recent"),  # people in the thread: 1, 2, 3, 4 or more
    # a thread of one person so far: 0 no; 1 the speaker's, no content word yet (a lone "hi all");
    # 2 the speaker's, with words; 3 another's, no word; 4 another's, with words
    ("idle_opener", _IDLE, 5, "speaker"),
    # the speaker's part (as in idle_speaker) x how many candidates they are in: 0, 1, 2, 3 or more
    ("speaker_spread", 2 + _AGE, 4, "speaker"),
    # whom the thread's latest message @-ed: 0 nobody, 1 the speaker, 2 only others
    ("idle_last_named", _IDLE, 3, "addressed"),
    # the speaker's part in the thread (as in idle_speaker) x a question now (2) x terms (as in idle_terms)
    ("speaker_question_terms", 2 + _AGE, 2 * (2 + len(SHARE_EDGES) + 1), "speaker"),
    # the speaker's part in the thread (as in idle_speaker) x the message's opening cue (_cues)
    ("speaker_cue", 2 + _AGE, len(CUES), "speaker"),
    # the thread's latest message: 0 this message has no words, 1 it shares none of them, 2 it shares one
    ("idle_last_terms", _IDLE, 3, "terms"),
    ("new_gap_mention_terms", _IDLE, 4, "new"),
    ("new_live", len(LIVE_EDGES) + 1, 1, "new"),
    ("new_own_mention", 1 + _AGE, 4, "new"),  # x an @ (2) x a question (2)
    # the most any candidate shares of the message's words (as in idle_terms) x a question now (2)
    ("new_share_question", 2 + len(SHARE_EDGES) + 1, 2, "new"),
    ("new_cue_question", len(CUES), 2, "new"),  # the message's opening cue x a question now
)
_OFFSETS: dict[str, int] = {}
_REASONS: list[str] = []
for _name, _rows, _cols, _why in TABLES:
    _OFFSETS[_name] = len(_REASONS)
    _REASONS.extend([_why] * (_rows * _cols))
FEATURES = len(_REASONS)

(
    _IDLE_RANK,
    _IDLE_SPEAKER,
    _IDLE_LAST,
    _IDLE_ADDRESSED,
    _IDLE_MENTION,
    _IDLE_TERMS,
    _IDLE_SIZE,
    _MENTION_TERMS,
    _IDLE_DISTANCE,
    _IDLE_QUESTION,
    _IDLE_HITS,
    _SPEAKER_MENTION,
    _IDLE_PEOPLE,
    _IDLE_OPENER,
    _SPEAKER_SPREAD,
    _IDLE_LAST_NAMED,
    _SPEAKER_QUESTION,
    _SPEAKER_CUE,
    _IDLE_LAST_TERMS,
    _NEW_GAP,
    _NEW_LIVE,
    _NEW_OWN,
    _NEW_SHARE,
    _NEW_CUE,
) = (_OFFSETS[name] for name, *_ in TABLES)
_COLS = {name: cols for name, _, cols, _ in TABLES}
_C_RANK = _COLS["idle_rank"]
_C_SPEAKER = _COLS["idle_speaker"]
_C_ADDRESSED = _COLS["idle_addressed"]
_C_TERMS = _COLS["idle_terms"]
_C_SIZE = _COLS["idle_size"]
_C_DISTANCE = _COLS["idle_distance"]
_C_HITS = _COLS["idle_hits"]
_C_CUE = _COLS["speaker_cue"]


# A candidate is described by 19 codes, one per candidate table in the order of TABLES; its feature
# ids are each table's start for the candidate's idle bucket plus the code. The idle-crossed tables
# start at the bucket's row; "mention_terms" and the "speaker_" tables are read whole (their codes
# are row * columns + column). Per idle bucket, the 19 starts:
_CANDIDATE_TABLES = (
    (_IDLE_RANK, _C_RANK),
    (_IDLE_SPEAKER, _C_SPEAKER),
    (_IDLE_LAST, 2),
    (_IDLE_ADDRESSED, _C_ADDRESSED),
    (_IDLE_MENTION, 5),
    (_IDLE_TERMS, _C_TERMS),
    (_IDLE_SIZE, _C_SIZE),
    (_MENTION_TERMS, None),
    (_IDLE_DISTANCE, _C_DISTANCE),
    (_IDLE_QUESTION, 8),
    (_IDLE_HITS, _C_HITS),
    (_SPEAKER_MENTION, None),
    (_IDLE_PEOPLE, 4),
    (_IDLE_OPENER, 5),
    (_SPEAKER_SPREAD, None),
    (_IDLE_LAST_NAMED, 3),
    (_SPEAKER_QUESTION, None),
    (_SPEAKER_CUE, None),
    (_IDLE_LAST_TERMS, 3),
)
_STARTS = tuple(
    tuple(start if cols is None else start + i * cols for start, cols in _CANDIDATE_TABLES)
    for i in range(_IDLE)
)
# How many weights each code can reach from its start: a row, or a whole table.
_SPANS = tuple(
    cols if cols is not None else next(r * c for n, r, c, _ in TABLES if _OFFSETS[n] == start)
    for start, cols in _CANDIDATE_TABLES
)


# Bucket lookups for the small counts read per candidate (an index instead of a bisection): the
# bucket of a thread's size and of its distance in messages, below the last edge (at or above it:
# the top bucket); and the people bucket (1, 2, 3, 4 or more participants; none counts as one).
_SIZE_BUCKET = tuple(bisect_right(SIZE_EDGES, n) for n in range(SIZE_EDGES[-1]))
_DISTANCE_BUCKET = tuple(bisect_right(DISTANCE_EDGES, n) for n in range(DISTANCE_EDGES[-1]))
_PEOPLE_BUCKET = (0, 0, 1, 2)
_NOBODY: frozenset[str] = frozenset()


def load_weights() -> tuple[float, ...]:
    """The shipped weights, checked against the layout (a stale file is an error, not a guess)."""
    text = resources.files("runtime.kernel").joinpath("link_weights.json").read_text(encoding="utf-8")
    data = json.loads(text)
    layout = [[name, rows, cols] for name, rows, cols, _ in TABLES]
    if data.get("layout") != layout or len(data.get("weights", ())) != FEATURES:
        raise ValueError("runtime/kernel/link_weights.json does not match the scorer's tables")
    return tuple(float(w) for w in data["weights"])


class LinkChoice:
    """The options for one message: the candidate threads, each one's idle bucket and 19 codes, and
    the feature ids of "new"."""

    __slots__ = ("codes", "idle", "new", "threads")

    def __init__(
        self,
        threads: list[ThreadState],
        idle: list[int],
        codes: list[tuple[int, ...]],
        new: tuple[int, ...],
    ) -> None:
        self.threads = threads
        self.idle = idle
        self.codes = codes
        self.new = new

    def candidate_features(self, index: int) -> tuple[int, ...]:
        """The feature ids of candidate ``index``."""
        return tuple(map(add, _STARTS[self.idle[index]], self.codes[index]))

    @property
    def features(self) -> list[tuple[int, ...]]:
        """Every option's feature ids: the candidates', then "new"'s (what the scorer is fitted on)."""
        return [*map(self.candidate_features, range(len(self.threads))), self.new]


class LinkWeights:
    """The weights laid out for scoring: per idle bucket, for each of a candidate's 19 codes, the
    weights it indexes (that bucket's row of an idle-crossed table, or the whole table).

    A candidate's score is then its 19 weights summed in the order of its features, read with
    ``map`` in C instead of an addition per feature id in Python: the same additions of the same
    numbers, so the same score to the last bit.
    """

    __slots__ = ("by_idle", "flat")

    def __init__(self, weights: tuple[float, ...]) -> None:
        self.flat = weights
        self.by_idle = tuple(
            tuple(weights[start : start + span] for start, span in zip(starts, _SPANS, strict=True))
            for starts in _STARTS
        )


def asks(text: str, max_chars: int) -> bool:
    """Whether the message asks something: a question mark in its first ``max_chars`` characters."""
    head = text if len(text) <= max_chars else text[:max_chars]
    return "?" in head or "？" in head


def link_options(
    chat: ChatState,
    message: ChatMessage,
    terms: tuple[str, ...],
    now: float,
    s: ThreadSettings,
    probe: Probe | None = None,
    *,
    every: bool = False,
) -> LinkChoice:
    """Every option's feature ids for ``message``: the candidate threads', then "new"'s.

    ``probe``: what the message reads of the chat, if read already (by the tracker, which asks the
    signals too). ``every``: every recent thread within the horizon is a candidate, not only those
    past the first ALWAYS_SCORED that the message shares something with (the scorer is fitted on
    all of them: left out of its options, the threads it never chooses would no longer teach it
    what a thread that is not the answer looks like)."""
    threads = chat.threads
    if probe is None:
        probe = Probe(chat, message, terms, now, s)
    horizon = probe.horizon
    sender = message.sender_id
    # The people signals: where the speaker last spoke / was last @-ed, where the named people last
    # spoke and last talked with the speaker.
    own = probe.own
    own_thread = own[0] if own is not None else None
    own_age = bisect_right(AGE_EDGES, now - own[1]) if own is not None else -1
    asked = probe.asked
    asked_thread, asked_age = None, 0
    if asked is not None and asked[1] >= horizon:
        asked_thread, asked_age = asked[0], bisect_right(AGE_EDGES, now - asked[1])
    named: list[str] = []
    spoke_in: dict[str, int] = {}  # thread id -> mention code 3 (spoke there) or 4 (pair there)
    for user, pair, spoke in probe.named:
        named.append(user)
        if spoke is not None and spoke_in.get(spoke[0], 0) < 3:
            spoke_in[spoke[0]] = 3
        if pair is not None:
            spoke_in[pair[0]] = 4
    named_in = frozenset(named) if named else _NOBODY

    # The most recent threads within the horizon: the first ALWAYS_SCORED whatever they hold, the
    # others only where the message has something in common with them (the speaker spoke or was
    # @-ed there, a named person is in it, a shared word). A thread with none of these past the
    # latest is seldom the answer (under one annotated message in a hundred) and seldom the one the
    # fitted scorer would choose (32 of the 236,385 messages of every log, train included, with the
    # same figures to a tenth of a point), so it is left out: a dozen lookups each. Each keeps its
    # rank by recency.
    hits = probe.hits
    gap = s.gap
    live = 0  # the threads within the gap, scored or not
    candidates: list[ThreadState] = []
    ranks: list[int] = []
    for rank, thread in enumerate(probe.tail):
        last_at = thread.last_at
        if last_at < horizon:
            break
        if now - last_at < gap:
            live += 1
        tid = thread.id
        if (
            every
            or rank < ALWAYS_SCORED
            or thread.bit in hits
            or sender in thread.participants
            or tid in (own_thread, asked_thread)
            or (named and (tid in spoke_in or not named_in.isdisjoint(thread.participants)))
        ):
            candidates.append(thread)
            ranks.append(rank if rank < RANKS else RANKS - 1)
    # Then the threads the people point to, each once (a chat's thread objects are its ids': a
    # scan of the dozen candidates by identity, not a set of their ids per message).
    for pointed in (own_thread, asked_thread, *spoke_in):
        if pointed is not None:
            extra = threads.get(pointed)
            if extra is not None and extra.last_at >= horizon and extra not in candidates:
                candidates.append(extra)
                ranks.append(RANKS - 1)
                if now - extra.last_at < gap:
                    live += 1

    total = probe.total

    idle_buckets: list[int] = []
    codes: list[tuple[int, ...]] = []
    seq = chat.seq + 1  # this message's number
    asking = 1 if asks(message.text, s.max_feature_chars) else 0
    cue = message_cue(message.text)
    words = frozenset(terms)  # against each candidate's latest message
    top_size, top_distance = len(SIZE_EDGES), len(DISTANCE_EDGES)
    best_term = 1 if terms else 0  # "no thread shares a word" when no candidate shares one
    spread = sum(sender in thread.participants for thread in candidates)
    if spread > 3:
        spread = 3
    for rank, thread in zip(ranks, candidates, strict=True):
        idle_buckets.append(bisect_right(IDLE_EDGES, now - thread.last_at))
        tid = thread.id
        participants = thread.participants
        speaker = 2 + own_age if tid == own_thread else 1 if sender in participants else 0
        last = 1 if thread.last_sender == sender else 0
        addressed = 1 + asked_age if tid == asked_thread else 0
        if named:
            mention = spoke_in.get(tid, 0)
            if mention == 0:
                mention = 1 if named_in.isdisjoint(participants) else 2
        else:
            mention = 0
        if not terms:
            term = hit_bucket = latest = 0
        else:
            hit = hits.get(thread.bit)
            if hit is None:
                term, hit_bucket = 1, 0
            else:
                term = 2 + bisect_right(SHARE_EDGES, hit / total)
                hit_bucket = 1 + bisect_right(HIT_EDGES, hit)
            latest = 1 if words.isdisjoint(thread.last_terms) else 2
        if term > best_term:
            best_term = term
        size = thread.count
        distance = seq - thread.last_seq
        people = len(participants)
        # one person's thread so far (``last``: the speaker's): 1/2 theirs, 3/4 another's, +1 with words
        opener = 0 if people != 1 else (3 - 2 * last) + (1 if thread.term_count else 0)
        codes.append(
            (
                rank,
                speaker,
                last,
                addressed,
                mention,
                term,
                _SIZE_BUCKET[size] if size < SIZE_EDGES[-1] else top_size,
                mention * _C_TERMS + term,
                _DISTANCE_BUCKET[distance] if distance < DISTANCE_EDGES[-1] else top_distance,
                (4 if thread.last_question else 0) + 2 * last + asking,
                hit_bucket,
                speaker * 5 + mention,
                _PEOPLE_BUCKET[people] if people < 4 else 3,
                opener,
                speaker * 4 + spread,
                (1 if sender in thread.last_named else 2) if thread.last_named else 0,
                (speaker * 2 + asking) * _C_TERMS + term,
                speaker * _C_CUE + cue,
                latest,
            )
        )
    silence = bisect_right(IDLE_EDGES, now - chat.last_at) if threads else _IDLE - 1
    new = (
        _NEW_GAP + silence * 4 + (2 if named else 0) + (1 if terms else 0),
        _NEW_LIVE + bisect_right(LIVE_EDGES, live),
        _NEW_OWN + (1 + own_age) * 4 + (2 if named else 0) + asking,
        _NEW_SHARE + best_term * 2 + asking,
        _NEW_CUE + cue * 2 + asking,
    )
    return LinkChoice(candidates, idle_buckets, codes, new)


def choose_link(choice: LinkChoice, weights: LinkWeights) -> tuple[ThreadState | None, str, float]:
    """The best option under ``weights``: its thread (``None`` for new), the table that weighed most
    in it (its reason), and its margin over the runner-up side ("new" for a thread, the best thread
    for "new"; 0 with no candidate)."""
    by_idle = weights.by_idle
    scores = [
        sum(map(getitem, by_idle[idle], codes)) for idle, codes in zip(choice.idle, choice.codes, strict=True)
    ]
    look = weights.flat.__getitem__
    new_score = sum(map(look, choice.new))
    if not scores:
        return None, "new", 0.0
    best_score = max(scores)  # the first of equal scores: the most recent thread
    if best_score <= new_score:
        return None, "new", best_score - new_score
    best_index = scores.index(best_score)
    strongest = max(choice.candidate_features(best_index), key=look)
    return choice.threads[best_index], _REASONS[strongest], best_score - new_score
