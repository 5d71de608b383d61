"""The parts that need the store, as the composition root (:mod:`runtime.app.compose`) opens them.

The memory layer (rolling summary and user profiles) when a model can compress, and the Context
Runtime on top of the store (opened by name, :func:`runtime.store.backends.open_store`) and the
memory layer, fed by the runtime's recent buffer and writing message→topic links through the store
writer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import structlog

from runtime.app.handoff_model import RouterSummarizer
from runtime.config import GreyWindConfig
from runtime.context.builder import RecentBuffer
from runtime.context.setup import ContextRuntime, context_runtime
from runtime.kernel.ids import IdFactory
from runtime.llm.router import ModelRouter
from runtime.memory.layers import MemoryLayer, five_layer_runtime, memory_layer
from runtime.store.protocol import Store
from runtime.store.records import TopicLink
from runtime.store.writer import StoreWriter

__all__ = ["open_context"]

log = structlog.get_logger("greywind.runtime")

# Instructions and the schemas of the control, built-in, task and game tools, estimated high.
TOOLS_RESERVE_TOKENS = 3_000


def open_context(
    store: Store,
    writer: StoreWriter,
    config: GreyWindConfig,
    router: ModelRouter,
    *,
    model_ready: bool,
    clock: Callable[[], float],
    data_dir: Path,
    ids: IdFactory,
    recent: RecentBuffer,
) -> tuple[ContextRuntime, MemoryLayer | None]:
    """The Context Runtime, with the memory layer under it when a model can compress."""

    def link(item: TopicLink) -> None:
        try:
            writer.put_nowait(item)
        except Exception as exc:  # a full queue loses a topic link, never the turn
            log.warning("topic_link_dropped", chat_id=item.chat_id, error=repr(exc))

    window = router.context_window() or None
    if window is not None:
        # The packet is not all the model is sent: the instructions, every tool's schema and the
        # episode's own steps (tool results) ride along; the assembler must leave them room.
        overhead = TOOLS_RESERVE_TOKENS + config.episodes.tool_result_max_chars // 2
        window = max(window // 2, window - overhead)
    counter = router.estimator
    summarizer = RouterSummarizer(router) if model_ready else None
    if model_ready and config.memory_injection.enabled:
        memory = memory_layer(store, config, router, clock=clock, data_dir=data_dir)
        context = five_layer_runtime(
            store,
            config,
            memory,
            ids=ids,
            counter=counter,
            context_window=window,
            link=link,
            recent=recent,
            summarizer=summarizer,
        )
        return context, memory
    context = context_runtime(
        store,
        config,
        ids=ids,
        counter=counter,
        context_window=window,
        link=link,
        recent=recent,
        summarizer=summarizer,
    )
    return context, None
