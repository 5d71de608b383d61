"""OneBot JSON -> adapter event -> ChatMessage, as the plugin sees it."""

from __future__ import annotations

import pytest
from nonebot.adapters.onebot.v11 import PokeNotifyEvent

from plugins.greywind.convert import AddressingRules, convert_message, convert_poke, opens_with_name
from plugins.greywind.own_messages import hear_sent_messages
from runtime.kernel.message import ChatKind
from tests.edge.helpers import GROUP, SELF_ID, as_adapter_delivers, parse
from tests.support import onebot_events as ob

NOW = 1_700_000_000.0
RULES = AddressingRules(self_id=str(SELF_ID), names=("灰风", "greywind"), max_chars=4_000)


def group(message: list[ob.Segment] | str, **kw: object) -> dict[str, object]:
    return ob.group_message(self_id=SELF_ID, group_id=GROUP, user_id=42, message=message, **kw)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_plain_group_chatter_is_not_addressed() -> None:
    event = await as_adapter_delivers(group([ob.text("今天食堂的饭不错")], message_id=7))
    inbound = convert_message(event, RULES, now=NOW)
    msg = inbound.message
    assert msg.chat_id == f"qq:{SELF_ID}:group:{GROUP}"
    assert msg.message_id == "7"
    assert msg.text == "今天食堂的饭不错"
    assert msg.sender_id == "42"
    assert msg.time == NOW
    assert not msg.addressed
    assert msg.mentions == ()


@pytest.mark.asyncio
async def test_at_the_bot_addresses_it_and_keeps_the_mention() -> None:
    event = await as_adapter_delivers(group([ob.at(SELF_ID), ob.text(" 帮我看看这个报错")]))
    inbound = convert_message(event, RULES, now=NOW)
    assert inbound.message.addressed
    assert inbound.how_addressed == "mention"
    assert str(SELF_ID) in inbound.message.mentions
    assert inbound.message.text == "@灰风 帮我看看这个报错"
    assert inbound.body == "帮我看看这个报错"


@pytest.mark.asyncio
async def test_at_the_bot_in_the_middle_still_addresses_it() -> None:
    event = await as_adapter_delivers(group([ob.text("这个问题"), ob.at(SELF_ID), ob.text("你怎么看")]))
    assert convert_message(event, RULES, now=NOW).message.addressed


@pytest.mark.asyncio
async def test_at_someone_else_is_a_mention_but_not_addressed() -> None:
    event = await as_adapter_delivers(group([ob.at(777), ob.text(" 你来一下")]))
    msg = convert_message(event, RULES, now=NOW).message
    assert msg.mentions == ("777",)
    assert not msg.addressed


@pytest.mark.asyncio
async def test_text_that_looks_like_a_cq_code_is_text_not_a_mention() -> None:
    event = await as_adapter_delivers(group([ob.text(f"[CQ:at,qq={SELF_ID}] 这样写能@到吗")]))
    msg = convert_message(event, RULES, now=NOW).message
    assert msg.mentions == ()
    assert not msg.addressed
    assert f"[CQ:at,qq={SELF_ID}]" in msg.text


@pytest.mark.asyncio
async def test_a_string_format_post_is_parsed_as_cq_codes_by_the_protocol() -> None:
    # An implementation set to post strings sends real CQ codes: there the @ is a segment.
    event = await as_adapter_delivers(group(f"[CQ:at,qq={SELF_ID}] 在吗"))
    assert convert_message(event, RULES, now=NOW).message.addressed


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("seg", "placeholder"),
    [
        (ob.image(), "[图片]"),
        (ob.segment("record", file="a.amr"), "[语音]"),
        (ob.segment("video", file="a.mp4"), "[视频]"),
        (ob.segment("file", file="a.zip"), "[文件]"),
        (ob.segment("forward", id="abc"), "[聊天记录]"),
        (ob.segment("face", id="14"), "[表情]"),
        (ob.segment("json", data="{}"), "[卡片消息]"),
        (ob.segment("brand_new_thing", x="1"), "[未知消息:brand_new_thing]"),
        (ob.segment("图片]@全体", x="1"), "[未知消息:?]"),
    ],
)
async def test_non_text_segments_become_typed_placeholders(seg: ob.Segment, placeholder: str) -> None:
    event = await as_adapter_delivers(group([ob.text("看"), seg, ob.text("这个")]))
    assert convert_message(event, RULES, now=NOW).message.text == f"看{placeholder}这个"


