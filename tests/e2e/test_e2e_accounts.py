"""Two accounts in one real ``bot.py`` (``[[accounts]]``), two OneBot connections, one group.

Each account answers as its own persona through its own connection; what one says, relayed to the
other as the group would, never makes the other speak or call the model (no endless bot-to-bot
talk); a command through one account changes nothing of the other; ``/status full`` says where a
value came from; one account's restriction pause or disconnect leaves the other serving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import TaggedModel, connected_peer, quiet_for, reply_text, scripted_bot, steps, tag
from tests.e2e.onebot_peer import ApiCall, OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

A, B = 20_001, 20_002
ADMIN = 4_242
GROUP = 810_001
CONFIG = f"""
[outbound]
restriction_failures = 2

[scheduling]
high_delay_ms = 100
medium_delay_ms = 100

[[accounts]]
id = {A}
[accounts.persona]
name = "小灰"
aliases = []
[accounts.budget]
max_per_window = 3

[[accounts]]
id = {B}
[accounts.persona]
name = "阿蓝"
aliases = []
"""


@pytest.fixture(scope="module")
def model() -> Iterator[TaggedModel]:
    with ScriptedOpenAIServer() as server:
        yield TaggedModel(server)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory, model: TaggedModel) -> Iterator[BotProcess]:
    with scripted_bot(
        tmp_path_factory.mktemp("accounts"), model.server, config=CONFIG, env={"SUPERUSERS": f'["{ADMIN}"]'}
    ) as process:
        yield process


def at(peer: OneBotPeer, user: int, text: str) -> dict[str, object]:
    return ob.group_message(
        self_id=peer.self_id, group_id=GROUP, user_id=user, message=[ob.at(peer.self_id), ob.text(" " + text)]
    )


def said(peer: OneBotPeer, user: int, text: str) -> dict[str, object]:
    return ob.group_message(self_id=peer.self_id, group_id=GROUP, user_id=user, message=[ob.text(text)])


def group_sends(peer: OneBotPeer, after: int = 0) -> list[ApiCall]:
    return [
        c for c in peer.calls[after:] if c.action == "send_group_msg" and c.params.get("group_id") == GROUP
    ]


async def test_two_accounts_in_one_group_answer_apart_and_never_talk_to_each_other(
    bot: BotProcess, model: TaggedModel
) -> None:
    model.on("a1", steps(reply_text(f"我是小灰，在的{tag('a1')}")))
    model.on("b1", steps(reply_text(f"我是阿蓝{tag('b1')}")))
    model.on("loop", steps(reply_text(f"不该出现{tag('loop')}")))
    async with connected_peer(bot, self_id=A) as peer_a, connected_peer(bot, self_id=B) as peer_b:
        await peer_a.post(at(peer_a, 7001, f"在吗{tag('a1')}"))
        answer_a = await peer_a.wait_for_call("send_group_msg", lambda c: tag("a1") in c.text, within=15)
        await peer_b.post(at(peer_b, 7002, f"在吗{tag('b1')}"))
        answer_b = await peer_b.wait_for_call("send_group_msg", lambda c: tag("b1") in c.text, within=15)
        # Each answered through its own connection, as its own persona.
        assert not any(tag("a1") in c.text for c in group_sends(peer_b))
        assert not any(tag("b1") in c.text for c in group_sends(peer_a))
        system_a = model.requests_for("a1")[0].messages[0]["content"]
        system_b = model.requests_for("b1")[0].messages[0]["content"]
        assert "小灰" in system_a
        assert "阿蓝" not in system_a
        assert "阿蓝" in system_b
        assert "小灰" not in system_b

        # The group delivers each account's words to the other: A's answer reaches B from A, and
        # B's reaches A from B, each @-ing the other by name with a question. Neither takes it up.
        mark_a, mark_b = len(peer_a.calls), len(peer_b.calls)
        await peer_b.post(at(peer_b, A, f"阿蓝 {answer_a.text} 你觉得呢？{tag('loop')}"))
        await peer_a.post(at(peer_a, B, f"小灰 {answer_b.text} 你呢？{tag('loop')}"))
        await peer_a.post(said(peer_a, B, f"小灰，我们继续聊吧？{tag('loop')}"))
        await asyncio.sleep(5.0)  # past the debounce of an addressed message (about 3 s), had it counted
        await quiet_for(model.server, 1.0)
        assert model.requests_for("loop") == []
        assert group_sends(peer_a, mark_a) == []
        assert group_sends(peer_b, mark_b) == []
        # Heard, all the same: the sibling's words are context (logged once each).
        await bot.await_log("sibling_heard", within=10, count=3)


async def test_a_command_through_one_account_leaves_the_other_alone(bot: BotProcess) -> None:
    async with connected_peer(bot, self_id=A) as peer_a, connected_peer(bot, self_id=B) as peer_b:
        mark = len(peer_a.calls)
        await peer_a.post(said(peer_a, ADMIN, "/lexicon add 火锅"))
        added = await peer_a.wait_for_call("send_group_msg", within=10, after=mark)
        assert "火锅" in added.text
        mark = len(peer_b.calls)
        await peer_b.post(said(peer_b, ADMIN, "/lexicon list"))
        listed = await peer_b.wait_for_call("send_group_msg", within=10, after=mark)
        assert "火锅" not in listed.text
        mark = len(peer_a.calls)
        await peer_a.post(said(peer_a, ADMIN, "/lexicon list"))
        listed_a = await peer_a.wait_for_call("send_group_msg", within=10, after=mark)
        assert "火锅" in listed_a.text

        # /status full through A names A's own values and the layer each came from.
        mark = len(peer_a.calls)
        await peer_a.post(said(peer_a, ADMIN, "/status full"))
        await peer_a.wait_for_call("send_group_msg", lambda c: "其余" in c.text, within=10, after=mark)
        status = "".join(c.text for c in group_sends(peer_a, mark))  # a long answer comes in parts
        assert "persona.name=小灰［账号 20001］" in status
        assert "budget.max_per_window=3［账号 20001］" in status


async def test_one_account_restricted_or_disconnected_leaves_the_other_serving(
    bot: BotProcess, model: TaggedModel
) -> None:
    model.on("paused", steps(reply_text(f"发不出去{tag('paused')}")))
    model.on("still", steps(reply_text(f"小灰照常{tag('still')}")))
    model.on("after", steps(reply_text(f"还在{tag('after')}")))
    async with connected_peer(bot, self_id=A) as peer_a:
        async with connected_peer(bot, self_id=B) as peer_b:
            # B's sends fail like a restricted account's: B's sends pause, A's do not.
            peer_b.fail_next("send_group_msg", times=20, retcode=1200)
            await peer_b.post(at(peer_b, 7004, f"阿蓝 在吗{tag('paused')}"))
            await bot.await_log("account_paused", lambda r: r.get("account") == str(B), within=15)
            await peer_a.post(at(peer_a, 7005, f"小灰 在吗{tag('still')}"))
            answer = await peer_a.wait_for_call("send_group_msg", lambda c: tag("still") in c.text, within=15)
            assert answer.params.get("group_id") == GROUP
        # B is gone: A serves on.
        await peer_a.post(at(peer_a, 7003, f"小灰还在吗{tag('after')}"))
        answer = await peer_a.wait_for_call("send_group_msg", lambda c: tag("after") in c.text, within=15)
        assert answer.params.get("group_id") == GROUP
    assert (bot.data_dir / "accounts" / str(A) / "greywind.sqlite3").is_file()
    assert (bot.data_dir / "accounts" / str(B) / "greywind.sqlite3").is_file()
