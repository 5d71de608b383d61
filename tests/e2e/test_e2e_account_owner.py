"""The account's owner speaks from another device, through the real ``bot.py``.

An implementation that reports the account's own messages (NapCat's ``reportSelfMessage``) reports
what the owner types on a phone the same way as the bot's replies. The bot must not take those words
for its own: the model reads them as said by its account, labelled, and its own replies as its own.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.kernel.message import SENT_ELSEWHERE_LABEL
from tests.e2e.conftest import StartBot
from tests.e2e.live import connected_peer, reply_call
from tests.e2e.onebot_peer import ApiCall, OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
PERSON = 602
GROUP = 800_502
BOT_SAID = "我去问问号主再告诉你"
OWNER_SAID = "今晚八点开始，我亲自来答疑"
CONFIG = """
[budget.forced]
min_interval_ms = 0
"""


def in_group(call: ApiCall) -> bool:
    return call.action == "send_group_msg" and call.params.get("group_id") == GROUP


def own_report(message: list[ob.Segment] | str, message_id: int | None = None) -> dict[str, Any]:
    """The account's own message in the group, reported back (``message_sent``)."""
    report = ob.group_message(
        self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, message=message, message_id=message_id
    )
    return {**report, "post_type": "message_sent"}


async def asked_and_answered(peer: OneBotPeer, question: str) -> tuple[int, ApiCall, int]:
    """A member @s the bot: the question's id, the bot's answering send call and that send's id."""
    asked = await peer.say_in_group(GROUP, PERSON, ob.at(SELF_ID), question)
    call = await peer.wait_for_call(predicate=in_group, within=20.0)
    return asked, call, int(call.answer["data"]["message_id"])


async def test_what_the_owner_types_elsewhere_reaches_the_model_as_the_accounts_not_the_bots(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.load({"default": reply_call(BOT_SAID)})
    bot = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        asked, call, sent_id = await asked_and_answered(peer, " 今晚的答疑几点开始？")
        reports = [  # the bot's reply, reported back; then the owner, on a phone, quoting the question
            own_report(call.text, sent_id),
            own_report([ob.reply(asked), ob.text(OWNER_SAID)]),
        ]
        for report in reports:
            await peer.post(report)
        owner_id = int(reports[1]["message_id"])
        await bot.await_log("own_message_sent_elsewhere", within=10.0)
        before = len(openai_server.chat_requests)
        # A reply to the owner's message is a reply to the account: the bot answers it.
        await peer.say_in_group(
            GROUP, PERSON, ob.reply(owner_id), ob.text("好的，那八点见，到时候要带什么吗？")
        )
        await peer.wait_for_call(predicate=in_group, after=peer.calls.index(call) + 1, within=20.0)

    request = openai_server.chat_requests[before]
    said = [(m["role"], str(m.get("content") or "")) for m in request.messages]
    owners = [(role, text) for role, text in said if OWNER_SAID in text]
    assert owners, said  # the owner's words are in the context ...
    assert all(role == "user" and SENT_ELSEWHERE_LABEL in text for role, text in owners), owners
    # ... and the bot's own reply is still its own.
    assert ("assistant", BOT_SAID) in said, said


REWORDED_SAID = "好的~马上就来"


async def test_a_reply_the_platform_reworded_and_echoed_before_answering_stays_the_bots(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    # The platform changes the reply's words on the way (~ becomes ～) and reports it back before it
    # answers the send with its id: the bot must not take its own reply for its owner's words.
    openai_server.load({"default": reply_call(REWORDED_SAID)})
    bot = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        peer.answer_delay = 1.0  # well within send_timeout_ms: the send is answered, late
        _asked, call, sent_id = await asked_and_answered(peer, " 你能过来一下吗？")
        await peer.post(own_report(call.text.replace("~", "～"), sent_id))
        await bot.await_log("sent", within=10.0)  # the send answered, with the echo's id
        before = len(openai_server.chat_requests)
        await peer.say_in_group(GROUP, PERSON, ob.at(SELF_ID), " 到了吗？")
        await peer.wait_for_call(predicate=in_group, after=peer.calls.index(call) + 1, within=20.0)

    assert not [r for r in bot.records() if r.get("event") == "own_message_sent_elsewhere"]
    request = openai_server.chat_requests[before]
    said = [(m["role"], str(m.get("content") or "")) for m in request.messages]
    assert not [text for _role, text in said if SENT_ELSEWHERE_LABEL in text], said
    assert [role for role, text in said if "马上就来" in text] == ["assistant"], said
