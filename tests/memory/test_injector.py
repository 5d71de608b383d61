"""MemoryInjector against the scripted server: triggers fire at the right rounds, a restart neither
repeats nor skips one, and model faults (500, 429 with Retry-After, timeouts, invalid JSON) keep the old
summary, crash nothing, and are retried later."""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.memory.errors import CompressionFailedError
from runtime.memory.export import COMPRESSED_FILE, INJECTION_LOG_FILE, conversation_dir
from runtime.memory.prompt import COMPRESSION_MARKER
from runtime.memory.summary import CompressedSummary
from runtime.store.memory import MemoryStore
from runtime.store.records import MemorySummary, StoredMessage
from runtime.store.sqlite import DB_FILENAME, SqliteStore
from tests.support.memory_dialogue import CHAT, FACTS, Dialogue, dialogue_config, fact_compressor
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer


def compressions(server: ScriptedOpenAIServer) -> list[RecordedRequest]:
    return [r for r in server.chat_requests if COMPRESSION_MARKER in r.all_text]


def failing_first(*steps: dict[str, Any]) -> Callable[[RecordedRequest], dict[str, Any] | None]:
    """A responder whose next compression answers are ``steps``, then the fact compressor's."""
    queue = deque(steps)

    def respond(request: RecordedRequest) -> dict[str, Any] | None:
        if COMPRESSION_MARKER in request.all_text and queue:
            return queue.popleft()
        return fact_compressor(request)

    return respond


async def rounds_with_compression(dialogue: Dialogue, server: ScriptedOpenAIServer, n: int) -> list[int]:
    """Play ``n`` rounds; the round numbers after which a compression request was sent."""
    fired = []
    for _ in range(n):
        before = len(compressions(server))
        await dialogue.step()
        if len(compressions(server)) > before:
            fired.append(dialogue.round)
    return fired


