"""Episodes to and from the store's records (``runtime.store.records``).

An episode is kept as one :class:`EpisodeRecord` whose steps are the episode's steps, and one
:class:`ToolCallRecord` per tool step (the admin ``why`` and the tool-call log read those). What the
record has no column for — limits, wait bookkeeping, the trigger's user — travels in a header step
(index 0, kind ``episode``); the episode's own steps follow from index 1, each with the action's type
as its kind (``tool``, ``reply``, ``malformed``, ``resume``...) and its full form as payload. A
waiting episode stored this way is restored exactly, so it survives a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.episodes.actions import ToolCall
from runtime.episodes.episode import TERMINAL, Episode, EpisodeStatus
from runtime.store.records import EpisodeRecord, ToolCallRecord
from runtime.store.records import EpisodeStep as StoredStep

HEADER_KIND = "episode"
_HEADER_FIELDS = (
    "updated_at",
    "deadline",
    "max_steps",
    "time_limit",
    "user_id",
    "run",
    "waits",
    "wait_until",
    "reason",
    "heard",
)


def to_store_record(
    episode: Episode, *, topic_thread_id: str | None = None, session_id: str | None = None
) -> EpisodeRecord:
    record = episode.to_record()
    header = StoredStep(
        episode.id, 0, HEADER_KIND, episode.started_at, {name: record[name] for name in _HEADER_FIELDS}
    )
    steps = [header]
    for step in episode.steps:
        kind = step.action.type if step.action is not None else "resume"
        steps.append(StoredStep(episode.id, step.index + 1, kind, step.started_at, step.to_dict()))
    return EpisodeRecord(
        id=episode.id,
        chat_id=episode.chat_id,
        started_at=episode.started_at,
        state=episode.status.value,
        event_id=episode.event_id,
        thread_id=episode.thread_id,
        topic_thread_id=topic_thread_id,
        session_id=session_id,
        ended_at=episode.updated_at if episode.status in TERMINAL else None,
        outcome=episode.reason,
        steps=tuple(steps),
    )


def from_store_record(record: EpisodeRecord) -> Episode:
    """The episode a record holds; ``ValueError`` when it was not written by :func:`to_store_record`."""
    steps = sorted(record.steps, key=lambda s: s.index)
    if not steps or steps[0].kind != HEADER_KIND:
        raise ValueError(f"episode record {record.id} has no header step")
    header: Mapping[str, Any] = steps[0].payload
    data: dict[str, Any] = {
        "id": record.id,
        "chat_id": record.chat_id,
        "status": EpisodeStatus(record.state).value,
        "started_at": record.started_at,
        "event_id": record.event_id,
        "thread_id": record.thread_id,
        **{name: header.get(name) for name in _HEADER_FIELDS},
        "steps": [dict(s.payload) for s in steps[1:]],
    }
    data["run"] = data["run"] or 0
    data["waits"] = data["waits"] or 0
    data["heard"] = data["heard"] or ()  # written before episodes kept what they heard
    return Episode.from_record(data)


def tool_call_records(episode: Episode) -> list[ToolCallRecord]:
    """One record per tool step, id ``<episode id>:<step index>``."""
    out = []
    for step in episode.steps:
        if not isinstance(step.action, ToolCall):
            continue
        observation = step.observation
        ok = observation is not None and observation.ok
        out.append(
            ToolCallRecord(
                id=f"{episode.id}:{step.index}",
                tool=step.action.name,
                chat_id=episode.chat_id,
                started_at=step.decided_at,
                arguments=dict(step.action.args),
                episode_id=episode.id,
                status="ok" if ok else (observation.error if observation and observation.error else "error"),
                result=observation.content if observation is not None else None,
                error=None if ok or observation is None else observation.error,
                ended_at=step.finished_at,
            )
        )
    return out
