"""The account-wide rate limiter, send gates, reply splitting and the outbound sender, on a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from time import time as wall_clock
from typing import Any

import anyio
import pytest

from plugins.greywind.outbound import (
    Account,
    BotApi,
    ChatGates,
    Outbound,
    SendResult,
    SentRecord,
    TokenBucket,
    split_reply,
)
from runtime.quiet import QUIET_ASKED, QUIET_IMPOSED
from tests.edge.helpers import FakeBot, FakeTime


def make_outbound(
    bot: FakeBot | None, time: FakeTime, *, shadow: bool = False, per_minute: int = 20, burst: int = 5
) -> tuple[Outbound, list[SentRecord]]:
    records: list[SentRecord] = []
    outbound = Outbound(
        bot=lambda _chat: Account("10000", bot) if bot is not None else None,
        bucket=TokenBucket(per_minute, burst, clock=time, sleep=time.sleep),
        gates=ChatGates(),
        clock=time,
        sleep=time.sleep,
        max_reply_chars=600,
        split_at=200,
        retry_delay=1.5,
        shadow_mode=shadow,
        on_sent=records.append,
    )
    return outbound, records


# -- token bucket ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_bucket_allows_the_burst_then_paces_at_the_rate() -> None:
    time = FakeTime()
    bucket = TokenBucket(60, 5, clock=time, sleep=time.sleep)
    start = time.now
    for _ in range(5):
        await bucket.acquire()
    assert time.now == start
    await bucket.acquire()
    assert time.now == pytest.approx(start + 1.0)
    await bucket.acquire()
    assert time.now == pytest.approx(start + 2.0)


@pytest.mark.anyio
async def test_bucket_holds_the_rate_for_concurrent_callers() -> None:
    time = FakeTime()
    bucket = TokenBucket(20, 5, clock=time, sleep=time.sleep)
    granted: list[float] = []

    async def take() -> None:
        await bucket.acquire()
        granted.append(time.now)

    start = time.now
    async with anyio.create_task_group() as tg:
        for _ in range(25):
            tg.start_soon(take)
    # 5 at once, then one every 3 s: within any window of T seconds, at most 5 + T/3 grants.
    assert len(granted) == 25
    assert max(granted) - start == pytest.approx(60.0, abs=0.01)
    for t in granted:
        assert sum(1 for g in granted if g <= t) <= 5 + (t - start) / 3.0 + 1e-6


def test_bucket_refills_up_to_the_burst_only() -> None:
    time = FakeTime()
    bucket = TokenBucket(60, 3, clock=time, sleep=time.sleep)
    assert all(bucket.acquire_nowait() for _ in range(3))
    assert not bucket.acquire_nowait()
    time.now += 3600
    assert sum(bucket.acquire_nowait() for _ in range(10)) == 3


@pytest.mark.anyio
async def test_a_cancelled_wait_gives_its_slot_back() -> None:
    clock = FakeTime()
    bucket = TokenBucket(60, 1, clock=clock, sleep=anyio.sleep)
    assert bucket.acquire_nowait()
    with anyio.move_on_after(0.01):
        await bucket.acquire()  # would wait ~1 s of the fake clock's rate, in real seconds
    assert bucket.statistics().backlog == 0
    clock.now += 1.0
    assert bucket.acquire_nowait()


def test_bucket_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError, match="positive rate"):
        TokenBucket(0, 1)


# -- splitting -----------------------------------------------------------------------------------


def test_short_reply_is_one_part() -> None:
    assert split_reply("  好的，马上。 ", max_chars=600, split_at=200) == ["好的，马上。"]


def test_blank_reply_is_nothing() -> None:
    assert split_reply(" \n \n", max_chars=600, split_at=200) == []


def test_long_reply_splits_at_sentence_ends_within_the_limit() -> None:
    sentence = "这是一句不太长的话。"  # 10 chars
    parts = split_reply(sentence * 50, max_chars=600, split_at=200)
    assert len(parts) >= 3
    assert all(len(p) <= 200 for p in parts)
    assert all(p.endswith("。") for p in parts)
    assert "".join(parts) == sentence * 50


def test_overlong_reply_is_capped_with_a_marker() -> None:
    parts = split_reply("字" * 5_000, max_chars=600, split_at=200)
    joined = "".join(parts)
    assert len(joined) == 600
    assert joined.endswith("…")
    assert all(len(p) <= 200 for p in parts)


def test_lines_are_preferred_break_points() -> None:
    text = ("第一段" * 20) + "\n" + ("第二段" * 20)
    assert split_reply(text, max_chars=600, split_at=100) == ["第一段" * 20, "第二段" * 20]


# -- gates ---------------------------------------------------------------------------------------


def test_a_timed_mute_opens_by_itself() -> None:
    gates = ChatGates()
    gates.mute("group:1", until=100.0)
    assert gates.verdict("group:1", 50.0).reason == "muted"
    assert gates.verdict("group:1", 100.0).open
    assert gates.verdict("group:2", 50.0).open


def test_a_mute_without_end_holds_until_lifted() -> None:
    gates = ChatGates()
    gates.quiet("group:1", until=None)
    assert gates.verdict("group:1", 10**12).reason == "quiet"
    assert gates.closed(0.0)["group:1"].reason == "quiet"
    assert gates.unquiet("group:1")
    assert not gates.unquiet("group:1")
    assert gates.verdict("group:1", 0.0).open


def test_members_lift_only_the_quiet_period_members_asked_for() -> None:
    gates = ChatGates()
    assert gates.quiet("group:1", 100.0, QUIET_ASKED, now=0.0)
    assert gates.verdict("group:1", 1.0).label == "quiet（成员要求）"
    assert gates.unquiet("group:1", only=QUIET_ASKED)
    assert gates.quiet("group:1", None, QUIET_IMPOSED)
    assert not gates.quiet("group:1", 100.0, QUIET_ASKED, now=0.0), "asked must not replace imposed"
    assert not gates.unquiet("group:1", only=QUIET_ASKED)
    verdict = gates.verdict("group:1", 10**12)
    assert (verdict.reason, verdict.kind, verdict.until) == ("quiet", QUIET_IMPOSED, None)
    assert verdict.label == "quiet（管理员）"
    assert gates.unquiet("group:1")  # /unmute lifts either kind
    assert gates.verdict("group:1", 0.0).open


# -- outbound ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_group_reply_goes_out_as_segments_with_a_quote() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, records = make_outbound(bot, time)
    result = await outbound.send("group:123", "好的 [CQ:at,qq=all] 收到", reply_to="77")
    assert result.sent
    assert result.reason == "sent"
    api, data, _ = bot.calls[0]
    assert api == "send_group_msg"
    assert data["group_id"] == 123
    # Text is a text segment: the platform never parses the model's "[CQ:at,qq=all]" as an @all.
    assert data["message"] == [
        {"type": "reply", "data": {"id": "77"}},
        {"type": "text", "data": {"text": "好的 [CQ:at,qq=all] 收到"}},
    ]
    assert [r.text for r in records] == ["好的 [CQ:at,qq=all] 收到"]
    assert outbound.is_own_message(result.message_ids[0])


@pytest.mark.anyio
async def test_a_part_is_timed_when_it_was_handed_over_not_when_the_platform_confirmed_it() -> None:
    # Another bot's instant answer can be heard before the platform's slow confirmation: timed from
    # the confirmation, the answer would come before the message it answers.
    time = FakeTime()
    bot = FakeBot(time, latency=0.8)
    outbound, records = make_outbound(bot, time)
    await outbound.send("group:1", "在的")
    handed_over = bot.calls[0][2]
    assert time.now == handed_over + 0.8
    assert [r.time for r in records] == [handed_over]


@pytest.mark.anyio
async def test_private_reply_uses_send_private_msg() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, _ = make_outbound(bot, time)
    await outbound.send("private:42", "你好")
    assert bot.calls[0][0] == "send_private_msg"
    assert bot.calls[0][1]["user_id"] == 42


@pytest.mark.anyio
async def test_a_failed_send_is_retried_once() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    bot.fail = 1
    outbound, records = make_outbound(bot, time)
    result = await outbound.send("group:1", "再试一次")
    assert result.sent
    assert result.attempts == 2
    assert len(bot.calls) == 2
    assert bot.calls[1][2] - bot.calls[0][2] >= 1.5
    assert len(records) == 1


@pytest.mark.anyio
async def test_two_failures_give_up_without_raising() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    bot.fail = 5
    outbound, records = make_outbound(bot, time)
    result = await outbound.send("group:1", "发不出去")
    assert not result.sent
    assert result.reason == "failed"
    assert len(bot.calls) == 2
    assert records == []
    assert outbound.statistics().failed_sends == 1


@pytest.mark.anyio
async def test_nothing_is_sent_to_a_muted_group_until_the_ban_ends() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, _ = make_outbound(bot, time)
    outbound.gates.mute("group:1", until=time.now + 600)
    assert (await outbound.send("group:1", "在吗")).reason == "muted"
    assert (await outbound.send("group:1", "在吗", admin=True)).reason == "muted"
    assert (await outbound.send("group:2", "别的群照常")).sent
    time.now += 601
    assert (await outbound.send("group:1", "解禁了")).sent
    assert [call[1].get("group_id") for call in bot.calls] == [2, 1]


@pytest.mark.anyio
async def test_a_quiet_period_holds_replies_but_not_admin_answers() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, _ = make_outbound(bot, time)
    outbound.gates.quiet("group:1", until=None)
    assert (await outbound.send("group:1", "我插一句")).reason == "quiet"
    assert (await outbound.send("group:1", "状态：正常", admin=True)).sent


@pytest.mark.anyio
async def test_shadow_mode_sends_nothing_and_records_what_it_would_have_sent() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, records = make_outbound(bot, time, shadow=True)
    result = await outbound.send("group:1", "我本来想说这句")
    assert not result.sent
    assert result.reason == "shadow"
    assert bot.calls == []
    assert [(r.text, r.shadow) for r in records] == [("我本来想说这句", True)]
    # An operator can still ask the bot for its status in private.
    assert (await outbound.send("private:9", "状态", admin=True)).sent
    assert (await outbound.send("group:1", "状态", admin=True)).reason == "shadow"


@pytest.mark.anyio
async def test_a_long_reply_goes_out_in_order_as_parts_quoting_once() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, records = make_outbound(bot, time)
    text = "。".join(f"第{i}句话说得比较长一点点" for i in range(40)) + "。"
    result = await outbound.send("group:1", text, reply_to="5")
    assert result.sent
    assert len(bot.calls) == len(result.parts) >= 3
    assert all(len(t) <= 200 for t in bot.texts())
    assert sum(seg["type"] == "reply" for _, data, _ in bot.calls for seg in data["message"]) == 1
    assert [r.text for r in records] == list(result.parts)


@pytest.mark.anyio
async def test_sends_across_groups_share_one_account_rate() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, _ = make_outbound(bot, time, per_minute=20, burst=5)
    start = time.now
    async with anyio.create_task_group() as tg:
        for i in range(25):
            tg.start_soon(outbound.send, f"group:{i % 5}", f"消息{i}")
    times = sorted(call[2] for call in bot.calls)
    assert len(times) == 25
    # max_per_minute=20 with a burst of 5: at most 5 + 10 sends in any first 30 seconds.
    assert len([t for t in times if t - start < 30.0 - 1e-6]) <= 15
    assert times[-1] - start == pytest.approx(60.0, abs=0.01)


@pytest.mark.anyio
async def test_no_connection_is_a_result_not_an_error() -> None:
    time = FakeTime()
    outbound, _ = make_outbound(None, time)
    result = await outbound.send("group:1", "有人吗")
    assert result.reason == "no_connection"
    assert not result.sent


@pytest.mark.anyio
async def test_a_failing_listener_does_not_stop_the_send() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    outbound, records = make_outbound(bot, time)

    def broken(_record: SentRecord) -> None:
        raise RuntimeError("listener bug")

    dispose = outbound.on_sent(broken)
    assert (await outbound.send("group:1", "照发")).sent
    dispose()
    assert len(records) == 1


@pytest.mark.anyio
async def test_the_retry_drops_the_quote() -> None:
    time = FakeTime()
    bot = FakeBot(time)
    bot.fail = 1  # e.g. the quoted message was recalled
    outbound, _ = make_outbound(bot, time)
    result = await outbound.send("group:1", "回答", reply_to="99")
    assert result.sent
    first, second = (data["message"] for _, data, _ in bot.calls)
    assert first[0] == {"type": "reply", "data": {"id": "99"}}
    assert [seg["type"] for seg in second] == ["text"]


class UnansweredBot:
    """Takes every call and never answers it: a slow implementation, or a restricted account."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def call_api(self, api: str, **data: Any) -> Any:
        self.calls.append(api)
        await anyio.sleep_forever()


