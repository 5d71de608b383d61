"""Records to rows and back. Column lists here match the migrations; JSON is written without escapes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from runtime.store.records import (
    EpisodeRecord,
    EpisodeStep,
    EventRecord,
    Handoff,
    LexiconTermRecord,
    Memory,
    MemorySummary,
    ScheduledActivation,
    ScopeType,
    Session,
    SessionState,
    SpeechRecord,
    StoredMessage,
    Task,
    TaskStatus,
    TokenUsage,
    ToolCallRecord,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
    UserProfile,
)
from runtime.store.text import IndexedText
from runtime.unicode_safe import clean_text

Row = Sequence[Any]


def dumps(value: Any) -> str:
    # Unescaped JSON keeps a lone surrogate raw, which SQLite cannot encode: it becomes U+FFFD.
    return clean_text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True))


def loads(text: str) -> Any:
    return json.loads(text)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


# -- messages ---------------------------------------------------------------------------------------

# ``from_self`` holds 0 (someone else's), 1 (the bot's) or 2 (the account's own, sent elsewhere: not
# by this bot).
MESSAGE_COLUMNS = (
    "chat_id, message_id, sender_id, sender_name, time, text, thread_id, topic_thread_id, "
    "from_self, recalled, reply_to, mentions_json, addressed"
)


def message_row(m: StoredMessage, indexed: IndexedText) -> tuple[Any, ...]:
    return (
        m.chat_id,
        m.message_id,
        m.sender_id,
        m.sender_name,
        m.time,
        m.text,
        m.thread_id,
        m.topic_thread_id,
        (2 if m.sent_elsewhere else 1) if m.from_self else 0,
        int(m.recalled),
        m.reply_to,
        dumps(list(m.mentions)),
        int(m.addressed),
        indexed.words,
        indexed.chars,
    )


def message_from_row(r: Row) -> StoredMessage:
    return StoredMessage(
        chat_id=r[0],
        message_id=r[1],
        sender_id=r[2],
        sender_name=r[3],
        time=float(r[4]),
        text=r[5],
        thread_id=r[6],
        topic_thread_id=r[7],
        from_self=bool(r[8]),
        sent_elsewhere=r[8] == 2,
        recalled=bool(r[9]),
        reply_to=r[10],
        mentions=tuple(loads(r[11])),
        addressed=bool(r[12]),
    )


# -- kernel state -------------------------------------------------------------------------------------

EVENT_COLUMNS = (
    "id, kind, chat_id, thread_id, actor_ids_json, evidence_json, created_at, updated_at, "
    "not_before, deadline, priority, state, payload_json"
)


def event_row(e: EventRecord) -> tuple[Any, ...]:
    return (
        e.id,
        e.kind,
        e.chat_id,
        e.thread_id,
        dumps(list(e.actor_ids)),
        dumps(list(e.evidence_message_ids)),
        e.created_at,
        e.updated_at,
        e.not_before,
        e.deadline,
        e.priority,
        e.state,
        dumps(dict(e.payload)),
    )


def event_from_row(r: Row) -> EventRecord:
    return EventRecord(
        id=r[0],
        kind=r[1],
        chat_id=r[2],
        thread_id=r[3],
        actor_ids=tuple(loads(r[4])),
        evidence_message_ids=tuple(loads(r[5])),
        created_at=float(r[6]),
        updated_at=float(r[7]),
        not_before=float(r[8]),
        deadline=_opt_float(r[9]),
        priority=float(r[10]),
        state=r[11],
        payload=loads(r[12]),
    )


ACTIVATION_COLUMNS = "event_id, chat_id, not_before, deadline, priority, created_at"


def activation_row(a: ScheduledActivation) -> tuple[Any, ...]:
    return (a.event_id, a.chat_id, a.not_before, a.deadline, a.priority, a.created_at)


def activation_from_row(r: Row) -> ScheduledActivation:
    return ScheduledActivation(r[0], r[1], float(r[2]), _opt_float(r[3]), float(r[4]), float(r[5]))


def speech_row(s: SpeechRecord) -> tuple[Any, ...]:
    return (s.chat_id, s.time, int(s.forced))


def speech_from_row(r: Row) -> SpeechRecord:
    return SpeechRecord(r[0], float(r[1]), bool(r[2]))


TERM_COLUMNS = (
    "scope, owner, term, weight, pinned, suppressed, source, hits, created_at, updated_at, "
    "expires_at, extra_json"
)


def term_row(t: LexiconTermRecord) -> tuple[Any, ...]:
    return (
        t.scope,
        t.owner,
        t.term,
        t.weight,
        int(t.pinned),
        int(t.suppressed),
        t.source,
        t.hits,
        t.created_at,
        t.updated_at,
        t.expires_at,
        dumps(dict(t.extra)),
    )


def term_from_row(r: Row) -> LexiconTermRecord:
    return LexiconTermRecord(
        scope=r[0],
        owner=r[1],
        term=r[2],
        weight=float(r[3]),
        pinned=bool(r[4]),
        suppressed=bool(r[5]),
        source=r[6],
        hits=int(r[7]),
        created_at=float(r[8]),
        updated_at=float(r[9]),
        expires_at=_opt_float(r[10]),
        extra=loads(r[11]),
    )


# -- context runtime ----------------------------------------------------------------------------------

THREAD_COLUMNS = (
    "id, title, type, summary, vision_json, tags_json, chat_ids_json, status, created_at, updated_at, "
    "extra_json"
)


def thread_row(t: TopicThread) -> tuple[Any, ...]:
    return (
        t.id,
        t.title,
        t.type,
        t.summary,
        dumps(dict(t.vision)),
        dumps(list(t.tags)),
        dumps(list(t.chat_ids)),
        str(t.status),
        t.created_at,
        t.updated_at,
        dumps(dict(t.extra)),
    )


def thread_from_row(r: Row) -> TopicThread:
    return TopicThread(
        id=r[0],
        title=r[1],
        type=r[2],
        summary=r[3],
        vision=loads(r[4]),
        tags=tuple(loads(r[5])),
        chat_ids=tuple(loads(r[6])),
        status=TopicThreadStatus(r[7]),
        created_at=float(r[8]),
        updated_at=float(r[9]),
        extra=loads(r[10]),
    )


SESSION_COLUMNS = (
    "id, thread_id, chat_id, state, recent_dialogue_json, recent_actions_json, screen_context_json, "
    "interruptions_json, resume_point, started_at, updated_at, ended_at, extra_json"
)


def session_row(s: Session) -> tuple[Any, ...]:
    return (
        s.id,
        s.topic_thread_id,
        s.chat_id,
        str(s.state),
        dumps(list(s.recent_dialogue)),
        dumps(list(s.recent_actions)),
        dumps(dict(s.screen_context)),
        dumps([dict(i) for i in s.interruptions]),
        s.resume_point,
        s.started_at,
        s.updated_at,
        s.ended_at,
        dumps(dict(s.extra)),
    )


def session_from_row(r: Row) -> Session:
    return Session(
        id=r[0],
        topic_thread_id=r[1],
        chat_id=r[2],
        state=SessionState(r[3]),
        recent_dialogue=tuple(loads(r[4])),
        recent_actions=tuple(loads(r[5])),
        screen_context=loads(r[6]),
        interruptions=tuple(loads(r[7])),
        resume_point=r[8],
        started_at=float(r[9]),
        updated_at=float(r[10]),
        ended_at=_opt_float(r[11]),
        extra=loads(r[12]),
    )


TRANSCRIPT_COLUMNS = "session_id, thread_id, chat_id, content, fmt, created_at"


def transcript_row(a: TranscriptArchive) -> tuple[Any, ...]:
    return (a.session_id, a.topic_thread_id, a.chat_id, a.content, a.fmt, a.created_at)


def transcript_from_row(r: Row) -> TranscriptArchive:
    return TranscriptArchive(r[0], r[1], r[2], r[3], float(r[5]), r[4])


HANDOFF_COLUMNS = (
    "id, from_session_id, to_session_id, thread_id, summary, unfinished_items_json, risks_json, "
    "resume_suggestion, written_by, created_at"
)


def handoff_row(h: Handoff) -> tuple[Any, ...]:
    return (
        h.id,
        h.from_session_id,
        h.to_session_id,
        h.topic_thread_id,
        h.summary,
        dumps(list(h.unfinished_items)),
        dumps(list(h.risks)),
        h.resume_suggestion,
        h.written_by,
        h.created_at,
    )


def handoff_from_row(r: Row) -> Handoff:
    return Handoff(
        id=r[0],
        from_session_id=r[1],
        to_session_id=r[2],
        topic_thread_id=r[3],
        summary=r[4],
        unfinished_items=tuple(loads(r[5])),
        risks=tuple(loads(r[6])),
        resume_suggestion=r[7],
        written_by=r[8],
        created_at=float(r[9]),
    )


TASK_COLUMNS = "id, thread_id, title, status, conclusion, tags_json, created_at, updated_at, extra_json"


def task_row(t: Task) -> tuple[Any, ...]:
    return (
        t.id,
        t.topic_thread_id,
        t.title,
        str(t.status),
        t.conclusion,
        dumps(list(t.tags)),
        t.created_at,
        t.updated_at,
        dumps(dict(t.extra)),
    )


def task_from_row(r: Row) -> Task:
    return Task(
        id=r[0],
        topic_thread_id=r[1],
        title=r[2],
        status=TaskStatus(r[3]),
        conclusion=r[4],
        tags=tuple(loads(r[5])),
        created_at=float(r[6]),
        updated_at=float(r[7]),
        extra=loads(r[8]),
    )


MEMORY_COLUMNS = (
    "m.id, m.scope_type, m.scope_id, m.memory_type, m.content, m.importance, m.tags_json, "
    "m.created_at, m.updated_at, m.extra_json, v.data, v.model, m.source_message_id, m.source_speaker_id"
)
MEMORY_FROM = "memories AS m LEFT JOIN memory_vectors AS v ON v.memory_id = m.id"


def memory_row(m: Memory, indexed: IndexedText) -> tuple[Any, ...]:
    return (
        m.id,
        str(m.scope_type),
        m.scope_id,
        m.memory_type,
        m.content,
        m.importance,
        dumps(list(m.tags)),
        m.created_at,
        m.updated_at,
        dumps(dict(m.extra)),
        indexed.words,
        indexed.chars,
        m.source_message_id,
        m.source_speaker_id,
    )


def memory_from_row(r: Row) -> Memory:
    return Memory(
        id=r[0],
        scope_type=ScopeType(r[1]),
        scope_id=r[2],
        memory_type=r[3],
        content=r[4],
        importance=float(r[5]),
        tags=tuple(loads(r[6])),
        created_at=float(r[7]),
        updated_at=float(r[8]),
        extra=loads(r[9]),
        embedding=None if r[10] is None else bytes(r[10]),
        embedding_model=r[11],
        source_message_id=r[12],
        source_speaker_id=r[13],
    )


# -- memory layer, episodes, tool calls ------------------------------------------------------------------

SUMMARY_COLUMNS = (
    "conversation, version, summary_json, rounds_processed, rounds_since_compression, "
    "tokens_since_compression, last_compressed_at, updated_at, injection_log_json"
)


def summary_row(s: MemorySummary) -> tuple[Any, ...]:
    return (
        s.conversation,
        s.version,
        dumps(dict(s.summary)),
        s.rounds_processed,
        s.rounds_since_compression,
        s.tokens_since_compression,
        s.last_compressed_at,
        s.updated_at,
        dumps([dict(e) for e in s.injection_log]),
    )


def summary_from_row(r: Row) -> MemorySummary:
    return MemorySummary(
        conversation=r[0],
        version=int(r[1]),
        summary=loads(r[2]),
        rounds_processed=int(r[3]),
        rounds_since_compression=int(r[4]),
        tokens_since_compression=int(r[5]),
        last_compressed_at=_opt_float(r[6]),
        updated_at=float(r[7]),
        injection_log=tuple(loads(r[8])),
    )


def usage_from_row(r: Row) -> TokenUsage:
    return TokenUsage(r[0], r[1], int(r[2]), int(r[3]), int(r[4]))


PROFILE_COLUMNS = "user_id, nickname, preferences_json, relationship, updated_at, extra_json"


def profile_row(p: UserProfile) -> tuple[Any, ...]:
    return (
        p.user_id,
        p.nickname,
        dumps(list(p.preferences)),
        p.relationship,
        p.updated_at,
        dumps(dict(p.extra)),
    )


def profile_from_row(r: Row) -> UserProfile:
    return UserProfile(
        user_id=r[0],
        nickname=r[1],
        preferences=tuple(loads(r[2])),
        relationship=r[3],
        updated_at=float(r[4]),
        extra=loads(r[5]),
    )


EPISODE_COLUMNS = (
    "id, chat_id, event_id, thread_id, topic_thread_id, session_id, state, started_at, ended_at, outcome"
)


def episode_row(e: EpisodeRecord) -> tuple[Any, ...]:
    return (
        e.id,
        e.chat_id,
        e.event_id,
        e.thread_id,
        e.topic_thread_id,
        e.session_id,
        e.state,
        e.started_at,
        e.ended_at,
        e.outcome,
    )


def episode_from_row(r: Row, steps: tuple[EpisodeStep, ...] = ()) -> EpisodeRecord:
    return EpisodeRecord(
        id=r[0],
        chat_id=r[1],
        event_id=r[2],
        thread_id=r[3],
        topic_thread_id=r[4],
        session_id=r[5],
        state=r[6],
        started_at=float(r[7]),
        ended_at=_opt_float(r[8]),
        outcome=r[9],
        steps=steps,
    )


def step_row(s: EpisodeStep) -> tuple[Any, ...]:
    return (s.episode_id, s.index, s.kind, s.at, dumps(dict(s.payload)))


def step_from_row(r: Row) -> EpisodeStep:
    return EpisodeStep(r[0], int(r[1]), r[2], float(r[3]), loads(r[4]))


TOOL_CALL_COLUMNS = (
    "id, episode_id, tool, chat_id, arguments_json, status, result, error, started_at, ended_at"
)


def tool_call_row(c: ToolCallRecord) -> tuple[Any, ...]:
    return (
        c.id,
        c.episode_id,
        c.tool,
        c.chat_id,
        dumps(dict(c.arguments)),
        c.status,
        c.result,
        c.error,
        c.started_at,
        c.ended_at,
    )


def tool_call_from_row(r: Row) -> ToolCallRecord:
    return ToolCallRecord(
        id=r[0],
        episode_id=r[1],
        tool=r[2],
        chat_id=r[3],
        arguments=loads(r[4]),
        status=r[5],
        result=r[6],
        error=r[7],
        started_at=float(r[8]),
        ended_at=_opt_float(r[9]),
    )