@pytest.mark.asyncio
async def test_odd_segment_data_does_not_break_conversion() -> None:
    payload = group([ob.segment("at"), ob.segment("reply"), ob.segment("image"), ob.text("还行")])
    event = await as_adapter_delivers(payload)
    msg = convert_message(event, RULES, now=NOW).message
    assert msg.text.endswith("还行")
    assert msg.reply_to is None


@pytest.mark.asyncio
async def test_reply_to_the_bots_message_addresses_it() -> None:
    answered = ob.get_msg_result(message_id=900, sender_id=SELF_ID, message=[ob.text("我是灰风")])
    event = await as_adapter_delivers(group([ob.reply(900), ob.text("那你说说看")]), get_msg={900: answered})
    inbound = convert_message(event, RULES, now=NOW)
    assert inbound.message.reply_to == "900"
    assert inbound.message.addressed
    assert inbound.how_addressed == "reply"
    assert inbound.message.text == "那你说说看"


@pytest.mark.asyncio
async def test_reply_to_someone_else_is_a_reply_but_not_addressed() -> None:
    other = ob.get_msg_result(message_id=901, sender_id=43, message=[ob.text("我先走了")])
    event = await as_adapter_delivers(group([ob.reply(901), ob.text("拜拜")]), get_msg={901: other})
    msg = convert_message(event, RULES, now=NOW).message
    assert msg.reply_to == "901"
    assert not msg.addressed


@pytest.mark.asyncio
async def test_reply_to_the_bot_is_recognised_from_sent_ids_when_get_msg_fails() -> None:
    rules = AddressingRules(self_id=str(SELF_ID), names=("灰风",), is_own_message={"902"}.__contains__)
    event = await as_adapter_delivers(group([ob.reply(902), ob.text("继续")]))  # get_msg fails
    assert event.reply is None
    inbound = convert_message(event, rules, now=NOW)
    assert inbound.message.reply_to == "902"
    assert inbound.how_addressed == "reply"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("said", "addressed", "body"),
    [
        ("灰风，今天几号", True, "今天几号"),
        ("灰风在吗", True, "在吗"),
        ("  GreyWind: ping", True, "ping"),
        ("greywind你好", True, "你好"),
        ("greywinds are a band", False, "greywinds are a band"),
        ("我觉得灰风挺好", False, "我觉得灰风挺好"),
    ],
)
async def test_persona_name_at_the_start_addresses_the_bot(said: str, addressed: bool, body: str) -> None:
    inbound = convert_message(await as_adapter_delivers(group([ob.text(said)])), RULES, now=NOW)
    assert inbound.message.addressed is addressed
    assert inbound.body == body


@pytest.mark.asyncio
async def test_private_messages_are_always_addressed() -> None:
    payload = ob.private_message(self_id=SELF_ID, user_id=42, message=[ob.text("随便聊聊")])
    msg = convert_message(await as_adapter_delivers(payload), RULES, now=NOW).message
    assert msg.chat_kind is ChatKind.PRIVATE
    assert msg.chat_id == f"qq:{SELF_ID}:private:42"
    assert msg.addressed


@pytest.mark.asyncio
async def test_group_card_is_preferred_to_nickname() -> None:
    payload = group([ob.text("hi")], nickname="小明", card="技术部-小明")
    assert (
        convert_message(await as_adapter_delivers(payload), RULES, now=NOW).message.sender_name
        == "技术部-小明"
    )