class EchoingBot:
    """Never answers call number ``hang``, but an echo with that call's words and id ``echo`` comes back
    while it waits; answers every other call at once (ids 700 + the call's number; with ``ids`` false,
    without the id, as some implementations answer)."""

    def __init__(self, *, hang: int = 1, echo: str = "700", ids: bool = True) -> None:
        self.outbound: Outbound | None = None
        self.hang = hang
        self.echo = echo
        self.ids = ids
        self.calls: list[str] = []

    async def call_api(self, api: str, **data: Any) -> Any:
        text = data["message"][-1]["data"]["text"]
        self.calls.append(text)
        if len(self.calls) == self.hang:
            assert self.outbound is not None
            self.outbound.heard_own("group:1", self.echo, text, wall_clock())
            await anyio.sleep_forever()
        return {"message_id": 700 + len(self.calls)} if self.ids else {}


class ScriptedPlatform:
    """Calls numbered from 1: call ``n``'s echo (id ``echo(n)``, None for none) comes back at once; it
    is then never answered if ``hang(n)``, else answered with ``answer(n)``."""

    def __init__(
        self,
        *,
        echo: Callable[[int], str | None],
        hang: Callable[[int], bool] = lambda n: False,
        answer: Callable[[int], Any] = lambda n: {},
    ) -> None:
        self.outbound: Outbound | None = None
        self.echo, self.hang, self.answer = echo, hang, answer
        self.calls = 0
        self.in_flight: list[bool] = []  # for each echo: whether the outbound took it for its part

    async def call_api(self, api: str, **data: Any) -> Any:
        assert self.outbound is not None
        self.calls += 1
        text = data["message"][-1]["data"]["text"]
        if (echo := self.echo(self.calls)) is not None:
            self.outbound.heard_own("group:1", echo, text, wall_clock())
            self.in_flight.append(self.outbound.sent_it("group:1", echo, text))
        if self.hang(self.calls):
            await anyio.sleep_forever()
        return self.answer(self.calls)


