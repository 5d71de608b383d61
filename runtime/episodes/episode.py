"""The Episode: one deliberation of the persona about one event, as an immutable value.

An episode moves through the states of design/0002 §9, only along the edges of :data:`TRANSITIONS`;
anything else raises :class:`~runtime.kernel.errors.IllegalTransition`. Every step the reasoner takes
is kept (action, observation, timings) so logs, the admin ``why`` and the store can show exactly how
the persona got to its decision. ``to_record`` / ``from_record`` give a JSON-ready form that survives
a restart, which matters for episodes parked in ``waiting``.

::

    pending ──> thinking ──> acting ──> awaiting_observation ──> thinking ...
       │           ├──> awaiting_observation   (a step failed before acting: bad action, repeat)
       │           ├──> done       (reply, observe)
       │           ├──> waiting ──> pending    (resume, with what happened meanwhile)
       │           ├──> expired    (expire, deadline)
       │           └──> failed     (reasoner fault, step limit, too many failures, repeated call)
       └──> expired / failed       (dropped before it ran)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from runtime.episodes.actions import ParsedAction, parse_action
from runtime.kernel.errors import IllegalTransition


class EpisodeStatus(StrEnum):
    PENDING = "pending"
    THINKING = "thinking"
    ACTING = "acting"
    AWAITING_OBSERVATION = "awaiting_observation"
    WAITING = "waiting"
    DONE = "done"
    EXPIRED = "expired"
    FAILED = "failed"


_S = EpisodeStatus
TRANSITIONS: Mapping[EpisodeStatus, frozenset[EpisodeStatus]] = {
    _S.PENDING: frozenset({_S.THINKING, _S.EXPIRED, _S.FAILED}),
    _S.THINKING: frozenset({_S.ACTING, _S.AWAITING_OBSERVATION, _S.DONE, _S.WAITING, _S.EXPIRED, _S.FAILED}),
    _S.ACTING: frozenset({_S.AWAITING_OBSERVATION, _S.EXPIRED, _S.FAILED}),
    _S.AWAITING_OBSERVATION: frozenset({_S.THINKING, _S.EXPIRED, _S.FAILED}),
    _S.WAITING: frozenset({_S.PENDING, _S.EXPIRED, _S.FAILED}),
    _S.DONE: frozenset(),
    _S.EXPIRED: frozenset(),
    _S.FAILED: frozenset(),
}
TERMINAL = frozenset({_S.DONE, _S.EXPIRED, _S.FAILED})


@dataclass(frozen=True, slots=True)
class Observation:
    """What a step brought back: a tool's result, a failure explained, or news from the thread.

    ``error`` is a short kind (``unknown_tool``, ``timeout``, ``malformed_action``, ...) when the step
    failed; ``content`` is the text the model is shown.
    """

    source: str
    ok: bool
    content: str
    error: str | None = None
    truncated: bool = False
    full_size: int = 0

    @classmethod
    def failure(cls, source: str, error: str, content: str) -> Observation:
        return cls(source=source, ok=False, content=content, error=error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ok": self.ok,
            "content": self.content,
            "error": self.error,
            "truncated": self.truncated,
            "full_size": self.full_size,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Observation:
        return cls(
            source=str(data["source"]),
            ok=bool(data["ok"]),
            content=str(data["content"]),
            error=data.get("error"),
            truncated=bool(data.get("truncated", False)),
            full_size=int(data.get("full_size", 0)),
        )


@dataclass(frozen=True, slots=True)
class Heard:
    """A chat message the episode has seen, by id, with its speaker.

    What a tool files about a person is filed under the speaker of the message it came from, so a
    tool is given these (oldest first) and never has to take the triggering user's word for it.
    """

    message_id: str
    speaker_id: str


@dataclass(frozen=True, slots=True)
class EpisodeStep:
    """One step: the action decided (``None`` for a resume step) and what it brought back.

    ``started_at`` is when the reasoner was asked, ``decided_at`` when it answered, ``finished_at``
    when the observation was in (clock seconds).
    """

    index: int
    run: int
    action: ParsedAction | None
    observation: Observation | None
    started_at: float
    decided_at: float
    finished_at: float

    @property
    def failed(self) -> bool:
        return self.observation is not None and not self.observation.ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "run": self.run,
            "action": self.action.to_dict() if self.action is not None else None,
            "observation": self.observation.to_dict() if self.observation is not None else None,
            "started_at": self.started_at,
            "decided_at": self.decided_at,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeStep:
        action = data.get("action")
        observation = data.get("observation")
        return cls(
            index=int(data["index"]),
            run=int(data["run"]),
            action=parse_action(action) if action is not None else None,
            observation=Observation.from_dict(observation) if observation is not None else None,
            started_at=float(data["started_at"]),
            decided_at=float(data["decided_at"]),
            finished_at=float(data["finished_at"]),
        )


@dataclass(frozen=True, slots=True)
class Episode:
    """One deliberation. Immutable: every change returns a new Episode.

    ``deadline`` bounds the current run (``time_limit`` seconds from its start); ``max_steps`` bounds
    the reasoner's steps per run. ``run`` counts resumes; ``waits`` counts how often it has waited.
    ``reason`` says why it waits or why it ended. ``heard`` holds the messages it has seen, oldest
    first: the one that began it, then what arrived in its thread while it waited.
    """

    id: str
    chat_id: str
    status: EpisodeStatus
    started_at: float
    updated_at: float
    deadline: float
    max_steps: int
    time_limit: float
    event_id: str | None = None
    thread_id: str | None = None
    user_id: str | None = None
    steps: tuple[EpisodeStep, ...] = ()
    run: int = 0
    waits: int = 0
    wait_until: float | None = None
    reason: str | None = None
    heard: tuple[Heard, ...] = ()

    @classmethod
    def start(
        cls,
        *,
        id: str,
        chat_id: str,
        now: float,
        max_steps: int,
        time_limit: float,
        event_id: str | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        heard: tuple[Heard, ...] = (),
    ) -> Episode:
        """A new pending episode whose first run must end ``time_limit`` seconds from ``now``."""
        if max_steps < 1 or time_limit <= 0:
            raise ValueError("an episode needs max_steps >= 1 and a positive time_limit")
        return cls(
            id=id,
            chat_id=chat_id,
            status=EpisodeStatus.PENDING,
            started_at=now,
            updated_at=now,
            deadline=now + time_limit,
            max_steps=max_steps,
            time_limit=time_limit,
            event_id=event_id,
            thread_id=thread_id,
            user_id=user_id,
            heard=heard,
        )

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def run_steps(self) -> int:
        """Reasoner steps taken in the current run (resume steps do not count)."""
        return sum(1 for s in self.steps if s.run == self.run and s.action is not None)

    def transition(self, status: EpisodeStatus, now: float, *, reason: str | None = None) -> Episode:
        if status not in TRANSITIONS[self.status]:
            raise IllegalTransition(f"episode {self.id}", self.status.value, status.value)
        return replace(
            self, status=status, updated_at=now, reason=reason if reason is not None else self.reason
        )

    def with_step(self, step: EpisodeStep) -> Episode:
        return replace(self, steps=(*self.steps, step), updated_at=max(self.updated_at, step.finished_at))

    def next_step_index(self) -> int:
        return len(self.steps)

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict holding everything needed to log, explain or restore the episode."""
        return {
            "id": self.id,
            "chat_id": self.chat_id,
            "status": self.status.value,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "deadline": self.deadline,
            "max_steps": self.max_steps,
            "time_limit": self.time_limit,
            "event_id": self.event_id,
            "thread_id": self.thread_id,
            "user_id": self.user_id,
            "run": self.run,
            "waits": self.waits,
            "wait_until": self.wait_until,
            "reason": self.reason,
            "steps": [s.to_dict() for s in self.steps],
            "heard": [[h.message_id, h.speaker_id] for h in self.heard],
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Episode:
        return cls(
            id=str(data["id"]),
            chat_id=str(data["chat_id"]),
            status=EpisodeStatus(data["status"]),
            started_at=float(data["started_at"]),
            updated_at=float(data["updated_at"]),
            deadline=float(data["deadline"]),
            max_steps=int(data["max_steps"]),
            time_limit=float(data["time_limit"]),
            event_id=data.get("event_id"),
            thread_id=data.get("thread_id"),
            user_id=data.get("user_id"),
            run=int(data.get("run", 0)),
            waits=int(data.get("waits", 0)),
            wait_until=data.get("wait_until"),
            reason=data.get("reason"),
            steps=tuple(EpisodeStep.from_dict(s) for s in data.get("steps", ())),
            heard=tuple(Heard(str(m), str(u)) for m, u in data.get("heard", ())),
        )
