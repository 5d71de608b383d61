"""Wiring: the Context Runtime's parts built from the configuration, and one call per activation.

``context_runtime(store, config, ...)`` makes the resolver, sessions, handoffs, tasks, retrieval, the
builder and the assembler from ``[persona]``, ``[context]`` and ``[memory_injection]``; the model-facing
parts are plugged in by the caller: a token counter (``runtime.llm.tokens.TokenEstimator``), the
compression role as a handoff :class:`Summarizer`, an :class:`Embedder`, and the store writer's ``put``
for message→topic links. :meth:`ContextRuntime.prepare` is what an episode calls: packet and prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.context.assembler import AssembledPrompt, AssemblerStatistics, PromptAssembler
from runtime.context.builder import (
    BuilderSettings,
    BuilderStatistics,
    BuildReason,
    BuiltContext,
    ChatInfo,
    ContextBuilder,
    ProfileProvider,
    RecentMessages,
    StoreProfiles,
    StoreSummaries,
    SummaryProvider,
)
from runtime.context.handoffs import HandoffManager, HandoffManagerStatistics, Summarizer
from runtime.context.packet import PersonaSlot
from runtime.context.resolver import ResolverSettings, ResolverStatistics, ThreadResolver
from runtime.context.retrieval import Embedder, RetrievalEngine, RetrievalSettings, RetrievalStatistics
from runtime.context.sessions import SessionManager, SessionManagerStatistics, SessionSettings
from runtime.context.tasks import TaskBook, TaskBookStatistics
from runtime.context.tokens import as_counter
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.kernel.message import ChatMessage
from runtime.store.protocol import Store
from runtime.store.records import TopicLink

__all__ = ["ContextRuntime", "ContextRuntimeStatistics", "context_runtime"]


@dataclass(frozen=True, slots=True)
class ContextRuntimeStatistics:
    builder: BuilderStatistics
    assembler: AssemblerStatistics
    resolver: ResolverStatistics
    sessions: SessionManagerStatistics
    handoffs: HandoffManagerStatistics
    retrieval: RetrievalStatistics
    tasks: TaskBookStatistics


@dataclass(frozen=True, slots=True)
class ContextRuntime:
    builder: ContextBuilder
    assembler: PromptAssembler
    resolver: ThreadResolver
    sessions: SessionManager
    handoffs: HandoffManager
    tasks: TaskBook
    retrieval: RetrievalEngine

    async def prepare(
        self,
        trigger: ChatMessage | None,
        *,
        chat: ChatInfo,
        now: float,
        reason: BuildReason | str,
        conversation_thread_id: str | None = None,
        cue: str | None = None,
        topic_thread_id: str | None = None,
        defer_writes: bool = False,
    ) -> tuple[BuiltContext, AssembledPrompt]:
        """Build the packet for an activation and assemble it into the model's messages; with
        ``defer_writes`` the build's writes go on behind it (:meth:`ContextBuilder.settle`)."""
        built = await self.builder.build(
            trigger,
            chat=chat,
            now=now,
            reason=reason,
            conversation_thread_id=conversation_thread_id,
            cue=cue,
            topic_thread_id=topic_thread_id,
            defer_writes=defer_writes,
        )
        return built, self.assembler.assemble(built.packet)

    def statistics(self) -> ContextRuntimeStatistics:
        return ContextRuntimeStatistics(
            builder=self.builder.statistics(),
            assembler=self.assembler.statistics(),
            resolver=self.resolver.statistics(),
            sessions=self.sessions.statistics(),
            handoffs=self.handoffs.statistics(),
            retrieval=self.retrieval.statistics(),
            tasks=self.tasks.statistics(),
        )


def context_runtime(
    store: Store,
    config: Any,
    *,
    ids: IdFactory | None = None,
    counter: object | None = None,
    model: str | None = None,
    context_window: int | None = None,
    summarizer: Summarizer | None = None,
    embedder: Embedder | None = None,
    embedding_model: str | None = None,
    link: Callable[[TopicLink], None] | None = None,
    recent: RecentMessages | None = None,
    profiles: ProfileProvider | None = None,
    summaries: SummaryProvider | None = None,
    dialogue_max: int | None = None,
) -> ContextRuntime:
    """Everything from a ``GreyWindConfig``; ``context_window`` is the serving model's, when known.

    ``dialogue_max`` overrides ``context.recent_dialogue_max`` (the memory layer's sliding window)."""
    ctx = config.context
    ids = ids or counter_ids()
    persona = PersonaSlot.from_config(config.persona)
    names = (config.persona.name, *config.persona.aliases)
    handoffs = HandoffManager(store, summarizer=summarizer, timeout=ctx.handoff_timeout_ms / 1000, ids=ids)
    sessions = SessionManager(
        store,
        handoffs,
        settings=SessionSettings(
            idle_after=min(ctx.session_idle_after_ms, ctx.session_idle_timeout_ms) / 1000,
            idle_timeout=ctx.session_idle_timeout_ms / 1000,
            dialogue_max=ctx.recent_dialogue_max,
            actions_max=ctx.recent_actions_max,
        ),
        ids=ids,
    )
    resolver = ThreadResolver(
        store,
        settings=ResolverSettings(
            thread_continuation=ctx.thread_continuation_ms / 1000,
            match_threshold=ctx.thread_match_threshold,
            names=names,
        ),
        ids=ids,
        link=link,
    )
    retrieval = RetrievalEngine(
        store,
        settings=RetrievalSettings(
            max_items=ctx.retrieved_max,
            min_confidence=ctx.retrieved_min_confidence,
            embedding_model=embedding_model,
            self_name=config.persona.name,
        ),
        embedder=embedder,
    )
    injection = config.memory_injection
    strategy = injection.injection_strategy
    builder = ContextBuilder(
        store,
        persona=persona,
        resolver=resolver,
        sessions=sessions,
        retrieval=retrieval,
        settings=BuilderSettings(
            recent_dialogue_max=ctx.recent_dialogue_max if dialogue_max is None else dialogue_max
        ),
        profiles=profiles if profiles is not None else StoreProfiles(store),
        summaries=summaries
        if summaries is not None
        else (StoreSummaries(store, tuple(strategy.priority)) if injection.enabled else None),
        recent=recent,
    )
    budget = ctx.prompt_budget(context_window)
    assembler = PromptAssembler(
        context_window=budget + ctx.reply_reserve_tokens,
        reply_reserve=ctx.reply_reserve_tokens,
        counter=as_counter(counter, model=model),
        summary_max_tokens=strategy.system_prompt_max_tokens if injection.enabled else None,
    )
    return ContextRuntime(
        builder=builder,
        assembler=assembler,
        resolver=resolver,
        sessions=sessions,
        handoffs=handoffs,
        tasks=TaskBook(store, ids=ids),
        retrieval=retrieval,
    )