def slow_outbound(
    bot: BotApi, records: list[SentRecord], *, split_at: int = 200, retry_delay: float = 0.0
) -> Outbound:
    """Sends through ``bot`` with a send timeout of 50 ms and no wait before a retry."""
    outbound = Outbound(
        bot=lambda _chat: Account("10000", bot),
        bucket=TokenBucket(600, 10),
        gates=ChatGates(),
        retry_delay=retry_delay,
        send_timeout=0.05,
        split_at=split_at,
        max_reply_chars=600,
        on_sent=records.append,
    )
    if isinstance(bot, EchoingBot | LosingBot | ScriptedPlatform | RewritingPlatform):
        bot.outbound = outbound
    return outbound


@pytest.mark.anyio
async def test_a_send_that_timed_out_is_not_sent_again() -> None:
    # It may have gone out all the same: a second copy would be read twice in the chat.
    bot = UnansweredBot()
    outbound = slow_outbound(bot, [])
    result = await outbound.send("group:1", "这句只发一次")
    assert (result.sent, result.reason, result.attempts) == (False, "unanswered", 1)
    assert bot.calls == ["send_group_msg"]


@pytest.mark.anyio
async def test_a_part_given_up_unanswered_is_recorded_when_its_echo_comes_later() -> None:
    # The chat's first send: nothing says yet that its echoes come, so the part is given up, not sent
    # again. Its echo, come late, says it went out: the bot's memory gets it then.
    bot = UnansweredBot()
    records: list[SentRecord] = []
    outbound = slow_outbound(bot, records)
    result = await outbound.send("group:1", "这句只发一次", reply_to="42")
    assert (result.sent, result.reason) == (False, "unanswered")
    assert records == []
    outbound.heard_own("group:1", "777", "这句只发一次", wall_clock())
    assert [(r.text, r.message_id, r.reply_to) for r in records] == [("这句只发一次", "777", "42")]
    assert outbound.sent_it("group:1", "777", "这句只发一次")  # the bot's words, not its owner's
    outbound.heard_own("group:1", "778", "这句只发一次", wall_clock())  # the same words again: not it
    assert len(records) == 1
    assert not outbound.sent_it("group:1", "778", "这句只发一次")


