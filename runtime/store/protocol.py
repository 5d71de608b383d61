"""The storage contract: ``Store``, the union of the role Protocols, and the rules every backend keeps.

``Store`` is what a backend implements (``runtime.store.backends`` opens one by name); a consumer
depends on the roles it uses (``runtime.store.roles``), 69 methods in all::

    StoreLifecycle     2  close, statistics
    BatchWrites        1  write (the writer task's batches)
    MessageRows       10  messages: append, look up, list, search, count
    EventRows         12  the kernel's events, scheduled activations and speech log
    LexiconRows        4  lexicon terms
    ContextRows       15  topic threads, sessions and transcripts, handoffs, tasks
    MemoryRows         9  long-term memories and their embeddings
    MemoryLayerRows    6  rolling summaries and user profiles
    LedgerRows         3  token usage per chat and day
    EpisodeRows        6  episodes, their steps, tool calls
    RuntimeStateRows   1  load_runtime_state (read across the roles above)

Conventions every backend keeps (``tests/store/test_contract.py`` checks them, on every registered
backend):

- Upserts replace the whole record under its key (see ``runtime.store.records`` for the keys).
  Messages have no key: each is its own row, a repeated delivery of one message is kept once, and
  a lookup by platform id (a reply's target, a recall, a topic link) means the most recent message
  with that id (``records.same_delivery``).
- ``get_*`` returns ``None`` for a missing key; ``list_*`` returns a list, possibly empty.
- Lists of messages are oldest first (by ``time``, then insertion order); lists of threads, sessions,
  tasks, memories and profiles are most recently updated first; handoffs newest first.
- ``write(items)`` applies a batch atomically (one transaction): all of it or none of it. The
  writer task (``runtime.store.writer``) is the normal way messages, speeches, events and activations
  reach it; direct calls are for start-up, tools and tests.
- Nothing crosses chats by accident: message search takes the chats to search, memory search and
  listing take the scopes allowed. An empty collection finds nothing.
- Full-text search (messages, memories) indexes jieba-segmented text, so 1- and 2-character Chinese
  words, longer words and CJK glued to ASCII (``用Python写爬虫`` found by ``python`` or ``爬虫``) match;
  ASCII is case-insensitive. A query's terms must all occur (AND); ``score`` orders the hits.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from runtime.store.roles import (
    DEFAULT_RESTORE,
    BatchWrites,
    ContextRows,
    ConversationRows,
    ConversationWrites,
    EpisodeRows,
    EventRows,
    LedgerRows,
    LexiconRows,
    MemoryLayerRows,
    MemoryRows,
    MemoryScope,
    MessageRows,
    RecallRows,
    RestorePolicy,
    RuntimeStateRows,
    StoreLifecycle,
    StoreStatistics,
    SummaryRows,
)

__all__ = [
    "DEFAULT_RESTORE",
    "BatchWrites",
    "ContextRows",
    "ConversationRows",
    "ConversationWrites",
    "EpisodeRows",
    "EventRows",
    "LedgerRows",
    "LexiconRows",
    "MemoryLayerRows",
    "MemoryRows",
    "MemoryScope",
    "MessageRows",
    "RecallRows",
    "RestorePolicy",
    "RuntimeStateRows",
    "Store",
    "StoreLifecycle",
    "StoreStatistics",
    "SummaryRows",
]


@runtime_checkable
class Store(
    StoreLifecycle,
    BatchWrites,
    MessageRows,
    EventRows,
    LexiconRows,
    ContextRows,
    MemoryRows,
    MemoryLayerRows,
    LedgerRows,
    EpisodeRows,
    RuntimeStateRows,
    Protocol,
):
    """Async storage for everything GreyWind keeps across restarts: every role at once."""
