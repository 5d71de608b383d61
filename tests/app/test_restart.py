"""Continuity: what the bot knew before a restart is in what it sees after it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest

from runtime.ports import NotTakenError
from runtime.quiet_history import QUIET_HISTORY_FILE, QuietTimeline
from tests.app.conftest import FakeClock, make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_a_restart_resumes_the_conversation(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("先定压缩触发条件：每十轮一次"), reply("接着说触发条件"))
    config = make_config(openai_server)
    clock = FakeClock()
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 我们来设计记忆层的压缩触发条件", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["先定压缩触发条件：每十轮一次"]
        said = h.outbound.sent[-1].message_id  # the platform id of the bot's reply
    clock.advance(120)
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 继续刚才的", addressed=True, reply_to=said)
        await h.settle()
        assert h.outbound.texts() == ["接着说触发条件"]
    after = openai_server.chat_requests[1].messages
    # The conversation thread came back: the bot's earlier turn is in the dialogue, as its own turn...
    assert {"role": "assistant", "content": "先定压缩触发条件：每十轮一次"} in after
    # ...and the closed session handed over to the new one.
    handoff = [m["content"] for m in after if m["role"] == "system" and "交接" in m["content"]]
    assert handoff
    assert "我们来设计记忆层的压缩触发条件" in handoff[0]


async def test_a_quiet_period_survives_a_restart(openai_server: ScriptedOpenAIServer, data_dir: Path) -> None:
    openai_server.load({"default": reply("我在")})
    config = make_config(openai_server)
    clock = FakeClock()
    async with running(config, data_dir, clock=clock) as h:
        await h.runtime.control.mute("group:500", clock() + 1800, by="42", reason="mute_word")
        muted_at = clock()
    clock.advance(60)
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.sent == []
        await h.advance(1800)
        await h.say("灰风 现在呢", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["我在"]
    # The period is kept in the history a replay of the stored messages reads, across the restart.
    history = QuietTimeline.load(data_dir / QUIET_HISTORY_FILE)
    assert history.quiet_at("group:500", muted_at + 60)
    assert not history.quiet_at("group:500", muted_at + 1801)
    assert not history.quiet_at("group:500", muted_at - 1)


async def test_a_superusers_mute_stays_imposed_across_a_restart_and_a_legacy_entry_counts_as_one(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我在")})
    config = make_config(openai_server)
    clock = FakeClock()
    async with running(config, data_dir, clock=clock) as h:
        await h.runtime.control.mute("group:500", None, by="42", reason="command")
    (data_dir / "quiet.json").write_text(
        (data_dir / "quiet.json").read_text(encoding="utf-8")[:-1] + ', "group:501": null}', encoding="utf-8"
    )
    async with running(config, data_dir, clock=clock) as h:
        for chat in ("group:500", "group:501"):
            assert await h.runtime.control.unmute(chat, by="7", reason="phrase") == ""
            assert h.runtime.outbound.gate(chat).kind == "imposed"
        assert "quiet（管理员）" in await h.runtime.control.status("group:500")
        assert (
            await h.runtime.control.unmute("group:500", by="42", reason="command") == "group:500 已解除安静。"
        )
        assert h.runtime.outbound.gate("group:500").open


async def test_an_idle_session_is_handed_over_by_the_model(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    digest = {
        "summary": "正在定记忆层的压缩触发条件，已定每十轮一次",
        "unfinished_items": ["token 阈值还没定"],
        "risks": [],
        "resume_suggestion": "先定 token 阈值",
    }
    import json

    openai_server.load(
        {
            "rules": [
                {
                    "when": {"system_contains": "交接"},
                    "reply": {"text": json.dumps(digest, ensure_ascii=False)},
                }
            ],
            "default": reply("好"),
        }
    )
    config = make_config(
        openai_server, context={"session_idle_timeout_ms": 60_000, "session_idle_after_ms": 30_000}
    )
    async with running(config, data_dir) as h:
        await h.say("灰风 我们来设计记忆层的压缩触发条件", chat="private:42")
        await h.settle()
        await h.advance(120)
        await h.runtime.maintenance.housekeeping()
        await h.say("灰风 记忆层的压缩触发条件接着说", chat="private:42")
        await h.settle()
    from runtime.memory.prompt import COMPRESSION_MARKER

    # The new session may also queue a memory compression; the reply's request is the last other one.
    replies = [r for r in openai_server.chat_requests if COMPRESSION_MARKER not in r.all_text]
    assert "token 阈值还没定" in replies[-1].all_text


async def test_a_new_session_folds_the_last_ones_uncompressed_rounds_into_the_summary(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    import json

    from runtime.memory.prompt import COMPRESSION_MARKER

    summary = {"requirements": ["压缩触发条件每十轮一次"], "confirmed_decisions": [], "open_questions": []}
    openai_server.load(
        {
            "rules": [
                {
                    "when": {"system_contains": COMPRESSION_MARKER},
                    "reply": {"text": json.dumps(summary, ensure_ascii=False)},
                }
            ],
            "default": reply("好"),
        }
    )
    config = make_config(openai_server)
    clock = FakeClock()

    def compressions() -> int:
        return sum(
            1
            for request in openai_server.chat_requests
            if any(COMPRESSION_MARKER in str(m.get("content")) for m in request.messages)
        )

    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 压缩触发条件定成每十轮一次", addressed=True)
        await h.settle()
        # One round is far from every_n_rounds: nothing is compressed during the first session.
        assert compressions() == 0
    clock.advance(120)
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 我们继续", addressed=True)
        await h.settle()
        with anyio.fail_after(10):
            while compressions() == 0:  # noqa: ASYNC110 - the server records on its own thread
                await anyio.sleep(0.05)
    assert compressions() == 1


async def test_after_stop_nothing_the_runtime_started_is_left_running(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    """Stop ends every task the runtime started — the periodic jobs and the memory injector too — so
    none of them can touch the store after it is closed; the edge's task group only has its own."""
    openai_server.load({"default": reply("在")})
    config = make_config(openai_server, runtime={"save_interval_ms": 100})
    before = set(asyncio.all_tasks())
    async with running(config, data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.runtime.memory is not None  # the injector is one of the services started
        started = set(asyncio.all_tasks()) - before
        await h.runtime.stop()
        await asyncio.sleep(0.3)  # three save intervals
        left = {task for task in started if not task.done()} - {asyncio.current_task()}
        assert sorted(task.get_name() for task in left) == []
        saves = h.runtime.maintenance.statistics()
        await asyncio.sleep(0.3)
        assert h.runtime.maintenance.statistics() == saves


async def test_a_stopped_runtime_says_it_did_not_take_a_message(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    """The edge keeps a message the runtime did not take (its journal delivers it at the next start);
    returning quietly would have had it settled, and lost."""
    config = make_config(openai_server)
    async with running(config, data_dir) as h:
        late = h.message("停机时还在排队的消息")
        await h.runtime.stop()
        with pytest.raises(NotTakenError):
            await h.runtime.on_message(late)