@pytest.mark.anyio
async def test_in_an_echoing_chat_a_part_unanswered_twice_is_recorded_when_its_echo_comes_at_last() -> None:
    records: list[SentRecord] = []
    # Answers and echoes the first call; takes the others and never answers them.
    platform = ScriptedPlatform(
        echo=lambda n: "880" if n == 1 else None, hang=lambda n: n > 1, answer=lambda n: {"message_id": "880"}
    )
    outbound = slow_outbound(platform, records)
    await outbound.send("group:1", "早上好")
    result = await outbound.send("group:1", "明天见")
    assert (result.sent, result.reason, platform.calls) == (False, "unanswered", 3)
    outbound.heard_own("group:1", "881", "明天见", wall_clock())
    assert [r.message_id for r in records] == ["880", "881"]


@pytest.mark.anyio
async def test_a_part_not_answered_in_time_but_echoed_back_counts_as_sent_and_the_rest_follows() -> None:
    bot = EchoingBot()
    records: list[SentRecord] = []
    outbound = slow_outbound(bot, records, split_at=4)
    result = await outbound.send("group:1", "第一句。第二句。", reply_to="42")
    assert (result.sent, result.reason) == (True, "sent")
    assert result.parts == ("第一句。", "第二句。")
    assert bot.calls == ["第一句。", "第二句。"]  # neither sent twice, the second not given up
    assert result.message_ids == ("700", "702")
    assert [(r.text, r.message_id, r.reply_to) for r in records] == [
        ("第一句。", "700", "42"),
        ("第二句。", "702", None),
    ]
    assert outbound.is_own_message("700")


