"""The groups the bot lives in, with the real ``bot.py``: a group outside ``[groups] allow`` is not
answered (and costs no model call) while an allowed one is; a superuser's ``/enable`` from inside the
group is answered there and brings the bot in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import TaggedModel, connected_peer, quiet_for, reply_text, scripted_bot, steps, tag
from tests.e2e.onebot_peer import ApiCall
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
ADMIN = 4_242
ALLOWED = 800_501
OUTSIDE = 800_502
CONFIG = f"""
[groups]
allow = [{ALLOWED}]

[scheduling]
high_delay_ms = 100
medium_delay_ms = 100
"""


@pytest.fixture(scope="module")
def model() -> Iterator[TaggedModel]:
    with ScriptedOpenAIServer() as server:
        yield TaggedModel(server)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory, model: TaggedModel) -> Iterator[BotProcess]:
    with scripted_bot(
        tmp_path_factory.mktemp("groups"), model.server, config=CONFIG, env={"SUPERUSERS": f'["{ADMIN}"]'}
    ) as process:
        yield process


def group_at(group: int, user: int, text: str) -> dict[str, object]:
    return ob.group_message(
        self_id=SELF_ID, group_id=group, user_id=user, message=[ob.at(SELF_ID), ob.text(" " + text)]
    )


def sends_to(calls: list[ApiCall], group: int) -> list[ApiCall]:
    return [call for call in calls if call.params.get("group_id") == group]


async def test_a_group_outside_the_allow_list_is_not_answered_while_an_allowed_one_is(
    bot: BotProcess, model: TaggedModel
) -> None:
    model.on("out1", steps(reply_text(f"不该出现{tag('out1')}")))
    model.on("in1", steps(reply_text(f"我在{tag('in1')}")))
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(group_at(OUTSIDE, 7001, f"灰风 在吗{tag('out1')}"))
        await peer.post(group_at(ALLOWED, 7002, f"灰风 在吗{tag('in1')}"))
        answer = await peer.wait_for_call("send_group_msg", lambda c: tag("in1") in c.text, within=15)
        assert answer.params.get("group_id") == ALLOWED
        await quiet_for(model.server, 1.0)
        assert model.requests_for("out1") == []
        assert sends_to(peer.sends(), OUTSIDE) == []

        # A superuser enables the group from inside it: the answer goes out there, and so do replies.
        mark = len(peer.calls)
        await peer.post(
            ob.group_message(self_id=SELF_ID, group_id=OUTSIDE, user_id=ADMIN, message=[ob.text("/enable")])
        )
        enabled = await peer.wait_for_call("send_group_msg", within=10, after=mark)
        assert enabled.params.get("group_id") == OUTSIDE
        assert "已启用" in enabled.text
        model.on("out2", steps(reply_text(f"现在在了{tag('out2')}")))
        await peer.post(group_at(OUTSIDE, 7001, f"灰风 现在呢{tag('out2')}"))
        later = await peer.wait_for_call("send_group_msg", lambda c: tag("out2") in c.text, within=15)
        assert later.params.get("group_id") == OUTSIDE
