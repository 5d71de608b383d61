"""Lexicon learning in the running bot: the kernel's queue, bounded by ``[scheduling] learn_queue_max``,
learned in batches whose segmentation runs in a worker thread, never on the event loop."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from runtime.kernel.lexicon.lexicon import DynamicLexicon
from tests.app.conftest import make_config, running

pytestmark = pytest.mark.asyncio


async def test_the_configured_learn_queue_max_bounds_the_bot_s_queue(data_dir: Path) -> None:
    config = make_config(None, scheduling={"learn_queue_max": 3})
    async with running(config, data_dir, model=False) as h:
        for index in range(5):
            await h.say(f"周末的剧本杀谁组局 {index}", sender=str(300 + index))
        stats = h.runtime.statistics()
        assert stats.learn_queue == 3
        assert stats.kernel.learn_dropped == 2
        assert await h.runtime.maintenance.learn() == 3  # the three newest; the two oldest were dropped
        assert h.runtime.statistics().learn_queue == 0


async def test_zero_learns_nothing(data_dir: Path) -> None:
    config = make_config(None, scheduling={"learn_queue_max": 0})
    async with running(config, data_dir, model=False) as h:
        for index in range(12):
            await h.say(f"周末的剧本杀谁组局 {index}", sender=str(300 + index % 4))
        assert await h.runtime.maintenance.learn() == 0
        assert "组局" not in await h.runtime.control.lexicon_list("group:500")


async def test_segmentation_runs_in_a_worker_thread(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    prepare = DynamicLexicon.prepare_learning

    def recording(self: DynamicLexicon, texts_by_key: object) -> object:
        threads.append(threading.get_ident())
        return prepare(self, texts_by_key)  # type: ignore[arg-type]

    monkeypatch.setattr(DynamicLexicon, "prepare_learning", recording)
    async with running(make_config(None), data_dir, model=False) as h:
        for index in range(12):
            await h.say(f"周末的剧本杀谁组局 {index}", sender=str(300 + index % 4))
        assert await h.runtime.maintenance.learn() == 12
        assert "组局" in await h.runtime.control.lexicon_list("group:500")
    assert threads
    assert threading.get_ident() not in threads


async def test_a_batch_over_many_chats_is_applied_a_slice_at_a_time_and_learns_the_same(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    applied: list[int] = []
    apply = DynamicLexicon.apply_learning

    def noting(self: DynamicLexicon, batch: object, now: float) -> object:
        applied.append(sum(len(texts) for _, texts in batch.texts))  # type: ignore[attr-defined]
        return apply(self, batch, now)  # type: ignore[arg-type]

    monkeypatch.setattr(DynamicLexicon, "apply_learning", noting)
    chats, slice_texts = 60, 100  # maintenance.LEARN_SLICE_TEXTS
    async with running(make_config(None), data_dir, model=False) as h:
        for index in range(chats * 4):
            await h.say(
                f"周末的剧本杀谁组局 {index}", chat=f"group:{700 + index % chats}", sender=str(300 + index)
            )
        assert await h.runtime.maintenance.learn() == chats * 4
        # The loop was let go between slices of whole chats, not held for the whole batch.
        assert len(applied) >= chats * 4 // slice_texts
        assert max(applied) <= slice_texts + 4
        assert sum(applied) == chats * 4
        for chat in (700, 700 + chats - 1):
            assert "组局" in await h.runtime.control.lexicon_list(f"group:{chat}")