@pytest.mark.anyio
async def test_an_echo_from_before_the_send_does_not_answer_for_it() -> None:
    # The bot said the same words a minute ago: that echo says nothing of this send.
    bot = UnansweredBot()
    records: list[SentRecord] = []
    outbound = slow_outbound(bot, records)
    outbound.heard_own("group:1", "600", "好的", wall_clock() - 60)
    outbound.heard_own("group:2", "601", "好的", wall_clock() + 1)  # another chat's
    result = await outbound.send("group:1", "好的")
    assert (result.sent, result.reason) == (False, "unanswered")
    assert records == []


@pytest.mark.anyio
async def test_the_late_echo_of_a_confirmed_send_does_not_answer_for_the_same_words_sent_again() -> None:
    # The first call is answered at once (701); its echo comes late, while the second call (the
    # same words) waits, never to be answered.
    bot = EchoingBot(hang=2, echo="701")
    records: list[SentRecord] = []
    outbound = slow_outbound(bot, records)
    first = await outbound.send("group:1", "好")
    second = await outbound.send("group:1", "好")
    assert (first.sent, first.message_ids) == (True, ("701",))
    # Not vouched for by 701's echo: the chat's echoes come and this part's did not, so it is sent
    # again (and answered this time).
    assert (second.sent, second.message_ids, second.attempts) == (True, ("703",), 2)
    assert [r.message_id for r in records] == ["701", "703"]


