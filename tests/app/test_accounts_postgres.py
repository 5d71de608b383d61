"""Several accounts in one process on PostgreSQL: each stack its own schema, nothing crossing.

The same gateway as ``test_accounts.py`` (:class:`runtime.app.accounts.AccountsRuntime` over the fake
edge and the scripted model server), its store the real (throwaway) PostgreSQL server: both accounts
start on the one database, hear the same group, and what one account's stack keeps — its global
lexicon, a group term, a user profile, a memory — the other's never sees, now or after a restart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config import GreyWindConfig, parse_config
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope
from runtime.store.records import Memory, ScopeType, UserProfile
from tests.app.test_accounts import A, B, chat, config_with_accounts, group_key, reply, serving
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

GLOBAL = LexiconKey(LexiconScope.GLOBAL, "")


def on_postgres(server: ScriptedOpenAIServer | None) -> GreyWindConfig:
    data = config_with_accounts(server).model_dump(mode="json")
    data["store"] = {**data["store"], "backend": "postgresql"}
    return parse_config(data)


async def test_two_accounts_in_one_group_on_postgresql_keep_their_state_apart(
    openai_server: ScriptedOpenAIServer, postgres_dsn: str, data_dir: Path
) -> None:
    openai_server.push(reply("我是小灰"))
    config = on_postgres(openai_server)
    async with serving(config, data_dir) as h:
        a, b = h.stack(A), h.stack(B)
        await h.say("在吗", account=A, addressed=True)
        await h.say("今天吃什么", account=B)
        await h.settle()
        assert h.outbound.texts() == ["我是小灰"]
        assert [m.text for m in await b.store.recent_messages(chat(A), limit=10)] == []
        # B's configured global term is B's: A's kernel and A's store never see it.
        assert [t.text for t in b.kernel.lexicon.terms(GLOBAL)] == ["火锅"]
        assert a.kernel.lexicon.terms(GLOBAL) == []
        assert all(t.term != "火锅" for t in await a.store.load_lexicon_terms())
        # A group term added through A, a profile and a memory in A's store: none of them in B's.
        await h.gateway.control_for(chat(A)).lexicon_add(chat(A), "麻将", None)
        await h.settle()
        await a.store.upsert_user_profile(UserProfile("42", "阿青", 1.0, preferences=("爱打麻将",)))
        await a.store.upsert_memory(
            Memory("mem-a", ScopeType.IDENTITY, "", "fact", "阿青爱打麻将", 0.8, 1.0, 1.0)
        )
        assert await a.store.get_user_profile("42") is not None
        for other in (b, h.gateway.default):
            assert await other.store.get_user_profile("42") is None
            assert await other.store.list_memories(scopes=[(ScopeType.IDENTITY, "")]) == []
            assert await other.store.search_memories("麻将", scopes=[(ScopeType.IDENTITY, "")]) == []
            assert all(t.term != "麻将" for t in await other.store.load_lexicon_terms())
        assert "麻将" not in await b.control.lexicon_list(chat(B))
    # A restart on the same database: each account restores its own, and only its own.
    async with serving(on_postgres(None), data_dir) as h:
        a, b = h.stack(A), h.stack(B)
        assert [t.text for t in a.kernel.lexicon.terms(group_key(A))] == ["麻将"]
        assert b.kernel.lexicon.terms(group_key(A)) == []
        assert a.kernel.lexicon.terms(GLOBAL) == []
        assert [t.text for t in b.kernel.lexicon.terms(GLOBAL)] == ["火锅"]
        assert [m.id for m in await a.store.list_memories(scopes=[(ScopeType.IDENTITY, "")])] == ["mem-a"]
        assert await b.store.list_memories(scopes=[(ScopeType.IDENTITY, "")]) == []
