"""The model plugs against the scripted OpenAI-compatible server: handoff digests from the compression
role (with the fallback when the answer is junk), and embeddings for retrieval."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import numpy as np
import pytest
import pytest_asyncio

from runtime.config import parse_config
from runtime.context.handoffs import HandoffManager, HandoffRequest
from runtime.context.models import ModelEmbedder, ModelSummarizer
from runtime.context.retrieval import RetrievalEngine, RetrievalQuery
from runtime.llm.router import ModelRouter
from runtime.store.protocol import Store
from runtime.store.records import Memory, ScopeType
from tests.support.openai_server import ScriptedOpenAIServer

REQUEST = HandoffRequest(
    session_id="s1",
    topic_thread_id="t1",
    thread_title="灰风系统架构设计",
    chat_id="group:1",
    dialogue=("甲: architecture-v2 写完了", "灰风: 下一步写 context-runtime"),
    open_tasks=("写 context-runtime.md",),
)
DIGEST = {
    "summary": "architecture-v2 已完成，下一步展开 context-runtime",
    "unfinished_items": ["定义 slot 结构"],
    "risks": ["不要忽略 thread/session 区分"],
    "resume_suggestion": "优先完成 context-runtime.md",
}


@pytest_asyncio.fixture
async def router(openai_server: ScriptedOpenAIServer) -> AsyncIterator[ModelRouter]:
    env = {"GREYWIND_LLM_BASE_URL": openai_server.base_url, "GREYWIND_LLM_MODEL": "scripted"}
    models = parse_config({"models": {"retry_backoff_ms": 1}}).models
    made = ModelRouter(models, env=env)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.mark.asyncio
async def test_the_compression_role_writes_the_handoff(
    store: Store, router: ModelRouter, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push({"text": "```json\n" + json.dumps(DIGEST, ensure_ascii=False) + "\n```"})
    handoffs = HandoffManager(store, summarizer=ModelSummarizer(router))
    handoff = await handoffs.write(REQUEST, now=1.0)
    assert handoff.written_by == "model"
    assert handoff.summary == DIGEST["summary"]
    assert handoff.unfinished_items == ("定义 slot 结构",)
    sent = openai_server.chat_requests[0].messages
    assert "交接" in sent[0]["content"]
    assert "architecture-v2 写完了" in sent[1]["content"]


@pytest.mark.parametrize(
    "answer", [{"text": "好的，我来总结一下"}, {"text": '{"risks": []}'}, {"status": 500}]
)
@pytest.mark.asyncio
async def test_a_junk_or_failed_answer_falls_back(
    store: Store, router: ModelRouter, openai_server: ScriptedOpenAIServer, answer: dict[str, object]
) -> None:
    openai_server.push(answer, answer, answer)
    handoffs = HandoffManager(store, summarizer=ModelSummarizer(router))
    handoff = await handoffs.write(REQUEST, now=1.0)
    assert handoff.written_by == "fallback"
    assert handoff.resume_suggestion == "写 context-runtime.md"
    assert handoffs.statistics().model_failures == 1


@pytest.mark.asyncio
async def test_embeddings_from_the_embedding_role_serve_retrieval(store: Store, router: ModelRouter) -> None:
    embedder = ModelEmbedder(router)
    texts = ["周五晚上一起吃火锅", "Python 爬虫抓天气数据"]
    vectors = await embedder.embed(texts)
    assert len(vectors) == 2
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        await store.upsert_memory(Memory(f"m{i}", ScopeType.CHAT, "group:1", "fact", text, 0.5, 1.0))
        await store.save_memory_vector(f"m{i}", np.asarray(vector, dtype="<f4").tobytes())
    found = await RetrievalEngine(store, embedder=embedder).retrieve(
        RetrievalQuery("group:1", "周五晚上一起吃火锅")
    )
    assert found[0].source_id == "m0"