@pytest.mark.anyio
async def test_the_late_echo_of_an_id_less_confirmed_send_does_not_answer_for_the_same_words_again() -> None:
    # As above, but the platform confirms the first call without a message id: its echo (701) comes
    # late all the same, and is the first part's, not the second's.
    bot = EchoingBot(hang=2, echo="701", ids=False)
    records: list[SentRecord] = []
    outbound = slow_outbound(bot, records)
    first = await outbound.send("group:1", "好")
    second = await outbound.send("group:1", "好")
    assert first.sent
    assert (second.sent, second.attempts) == (True, 2)  # sent again: its own call never went out
    assert bot.calls == ["好", "好", "好"]
    assert len(records) == 2


@pytest.mark.anyio
async def test_an_echo_that_came_before_the_id_less_answer_leaves_the_next_echo_to_the_next_part() -> None:
    # The first part's echo comes before the platform's answer (without an id). The second part, the
    # same words, is not answered in time but its echo comes: it went out, and is not sent again.
    records: list[SentRecord] = []
    bot = ScriptedPlatform(echo=lambda n: str(900 + n), hang=lambda n: n == 2)
    outbound = slow_outbound(bot, records)
    first = await outbound.send("group:1", "好")
    assert first.message_ids == ("901",)  # the echo told the id the answer left out
    second = await outbound.send("group:1", "好")
    assert (second.sent, second.attempts, second.message_ids) == (True, 1, ("902",))
    assert bot.calls == 2


class LosingBot:
    """The platform reports this chat's own messages back; it loses the first call (never answered,
    never sent, so no echo) and answers the rest at once, echoing each; with ``late_echo`` the first
    call did go out after all, and its echo comes while the bot waits to try again."""

    def __init__(self, *, late_echo: bool = False) -> None:
        self.outbound: Outbound | None = None
        self.late_echo = late_echo
        self.task_group: Any = None
        self.calls: list[list[dict[str, Any]]] = []

    async def call_api(self, api: str, **data: Any) -> Any:
        assert self.outbound is not None
        self.calls.append(data["message"])
        text = data["message"][-1]["data"]["text"]
        if len(self.calls) == 2:  # the first call
            if self.late_echo:
                outbound = self.outbound

                async def echo_later() -> None:
                    await anyio.sleep(0.08)  # after the 50 ms timeout, within the retry's wait
                    outbound.heard_own("group:1", "800", text, wall_clock())

                self.task_group.start_soon(echo_later)
            await anyio.sleep_forever()
        message_id = str(800 + len(self.calls))
        self.outbound.heard_own("group:1", message_id, text, wall_clock())
        return {"message_id": message_id}


async def lose_one(bot: LosingBot) -> tuple[SendResult, list[SentRecord]]:
    records: list[SentRecord] = []
    outbound = slow_outbound(bot, records, retry_delay=0.2)
    async with anyio.create_task_group() as tg:
        bot.task_group = tg
        await outbound.send("group:1", "早上好")  # echoed: this chat's own messages come back
        result = await outbound.send("group:1", "明天见", reply_to="42")
    return result, records


@pytest.mark.anyio
async def test_in_a_chat_whose_echoes_come_a_part_neither_answered_nor_echoed_is_sent_again() -> None:
    bot = LosingBot()
    result, records = await lose_one(bot)
    assert (result.sent, result.attempts, result.message_ids) == (True, 2, ("803",))
    assert [seg["type"] for seg in bot.calls[1]] == ["reply", "text"]
    assert [seg["type"] for seg in bot.calls[2]] == ["text"]  # the retry drops the quote
    assert [r.text for r in records] == ["早上好", "明天见"]


