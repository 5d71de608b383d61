"""The learned link scorer (``threads.scorer = "learned"``): its weights file and the tracker's contracts."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from runtime.config import ConfigError, parse_config
from runtime.kernel import _links
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.kernel.threads import REPLY_SCORE, RestoredMessage, ThreadSettings, ThreadTracker

LEARNED = ThreadSettings(scorer="learned")
START = 1_767_225_600.0


def message(
    mid: str,
    sender: str,
    text: str,
    when: float,
    *,
    at: tuple[str, ...] = (),
    reply_to: str | None = None,
    kind: ChatKind = ChatKind.GROUP,
    chat: str = "100",
) -> ChatMessage:
    return ChatMessage(
        message_id=mid,
        chat_kind=kind,
        chat_ident=chat,
        sender_id=sender,
        sender_name=sender,
        time=when,
        text=text,
        mentions=at,
        reply_to=reply_to,
    )


def test_the_shipped_weights_fit_the_tables_and_are_small() -> None:
    path = resources.files("runtime.kernel").joinpath("link_weights.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert len(path.read_bytes()) < 100_000
    assert len(data["weights"]) == _links.FEATURES
    weights = _links.load_weights()
    assert any(w != 0.0 for w in weights)  # fitted, not the zero placeholder


def test_a_stale_weights_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_links, "TABLES", (*_links.TABLES, ("extra", 1, 1, "new")))
    with pytest.raises(ValueError, match="does not match"):
        _links.load_weights()


def test_the_scorer_is_chosen_in_config_and_checked() -> None:
    settings = KernelSettings.from_config(parse_config({"threads": {"scorer": "learned"}}))
    assert settings.threads.scorer == "learned"
    assert KernelSettings.from_config(parse_config({})).threads.scorer == "learned"
    with pytest.raises(ConfigError):
        parse_config({"threads": {"scorer": "magic"}})
    with pytest.raises(InvalidSetting, match=r"threads\.scorer"):
        ThreadSettings(scorer="magic")


def test_a_reply_joins_its_target_whatever_the_scorer_says() -> None:
    tracker = ThreadTracker(LEARNED)
    first = tracker.assign(message("1", "alice", "有人用过 NAS 吗", START))
    tracker.assign(message("2", "bob", "显卡驱动又崩了", START + 30))
    late = tracker.assign(message("3", "carol", "群晖不错", START + 1_500, reply_to="1"))
    assert late.thread_id == first.thread_id
    assert (late.reason, late.score) == ("reply", REPLY_SCORE)


def test_an_exchange_by_at_stays_in_one_thread_and_a_stranger_later_starts_another() -> None:
    tracker = ThreadTracker(LEARNED)
    a = tracker.assign(message("1", "alice", "my wifi driver keeps dropping after suspend", START))
    b = tracker.assign(message("2", "bob", "which chipset is it", START + 60, at=("alice",)))
    c = tracker.assign(message("3", "alice", "an intel ax200, the iwlwifi driver", START + 60, at=("bob",)))
    assert a.created
    assert b.thread_id == a.thread_id == c.thread_id
    other = tracker.assign(message("4", "zed", "anyone know a good pdf editor", START + 1_700))
    assert other.created


def test_a_private_chat_still_follows_the_recency_rule() -> None:
    tracker = ThreadTracker(LEARNED)
    kind = ChatKind.PRIVATE
    a = tracker.assign(message("1", "alice", "在吗", START, kind=kind))
    b = tracker.assign(message("2", "alice", "明天的电影票买好了", START + 200, kind=kind))
    assert b.thread_id == a.thread_id


def test_chats_never_share_threads_under_the_learned_scorer() -> None:
    tracker = ThreadTracker(LEARNED)
    a = tracker.assign(message("1", "alice", "python asyncio 报错", START, chat="1"))
    b = tracker.assign(message("2", "alice", "python asyncio 报错", START + 5, chat="2"))
    assert a.thread_id != b.thread_id


SCRIPT = [
    ("alice", "周末去哪里爬山比较好", {}),
    ("bob", "显卡驱动又崩了，蓝屏", {"at": ()}),
    ("carol", "香山吧，红叶正好", {"reply_to": "1"}),
    ("dave", "驱动回滚到上个版本试试", {"at": ("bob",)}),
    ("alice", "香山人太多了吧", {}),
    ("bob", "回滚了，还是蓝屏", {}),
    ("erin", "红叶季香山要早点去", {}),
    ("dave", "那就是电源的问题", {"reply_to": "6"}),
    ("frank", "有人看昨晚的球赛吗", {}),
    ("alice", "好，那我们早上六点出发", {"at": ("carol",)}),
    ("gina", "看了，点球太可惜", {"reply_to": "9"}),
    ("bob", "换了电源好了，谢谢", {}),
]


@pytest.mark.parametrize("split", [3, 6, 9])
def test_a_restored_learned_tracker_decides_like_one_that_never_stopped(split: int) -> None:
    kept, restarted = ThreadTracker(LEARNED), ThreadTracker(LEARNED)
    stored: list[RestoredMessage] = []
    when = START
    for number, (sender, text, options) in enumerate(SCRIPT, 1):
        when += 40
        msg = message(str(number), sender, text, when, **options)  # type: ignore[arg-type]
        got = kept.assign(msg)
        if number <= split:
            stored.append(RestoredMessage(msg, got.thread_id))
            if number == split:
                restarted.restore(stored, when)
                kept.prune(when)
        else:
            again = restarted.assign(msg)
            assert (again.thread_id, again.reason, again.created) == (got.thread_id, got.reason, got.created)


def test_a_lone_greeting_does_not_swallow_the_question_its_speaker_asks_next() -> None:
    # Two people talk nginx; a newcomer greets the group, nobody answers, and asks their question a
    # minute later: the question begins its own conversation (the greeting stays alone).
    tracker = ThreadTracker(LEARNED)
    talk = [
        message("1", "ann", "my nginx config keeps returning 502 after the upgrade", START),
        message("2", "bob", "ann: check the upstream socket path in nginx", START + 20, at=("ann",)),
        message("3", "ann", "bob: the upstream socket moved, fixed it", START + 40, at=("bob",)),
    ]
    threads = {tracker.assign(m).thread_id for m in talk}
    assert len(threads) == 1
    greeting = tracker.assign(message("4", "cid", "hello everyone", START + 60))
    question = tracker.assign(message("5", "cid", "how do I mount an nfs share at boot?", START + 120))
    assert question.created
    assert question.thread_id not in {greeting.thread_id, *threads}
    # The same speaker going on with words of their own question stays in it.
    more = tracker.assign(message("6", "cid", "the nfs share is on my home server", START + 150))
    assert more.thread_id == question.thread_id


def test_a_greeting_in_chinese_is_a_lone_opener_too() -> None:
    tracker = ThreadTracker(LEARNED)
    tracker.assign(message("1", "ann", "nginx 升级以后一直返回 502", START))
    tracker.assign(message("2", "bob", "看看 upstream 的 socket 路径", START + 20, at=("ann",)))
    greeting = tracker.assign(message("3", "cid", "大家好", START + 60))
    question = tracker.assign(message("4", "cid", "请问开机自动挂载 nfs 共享怎么配置？", START + 120))
    assert question.created
    assert question.thread_id != greeting.thread_id


@pytest.mark.parametrize("delay", [15.0, 25.0, 40.0])
def test_a_yes_answers_the_question_before_it_not_the_chatter_between(delay: float) -> None:
    # ann asks; cid starts something else; bob's "yes, ..." answers ann, with no @ and one shared
    # word: an answer's opening says it continues a conversation, not begins one.
    tracker = ThreadTracker(LEARNED)
    question = tracker.assign(message("1", "ann", "is the upstream socket path in nginx.conf?", START))
    chatter = tracker.assign(message("2", "cid", "anyone running focal on a pi", START + 20))
    assert chatter.created
    answer = tracker.assign(message("3", "bob", "yes, in the upstream block", START + 20 + delay))
    assert answer.thread_id == question.thread_id


@pytest.mark.parametrize("delay", [5.0, 15.0, 25.0])
def test_an_answer_that_repeats_the_words_of_a_question_just_asked_joins_it(delay: float) -> None:
    # ann and bob talk php-fpm; cid asks about docker's socket between two of their messages; dan,
    # new to both, answers cid with cid's own words ("docker", "socket"): the answer joins cid's
    # question, not a conversation of its own, though the other thread has spoken since.
    tracker = ThreadTracker(LEARNED)
    talk = [
        message("1", "ann", "my nginx upstream socket keeps timing out", START),
        message("2", "bob", "is the php-fpm socket owned by www-data", START + 20),
        message("3", "ann", "yes it is, permissions look right", START + 40),
        message("4", "bob", "then restart php-fpm and watch the error log", START + 60),
    ]
    threads = {tracker.assign(m).thread_id for m in talk}
    question = tracker.assign(message("5", "cid", "where does docker keep the daemon socket?", START + 70))
    assert question.created
    going_on = tracker.assign(message("6", "ann", "restarted, the error log is quiet now", START + 80))
    assert going_on.thread_id in threads
    answer = tracker.assign(message("7", "dan", "the docker socket lives in /var/run", START + 80 + delay))
    assert answer.thread_id == question.thread_id
