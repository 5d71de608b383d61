"""Memory: ``GET /api/memory?chat=`` — the chat's rolling summary, its memories (the chat's own and the
user memories of the people heard there) with the speaker and source message each was taken from,
its sessions, and the topic threads bound to it with their latest handoff; ``POST /api/memory/delete``
(one memory) and ``POST /api/memory/forget`` (every memory about one user: their user memories and
the chat memories taken from their words). Deleting goes through the store's own ``delete_memory``;
retrieval reads the store, so a deleted memory is not offered to the model again. A user's profile
(``UserProfiles``) is not removed: the store has no call for it yet.
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from runtime.console.state import ConsoleState, console_state
from runtime.store.records import Memory, ScopeType

__all__ = ["router"]

log = structlog.get_logger("greywind.console")
router = APIRouter()
SPEAKERS = 200
SHOWN = 300


class Target(BaseModel):
    chat: str = Field(min_length=1, max_length=200)


class DeleteMemory(Target):
    id: str = Field(min_length=1, max_length=200)


class ForgetUser(Target):
    user: str = Field(min_length=1, max_length=64)


async def _visible(state: ConsoleState, chat_id: str) -> tuple[list[Memory], dict[str, str]]:
    """The memories this chat's page shows, and speaker id -> name from its recent messages."""
    store = state.runtime.store
    recent = await store.recent_messages(chat_id, limit=1_000)
    names: dict[str, str] = {}
    for message in recent:
        if not message.from_self:
            names[message.sender_id] = message.sender_name or message.sender_id
    speakers = list(names)[-SPEAKERS:]
    scopes = [(ScopeType.CHAT, chat_id), *((ScopeType.USER, user) for user in speakers)]
    memories = await store.list_memories(scopes=scopes, limit=SHOWN)
    return memories, names


@router.get("/api/memory")
async def memory(request: Request, chat: str = Query(min_length=1, max_length=200)) -> dict[str, Any]:
    state = console_state(request)
    store = state.runtime.store
    memories, names = await _visible(state, chat)
    sources = {
        m.message_id: m
        for m in await store.get_messages(
            chat, [x.source_message_id for x in memories if x.source_message_id]
        )
    }
    summary = await store.get_memory_summary(chat)
    sessions = await store.list_sessions(chat_id=chat)
    topics = [t for t in await store.list_topic_threads() if chat in t.chat_ids]
    handoffs: dict[str, str] = {}
    for topic in topics[:10]:
        latest = await store.latest_handoff(topic.id)
        if latest is not None:
            handoffs[topic.id] = latest.summary
    return {
        "chat_id": chat,
        "summary": summary.summary if summary is not None else None,
        "memories": [
            {
                "id": m.id,
                "scope": f"{m.scope_type.value}:{m.scope_id}",
                "type": m.memory_type,
                "content": m.content,
                "importance": m.importance,
                "created_at": m.created_at,
                "speaker_id": m.source_speaker_id,
                "speaker": names.get(m.source_speaker_id or "", m.source_speaker_id),
                "source_message_id": m.source_message_id,
                "source_text": sources[m.source_message_id].text if m.source_message_id in sources else None,
            }
            for m in memories
        ],
        "sessions": [
            {"id": s.id, "state": str(s.state), "topic": s.topic_thread_id, "started_at": s.started_at}
            for s in sessions[-20:]
        ],
        "topics": [{"id": t.id, "title": t.title, "handoff": handoffs.get(t.id)} for t in topics],
    }


@router.post("/api/memory/delete")
async def delete(body: DeleteMemory, request: Request) -> dict[str, Any]:
    state = console_state(request)
    memories, _ = await _visible(state, body.chat)
    if body.id not in {m.id for m in memories}:
        return {"deleted": 0, "error": f"memory {body.id} is not one of {body.chat}'s"}
    deleted = await state.runtime.store.delete_memory(body.id)
    log.info("console_memory_deleted", chat_id=body.chat, memory_id=body.id)
    return {"deleted": int(deleted)}


@router.post("/api/memory/forget")
async def forget(body: ForgetUser, request: Request) -> dict[str, Any]:
    state = console_state(request)
    store = state.runtime.store
    about = await store.list_memories(scopes=[(ScopeType.USER, body.user)])
    chat = await store.list_memories(scopes=[(ScopeType.CHAT, body.chat)])
    doomed = {m.id for m in about} | {m.id for m in chat if m.source_speaker_id == body.user}
    deleted = 0
    for memory_id in sorted(doomed):
        deleted += int(await store.delete_memory(memory_id))
    log.info("console_user_forgotten", chat_id=body.chat, user_id=body.user, deleted=deleted)
    return {"deleted": deleted}
