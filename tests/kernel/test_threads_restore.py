"""ThreadTracker.restore: conversation threads survive a restart, rebuilt from stored messages."""

from __future__ import annotations

import random

import pytest

from runtime.kernel.kernel import Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.kernel.threads import RestoredMessage, ThreadAssignment, ThreadSettings, ThreadTracker

START = 1_767_225_600.0


def message(
    mid: str,
    sender: str,
    text: str,
    at: float,
    *,
    group: str = "100",
    reply_to: str | None = None,
    mentions: tuple[str, ...] = (),
    from_self: bool = False,
) -> ChatMessage:
    return ChatMessage(
        message_id=mid,
        chat_kind=ChatKind.GROUP,
        chat_ident=group,
        sender_id=sender,
        sender_name=sender,
        time=at,
        text=text,
        mentions=mentions,
        reply_to=reply_to,
        from_self=from_self,
    )


class Chat:
    """A scripted group chat that keeps what the store keeps: each message with its thread id."""

    def __init__(self, tracker: ThreadTracker, ident: str = "100") -> None:
        self.tracker = tracker
        self.ident = ident
        self.now = START
        self.next_id = 1
        self.log: list[RestoredMessage] = []

    def say(
        self,
        sender: str,
        text: str,
        *,
        after: float = 10.0,
        at: tuple[str, ...] = (),
        reply_to: str | None = None,
    ) -> ThreadAssignment:
        self.now += after
        msg = message(
            str(self.next_id), sender, text, self.now, group=self.ident, reply_to=reply_to, mentions=at
        )
        self.next_id += 1
        assignment = self.tracker.assign(msg)
        self.log.append(RestoredMessage(msg, assignment.thread_id))
        return assignment

    def restart(self, now: float | None = None) -> ThreadTracker:
        """A fresh tracker with the same settings, restored from the log; the chat goes on there."""
        fresh = ThreadTracker(self.tracker.settings)
        fresh.restore(list(reversed(self.log)), self.now if now is None else now)  # order is restore's job
        self.tracker = fresh
        return fresh


def test_a_reply_to_a_message_from_before_the_restart_joins_its_thread() -> None:
    chat = Chat(ThreadTracker())
    hike = chat.say("alice", "周末去哪里爬山比较好")
    gpu = chat.say("bob", "显卡驱动又崩了，蓝屏", after=30)
    chat.say("dave", "重装驱动试试", reply_to="2", after=20)
    chat.restart()

    answer = chat.say("carol", "香山吧", reply_to="1", after=60)

    assert answer.thread_id == hike.thread_id != gpu.thread_id
    assert answer.reason == "reply"
    assert not answer.created
    assert answer.thread.participants == ("alice", "carol")
    assert answer.thread.message_count == 2
    assert answer.thread.message_ids == ("1", "4")


def test_the_same_speaker_goes_on_in_the_restored_thread() -> None:
    chat = Chat(ThreadTracker())
    dinner = chat.say("alice", "今晚吃火锅还是烧烤")
    chat.say("bob", "火锅吧，天冷", at=("alice",), after=20)
    chat.restart()

    follow_up = chat.say("alice", "好，那七点见", after=30)

    assert follow_up.thread_id == dinner.thread_id
    assert not follow_up.created
    assert chat.tracker.statistics().created == 0


def test_someone_asked_before_the_restart_answers_in_the_asking_thread() -> None:
    chat = Chat(ThreadTracker())
    ask = chat.say("carol", "bob 周六有空帮我搬家吗", at=("bob",))
    other = chat.say("dave", "有人知道 docker 网络怎么配吗", after=20)
    chat.restart()

    answer = chat.say("bob", "行啊，几点？", after=30)

    assert other.thread_id != ask.thread_id
    assert answer.thread_id == ask.thread_id
    assert answer.reason == "addressed"


# Two conversations interleaved, then a third; replies, @s, shared words and a pause.
SCRIPT: list[tuple[str, str, dict[str, object]]] = [
    ("alice", "周末去哪里爬山比较好", {}),
    ("bob", "显卡驱动又崩了，蓝屏", {"after": 15}),
    ("carol", "香山吧，红叶正好", {"reply_to": "1"}),
    ("dave", "驱动回滚到上个版本试试", {"at": ("bob",)}),
    ("alice", "香山人太多了吧", {}),
    ("bob", "回滚了，还是蓝屏", {}),
    ("erin", "红叶季香山要早点去", {"after": 40}),
    ("dave", "那就是电源的问题", {"reply_to": "6"}),
    ("frank", "有人看昨晚的球赛吗", {"after": 200}),
    ("alice", "好，那我们早上六点出发", {"at": ("carol",)}),
    ("gina", "看了，点球太可惜", {"reply_to": "9"}),
    ("bob", "换了电源好了，谢谢", {"after": 30}),
    ("frank", "裁判那个判罚有问题", {}),
    ("carol", "六点可以", {}),
]


