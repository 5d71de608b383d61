"""When an episode's guards stop it, whoever addressed the bot is told so, in one short plain line.

The real ``bot.py`` over a real WebSocket, the scripted model behind it. Each scenario keeps to its own
group (the line is rate-limited per chat) and tags its messages, so the model's scripted answers and
the bot's words can be told apart (:mod:`tests.e2e.live`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import (
    TaggedModel,
    connected_peer,
    reply_call,
    scripted_bot,
    steps,
    tag,
    tool_call,
    wait_call,
)
from tests.support import onebot_events as ob

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GUARD = "这个我没弄明白，换个说法再问我一次？"
CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[budget.forced]
min_interval_ms = 0

[episodes]
min_wait_ms = 500
wake_delay_ms = 200
max_waits = 1

[models]
retry_backoff_ms = 50
retry_backoff_cap_ms = 200

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 100
"""


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory, model: TaggedModel) -> Iterator[BotProcess]:
    with scripted_bot(tmp_path_factory.mktemp("guards"), model.server, config=CONFIG) as process:
        yield process


def group_at(group: int, user: int, text: str) -> dict[str, object]:
    return ob.group_message(
        self_id=SELF_ID, group_id=group, user_id=user, message=[ob.at(SELF_ID), ob.text(" " + text)]
    )


def in_group(group: int):  # type: ignore[no-untyped-def]
    return lambda call: call.params.get("group_id") == group


UNKNOWN = tuple(tool_call("no_such_tool", attempt=n) for n in range(3))
UNREADABLE = {"tool_calls": [{"name": "memory_search", "arguments": '{"query": "半截'}]}


@pytest.mark.parametrize(
    ("name", "group", "answers"),
    [
        ("rep", 810_001, (tool_call("current_time"), tool_call("current_time"))),
        ("unk", 810_002, UNKNOWN),
        ("bad", 810_003, (UNREADABLE,)),
        # one wait is allowed; after it, every further wait is refused until the failures end the run
        ("waits", 810_004, (wait_call(0.5), wait_call(0.5))),
    ],
    ids=["repeated-tool-call", "unknown-tool", "unreadable-arguments", "too-many-waits"],
)
async def test_a_tripped_guard_answers_an_at_with_a_short_honest_line(
    bot: BotProcess, model: TaggedModel, name: str, group: int, answers: tuple[dict[str, object], ...]
) -> None:
    model.on(name, steps(*answers))
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        asked = group_at(group, 321, f"{tag(name)}帮我看看这个")
        await peer.post(asked)
        answer = await peer.wait_for_call("send_group_msg", in_group(group), within=20)
        assert answer.text == GUARD
        quoted = [seg for seg in answer.segments if seg.get("type") == "reply"]
        assert [str(seg["data"]["id"]) for seg in quoted] == [str(asked["message_id"])]
        await asyncio.sleep(0.5)
        assert [call.text for call in peer.sends() if in_group(group)(call)] == [GUARD]
    assert len(model.requests_for(name)) >= 2, "the model was asked again after its first slip"


async def test_the_line_is_rate_limited_per_chat_and_a_later_good_answer_still_goes_out(
    bot: BotProcess, model: TaggedModel
) -> None:
    group, other = 810_011, 810_012
    model.on("rl1", steps(tool_call("current_time"), tool_call("current_time")))
    model.on("rl2", steps(tool_call("current_time"), tool_call("current_time")))
    model.on("rl3", steps(tool_call("current_time"), tool_call("current_time")))
    model.on("rl4", steps(reply_call(f"好了{tag('rl4')}")))
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(group_at(group, 331, f"{tag('rl1')}第一次"))
        await peer.wait_for_call("send_group_msg", in_group(group), within=20)
        await peer.post(group_at(group, 332, f"{tag('rl2')}第二次"))
        await peer.post(group_at(other, 333, f"{tag('rl3')}别的群"))
        await peer.wait_for_call("send_group_msg", in_group(other), within=20)
        await peer.post(group_at(group, 331, f"{tag('rl4')}第三次"))
        await peer.wait_for_call("send_group_msg", lambda c: tag("rl4") in c.text, within=20)
        assert len(model.requests_for("rl2")) == 2, "the second trip ran (and was not answered)"
        said = [call.text for call in peer.sends() if in_group(group)(call)]
        assert said == [GUARD, f"好了{tag('rl4')}"], "one guard line per chat per cooldown"
        assert [call.text for call in peer.sends() if in_group(other)(call)] == [GUARD]


async def test_an_episode_nobody_addressed_stays_silent_when_a_guard_trips(
    bot: BotProcess, model: TaggedModel
) -> None:
    group = 810_021
    model.on("nf", steps(tool_call("current_time"), tool_call("current_time")))
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        # The persona's name and a question: worth joining, never forced.
        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=group,
                user_id=341,
                message=[ob.text(f"{tag('nf')}灰风怎么看这事？")],
            )
        )
        await bot.await_log(
            "episode_end",
            lambda r: (
                r.get("chat_id") == f"qq:{SELF_ID}:group:{group}"
                and "repeated_tool_call" in str(r.get("reason"))
            ),
            within=20,
        )
        await asyncio.sleep(0.5)
    assert len(model.requests_for("nf")) == 2
    assert [call.text for call in peer.sends() if in_group(group)(call)] == []