@pytest.mark.anyio
async def test_a_lost_looking_part_whose_echo_comes_before_the_retry_is_not_sent_again() -> None:
    bot = LosingBot(late_echo=True)
    result, records = await lose_one(bot)
    assert (result.sent, result.message_ids) == (True, ("800",))
    assert len(bot.calls) == 2  # no third call: it did go out
    assert [(r.text, r.reply_to) for r in records][-1] == ("明天见", "42")


@pytest.mark.anyio
async def test_the_bot_tells_its_own_parts_from_what_its_account_sent_elsewhere() -> None:
    records: list[SentRecord] = []
    # Echoes each part while its call waits, then answers (the first without an id).
    platform = ScriptedPlatform(
        echo=lambda n: str(950 + n), answer=lambda n: {} if n == 1 else {"message_id": str(950 + n)}
    )
    outbound = slow_outbound(platform, records)
    await outbound.send("group:1", "第一句")
    await outbound.send("group:1", "第二句")
    assert platform.in_flight == [True, True]  # echoed before the platform answered: on its way
    assert outbound.sent_it("group:1", "951", "第一句")  # answered without an id: its echo's id
    assert outbound.sent_it("group:1", "952", "第二句")
    # The owner typed on another device: the account's own message, which the bot never sent.
    outbound.heard_own("group:1", "960", "我是号主", wall_clock())
    assert outbound.is_own_message("960")  # a reply to it is a reply to the account
    assert not outbound.sent_it("group:1", "960", "我是号主")
    assert not outbound.sent_it("group:1", "961", "第二句")  # the same words again, later: not its part


class RewritingPlatform:
    """Changes each part's words on the way (``~`` becomes ``～``) and reports its echo (id 990 + the
    call's number) before it answers the send, 10 ms later, with that id. The account's owner types
    ``owner`` (id 999) in the same chat meanwhile. Of each of the account's messages heard while the
    call waits: what :meth:`Outbound.sent_it` says at once (``at_once``), and what the edge judges
    (``judged``)."""

    def __init__(self, owner: str) -> None:
        self.outbound: Outbound | None = None
        self.owner = owner
        self.calls = 0
        self.at_once: dict[str, bool] = {}
        self.judged: dict[str, bool] = {}
        self.judging: anyio.abc.TaskGroup | None = None

    async def call_api(self, api: str, **data: Any) -> Any:
        assert self.outbound is not None
        assert self.judging is not None
        self.calls += 1
        heard = [(str(990 + self.calls), data["message"][-1]["data"]["text"].replace("~", "～"))]
        heard.append(("999", self.owner))
        for message_id, said in heard:
            self.outbound.heard_own("group:1", message_id, said, wall_clock())
            self.judging.start_soon(self._judge, message_id, said)
        await anyio.sleep(0.01)
        return {"message_id": str(990 + self.calls)}

    async def _judge(self, message_id: str, said: str) -> None:
        assert self.outbound is not None
        self.at_once[message_id] = self.outbound.sent_it("group:1", message_id, said)
        self.judged[message_id] = await self.outbound.sent_it_once_answered("group:1", message_id, said)


@pytest.mark.anyio
async def test_an_echo_the_platform_reworded_is_the_bots_once_its_send_is_answered() -> None:
    # Heard before the answer that gives its id, and not in the words sent, the bot's own part was
    # taken for its owner's words: the model would have read its own reply as someone else's.
    platform = RewritingPlatform(owner="我来说两句")
    outbound = slow_outbound(platform, [])
    async with anyio.create_task_group() as judging:
        platform.judging = judging
        await outbound.send("group:1", "好的~")
    assert platform.at_once == {"991": False, "999": False}  # what the edge judged before: both the owner's
    assert platform.judged == {"991": True, "999": False}  # the owner's words stay the owner's
    # With nothing on its way to the chat, the account's message is judged at once.
    with anyio.fail_after(0.005):
        assert not await outbound.sent_it_once_answered("group:1", "1000", "又是号主")
