"""The learned tracker reads each message's chat state once (``Probe``) and asks the signals only
where they can matter: it must place every message exactly as asking them every time would.

Seeded random streams (groups and a private chat, @s, replies to known and unknown ids, pauses past
the gap and the horizon, clocks that step back) are fed to the tracker and to a reference that
asks the signals (``choose``, with a probe of its own) before the scorer on every message, as the
tracker did before it learned to skip them, and names the scorer's thread as the signals do where
they would join it too; every assignment must be equal, reason and score included.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from runtime.kernel._chatstate import ChatState, Probe, ThreadState, choose, strongest_signal
from runtime.kernel._features import extract_terms
from runtime.kernel._links import SHARE_EDGES, choose_link, link_options
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.threads import ThreadSettings, ThreadTracker, _explicit, _shipped_weights

WORDS = [
    "nas",
    "raid",
    "disk",
    "driver",
    "wifi",
    "kernel",
    "python",
    "asyncio",
    "docker",
    "显卡",
    "驱动",
    "蓝屏",
    "香山",
    "红叶",
    "爬山",
    "球赛",
    "点球",
    "电源",
    "回滚",
    "版本",
    "猫粮",
    "牌子",
    "电影",
    "门票",
    "火锅",
    "周末",
]
USERS = [f"u{i}" for i in range(8)]
START = 1_767_225_600.0


def stream(seed: int, count: int = 400) -> list[ChatMessage]:
    rng = random.Random(seed)
    chats = [(ChatKind.GROUP, "1"), (ChatKind.GROUP, "2"), (ChatKind.PRIVATE, "u1")]
    now = START
    ids: list[str] = []
    out = []
    for number in range(count):
        roll = rng.random()
        # Mostly chat-speed gaps, sometimes a pause past the gap or the horizon, now and then a
        # clock a little behind the last message's.
        now += rng.choice((rng.uniform(1, 60), rng.uniform(1, 60), rng.uniform(200, 700), 2_000.0, -30.0))
        kind, ident = rng.choice(chats)
        sender = rng.choice(USERS[:2]) if kind is ChatKind.PRIVATE else rng.choice(USERS)
        text = " ".join(rng.sample(WORDS, rng.randrange(0, 4))) + rng.choice(("", "?", " 吗？", " lol"))
        mentions: tuple[str, ...] = ()
        if roll < 0.2:
            mentions = tuple(rng.sample(USERS, rng.randrange(1, 3)))
        reply_to = None
        if 0.2 <= roll < 0.3 and ids:
            reply_to = rng.choice(ids[-10:]) if rng.random() < 0.9 else "unknown"
        mid = f"m{number}"
        ids.append(mid)
        out.append(
            ChatMessage(
                message_id=mid,
                chat_kind=kind,
                chat_ident=ident,
                sender_id=sender,
                sender_name=sender,
                time=now,
                text=text,
                mentions=mentions,
                reply_to=reply_to,
            )
        )
    return out


class AlwaysAsking(ThreadTracker):
    """The learned tracker as it was: the signals asked first on every message."""

    def _link(
        self, chat: ChatState, message: ChatMessage, terms: tuple[str, ...], now: float
    ) -> tuple[ThreadState | None, str, float]:
        s = self.settings
        if not chat.threads:
            return None, "new", 0.0
        ruled = choose(chat, message, terms, now, s)
        if ruled[0] is not None and _explicit(chat, message, ruled[1], now, s):
            return ruled
        target, weighed, score = choose_link(link_options(chat, message, terms, now, s), self._weights)
        reason = weighed
        if target is not None and target is ruled[0] and ruled[2] >= s.join_threshold:
            reason = ruled[1]  # the signals' own name for the thread they would join
        elif target is not None:
            reason = strongest_signal(Probe(chat, message, terms, now, s), target, now, s) or weighed
        if target is not None and terms and weighed not in ("mention", "addressed"):
            hits, total = chat.term_hits(terms, target.bit)
            share = hits.get(target.bit, 0.0) / total if total else 0.0
            if now - target.last_at > s.gap and not message.mentions and share < SHARE_EDGES[0]:
                target, reason = None, "new"
        if target is None:
            newest = next(reversed(chat.threads.values()))
            if now - newest.last_at <= s.gap and (
                message.is_private or (s.chatter_joins_recent and not terms and not message.mentions)
            ):
                return newest, "recent", score
        return target, reason, score


SETTINGS = {
    "defaults": ThreadSettings(),
    "recency rule": ThreadSettings(weight_recent=0.5),
    "chatter joins recent": ThreadSettings(chatter_joins_recent=True),
    "few candidates and threads": ThreadSettings(max_candidates=3, max_threads_per_chat=4),
    "strong people signals": ThreadSettings(weight_addressed=1.5, weight_pair=2.0, weight_terms=1.2),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
@pytest.mark.parametrize("seed", range(12))
def test_skipping_the_signals_places_every_message_as_asking_them_would(name: str, seed: int) -> None:
    settings = SETTINGS[name]
    fast, reference = ThreadTracker(settings), AlwaysAsking(settings)
    for message in stream(seed):
        got, want = fast.assign(message), reference.assign(message)
        assert (got.thread, got.created, got.reason, got.score) == (
            want.thread,
            want.created,
            want.reason,
            want.score,
        ), message
    assert fast.statistics() == reference.statistics()


@pytest.mark.parametrize("seed", range(12))
def test_the_signals_rest_on_qq_structure_only_where_the_probe_says_they_may(seed: int) -> None:
    for settings in SETTINGS.values():
        tracker = ThreadTracker(dataclasses.replace(settings, scorer="signals"))
        for message in stream(seed):
            chat = tracker._chats.get(message.chat_id)
            if chat is not None and chat.threads:
                s = tracker.settings
                terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
                probe = Probe(chat, message, terms, message.time, s)
                target, reason, _ = choose(chat, message, terms, message.time, s, probe)
                if target is not None and _explicit(chat, message, reason, message.time, s):
                    assert probe.may_rule(terms, message.time, s), (message, reason)
            tracker.assign(message)


@pytest.mark.parametrize("seed", range(6))
def test_one_walk_over_the_postings_gives_each_thread_what_its_own_would(seed: int) -> None:
    tracker = ThreadTracker()
    s = tracker.settings
    for message in stream(seed):
        chat = tracker._chats.get(message.chat_id)
        terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
        if chat is not None and chat.threads and terms:
            probe = Probe(chat, message, terms, message.time, s)
            for thread in link_options(chat, message, terms, message.time, s, probe).threads:
                hits, total = chat.term_hits(terms, thread.bit)
                assert probe.hits.get(thread.bit) == hits.get(thread.bit)
                assert probe.total == total or not probe.hits
        tracker.assign(message)


@pytest.mark.parametrize("seed", range(6))
def test_scoring_by_codes_sums_the_weights_of_the_feature_ids(seed: int) -> None:
    tracker = ThreadTracker()
    s = tracker.settings
    weights = _shipped_weights()
    look = weights.flat.__getitem__
    scored = 0
    for message in stream(seed):
        chat = tracker._chats.get(message.chat_id)
        terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
        if chat is not None and chat.threads:
            choice = link_options(chat, message, terms, message.time, s)
            features = choice.features
            assert len(features) == len(choice.threads) + 1
            assert features[-1] == choice.new
            by_feature = [sum(map(look, option)) for option in features]
            target, _, margin = choose_link(choice, weights)
            best = max(by_feature[:-1], default=None)
            if best is None:
                assert (target, margin) == (None, 0.0)
            else:
                assert margin == best - by_feature[-1]
                expected = choice.threads[by_feature.index(best)] if best > by_feature[-1] else None
                assert target is expected
                scored += 1
        tracker.assign(message)
    assert scored > 100


def test_past_the_latest_thread_only_threads_the_message_shares_something_with_are_scored() -> None:
    tracker = ThreadTracker()
    s = tracker.settings
    say = [
        ("u1", "显卡 驱动 蓝屏", ()),
        ("u2", "香山 红叶 爬山", ()),
        ("u3", "球赛 点球", ()),
        ("u4", "火锅 周末", ()),
        ("u5", "电影 门票", ()),
    ]
    for number, (sender, text, at) in enumerate(say):
        tracker.assign(
            ChatMessage(f"m{number}", ChatKind.GROUP, "1", sender, sender, START + 400.0 * number, text, at)
        )
    # Five threads, one per topic (each past the gap of the one before). u3 comes back about the
    # graphics card, naming u2: the latest thread, the card's, u3's own and u2's are scored.
    later = ChatMessage(
        "m9", ChatKind.GROUP, "1", "u3", "u3", START + 1_700.0, "显卡 驱动 还是 蓝屏", ("u2",)
    )
    chat = tracker._chats["group:1"]
    terms = extract_terms(later.text, s.max_feature_chars, s.max_terms_per_message)
    every = link_options(chat, later, terms, later.time, s, every=True).threads
    scored = link_options(chat, later, terms, later.time, s).threads
    assert len(every) == 5
    by_topic = {next(iter(thread.participants)): thread for thread in every}
    assert scored == [by_topic["u5"], by_topic["u3"], by_topic["u2"], by_topic["u1"]]


@pytest.mark.parametrize("seed", range(6))
def test_leaving_out_threads_that_share_nothing_seldom_changes_a_choice(seed: int) -> None:
    # The shortcut is measured, not exact: past the latest thread, a thread the message shares
    # nothing with is seldom the scorer's choice (32 of 236,385 messages of the IRC logs, with the
    # same figures to a tenth of a point). Here, on the same state at every message, the shortcut
    # and every candidate choose the same option for all but a few in a thousand messages.
    tracker = ThreadTracker()
    s = tracker.settings
    weights = _shipped_weights()
    compared = differ = 0
    for message in stream(seed, 600):
        chat = tracker._chats.get(message.chat_id)
        if chat is not None and message.reply_to is None:
            terms = extract_terms(message.text, s.max_feature_chars, s.max_terms_per_message)
            scored = link_options(chat, message, terms, message.time, s)
            every = link_options(chat, message, terms, message.time, s, every=True)
            assert all(thread in every.threads for thread in scored.threads)
            compared += 1
            differ += choose_link(scored, weights)[0] is not choose_link(every, weights)[0]
        tracker.assign(message)
    assert compared > 500
    assert differ <= 2
