"""Several accounts in one process (``[[accounts]]``): one runtime stack per account, nothing crossing.

Two accounts in the same group and in different groups, driven through the gateway the edge sees
(:class:`runtime.app.accounts.AccountsRuntime`) over the fake edge and the scripted model server:
each answers as its own persona through its own chat key; budgets, lexicon, stored messages and
sessions stay with their account; a command to one changes nothing of the other; one account's
words never make the other speak; an account without a table is served by the default stack.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from runtime.app import build_runtime
from runtime.app.accounts import ACCOUNTS_DIR, AccountsRuntime
from runtime.app.runtime import Runtime
from runtime.config import GreyWindConfig, load_config, parse_config
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.ports import EdgeContext
from runtime.store.errors import StoreError
from tests.app.conftest import FakeClock, make_config
from tests.support.fake_edge import FakeOutbound
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

A, B, UNLISTED = "10001", "10002", "10003"
GROUP, OTHER_GROUP = "500", "600"


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


def config_with_accounts(server: ScriptedOpenAIServer | None) -> GreyWindConfig:
    base = make_config(server)
    data = base.model_dump(mode="json", exclude={"accounts"})
    data["accounts"] = [
        {"id": A, "persona": {"name": "小灰", "aliases": []}, "budget": {"max_per_window": 1}},
        {"id": B, "persona": {"name": "阿蓝", "aliases": []}, "lexicon": {"terms": ["火锅"]}},
    ]
    return parse_config(data)


@dataclass
class Accounts:
    gateway: AccountsRuntime
    outbound: FakeOutbound
    clock: FakeClock
    data_dir: Path
    counter: int = 0

    def stack(self, account: str) -> Runtime:
        return self.gateway.stacks[account]

    def message(
        self,
        text: str,
        *,
        account: str,
        group: str = GROUP,
        sender: str = "42",
        addressed: bool = False,
    ) -> ChatMessage:
        self.counter += 1
        return ChatMessage(
            message_id=f"m{self.counter}",
            chat_kind=ChatKind.GROUP,
            chat_ident=group,
            sender_id=sender,
            sender_name=f"user{sender}",
            time=self.clock(),
            text=text,
            mentions=(account,) if addressed else (),
            addressed=addressed,
            platform="qq",
            account=account,
        )

    async def say(self, text: str, **kwargs: Any) -> ChatMessage:
        message = self.message(text, **kwargs)
        await self.gateway.on_message(message)
        return message

    async def settle(self) -> None:
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
            for stack in self.gateway.all_stacks():
                stack.loop.run_due()
                await stack.loop.wait_idle()
        await anyio.lowlevel.checkpoint()
        for stack in self.gateway.all_stacks():
            await stack.writer.flush()  # what the test then reads from the stores is committed


@asynccontextmanager
async def serving(
    config: GreyWindConfig,
    data_dir: Path,
    *,
    rename: Callable[[str, tuple[str, ...]], None] | None = None,
) -> AsyncIterator[Accounts]:
    clock = FakeClock()
    outbound = FakeOutbound(clock)
    edge = EdgeContext(
        config=config,
        config_path=data_dir / "greywind.toml",
        data_dir=data_dir,
        outbound=outbound,
        shadow_mode=False,
        model_configured=True,
        superusers=frozenset({"1"}),
        clock=clock,
    )
    if rename is not None:
        edge = replace(edge, rename_account=rename)
    gateway = build_runtime(edge)
    assert isinstance(gateway, AccountsRuntime)
    async with anyio.create_task_group() as tg:
        await gateway.start(tg)
        try:
            yield Accounts(gateway, outbound, clock, data_dir)
        finally:
            await gateway.stop()
            tg.cancel_scope.cancel()


def chat(account: str, group: str = GROUP) -> str:
    return f"qq:{account}:group:{group}"


def group_key(account: str, group: str = GROUP) -> LexiconKey:
    return LexiconKey(LexiconScope.GROUP, chat(account, group))


async def test_without_accounts_the_factory_builds_the_one_runtime_of_before(data_dir: Path) -> None:
    edge = EdgeContext(
        config=make_config(None),
        config_path=data_dir / "greywind.toml",
        data_dir=data_dir,
        outbound=FakeOutbound(),
        shadow_mode=False,
        model_configured=False,
        superusers=frozenset(),
    )
    assert type(build_runtime(edge)) is Runtime


async def test_two_accounts_in_one_group_answer_as_their_own_persona_through_their_own_key(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("我是小灰"))
    async with serving(config_with_accounts(openai_server), data_dir) as h:
        await h.say("在吗", account=A, addressed=True)
        await h.say("今天吃什么", account=B)  # the same group, heard by B: chatter, unanswered
        await h.settle()
        assert h.outbound.texts() == ["我是小灰"]
        assert h.outbound.sent[0].chat_id == chat(A)
        # A's stack has A's chat; B's kernel never saw it, and A's never saw B's.
        assert h.stack(A).kernel.events.list(chat_id=chat(B)) == []
        assert h.stack(B).kernel.events.list(chat_id=chat(A)) == []
        assert h.stack(A).kernel.budgets.get(chat(A)) is not None
        assert h.stack(B).kernel.budgets.get(chat(A)) is None
        # What A sent joined A's conversation only.
        a_messages = await h.stack(A).store.recent_messages(chat(A), limit=10)
        assert [m.text for m in a_messages if m.from_self] == ["我是小灰"]
        assert await h.stack(B).store.recent_messages(chat(A), limit=10) == []
        assert await h.stack(A).store.recent_messages(chat(B), limit=10) == []
    system = openai_server.chat_requests[0].messages[0]["content"]
    assert "小灰" in system
    assert "阿蓝" not in system
    # Each listed account keeps its state in its own directory.
    assert (data_dir / ACCOUNTS_DIR / A).is_dir()
    assert (data_dir / ACCOUNTS_DIR / B).is_dir()


async def test_each_account_runs_with_its_own_layered_settings(data_dir: Path) -> None:
    async with serving(config_with_accounts(None), data_dir) as h:
        a, b = h.stack(A), h.stack(B)
        assert a.edge.config.persona.name == "小灰"
        assert b.edge.config.persona.name == "阿蓝"
        assert a.kernel.settings.budget.max_per_window == 1
        assert b.kernel.settings.budget.max_per_window == 4  # the shared default
        # B's configured term is pinned in B's lexicon only.
        assert [t.text for t in b.kernel.lexicon.terms(LexiconKey(LexiconScope.GLOBAL, ""))] == ["火锅"]
        assert a.kernel.lexicon.terms(LexiconKey(LexiconScope.GLOBAL, "")) == []


async def test_a_lexicon_command_to_one_account_leaves_the_other_unchanged(data_dir: Path) -> None:
    async with serving(config_with_accounts(None), data_dir) as h:
        control = h.gateway.control_for(chat(A))
        answer = await control.lexicon_add(chat(A), "麻将", None)
        assert "麻将" in answer
        assert [t.text for t in h.stack(A).kernel.lexicon.terms(group_key(A))] == ["麻将"]
        assert h.stack(B).kernel.lexicon.terms(group_key(B)) == []
        assert h.stack(B).kernel.lexicon.terms(group_key(A)) == []
        # A command naming B's chat, sent from A's, reaches B's stack.
        await control.lexicon_add(chat(B), "桌游", None)
        assert [t.text for t in h.stack(B).kernel.lexicon.terms(group_key(B))] == ["桌游"]
        assert [t.text for t in h.stack(A).kernel.lexicon.terms(group_key(A))] == ["麻将"]


async def test_a_mute_and_a_disable_for_one_account_do_not_touch_the_other(data_dir: Path) -> None:
    async with serving(config_with_accounts(None), data_dir) as h:
        await h.gateway.control_for(chat(A)).set_group(chat(A), False, by="1")
        assert not h.stack(A).bot.core.groups.enabled(chat(A))
        assert h.stack(B).bot.core.groups.enabled(chat(B))
        assert h.stack(B).bot.core.groups.overrides() == {}
        # The group layer shows in A's full status, with the account layer beneath it.
        status = await h.gateway.control_for(chat(A)).status(chat(A), full=True)
        assert "groups.enabled=False［本群］" in status
        assert "persona.name=小灰［账号 10001］" in status
        assert "budget.max_per_window=1［账号 10001］" in status
        other = await h.gateway.control_for(chat(B)).status(chat(B), full=True)
        assert "groups.enabled" not in other
        assert "persona.name=阿蓝［账号 10002］" in other


async def test_a_sibling_account_addressing_another_never_makes_it_speak(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("不该出现")})
    async with serving(config_with_accounts(openai_server), data_dir) as h:
        # B's words as A hears them: B (a group member to A) @-mentions A, and asks a question.
        heard = await h.say("小灰 你觉得呢？", account=A, sender=B, addressed=True)
        await h.say("小灰，火锅好吃吗？", account=A, sender=B)
        # And A's words as B hears them.
        await h.say("阿蓝 你呢？", account=B, sender=A, addressed=True)
        await h.settle()
        h.clock.advance(120)
        await h.settle()
        assert h.outbound.sent == []
        # Heard all the same: stored as context, in its conversation thread.
        stored = await h.stack(A).store.get_message(chat(A), heard.message_id)
        assert stored is not None
        assert stored.sender_id == B
        assert stored.thread_id
    assert openai_server.chat_requests == []


async def test_two_accounts_in_different_groups_keep_budgets_and_messages_apart(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("A 在"), reply("B 在"))
    async with serving(config_with_accounts(openai_server), data_dir) as h:
        await h.say("在吗", account=A, group=GROUP, addressed=True)
        await h.settle()
        await h.say("在吗", account=B, group=OTHER_GROUP, addressed=True)
        await h.settle()
        assert [(s.chat_id, s.text) for s in h.outbound.sent] == [
            (chat(A, GROUP), "A 在"),
            (chat(B, OTHER_GROUP), "B 在"),
        ]
        a_budget = h.stack(A).kernel.budgets.get(chat(A, GROUP))
        b_budget = h.stack(B).kernel.budgets.get(chat(B, OTHER_GROUP))
        assert a_budget is not None
        assert b_budget is not None
        assert h.stack(A).kernel.budgets.get(chat(B, OTHER_GROUP)) is None
        assert h.stack(B).kernel.budgets.get(chat(A, GROUP)) is None
        assert await h.stack(A).store.count_messages() == 2  # the @ and A's answer
        assert await h.stack(B).store.count_messages() == 2


async def test_an_unlisted_account_is_served_by_the_default_stack_with_the_shared_settings(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("默认在"))
    async with serving(config_with_accounts(openai_server), data_dir) as h:
        await h.say("在吗", account=UNLISTED, addressed=True)
        await h.settle()
        assert h.outbound.texts(chat(UNLISTED)) == ["默认在"]
        default = h.gateway.default
        assert default.edge.data_dir == data_dir
        assert default.edge.config.persona.name == "灰风"
        assert await default.store.count_messages() == 2
        assert await h.stack(A).store.count_messages() == 0
        # The default stack's persona answers: the listed accounts' names are not in its prompt.
        system = openai_server.chat_requests[0].messages[0]["content"]
        assert "灰风" in system
        assert "小灰" not in system


class _Progress:
    """A stack as the journal's progress sees it: writes handed to its writer, and done."""

    def __init__(self) -> None:
        self.handed = self.done = 0

    def store_progress(self) -> tuple[int, int]:
        return self.handed, self.done


