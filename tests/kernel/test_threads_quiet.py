"""A quiet group: the same few people, one topic after another, minutes of silence between them.

"The thread they spoke in" chains such a chat into one long thread (the failure of the recency rule in
quiet channels); the tracker starts a new thread when a thread idle past the gap holds none of the
message's words, so each conversation keeps to its topic.
"""

from __future__ import annotations

import random
from collections import defaultdict

from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.threads import ThreadTracker

TOPICS = tuple(
    words.split()
    for words in (
        "显卡 驱动 蓝屏 回滚 版本",
        "周末 爬山 香山 红叶 出发",
        "火锅 烧烤 七点 预订 餐厅",
        "考试 复习 高数 挂科 老师",
        "猫粮 猫砂 绝育 疫苗 宠物",
        "电影 科幻 场次 影城 买票",
        "租房 押金 房东 合同 中介",
        "跑步 膝盖 马拉松 配速 跑鞋",
        "硬盘 备份 群晖 照片 相册",
        "简历 面试 薪资 跳槽 老板",
    )
)
FILLER = ("哈哈", "好的", "是吗", "我觉得", "可以", "真的", "然后", "嗯嗯")
REGULARS = ("u0", "u1", "u2", "u3", "u4")


def quiet_group(seed: int, conversations: int = 40) -> list[tuple[ChatMessage, int]]:
    """Messages and the topic of their conversation: 2-3 of five regulars at a time, 4-13 messages
    a conversation (10-90 s apart), 6-25 minutes of silence before the next."""
    rng = random.Random(seed)
    when = 1_767_225_600.0
    out: list[tuple[ChatMessage, int]] = []
    for _ in range(conversations):
        when += rng.uniform(360.0, 1_500.0)
        people = rng.sample(REGULARS, rng.choice((2, 2, 3)))
        topic = rng.randrange(len(TOPICS))
        for turn in range(rng.randrange(4, 14)):
            when += rng.uniform(10.0, 90.0)
            sender = people[turn % len(people)] if rng.random() < 0.7 else rng.choice(people)
            words = [*rng.sample(TOPICS[topic], 2), rng.choice(FILLER)]
            rng.shuffle(words)
            text = "".join(words)
            message = ChatMessage(
                message_id=str(len(out)),
                chat_kind=ChatKind.GROUP,
                chat_ident="quiet",
                sender_id=sender,
                sender_name=sender,
                time=when,
                text=text,
            )
            out.append((message, topic))
    return out


def test_a_quiet_group_of_regulars_keeps_each_topic_in_its_own_threads() -> None:
    for seed in range(3):
        tracker = ThreadTracker()
        topics: defaultdict[str, set[int]] = defaultdict(set)
        for message, topic in quiet_group(seed):
            topics[tracker.assign(message).thread_id].add(topic)
        assert max(len(held) for held in topics.values()) == 1, f"seed {seed}: a thread mixes topics"
