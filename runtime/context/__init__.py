"""The Context Runtime (seed 000): what the model sees each turn, and the topic threads it belongs to.

``packet`` holds the ContextPacket and its slots; ``assembler`` turns a packet into chat messages within
a token budget. See ``docs/ARCHITECTURE.md`` for where it sits: the kernel decides *whether* to speak;
this package prepares *what the model sees* once it does.
"""

from runtime.context.assembler import AssembledPrompt, AssemblerStatistics, PromptAssembler
from runtime.context.errors import (
    BudgetTooSmallError,
    ContextError,
    IllegalSessionTransitionError,
    UnknownSessionError,
    UnknownTaskError,
    UnknownTopicThreadError,
)
from runtime.context.packet import (
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
from runtime.context.tokens import RoughTokenCounter, TokenCounter

__all__ = [
    "AssembledPrompt",
    "AssemblerStatistics",
    "BudgetTooSmallError",
    "ContextError",
    "ContextPacket",
    "DialogueTurn",
    "HandoffSlot",
    "IllegalSessionTransitionError",
    "MemorySummarySlot",
    "PersonaSlot",
    "PromptAssembler",
    "RetrievedSlot",
    "RoughTokenCounter",
    "ScreenContext",
    "SessionSlot",
    "SummarySection",
    "TaskLine",
    "ThreadSlot",
    "TokenCounter",
    "UnknownSessionError",
    "UnknownTaskError",
    "UnknownTopicThreadError",
    "UserInputSlot",
    "UserProfileSlot",
    "VisionSlot",
]
