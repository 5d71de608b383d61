"""The "50+ rounds" check of design/001, made deterministic: ten facts planted in rounds 1–10 are all in what
the model is sent at rounds 55–60, carried by the rolling summary (the window holds only the last ten
rounds), and the raw message a question asks about is retrieved beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.memory.export import COMPRESSED_FILE, INJECTION_LOG_FILE, conversation_dir
from runtime.memory.prompt import COMPRESSION_MARKER
from runtime.memory.summary import CompressedSummary
from runtime.store.sqlite import SqliteStore
from tests.support.memory_dialogue import CHAT, FACTS, Dialogue, dialogue_config, forgetful_compressor
from tests.support.openai_server import ScriptedOpenAIServer


def sent_text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


@pytest.mark.asyncio
async def test_ten_early_facts_reach_the_model_at_rounds_55_to_60(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url), data_dir=tmp_path)
    try:
        assert dialogue.layer.compensating  # a 32k model: sliding window + injection
        sent = await dialogue.run(60)
    finally:
        await dialogue.aclose()

    chat_requests = [r for r in model.chat_requests if COMPRESSION_MARKER not in r.all_text]
    assert len(chat_requests) == 60
    for n in range(55, 61):
        # What the server received, not what the runtime thinks it sent.
        received = chat_requests[n - 1].all_text
        assert received == sent_text(sent[n - 1])
        missing = [f.marker for f in FACTS if f.marker not in received]
        assert not missing, f"round {n} lost {missing}"
        # The window is the last ten rounds only: the facts cannot have come from raw dialogue turns.
        turns = [m for m in chat_requests[n - 1].messages if m["role"] in ("user", "assistant")]
        assert len(turns) <= 2 * 10 + 1
        assert not any("记住：" in str(m["content"]) for m in turns)


@pytest.mark.asyncio
async def test_a_late_question_also_retrieves_the_raw_message_it_asks_about(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    try:
        sent = await dialogue.run(56)
    finally:
        await dialogue.aclose()
    # Round 56 asks about fact 2 (the birthday); the stored message stating it is retrieved.
    context = sent[55][1]["content"]
    retrieved = context.split("# 相关记忆", 1)
    assert len(retrieved) == 2, "no retrieved section in the prompt"
    assert FACTS[1].statement in retrieved[1]


@pytest.mark.asyncio
async def test_compressions_fold_the_previous_summary_into_the_next(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url), data_dir=tmp_path)
    try:
        await dialogue.run(30)
    finally:
        await dialogue.aclose()
    compressions = [r for r in model.chat_requests if COMPRESSION_MARKER in r.all_text]
    assert len(compressions) == 3
    # The second and third requests carry the old summary (with the facts) and only the new rounds.
    for request in compressions[1:]:
        text = request.last_user_text
        old, new = text.split("【新的对话】", 1)
        assert all(f.statement in old for f in FACTS)
        assert "记住：" not in new
    assert "第 11–20 轮" in compressions[1].last_user_text

    document = await dialogue.layer.injector.document(CHAT.chat_id)
    assert document.version == 3
    assert document.total_rounds_processed == 30
    exported = conversation_dir(tmp_path, CHAT.chat_id)
    on_disk = CompressedSummary.model_validate_json((exported / COMPRESSED_FILE).read_text("utf-8"))
    assert on_disk == document
    assert (exported / INJECTION_LOG_FILE).read_text("utf-8").count('"compressed"') == 3


@pytest.mark.asyncio
async def test_when_the_summary_forgets_retrieval_still_brings_the_asked_fact(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    model.respond_with(forgetful_compressor(4))  # the summary keeps facts 7–10 only
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    try:
        sent = await dialogue.run(60)
    finally:
        await dialogue.aclose()
    for n in range(55, 61):
        asked = FACTS[n - 55]
        context = sent[n - 1][1]["content"]
        summary = context.split("# 记忆摘要", 1)[1].split("\n\n#", 1)[0]
        assert asked.marker not in summary
        assert asked.marker in context.split("# 相关记忆", 1)[1], f"round {n} lost {asked.marker}"
