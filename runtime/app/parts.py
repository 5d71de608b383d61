"""The parts that need the store: opened on start, in dependency order.

The SQLite store (``greywind.sqlite3`` under the data directory), its chats from before keys named
their account rebound (:mod:`runtime.store.rebind`), and its writer; the memory layer
(rolling summary and user profiles) when a model can compress; the Context Runtime on top of both,
fed by the runtime's recent buffer and writing message→topic links through the writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from runtime.app.handoff_model import RouterSummarizer
from runtime.context.setup import context_runtime
from runtime.memory.layers import five_layer_runtime, memory_layer
from runtime.store.errors import StoreError
from runtime.store.rebind import rebind_known
from runtime.store.records import TopicLink
from runtime.store.sqlite.schema import DB_FILENAME
from runtime.store.sqlite.store import SqliteStore
from runtime.store.writer import StoreWriter

if TYPE_CHECKING:
    from runtime.app.runtime import Runtime

__all__ = ["open_store_parts"]

log = structlog.get_logger("greywind.runtime")

# Instructions and the schemas of the control, built-in, task and game tools, estimated high.
TOOLS_RESERVE_TOKENS = 3_000


async def open_store_parts(rt: Runtime) -> None:
    """Set ``rt.store``, ``rt.writer``, ``rt.memory`` and ``rt.context``."""
    config = rt.config
    rt.store = await SqliteStore.open(rt.data_dir / DB_FILENAME, config=config.store)
    try:
        # Before anything is restored: chats from before keys named their account get it.
        await rebind_known(rt.store, rt.data_dir, rt.edge.chat_bindings())
    except (StoreError, ValueError):
        log.exception("chats_rebind_failed")  # the unbound chats stay; the next start tries again
    rt.writer = StoreWriter.from_config(rt.store, config.store)

    def link(item: TopicLink) -> None:
        try:
            rt.writer.put_nowait(item)
        except Exception as exc:  # a full queue loses a topic link, never the turn
            log.warning("topic_link_dropped", chat_id=item.chat_id, error=repr(exc))

    window = rt.router.context_window() or None
    if window is not None:
        # The packet is not all the model is sent: the instructions, every tool's schema and the
        # episode's own steps (tool results) ride along; the assembler must leave them room.
        overhead = TOOLS_RESERVE_TOKENS + config.episodes.tool_result_max_chars // 2
        window = max(window // 2, window - overhead)
    counter = rt.router.estimator
    summarizer = RouterSummarizer(rt.router) if rt.model_ready else None
    if rt.model_ready and config.memory_injection.enabled:
        rt.memory = memory_layer(rt.store, config, rt.router, clock=rt.clock, data_dir=rt.data_dir)
        rt.context = five_layer_runtime(
            rt.store,
            config,
            rt.memory,
            ids=rt.ids,
            counter=counter,
            context_window=window,
            link=link,
            recent=rt.recent,
            summarizer=summarizer,
        )
    else:
        rt.memory = None
        rt.context = context_runtime(
            rt.store,
            config,
            ids=rt.ids,
            counter=counter,
            context_window=window,
            link=link,
            recent=rt.recent,
            summarizer=summarizer,
        )
