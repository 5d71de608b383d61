"""ThreadTracker: design/0002 §13 (thread creation, reply linking, time gap) and the signals beyond it."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.config import ConfigError, parse_config
from runtime.config.threads import ThreadsConfig
from runtime.kernel._features import extract_terms
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.threads import REPLY_SCORE, ThreadAssignment, ThreadSettings, ThreadTracker


class Group:
    """A scripted group chat: ``say`` feeds one message to the tracker and returns its assignment."""

    def __init__(self, tracker: ThreadTracker, ident: str = "100", start: float = 1_767_225_600.0) -> None:
        self.tracker = tracker
        self.ident = ident
        self.now = start
        self.next_id = 1
        self.sent: dict[str, ThreadAssignment] = {}

    def say(
        self,
        sender: str,
        text: str,
        *,
        after: float = 10.0,
        at: tuple[str, ...] = (),
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> ThreadAssignment:
        self.now += after
        mid = message_id or str(self.next_id)
        self.next_id += 1
        message = ChatMessage(
            message_id=mid,
            chat_kind=ChatKind.GROUP,
            chat_ident=self.ident,
            sender_id=sender,
            sender_name=sender,
            time=self.now,
            text=text,
            mentions=at,
            reply_to=reply_to,
        )
        assignment = self.tracker.assign(message)
        self.sent[mid] = assignment
        return assignment

    @property
    def chat_id(self) -> str:
        return f"group:{self.ident}"


@pytest.fixture
def tracker() -> ThreadTracker:
    return ThreadTracker(ThreadSettings.from_config(ThreadsConfig()))


@pytest.fixture
def group(tracker: ThreadTracker) -> Group:
    return Group(tracker)


# -- design/0002 §13: thread creation, reply linking, time gap --------------------------------------


def test_first_message_creates_a_thread(group: Group) -> None:
    first = group.say("alice", "有人玩过新出的那个塞尔达吗")
    assert first.created
    assert first.reason == "new"
    assert first.thread_id == "th-1"
    assert first.thread.chat_id == "group:100"
    assert first.thread.participants == ("alice",)
    assert group.tracker.thread_of("group:100", "1") == "th-1"


def test_a_reply_joins_its_targets_thread_over_a_more_recent_one(group: Group) -> None:
    question = group.say("alice", "周末去哪里爬山比较好")
    other = group.say("bob", "显卡驱动又崩了，蓝屏", after=30)
    assert other.thread_id != question.thread_id
    answer = group.say("carol", "香山吧", reply_to="1", after=5)
    assert answer.thread_id == question.thread_id
    assert answer.reason == "reply"
    assert answer.score == REPLY_SCORE
    assert not answer.created


def test_the_author_of_a_replied_message_is_being_answered(group: Group) -> None:
    question = group.say("carol", "有人用过 NAS 吗，想买一个存照片")
    answer = group.say("dave", "群晖不错", reply_to="1", after=400)  # carol's own signal has faded
    thanks = group.say("carol", "好的我去看看", after=30)
    assert answer.thread_id == question.thread_id
    assert thanks.thread_id == question.thread_id
    assert thanks.reason == "addressed"


def test_a_reply_to_a_pruned_thread_brings_it_back(group: Group) -> None:
    old = group.say("alice", "上周说的那本书叫什么")
    group.tracker.prune(group.now + 7_200)
    assert group.tracker.get(old.thread_id) is None
    late = group.say("bob", "《三体》", reply_to="1", after=7_300)
    assert late.thread_id == old.thread_id
    assert late.reason == "reply"
    assert group.tracker.get(old.thread_id) is not None


def test_the_same_people_within_the_gap_stay_in_one_thread(group: Group) -> None:
    a = group.say("alice", "今晚吃火锅还是烧烤")
    b = group.say("bob", "火锅吧，天冷", at=("alice",), after=20)
    c = group.say("alice", "好，那七点见", after=30)
    assert a.thread_id == b.thread_id == c.thread_id
    assert b.reason == "mention"


def test_someone_who_was_asked_answers_in_the_thread_that_asked(group: Group) -> None:
    ask = group.say("carol", "bob 周六有空帮我搬家吗", at=("bob",))
    other = group.say("dave", "有人知道 docker 网络怎么配吗", after=20)
    answer = group.say("bob", "行啊，几点？", after=30)
    assert other.thread_id != ask.thread_id
    assert answer.thread_id == ask.thread_id
    assert answer.reason == "addressed"


def test_after_a_long_silence_the_same_speaker_opens_a_new_thread(group: Group) -> None:
    first = group.say("alice", "今晚吃火锅还是烧烤")
    group.say("bob", "火锅吧", at=("alice",), after=20)
    later = group.say("alice", "明天有人一起打羽毛球吗", after=3_600)
    assert later.created
    assert later.thread_id != first.thread_id


def test_plain_adr_recency_rule_when_configured(tracker: ThreadTracker) -> None:
    adr = dataclasses.replace(tracker.settings, weight_recent=1.0, join_threshold=0.5)
    group = Group(ThreadTracker(adr))
    first = group.say("alice", "在吗")
    within = group.say("bob", "明天考试", after=60)
    beyond = group.say("carol", "有人看球吗", after=adr.gap + 1)
    assert within.thread_id == first.thread_id
    assert within.reason == "recent"
    assert beyond.created


# -- signals beyond design/0002: mention, speaker, addressed, terms ----------------------------------


def test_a_mention_pulls_the_message_into_the_named_persons_thread(group: Group) -> None:
    games = group.say("alice", "有人玩过新出的那个塞尔达吗")
    food = group.say("bob", "楼下新开的拉面店怎么样", after=20)
    assert food.thread_id != games.thread_id
    answer = group.say("carol", "玩过，神庙挺难", at=("alice",), after=5)
    assert answer.thread_id == games.thread_id
    assert answer.reason == "mention"


def test_a_mention_prefers_where_the_two_last_talked(group: Group) -> None:
    # Dave helps two people; when erin @-s him, she goes on with her own exchange, not his latest one.
    erin_q = group.say("erin", "我的路由器老是掉线")
    group.say("dave", "重启试试", at=("erin",), after=10)
    frank_q = group.say("frank", "Python 的 asyncio 怎么取消任务", after=10)
    group.say("dave", "task.cancel() 然后 await 它", at=("frank",), after=10)
    back = group.say("erin", "重启了还是不行", at=("dave",), after=10)
    assert back.thread_id == erin_q.thread_id
    assert back.thread_id != frank_q.thread_id


def test_the_speaker_goes_on_in_their_own_thread(group: Group) -> None:
    mine = group.say("alice", "我家猫今天把花瓶打碎了")
    group.say("bob", "有人知道 rust 的 borrow checker 怎么绕吗", after=10)
    more = group.say("alice", "还好没伤到自己", after=20)
    assert more.thread_id == mine.thread_id
    assert more.reason == "speaker"


def test_shared_words_join_a_newcomer_to_the_right_thread(group: Group) -> None:
    gpu = group.say("alice", "新买的显卡驱动装不上，一直报错")
    group.say("bob", "显卡型号是多少", at=("alice",), after=10)
    trip = group.say("carol", "五一去成都旅游，求推荐景点", after=10)
    group.say("dave", "成都的宽窄巷子不错", at=("carol",), after=10)
    newcomer = group.say("erin", "我的显卡驱动也装不上，也是报错", after=10)
    assert newcomer.thread_id == gpu.thread_id
    assert newcomer.thread_id != trip.thread_id
    assert newcomer.reason == "terms"


def test_an_unrelated_newcomer_starts_a_new_thread(group: Group) -> None:
    group.say("alice", "新买的显卡驱动装不上，一直报错")
    group.say("bob", "显卡型号是多少", at=("alice",), after=10)
    stranger = group.say("zoe", "明天北京下雪吗", after=10)
    assert stranger.created


def test_interleaved_chinese_conversations_are_kept_apart(group: Group) -> None:
    script = [
        ("alice", "周末谁去看电影？新上映的科幻片", (), "movie"),
        ("bob", "我的笔记本风扇声音特别大", (), "laptop"),
        ("carol", "我去！几点的场次", ("alice",), "movie"),
        ("dave", "清一下灰，风扇积灰会响", ("bob",), "laptop"),
        ("alice", "晚上七点那场，万达影城", (), "movie"),
        ("bob", "上周刚清过灰，风扇还是响", ("dave",), "laptop"),
        ("carol", "好，那我先买票", (), "movie"),
        ("dave", "那可能是风扇轴承坏了，换一个吧", (), "laptop"),
        ("erin", "万达影城那场还有票吗，我也想去", (), "movie"),
        ("bob", "行，我去淘宝买个风扇", (), "laptop"),
    ]
    by_thread: dict[str, set[str]] = defaultdict(set)
    for sender, text, at, topic in script:
        by_thread[group.say(sender, text, at=at, after=15).thread_id].add(topic)
    assert sorted(map(sorted, by_thread.values())) == [["laptop"], ["movie"]]


def test_a_private_chat_follows_the_adr_recency_rule(tracker: ThreadTracker) -> None:
    def dm(sender: str, text: str, at: float, mid: str) -> ThreadAssignment:
        return tracker.assign(
            ChatMessage(mid, ChatKind.PRIVATE, "42", sender, sender, at, text, from_self=sender == "bot")
        )

    first = dm("42", "帮我查一下明天的天气", 1_000.0, "1")
    answer = dm("bot", "明天晴，最高十八度", 1_005.0, "2")
    topic_change = dm("42", "对了，推荐一部电影", 1_060.0, "3")
    much_later = dm("42", "早", 1_060.0 + tracker.settings.gap + 1, "4")
    assert first.created
    assert answer.thread_id == first.thread_id
    assert topic_change.thread_id == first.thread_id
    assert much_later.created


def test_chatter_joins_the_latest_thread_only_when_configured(tracker: ThreadTracker) -> None:
    assert not tracker.settings.chatter_joins_recent
    on = dataclasses.replace(tracker.settings, chatter_joins_recent=True)
    group = Group(ThreadTracker(on))
    topic = group.say("alice", "刚看完那场球赛，绝杀太精彩了")
    laugh = group.say("bob", "哈哈哈哈", after=5)
    assert laugh.thread_id == topic.thread_id
    assert laugh.reason == "recent"


# -- chats are separate ------------------------------------------------------------------------------


def test_groups_never_share_threads(tracker: ThreadTracker) -> None:
    one, two = Group(tracker, "1"), Group(tracker, "2")
    a = one.say("alice", "显卡驱动装不上")
    b = two.say("alice", "显卡驱动装不上")  # same person, same words, same message id
    c = two.say("bob", "回复", reply_to="1")  # "1" here is group 2's own message
    d = two.say("carol", "显卡驱动要先卸载", at=("alice",))
    assert a.thread_id != b.thread_id
    assert {b.thread_id, c.thread_id, d.thread_id} == {b.thread_id}
    assert tracker.thread_of("group:1", "1") == a.thread_id
    assert tracker.thread_of("group:2", "1") == b.thread_id
    assert tracker.thread_of("group:3", "1") is None
    assert [t.id for t in tracker.recent("group:1", one.now)] == [a.thread_id]


def test_a_reply_to_an_unknown_message_is_scored_like_any_other(group: Group) -> None:
    lone = group.say("alice", "有人在吗", reply_to="no-such-message")
    assert lone.created


# -- bounds and housekeeping -----------------------------------------------------------------------


def test_threads_per_chat_are_capped(tracker: ThreadTracker) -> None:
    small = dataclasses.replace(tracker.settings, max_threads_per_chat=5)
    group = Group(ThreadTracker(small))
    for i in range(50):
        group.say(f"user{i}", f"topic{i} subject{i}", after=400)
    stats = group.tracker.statistics()
    assert stats.threads == 5
    assert stats.created == 50
    assert stats.pruned == 45


def test_chats_are_capped_oldest_first(tracker: ThreadTracker) -> None:
    small = dataclasses.replace(tracker.settings, max_chats=3)
    capped = ThreadTracker(small)
    groups = [Group(capped, str(i)) for i in range(5)]
    for g in groups:
        g.say("alice", "大家好")
    assert capped.statistics().chats == 3
    assert capped.thread_of(groups[0].chat_id, "1") is None
    assert capped.thread_of(groups[4].chat_id, "1") is not None


def test_vocabulary_stays_bounded_in_a_long_conversation(tracker: ThreadTracker) -> None:
    group = Group(tracker)
    for i in range(3_000):
        group.say("alice", f"word{i} term{i % 7} 话题{i % 13}号 thing{i * 7}", after=3)
    stats = tracker.statistics()
    assert stats.threads == 1
    assert stats.remembered_messages == tracker.settings.max_messages_per_chat
    assert stats.indexed_terms <= 2 * tracker.settings.max_terms_per_thread


def test_dropped_threads_leave_no_vocabulary_behind(tracker: ThreadTracker) -> None:
    small = dataclasses.replace(tracker.settings, max_threads_per_chat=4)
    capped = ThreadTracker(small)
    group = Group(capped)
    for i in range(200):
        group.say(f"user{i}", f"alpha{i} beta{i} gamma{i}", after=400)
    assert capped.statistics().indexed_terms == 4 * 3
    capped.prune(group.now + 86_400)
    assert capped.statistics().indexed_terms == 0


def test_remembered_message_ids_are_capped(tracker: ThreadTracker) -> None:
    small = dataclasses.replace(tracker.settings, max_messages_per_chat=10)
    group = Group(ThreadTracker(small))
    for i in range(30):
        group.say("alice", f"第{i}条", after=1)
    assert group.tracker.thread_of(group.chat_id, "1") is None
    assert group.tracker.thread_of(group.chat_id, "30") is not None


def test_prune_drops_idle_threads_and_recent_lists_newest_first(group: Group) -> None:
    old = group.say("alice", "早上好，今天开会吗")
    mid = group.say("bob", "有人知道 docker 网络怎么配吗", after=1_500)
    new = group.say("carol", "下午茶喝奶茶还是咖啡", after=600)
    recent = group.tracker.recent(group.chat_id, group.now)
    assert [t.id for t in recent] == [new.thread_id, mid.thread_id]  # the oldest is past the horizon
    assert group.tracker.prune(group.now) == 1
    assert group.tracker.get(old.thread_id) is None
    assert group.tracker.get(new.thread_id) is not None
    assert group.tracker.prune(group.now + 10_000) == 2
    assert group.tracker.statistics().chats == 1  # still remembers its message ids for replies
    assert group.tracker.prune(group.now + 2 * 86_400) == 0
    assert group.tracker.statistics().chats == 0


def test_statistics_count_reasons(group: Group) -> None:
    group.say("alice", "今晚吃火锅还是烧烤")
    group.say("bob", "火锅", at=("alice",))
    group.say("carol", "加一", reply_to="2")
    stats = group.tracker.statistics()
    assert dict(stats.by_reason) == {"new": 1, "mention": 1, "reply": 1}
    assert (stats.assigned, stats.created, stats.chats, stats.threads) == (3, 1, 1, 1)


def test_snapshots_keep_recent_ids_and_participants(group: Group) -> None:
    group.say("alice", "今晚吃火锅还是烧烤")
    for i in range(40):
        last = group.say("bob" if i % 2 else "alice", f"火锅{i}", reply_to="1")
    thread = last.thread
    assert thread.message_count == 41
    assert len(thread.message_ids) <= 32
    assert thread.message_ids[-1] == "41"
    assert set(thread.participants) == {"alice", "bob"}


# -- settings -------------------------------------------------------------------------------------


def test_settings_come_from_config_in_seconds() -> None:
    cfg = ThreadsConfig(gap_ms=120_000, horizon_ms=600_000, speaker_span_ms=90_000)
    settings = ThreadSettings.from_config(cfg)
    assert (settings.gap, settings.horizon, settings.speaker_span) == (120.0, 600.0, 90.0)
    assert ThreadSettings.from_config(ThreadsConfig()) == ThreadSettings()  # one set of defaults


def test_config_refuses_a_horizon_shorter_than_the_gap_by_name() -> None:
    with pytest.raises(ConfigError, match="horizon_ms"):
        parse_config({"threads": {"gap_ms": 600_000, "horizon_ms": 60_000}})
    with pytest.raises(ConfigError, match=r"threads\.weight_pair"):
        parse_config({"threads": {"weight_pair": -1}})


@pytest.mark.parametrize(
    ("patch", "key"),
    [
        ({"gap": 0.0}, "threads.gap"),
        ({"horizon": 10.0}, "threads.horizon"),
        ({"max_candidates": 0}, "threads.max_candidates"),
    ],
)
def test_bad_settings_are_refused_by_name(patch: dict[str, float], key: str) -> None:
    with pytest.raises(InvalidSetting, match=key):
        ThreadSettings(**patch)  # type: ignore[arg-type]


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x00\x00",
        "\u200b\u200c\u200d\ufeff",
        "😀🎉👍🏻\U0001f9d1\u200d\U0001f4bb",
        "a\x00b 显\u200b卡 🀄 𠀀𠀁𪚥",
        "x" * 200_000,
        "显卡驱动" * 50_000,
        " ".join(["word"] * 100_000),
    ],
)
def test_bad_text_never_raises(group: Group, text: str) -> None:
    first = group.say("alice", text)
    second = group.say("bob", text, after=1)
    assert first.thread_id.startswith("th-")
    assert second.thread_id.startswith("th-")


def test_features_read_a_bounded_prefix() -> None:
    tail = "zebra 斑马条纹"
    assert extract_terms("显卡 " * 10 + tail, max_chars=1_000)
    assert "zebra" not in extract_terms("x " * 600 + tail, max_chars=1_000)
    assert len(extract_terms(" ".join(f"w{i}x" for i in range(5_000)), max_terms=48)) == 48
    assert extract_terms("Python3.11 和 asyncio 的 TaskGroup") == ("python3.11", "asyncio", "taskgroup")


# -- property: any traffic, any text -----------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("显卡驱动火锅电影风扇周末爬山的了吗我你"),
        st.characters(min_codepoint=0, max_codepoint=0x2FFFF),
    ),
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),  # group
            st.integers(0, 5),  # sender
            _TEXT,
            st.floats(0.0, 2_000.0),  # seconds since the previous message
            st.lists(st.integers(0, 5), max_size=2),  # mentions
            st.one_of(st.none(), st.integers(0, 40)),  # reply to an earlier message id
        ),
        max_size=40,
    )
)
def test_any_traffic_keeps_chats_apart_and_bounded(
    traffic: list[tuple[int, int, str, float, list[int], int | None]],
) -> None:
    small = ThreadSettings(max_threads_per_chat=4, max_messages_per_chat=8)
    tracker = ThreadTracker(small)
    now = 1_000.0
    thread_chat: dict[str, str] = {}
    for n, (group, sender, text, after, mentions, reply) in enumerate(traffic):
        now += after
        message = ChatMessage(
            message_id=str(n),
            chat_kind=ChatKind.GROUP,
            chat_ident=str(group),
            sender_id=f"u{sender}",
            sender_name=f"u{sender}",
            time=now,
            text=text,
            mentions=tuple(f"u{m}" for m in mentions),
            reply_to=None if reply is None else str(reply),
        )
        # Looked up before assigning: the reply itself may push its target out of the bounded memory.
        target = None if reply is None else tracker.thread_of(message.chat_id, str(reply))
        assignment = tracker.assign(message)
        # a thread id belongs to one chat forever
        assert thread_chat.setdefault(assignment.thread_id, message.chat_id) == message.chat_id
        assert tracker.thread_of(message.chat_id, message.message_id) == assignment.thread_id
        if target is not None:
            assert (assignment.thread_id, assignment.reason) == (target, "reply")
    stats = tracker.statistics()
    assert stats.threads <= 3 * small.max_threads_per_chat
    assert stats.remembered_messages <= 3 * small.max_messages_per_chat
    assert stats.assigned == len(traffic)
