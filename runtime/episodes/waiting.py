"""Waiting episodes, parked in the scheduler instead of in sleeping tasks.

``wait(seconds)`` ends a run with outcome ``waiting``. :meth:`WaitingRoom.park` keeps the episode
here and schedules one activation (kind ``episode_resume``, ``payload["episode_id"]``) at its
``until``. Messages arriving in the episode's thread are kept as news (:meth:`note_message`); with
``wake_on_thread_message`` they also bring the activation forward to ``wake_delay`` after the latest
message, so a burst wakes it once. When the activation falls due, :meth:`take` hands back the episode,
resumed with the news, ready for ``run_episode``. Nothing runs while an episode waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtime.episodes.episode import Episode, EpisodeStatus
from runtime.episodes.loop import heard_from_messages, observation_from_messages, resume
from runtime.episodes.settings import EpisodeSettings
from runtime.episodes.sink import ActivationSink
from runtime.kernel.errors import IllegalTransition
from runtime.kernel.message import ChatMessage

RESUME_KIND = "episode_resume"
# News kept per waiting episode; older messages are dropped first (the thread is in the store anyway).
MAX_NEWS = 50


@dataclass(frozen=True, slots=True)
class WaitingStatistics:
    waiting: int
    parked: int
    woken_early: int
    resumed: int
    expired: int


@dataclass(slots=True)
class _Parked:
    episode: Episode
    event_id: str
    at: float
    forced: bool = False
    news: list[ChatMessage] = field(default_factory=list)


def episode_id_of(payload: Mapping[str, object]) -> str | None:
    """The waiting episode a resume activation stands for."""
    value = payload.get("episode_id")
    return value if isinstance(value, str) else None


class WaitingRoom:
    """Episodes in ``waiting``, each with exactly one pending activation in the sink."""

    def __init__(self, sink: ActivationSink, settings: EpisodeSettings, *, priority: float = 0.6) -> None:
        self._sink = sink
        self._settings = settings
        self._priority = priority
        self._parked: dict[str, _Parked] = {}
        # chat id -> ids of its parked episodes, so a message looks only at its own chat.
        self._by_chat: dict[str, set[str]] = {}
        self._counts = {"parked": 0, "woken_early": 0, "resumed": 0, "expired": 0}

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._parked

    def park(self, episode: Episode, now: float, *, forced: bool = False) -> str:
        """Schedule ``episode``'s resumption at its ``wait_until``; returns the activation's id.

        ``forced`` marks the activation as a reply to someone who addressed the bot (``payload
        ["forced"]``), so the kernel charges it to the forced budget like the message that began it.
        """
        if episode.status is not EpisodeStatus.WAITING or episode.wait_until is None:
            raise IllegalTransition(f"episode {episode.id}", episode.status.value, "parked")
        old = self._pop(episode.id)
        if old is not None:
            self._sink.cancel(old.event_id, now)
        at = max(now, episode.wait_until)
        event_id = self._schedule(episode, at, now, forced)
        self._put(_Parked(episode, event_id, at, forced))
        self._counts["parked"] += 1
        return event_id

    def note_message(self, message: ChatMessage, thread_id: str | None, now: float) -> list[str]:
        """Record ``message`` for the episodes waiting in its thread; returns those woken early."""
        if message.from_self:
            return []
        woken: list[str] = []
        for episode_id in sorted(self._by_chat.get(message.chat_id, ())):
            parked = self._parked[episode_id]
            ep = parked.episode
            if ep.thread_id is not None and ep.thread_id != thread_id:
                continue
            parked.news.append(message)
            del parked.news[:-MAX_NEWS]
            if not self._settings.wake_on_thread_message:
                continue
            at = now + self._settings.wake_delay
            if at >= parked.at:
                continue
            self._sink.cancel(parked.event_id, now)
            parked.event_id = self._schedule(ep, at, now, parked.forced)
            parked.at = at
            self._counts["woken_early"] += 1
            woken.append(ep.id)
        return woken

    def take(self, episode_id: str, now: float) -> Episode | None:
        """The parked episode resumed with its news (``pending``), or ``None`` if not parked here."""
        parked = self._pop(episode_id)
        if parked is None:
            return None
        self._counts["resumed"] += 1
        news = [observation_from_messages(parked.news)] if parked.news else []
        return resume(parked.episode, news, now, heard_from_messages(parked.news))

    def expire(self, episode_id: str, now: float, reason: str = "resume_expired") -> Episode | None:
        """Drop a parked episode (its activation expired, or it is withdrawn); returns it ``expired``."""
        parked = self._pop(episode_id)
        if parked is None:
            return None
        self._sink.cancel(parked.event_id, now)
        self._counts["expired"] += 1
        return parked.episode.transition(EpisodeStatus.EXPIRED, now, reason=reason)

    def restore(self, episode: Episode, event_id: str, *, forced: bool = False) -> None:
        """Put back a parked episode after a restart (its activation restored by the kernel)."""
        if episode.status is not EpisodeStatus.WAITING or episode.wait_until is None:
            raise IllegalTransition(f"episode {episode.id}", episode.status.value, "parked")
        self._put(_Parked(episode, event_id, episode.wait_until, forced))

    def waiting(self) -> list[Episode]:
        return [p.episode for p in self._parked.values()]

    def activation_of(self, episode_id: str) -> str | None:
        parked = self._parked.get(episode_id)
        return parked.event_id if parked else None

    def statistics(self) -> WaitingStatistics:
        return WaitingStatistics(waiting=len(self._parked), **self._counts)

    def _put(self, parked: _Parked) -> None:
        self._parked[parked.episode.id] = parked
        self._by_chat.setdefault(parked.episode.chat_id, set()).add(parked.episode.id)

    def _pop(self, episode_id: str) -> _Parked | None:
        parked = self._parked.pop(episode_id, None)
        if parked is not None:
            ids = self._by_chat[parked.episode.chat_id]
            ids.discard(episode_id)
            if not ids:
                del self._by_chat[parked.episode.chat_id]
        return parked

    def _schedule(self, episode: Episode, at: float, now: float, forced: bool) -> str:
        payload: dict[str, object] = {"episode_id": episode.id}
        if forced:
            payload["forced"] = True
        scheduled = self._sink.schedule_activation(
            RESUME_KIND,
            episode.chat_id,
            now=now,
            not_before=at,
            deadline=at + self._settings.resume_grace,
            priority=self._priority,
            thread_id=episode.thread_id,
            payload=payload,
        )
        return scheduled.id
