"""Restoring and pruning the runtime state, on the Protocol alone, so every backend does it alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.store.records import (
    OPEN_SESSION_STATES,
    TERMINAL_EVENT_STATES,
    RuntimeState,
    TopicThreadStatus,
)

if TYPE_CHECKING:
    from runtime.store.protocol import Store
    from runtime.store.roles import EventRows, RestorePolicy


async def load_runtime_state(store: Store, *, now: float, policy: RestorePolicy) -> RuntimeState:
    events = [e for e in await store.load_events() if e.state not in TERMINAL_EVENT_STATES]
    activations = await store.load_pending_activations()
    speeches = await store.load_recent_speeches(since=now - policy.speech_window)
    terms = await store.load_lexicon_terms()
    messages = await store.messages_since(now - policy.message_window, per_chat=policy.messages_per_chat)
    threads = await store.list_topic_threads(statuses=(TopicThreadStatus.ACTIVE,))
    sessions = await store.list_sessions(states=OPEN_SESSION_STATES)
    return RuntimeState(
        events=tuple(events),
        pending_activations=tuple(activations),
        speeches={chat: tuple(items) for chat, items in speeches.items()},
        lexicon_terms=tuple(terms),
        recent_messages=tuple(messages),
        topic_threads=tuple(threads),
        open_sessions=tuple(sessions),
    )


@dataclass(frozen=True, slots=True)
class PruneReport:
    events: int
    speeches: int


async def prune_runtime_state(store: EventRows, *, now: float, policy: RestorePolicy) -> PruneReport:
    """Forget what a restart would not restore: finished events and speeches older than the windows.

    Run it now and then (the lifespan's maintenance tick); the kernel prunes its own memory likewise.
    Finished events are kept for ``policy.speech_window`` so the admin ``why`` can still explain them.
    """
    horizon = now - policy.speech_window
    events = await store.prune_events(states=TERMINAL_EVENT_STATES, updated_before=horizon)
    speeches = await store.prune_speeches(before=horizon)
    return PruneReport(events=events, speeches=speeches)