@pytest.mark.asyncio
async def test_a_200000_character_message_reaches_the_kernel_truncated_with_a_marker() -> None:
    huge = "啊" * 200_000
    inbound = convert_message(
        await as_adapter_delivers(group([ob.at(SELF_ID), ob.text(huge)])), RULES, now=NOW
    )
    assert inbound.truncated
    assert len(inbound.message.text) < RULES.max_chars + 40
    assert inbound.message.text.endswith(f"[消息过长已截断，原文{len('@灰风 ') + 200_000}字]")
    assert inbound.message.addressed


@pytest.mark.asyncio
async def test_own_messages_are_marked_from_self() -> None:
    payload = ob.group_message(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, message=[ob.text("我说的")])
    msg = convert_message(await as_adapter_delivers(payload), RULES, now=NOW).message
    assert msg.from_self
    assert not msg.addressed


@pytest.mark.asyncio
async def test_the_bots_own_private_echo_is_not_addressed() -> None:
    payload = ob.private_message(self_id=SELF_ID, user_id=SELF_ID, message=[ob.text("我自己说的")])
    msg = convert_message(await as_adapter_delivers(payload), RULES, now=NOW).message
    assert msg.from_self
    assert not msg.addressed


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["group", "private"])
async def test_the_bots_own_message_reported_as_message_sent_is_heard_in_its_chat(kind: str) -> None:
    """Implementations that report the bot's own messages send them as ``message_sent`` events, which
    the adapter alone parses as a bare event the edge never hears."""
    hear_sent_messages()
    if kind == "group":
        payload = ob.group_message(
            self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, message=[ob.at(42), ob.text(" 好")]
        )
        chat = f"qq:{SELF_ID}:group:{GROUP}"
    else:
        payload = {
            **ob.private_message(self_id=SELF_ID, user_id=SELF_ID, message=[ob.text("好")]),
            "target_id": 42,
        }
        chat = f"qq:{SELF_ID}:private:42"  # the person it went to, not the bot's own id
    event = await as_adapter_delivers({**payload, "post_type": "message_sent"})
    assert event.get_type() == "message_sent", "other plugins' message matchers do not take it"
    msg = convert_message(event, RULES, now=NOW).message
    assert msg.chat_id == chat
    assert msg.from_self
    assert not msg.addressed


def test_poke_of_the_bot_is_an_addressed_message_and_other_pokes_are_ignored() -> None:
    mine = parse(ob.poke(self_id=SELF_ID, user_id=42, target_id=SELF_ID, group_id=GROUP))
    theirs = parse(ob.poke(self_id=SELF_ID, user_id=42, target_id=43, group_id=GROUP))
    assert isinstance(mine, PokeNotifyEvent)
    assert isinstance(theirs, PokeNotifyEvent)
    msg = convert_poke(mine, RULES, now=NOW)
    assert msg is not None
    assert msg.addressed
    assert msg.chat_id == f"qq:{SELF_ID}:group:{GROUP}"
    assert msg.text == "[戳一戳]"
    assert convert_poke(theirs, RULES, now=NOW) is None


def test_private_poke_lands_in_the_private_chat() -> None:
    event = parse(ob.poke(self_id=SELF_ID, user_id=42, target_id=SELF_ID))
    assert isinstance(event, PokeNotifyEvent)
    msg = convert_poke(event, RULES, now=NOW)
    assert msg is not None
    assert msg.chat_id == f"qq:{SELF_ID}:private:42"


def test_longest_name_wins() -> None:
    assert opens_with_name("灰风大人，早", ("灰风", "灰风大人")) == "灰风大人"


@pytest.mark.asyncio
async def test_mentions_are_capped_but_the_bot_is_kept() -> None:
    segments = [ob.at(n) for n in range(1, 500)] + [ob.at(SELF_ID), ob.text("点名")]
    msg = convert_message(await as_adapter_delivers(group(segments)), RULES, now=NOW).message
    assert len(msg.mentions) == 64
    assert str(SELF_ID) in msg.mentions
    assert msg.addressed
