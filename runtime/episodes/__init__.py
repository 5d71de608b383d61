"""Episodes: the persona's deliberations and the ReAct loop that runs them (design/0002 §9).

The package raises only :class:`~runtime.kernel.errors.IllegalTransition` (an episode asked to
move against :data:`~runtime.episodes.episode.TRANSITIONS`, or run/resume from the wrong state);
everything that goes wrong *inside* an episode — a reasoner fault, a bad action, a failing tool — is
recorded in its steps and ends in an :class:`~runtime.episodes.loop.EpisodeOutcome`.

How the bot drives an episode for a ready activation ``a`` of ``Kernel.due(now)``::

    d = kernel.deliberate(a, now)                         # runtime.kernel.deliberation
    if not d.recheck(now).proceed: return                 # the budget again: snoozed or skipped
    if a.event.kind == RESUME_KIND:                       # a waiting episode's time came
        episode = room.take(episode_id_of(a.event.payload), now)
    else:
        episode = Episode.start(id=..., chat_id=..., now=now, max_steps=s.max_steps,
                                time_limit=s.time_limit, event_id=a.event.id, thread_id=..., user_id=...)
    outcome = await run_episode(episode, reasoner, tools, clock=clock, settings=s, permissions=...)
    replied    -> send outcome.reply; d.spoke(now); d.finish(now, "replied")
    waiting    -> room.park(outcome.episode, now, forced=...); d.finish(now, "skipped",
                  reason="waiting")
    otherwise  -> d.finish(now, "skipped", reason=outcome.reason)
    store the episode (``persist.to_store_record``) whatever the outcome.

Every incoming message also goes to ``room.note_message(message, thread_id, now)``; an activation
of kind ``RESUME_KIND`` reported ``expired`` or ``budget_blocked`` goes to ``room.expire(...)``.
"""

from __future__ import annotations

from runtime.episodes.actions import (
    EpisodeAction,
    Expire,
    Malformed,
    Observe,
    ParsedAction,
    Reply,
    ToolCall,
    Wait,
    parse_action,
)
from runtime.episodes.control_tools import (
    CONTROL_TOOLS,
    action_from_text,
    action_from_tool_call,
    episode_messages,
)
from runtime.episodes.episode import TRANSITIONS, Episode, EpisodeStatus, EpisodeStep, Heard, Observation
from runtime.episodes.loop import (
    OWN_MESSAGE,
    EpisodeOutcome,
    OutcomeKind,
    QuoteCheck,
    ToolBox,
    heard_from_messages,
    observation_from_messages,
    resume,
    run_episode,
)
from runtime.episodes.reasoner import Reasoner, ScriptedReasoner
from runtime.episodes.settings import EpisodeSettings, tool_registry_from_config
from runtime.episodes.sink import ActivationSink
from runtime.episodes.waiting import RESUME_KIND, WaitingRoom, WaitingStatistics, episode_id_of

__all__ = [
    "CONTROL_TOOLS",
    "OWN_MESSAGE",
    "RESUME_KIND",
    "TRANSITIONS",
    "ActivationSink",
    "Episode",
    "EpisodeAction",
    "EpisodeOutcome",
    "EpisodeSettings",
    "EpisodeStatus",
    "EpisodeStep",
    "Expire",
    "Heard",
    "Malformed",
    "Observation",
    "Observe",
    "OutcomeKind",
    "ParsedAction",
    "QuoteCheck",
    "Reasoner",
    "Reply",
    "ScriptedReasoner",
    "ToolBox",
    "ToolCall",
    "Wait",
    "WaitingRoom",
    "WaitingStatistics",
    "action_from_text",
    "action_from_tool_call",
    "episode_id_of",
    "episode_messages",
    "heard_from_messages",
    "observation_from_messages",
    "parse_action",
    "resume",
    "run_episode",
    "tool_registry_from_config",
]
