"""The compression request: the newest messages within the cap, the old summary folded in, and
the debug directory names."""

from __future__ import annotations

import json

from runtime.context.tokens import RoughTokenCounter
from runtime.kernel.message import SENT_ELSEWHERE_LABEL
from runtime.memory.export import safe_name
from runtime.memory.prompt import COMPRESSION_MARKER, compression_messages, select_transcript
from runtime.memory.summary import SummaryBody
from runtime.store.records import StoredMessage

COUNT = RoughTokenCounter().count


def messages(n: int) -> list[StoredMessage]:
    return [
        StoredMessage(
            "group:1", f"m{i}", f"u{i % 3}", f"群友{i % 3}", 1_795_000_000.0 + i, f"第{i}条消息，聊点别的"
        )
        for i in range(n)
    ]


def test_the_newest_messages_that_fit_are_kept_oldest_first() -> None:
    everything = messages(50)
    whole = select_transcript(everything, max_tokens=100_000, count=COUNT)
    assert len(whole.messages) == 50
    assert whole.omitted == 0
    capped = select_transcript(everything, max_tokens=whole.tokens // 5, count=COUNT)
    assert 0 < len(capped.messages) < 50
    assert capped.omitted == 50 - len(capped.messages)
    assert capped.messages == tuple(everything[-len(capped.messages) :])
    assert capped.tokens <= whole.tokens // 5


def test_recalled_and_empty_messages_are_left_out() -> None:
    [kept] = messages(1)
    chosen = select_transcript(
        [
            kept,
            StoredMessage("group:1", "r", "u1", "群友1", 2.0, "撤回的话", recalled=True),
            StoredMessage("group:1", "e", "u1", "群友1", 3.0, "   "),
        ],
        max_tokens=1_000,
        count=COUNT,
    )
    assert [m.message_id for m in chosen.messages] == [kept.message_id]


def test_the_request_carries_the_old_summary_and_only_the_new_messages() -> None:
    old = SummaryBody.model_validate({"confirmed_decisions": ["记住：项目代号叫青鸟。"]})
    transcript = select_transcript(messages(6), max_tokens=30, count=COUNT)
    system, user = compression_messages(old, transcript, first_round=11, last_round=20)
    assert system["role"] == "system"
    assert system["content"].startswith(COMPRESSION_MARKER)
    head, new = user["content"].split("【新的对话】", 1)
    assert json.loads(head.removeprefix("【旧摘要】\n"))["confirmed_decisions"] == ["记住：项目代号叫青鸟。"]
    assert "第 11–20 轮" in new
    assert f"更早的 {transcript.omitted} 条消息因篇幅省略" in new
    assert "第5条消息" in new
    assert "第0条消息" not in new


def test_the_personas_words_and_what_its_account_sent_elsewhere_are_told_apart() -> None:
    said = [
        StoredMessage("group:1", "a", "10000", "灰风", 1.0, "我来查一下", from_self=True),
        StoredMessage("group:1", "b", "10000", "灰风", 2.0, "明天停服", from_self=True, sent_elsewhere=True),
    ]
    transcript = select_transcript(said, max_tokens=1_000, count=COUNT)
    _system, user = compression_messages(SummaryBody(), transcript, first_round=1, last_round=2)
    assert "灰风（人格体本人）: 我来查一下" in user["content"]
    assert f"{SENT_ELSEWHERE_LABEL} 灰风: 明天停服" in user["content"]
    assert "（人格体本人）: 明天停服" not in user["content"]


def test_directory_names_are_safe_and_distinct() -> None:
    assert safe_name("group:123") == "group_123"
    assert safe_name("private:42") == "private_42"
    assert safe_name("qq:10001:group:123") == "qq_10001_group_123"
    names = {
        safe_name(k)
        for k in (
            "group:1",
            "group_1",
            "qq:1:group:1",
            "qq_1_group_1",
            "../etc",
            "a/b",
            "a_b",
            "..",
            "x" * 200,
        )
    }
    assert len(names) == 9
    assert all("/" not in n and n not in (".", "..") for n in names)