async def test_the_journal_progress_counts_writes_done_only_when_every_stack_has_done_its_own(
    data_dir: Path,
) -> None:
    edge = EdgeContext(
        config=config_with_accounts(None),
        config_path=data_dir / "greywind.toml",
        data_dir=data_dir,
        outbound=FakeOutbound(),
        shadow_mode=False,
        model_configured=False,
        superusers=frozenset(),
    )
    gateway = AccountsRuntime(edge)
    a, b, default = _Progress(), _Progress(), _Progress()
    gateway.stacks = {A: a, B: b}  # type: ignore[dict-item]
    gateway.default = default  # type: ignore[assignment]
    a.handed = a.done = 2
    b.handed = b.done = 1
    assert gateway.store_progress() == (3, 3)
    # B's writer lags while A's runs ahead: the sum of done writes (5) would pass the 4 handed
    # before, though B's last one is not committed; only what every writer had done counts.
    b.handed = 2
    a.handed = a.done = 4
    assert gateway.store_progress() == (6, 3)
    b.done = 2
    assert gateway.store_progress() == (6, 6)
    a.done = -1  # a dropped write: nothing counts as done any more
    assert gateway.store_progress()[1] == -1


async def test_a_persona_reload_through_one_account_reloads_that_account_only(data_dir: Path) -> None:
    file = data_dir / "greywind.toml"
    text = f"""
[life]
enabled = false
[[accounts]]
id = {A}
[accounts.persona]
name = "小灰"
[[accounts]]
id = {B}
[accounts.persona]
name = "阿蓝"
"""
    file.write_text(text, encoding="utf-8")
    renamed: list[tuple[str, tuple[str, ...]]] = []
    async with serving(load_config(file), data_dir, rename=lambda a, n: renamed.append((a, n))) as h:
        file.write_text(text.replace("小灰", "小白").replace("阿蓝", "阿紫"), encoding="utf-8")
        answer = await h.gateway.control_for(chat(A)).persona_reload()
        assert "小白" in answer
        assert h.stack(A).bot.core.persona.name == "小白"
        assert h.stack(B).bot.core.persona.name == "阿蓝"  # B reloads only when asked through B
        assert renamed == [(A, ("小白", "greywind"))]


async def test_a_stack_that_cannot_start_stops_those_already_started(data_dir: Path) -> None:
    (data_dir / ACCOUNTS_DIR).mkdir()
    (data_dir / ACCOUNTS_DIR / B).write_text("not a directory", encoding="utf-8")  # B's store cannot open
    edge = EdgeContext(
        config=config_with_accounts(None),
        config_path=data_dir / "greywind.toml",
        data_dir=data_dir,
        outbound=FakeOutbound(),
        shadow_mode=False,
        model_configured=False,
        superusers=frozenset(),
    )
    gateway = build_runtime(edge)
    assert isinstance(gateway, AccountsRuntime)
    async with anyio.create_task_group() as tg:
        with pytest.raises(StoreError, match="10002"):
            await gateway.start(tg)
        tg.cancel_scope.cancel()
    a = gateway.stacks[A]
    assert not a.running  # A had started: it was stopped again, its store closed
    assert a.bot.lifetime.closing
