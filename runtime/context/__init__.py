"""The Context Runtime (design/000): what the model sees each turn, and the topic threads it belongs to.

::

    packet.py      ContextPacket: design/000's seven slots + design/001's user profile and memory summary
    render.py      slots to text, deterministic (the stable prefix is byte-identical turn to turn)
    assembler.py   PromptAssembler: packet -> chat messages within a token budget, defined trim order
    tokens.py      TokenCounter protocol, a rough offline fallback
    lexical.py     content words, chatter, continuation markers, overlap scores
    resolver.py    ThreadResolver: input -> topic thread (binding, conversation, continuation, lexical, new)
    tasks.py       TaskBook: tasks under a topic thread, with conclusions
    tools.py       task_create / task_list / task_update / task_conclude for the ToolRegistry
    sessions.py    SessionManager: active / idle / interrupted / closed / handoff_written
    handoffs.py    HandoffManager: digest by the model's compression role, deterministic fallback
    retrieval.py   RetrievalEngine: thread tasks, scoped memories, chat-only search, embeddings; 2-5 items
    builder.py     ContextBuilder: triggering message + conversation thread + chat -> ContextPacket
    models.py      ModelSummarizer (compression role -> handoff), ModelEmbedder, over the model router
    setup.py       context_runtime(store, config, ...): the parts wired from the configuration
    errors.py      the exception tree

The kernel decides *whether* to speak; this package prepares *what the model sees* once it does.
"""

from runtime.context.assembler import TRIM_ORDER, AssembledPrompt, AssemblerStatistics, PromptAssembler
from runtime.context.builder import (
    BuildReason,
    BuiltContext,
    ChatInfo,
    ContextBuilder,
    RecentBuffer,
    StoreProfiles,
    StoreSummaries,
)
from runtime.context.errors import (
    BudgetTooSmallError,
    ContextError,
    IllegalSessionTransitionError,
    UnknownSessionError,
    UnknownTaskError,
    UnknownTopicThreadError,
)
from runtime.context.handoffs import HandoffDigest, HandoffManager, HandoffRequest, Summarizer, parse_digest
from runtime.context.packet import (
    SLOT_NAMES,
    ContextPacket,
    DialogueTurn,
    HandoffSlot,
    MemorySummarySlot,
    PersonaSlot,
    RetrievedSlot,
    ScreenContext,
    SessionSlot,
    SummarySection,
    TaskLine,
    ThreadSlot,
    UserInputSlot,
    UserProfileSlot,
    VisionSlot,
)
from runtime.context.resolver import Resolution, ResolveRule, ThreadResolver
from runtime.context.retrieval import Embedder, RetrievalEngine, RetrievalQuery
from runtime.context.sessions import CloseReason, InterruptKind, SessionManager
from runtime.context.setup import ContextRuntime, context_runtime
from runtime.context.tasks import TaskBook
from runtime.context.tokens import RoughTokenCounter, TokenCounter

__all__ = [
    "SLOT_NAMES",
    "TRIM_ORDER",
    "AssembledPrompt",
    "AssemblerStatistics",
    "BudgetTooSmallError",
    "BuildReason",
    "BuiltContext",
    "ChatInfo",
    "CloseReason",
    "ContextBuilder",
    "ContextError",
    "ContextPacket",
    "ContextRuntime",
    "DialogueTurn",
    "Embedder",
    "HandoffDigest",
    "HandoffManager",
    "HandoffRequest",
    "HandoffSlot",
    "IllegalSessionTransitionError",
    "InterruptKind",
    "MemorySummarySlot",
    "PersonaSlot",
    "PromptAssembler",
    "RecentBuffer",
    "Resolution",
    "ResolveRule",
    "RetrievalEngine",
    "RetrievalQuery",
    "RetrievedSlot",
    "RoughTokenCounter",
    "ScreenContext",
    "SessionManager",
    "SessionSlot",
    "StoreProfiles",
    "StoreSummaries",
    "Summarizer",
    "SummarySection",
    "TaskBook",
    "TaskLine",
    "ThreadResolver",
    "ThreadSlot",
    "TokenCounter",
    "UnknownSessionError",
    "UnknownTaskError",
    "UnknownTopicThreadError",
    "UserInputSlot",
    "UserProfileSlot",
    "VisionSlot",
    "context_runtime",
    "parse_digest",
]