@pytest.mark.asyncio
async def test_every_n_rounds_fires_exactly_at_each_tenth_round(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    try:
        assert await rounds_with_compression(dialogue, model, 35) == [10, 20, 30]
    finally:
        await dialogue.aclose()
    counters = await dialogue.layer.injector.counters(CHAT.chat_id)
    assert (counters.rounds_processed, counters.rounds_since) == (35, 5)
    stats = dialogue.layer.injector.statistics()
    assert stats.compressions == 3
    assert stats.triggers == (("every_n_rounds", 3),)


@pytest.mark.asyncio
async def test_token_threshold_fires_before_the_tenth_round(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    # Each round is roughly 60–90 estimated tokens: 200 are passed in the third round.
    config = dialogue_config(model.base_url, compression_trigger={"token_threshold": 200})
    dialogue = Dialogue(sqlite_store, config)
    try:
        fired = await rounds_with_compression(dialogue, model, 9)
    finally:
        await dialogue.aclose()
    assert fired
    assert fired[0] < 10
    assert dialogue.layer.injector.statistics().triggers[0][0] == "token_threshold"
    # Tokens restart from zero after each compression, so firings are spaced, not every round.
    assert all(b - a >= 2 for a, b in itertools.pairwise(fired))


@pytest.mark.asyncio
async def test_a_restart_neither_fires_twice_nor_skips(model: ScriptedOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    try:
        first = Dialogue(store, dialogue_config(model.base_url))
        assert await rounds_with_compression(first, model, 15) == [10]
        await first.aclose()
    finally:
        await store.close()

    store = await SqliteStore.open(path)  # a new process: nothing in memory survives
    try:
        second = Dialogue(store, dialogue_config(model.base_url), start_round=16)
        assert await second.layer.injector.resume(second.now) == 0
        assert await rounds_with_compression(second, model, 10) == [20]
        await second.aclose()
        counters = await second.layer.injector.counters(CHAT.chat_id)
        assert (counters.rounds_processed, counters.rounds_since) == (25, 5)
        document = await second.layer.injector.document(CHAT.chat_id)
        assert all(f.statement in document.summary.confirmed_decisions for f in FACTS)
    finally:
        await store.close()


@pytest.mark.asyncio
async def test_a_compression_due_when_the_process_stopped_runs_once_after_the_restart(
    model: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    try:
        first = Dialogue(store, dialogue_config(model.base_url))
        for _ in range(10):
            await first.step(compress=False)  # the background job never got to run
        assert first.layer.injector.pending() == (CHAT.chat_id,)
        await first.aclose()
    finally:
        await store.close()
    assert compressions(model) == []

    store = await SqliteStore.open(path)
    try:
        second = Dialogue(store, dialogue_config(model.base_url), start_round=11)
        assert await second.layer.injector.resume(second.now) == 1
        outcomes = await second.layer.injector.run_pending()
        assert [o.ok for o in outcomes] == [True]
        assert await second.layer.injector.run_pending() == []
        assert len(compressions(model)) == 1
        assert "第 1–10 轮" in compressions(model)[0].last_user_text
        # Rounds 11–19 do not fire; round 20 does.
        assert await rounds_with_compression(second, model, 10) == [20]
        await second.aclose()
    finally:
        await store.close()


FAULTS = [
    pytest.param({"status": 500}, id="500"),
    pytest.param({"status": 429, "headers": {"Retry-After": "120"}}, id="429-retry-after"),
    pytest.param({"delay": 1.0}, id="timeout"),
    pytest.param({"text": "好的，我已经记住了这些内容。"}, id="prose"),
    pytest.param({"text": '{"summary": "一切正常"}'}, id="wrong-shape"),
    pytest.param({"text": '{"confirmed_decisions": ["半截'}, id="truncated-json"),
    pytest.param({"raw": "<html>bad gateway</html>"}, id="not-json-body"),
    pytest.param({"close": True}, id="connection-dropped"),
]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.asyncio
async def test_a_failed_compression_keeps_the_old_summary_and_is_retried_later(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer, tmp_path: Path, fault: dict[str, Any]
) -> None:
    config = dialogue_config(model.base_url, timeout_ms=300)
    dialogue = Dialogue(sqlite_store, config, data_dir=tmp_path)
    injector = dialogue.layer.injector
    try:
        await dialogue.run(10)
        good = await injector.document(CHAT.chat_id)
        assert good.version == 1

        model.respond_with(failing_first(fault))
        for _ in range(9):
            await dialogue.step()
        await dialogue.step()  # round 20: due; the compression fails
        failed_at = dialogue.now
        assert await injector.document(CHAT.chat_id) == good
        stored = await sqlite_store.get_memory_summary(CHAT.chat_id)
        assert stored is not None
        assert CompressedSummary.from_json(stored.summary) == good
        assert stored.rounds_since_compression == 10  # nothing was counted as compressed
        retry_at = injector.next_due_at()
        assert retry_at is not None
        wait = 120.0 if fault.get("status") == 429 else 30.0
        assert retry_at == pytest.approx(failed_at + wait, abs=2.0)

        # Replies go on while the retry waits; the next rounds still carry the old summary.
        sent = await dialogue.step(compress=False)
        assert all(f.marker in "\n".join(m["content"] for m in sent) for f in FACTS)
        assert await injector.run_pending(retry_at - 1) == []

        outcomes = await injector.run_pending(retry_at)
        assert [o.ok for o in outcomes] == [True]
        fixed = await injector.document(CHAT.chat_id)
        assert fixed.version == 2
        assert fixed.total_rounds_processed == 21
        assert all(f.statement in fixed.summary.confirmed_decisions for f in FACTS)
        assert injector.next_due_at() is None
    finally:
        await dialogue.aclose()
    log = json.loads((conversation_dir(tmp_path, CHAT.chat_id) / INJECTION_LOG_FILE).read_text("utf-8"))
    events = [entry["event"] for entry in log]
    assert events.count("compression_failed") == 1
    assert events.count("compressed") == 2


@pytest.mark.asyncio
async def test_backoff_doubles_across_consecutive_failures_and_resets_on_success(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    model.respond_with(failing_first({"status": 500}, {"status": 503}, {"text": "不是JSON"}))
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    injector = dialogue.layer.injector
    try:
        for _ in range(10):
            await dialogue.step(compress=False)
        waits = []
        for _ in range(3):
            [outcome] = await injector.run_pending(dialogue.now)
            assert not outcome.ok
            assert outcome.retry_at is not None
            waits.append(round(outcome.retry_at - dialogue.now))
            assert await injector.run_pending(outcome.retry_at - 1) == []
            dialogue.now = outcome.retry_at  # the injector's clock
        assert waits == [30, 60, 120]
        [outcome] = await injector.run_pending(dialogue.now)
        assert outcome.ok
        assert injector.statistics().failures == 3
    finally:
        await dialogue.aclose()


@pytest.mark.asyncio
async def test_compress_now_raises_when_the_model_fails_and_keeps_nothing_half_done(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    model.respond_with(failing_first({"status": 500}))
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    try:
        for _ in range(3):
            await dialogue.step()
        with pytest.raises(CompressionFailedError):
            await dialogue.layer.injector.compress_now(CHAT.chat_id)
        assert (await dialogue.layer.injector.document(CHAT.chat_id)).version == 0
        outcome = await dialogue.layer.injector.compress_now(CHAT.chat_id)
        assert outcome.ok
        assert outcome.messages == 6
    finally:
        await dialogue.aclose()


@pytest.mark.asyncio
async def test_session_start_forces_a_compression_only_when_something_is_uncompressed(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    injector = dialogue.layer.injector
    try:
        assert not (await injector.note_session_start(CHAT.chat_id, now=dialogue.now)).due
        for _ in range(4):
            await dialogue.step()
        check = await injector.note_session_start(CHAT.chat_id, now=dialogue.now)
        assert check.reason is not None
        assert check.reason.value == "force_on_session_start"
        assert [o.ok for o in await injector.run_pending(dialogue.now)] == [True]
        assert not (await injector.note_session_start(CHAT.chat_id, now=dialogue.now)).due
    finally:
        await dialogue.aclose()

    off = dialogue_config(model.base_url, compression_trigger={"force_on_session_start": False})
    quiet = Dialogue(sqlite_store, off, start_round=5)
    try:
        await quiet.step()
        assert not (await quiet.layer.injector.note_session_start(CHAT.chat_id, now=quiet.now)).due
    finally:
        await quiet.aclose()


@pytest.mark.asyncio
async def test_exports_use_the_seed_file_names_under_a_sanitised_directory(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url), data_dir=tmp_path)
    try:
        await dialogue.run(11)
    finally:
        await dialogue.aclose()
    directory = tmp_path / "memory" / "private_10001"
    assert directory == conversation_dir(tmp_path, CHAT.chat_id)
    document = json.loads((directory / COMPRESSED_FILE).read_text("utf-8"))
    assert set(document) >= {"version", "last_compressed_at", "total_rounds_processed", "summary"}
    assert document["last_compressed_at"].endswith("+08:00")
    assert set(document["summary"]) == {
        "requirements",
        "confirmed_decisions",
        "user_preferences",
        "open_questions",
        "emotional_signals",
    }
    log = json.loads((directory / INJECTION_LOG_FILE).read_text("utf-8"))
    assert [e["event"] for e in log].count("triggered") == 1
    assert any(e["event"] == "injected" for e in log)  # the summary went into a prompt


@pytest.mark.asyncio
async def test_a_corrupt_stored_summary_is_replaced_not_fatal(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    await sqlite_store.upsert_memory_summary(
        MemorySummary(
            conversation=CHAT.chat_id,
            version=7,
            summary={"version": "seven", "summary": 3},
            rounds_processed=9,
            rounds_since_compression=9,
            tokens_since_compression=500,
            last_compressed_at=None,
            updated_at=0.0,
        )
    )
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url), start_round=10)
    try:
        assert await rounds_with_compression(dialogue, model, 1) == [10]
        document = await dialogue.layer.injector.document(CHAT.chat_id)
        assert document.version == 1
        assert document.total_rounds_processed == 10
    finally:
        await dialogue.aclose()


@pytest.mark.asyncio
async def test_the_transcript_holds_unflushed_messages_once_and_store_copies_once(
    sqlite_store: SqliteStore, model: ScriptedOpenAIServer
) -> None:
    dialogue = Dialogue(sqlite_store, dialogue_config(model.base_url))
    injector = dialogue.layer.injector
    try:
        t = dialogue.now
        user = StoredMessage(CHAT.chat_id, "u-x", "10001", "阿澈", t, "记住：周日去看海。")
        noted_reply = StoredMessage(
            CHAT.chat_id, "ep-9:reply", "self", "灰风", t + 1, "好，周日看海。", from_self=True
        )
        # The writer has flushed the reply under the platform's id, but not the user's message yet.
        flushed_reply = StoredMessage(
            CHAT.chat_id, "9001", "bot", "灰风", t + 2, "好，周日看海。", from_self=True
        )
        await sqlite_store.append_messages([flushed_reply])
        await injector.note_round(CHAT.chat_id, [user, noted_reply], now=t + 2)
        outcome = await injector.compress_now(CHAT.chat_id)
    finally:
        await dialogue.aclose()
    assert outcome.messages == 2
    [request] = compressions(model)
    assert request.last_user_text.count("周日去看海") == 1
    assert request.last_user_text.count("好，周日看海") == 1
    document = await injector.document(CHAT.chat_id)
    assert document.summary.confirmed_decisions == ("记住：周日去看海。",)


class FlakyStore(MemoryStore):
    """Reading recent messages fails while ``broken`` (a locked or vanished database)."""

    broken = False

    async def recent_messages(self, chat_id: str, **kwargs: Any) -> list[StoredMessage]:
        if self.broken:
            raise OSError("database is locked")
        return await super().recent_messages(chat_id, **kwargs)


@pytest.mark.asyncio
async def test_a_store_fault_during_compression_stays_in_the_background_job(
    model: ScriptedOpenAIServer,
) -> None:
    store = FlakyStore()
    dialogue = Dialogue(store, dialogue_config(model.base_url))
    injector = dialogue.layer.injector
    try:
        store.broken = True
        for _ in range(10):
            await dialogue.step()  # replies go on (the builder degrades around the store too)
        assert compressions(model) == []
        assert injector.statistics().failures == 1
        retry_at = injector.next_due_at()
        assert retry_at is not None
        store.broken = False
        dialogue.now = retry_at
        [outcome] = await injector.run_pending(retry_at)
        assert outcome.ok
        assert (await injector.document(CHAT.chat_id)).version == 1
    finally:
        await dialogue.aclose()
        await store.close()