@pytest.mark.parametrize("split", range(1, len(SCRIPT)))
def test_a_restored_tracker_decides_like_one_that_never_stopped(split: int) -> None:
    kept = Chat(ThreadTracker())
    restarted = Chat(ThreadTracker())
    for sender, text, options in SCRIPT[:split]:
        kept.say(sender, text, **options)  # type: ignore[arg-type]
        restarted.say(sender, text, **options)  # type: ignore[arg-type]
    restarted.restart()
    kept.tracker.prune(kept.now)  # the restore drops what a prune at the restart would drop

    for sender, text, options in SCRIPT[split:]:
        a = kept.say(sender, text, **options)  # type: ignore[arg-type]
        b = restarted.say(sender, text, **options)  # type: ignore[arg-type]
        assert (b.thread_id, b.reason, b.created) == (a.thread_id, a.reason, a.created), text
        assert b.thread == a.thread


def test_restored_ids_are_never_issued_again() -> None:
    chat_id = "group:100"
    stored = [
        RestoredMessage(message("1", "alice", "周末去哪里爬山比较好", START), "th-1"),
        RestoredMessage(message("2", "bob", "显卡驱动又崩了", START + 10), "th-2"),
        RestoredMessage(message("3", "carol", "有人看球赛吗", START + 20), "th-5"),
    ]
    tracker = ThreadTracker()
    # Restored long after: the threads are idle past the horizon and no longer live.
    later = START + 3_600
    assert tracker.restore(stored, later) == 3
    assert tracker.recent(chat_id, later) == []

    fresh = [
        tracker.assign(message(str(10 + i), f"user{i}", f"新话题{i}号 topic{i}", later + 400 * i))
        for i in range(1, 7)
    ]
    new_ids = [a.thread_id for a in fresh]
    assert all(a.created for a in fresh)
    assert not {"th-1", "th-2", "th-5"} & set(new_ids)
    assert len(set(new_ids)) == len(new_ids)

    # A reply to a restored message brings its thread back under its own id, nobody else's.
    revived = tracker.assign(message("30", "dave", "回滚驱动", later + 3_000, reply_to="2"))
    assert revived.thread_id == "th-2"
    assert revived.thread.participants == ("dave",)


def test_bounds_hold_with_many_restored_messages() -> None:
    settings = ThreadSettings(
        max_threads_per_chat=8, max_messages_per_chat=50, max_terms_per_thread=4, max_chats=3
    )
    rng = random.Random(7)
    words = ["原神", "显卡", "火锅", "爬山", "球赛", "docker", "python", "搬家", "红叶", "电源"]
    stored = []
    for n in range(4_000):
        group = str(rng.randrange(5))
        text = " ".join(rng.sample(words, 3)) + f" w{rng.randrange(500)}"
        stored.append(
            RestoredMessage(
                message(f"m{n}", f"u{rng.randrange(100)}", text, START + n, group=group),
                f"th-g{group}-{rng.randrange(300)}",
            )
        )
    tracker = ThreadTracker(settings)

    assert tracker.restore(stored, START + 4_000) == 4_000

    stats = tracker.statistics()
    assert stats.restored == 4_000
    assert stats.chats <= 3
    assert stats.threads <= 3 * 8
    assert stats.remembered_messages <= 3 * 50
    assert stats.indexed_terms <= stats.threads * 2 * 4
    for group in map(str, range(5)):
        for thread in tracker.recent(f"group:{group}", START + 4_000, limit=100):
            assert len(thread.message_ids) <= 32
            assert len(thread.participants) <= 32


def test_groups_stay_apart() -> None:
    stored = [
        RestoredMessage(message("1", "alice", "周末去哪里爬山", START, group="100"), "th-1"),
        RestoredMessage(message("1", "bob", "显卡驱动又崩了", START + 5, group="200"), "th-2"),
        # A stored message claiming group 100's thread from group 200 is left out.
        RestoredMessage(message("2", "mallory", "爬山爬山", START + 8, group="200"), "th-1"),
    ]
    tracker = ThreadTracker()

    assert tracker.restore(stored, START + 10) == 2

    assert tracker.thread_of("group:200", "2") is None
    hike = tracker.get("th-1")
    assert hike is not None
    assert (hike.chat_id, hike.participants) == ("group:100", ("alice",))
    answer = tracker.assign(message("3", "carol", "重装驱动试试", START + 20, group="200", reply_to="1"))
    assert answer.thread_id == "th-2"
    assert answer.thread.chat_id == "group:200"
    other = tracker.assign(message("2", "dave", "香山吧", START + 25, group="100", reply_to="1"))
    assert other.thread_id == "th-1"


def test_the_kernel_remembers_the_threads_the_bot_spoke_in() -> None:
    settings = KernelSettings(self_ids=("10001",))
    before = Kernel(settings)
    asked = before.ingest(message("1", "alice", "灰风，周末去哪里爬山好", START, mentions=("10001",)))
    own = message("2", "10001", "香山吧，红叶正好", START + 5, from_self=True)
    said = before.note_outgoing(own)
    stored = [
        RestoredMessage(asked.message, asked.thread.thread_id),
        RestoredMessage(own, said.thread_id),
    ]
    after = Kernel(settings)

    assert after.restore_threads(stored, START + 30) == 2

    reply = message("3", "alice", "人会不会太多", START + 40, reply_to="2")
    a, b = before.ingest(reply), after.ingest(reply)
    assert b.thread.thread_id == a.thread.thread_id == asked.thread.thread_id
    # The reply goes to the bot in a thread it spoke in: both kernels weigh it alike.
    assert b.attention == a.attention
    assert after.statistics().threads.restored == 2
