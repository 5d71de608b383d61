"""The ReAct loop (design/0002 §9): ask the reasoner, act, observe, until a decision or a limit.

``run_episode`` runs one episode from ``pending`` to an :class:`EpisodeOutcome`:

========================  ==============  ================================================
the reasoner decides      status          outcome
========================  ==============  ================================================
reply(text[, quote])      done            ``replied`` (the caller sends ``outcome.reply``)
observe(reason)           done            ``observed`` (stay silent)
wait(seconds, reason)     waiting         ``waiting`` (the caller schedules ``outcome.until``)
expire(reason)            expired         ``expired``
tool(name, args)          (continues)     the result is the step's observation
========================  ==============  ================================================

Limits and guards, each with its own outcome: the run's deadline (``deadline``), the step limit
(``step_limit``), and ``failed`` for a reasoner that raises, ``max_consecutive_failures`` failed
steps in a row (unknown tool, bad arguments, timeouts, unreadable actions, refused waits) and a tool
call identical (name and arguments) to the run's previous one, the classic sign of a stuck loop.

A reply may name the message it answers (``quote``, an ``#id`` the model saw). Only a message
someone else said may be quoted: one the episode heard, or one the caller's ``quotes`` check lets
through. The bot's own messages never are, whatever the model asks: the reply is refused, the step
records a failure whose observation says why (the model may answer again, without that quote), and
the run goes on (the refusal counts towards ``max_consecutive_failures``).

Waiting costs nothing while it lasts: the loop returns, the caller parks the episode in the
scheduler (see ``runtime.episodes.waiting``), and :func:`resume` hands it back with what happened in
its thread meanwhile. Only the reasoner and tools are awaited; there is no sleeping anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol

import anyio
import structlog

from runtime.episodes.actions import (
    Expire,
    Malformed,
    Observe,
    ParsedAction,
    Reply,
    ToolCall,
    Wait,
    parse_action,
)
from runtime.episodes.episode import Episode, EpisodeStatus, EpisodeStep, Heard, Observation
from runtime.episodes.reasoner import Reasoner
from runtime.episodes.settings import EpisodeSettings
from runtime.kernel.clock import Clock
from runtime.kernel.errors import IllegalTransition
from runtime.kernel.message import SENT_ELSEWHERE_LABEL, ChatMessage
from runtime.tools.spec import ToolContext, ToolResult, ToolSpec

log = structlog.get_logger("greywind.episodes")

S = EpisodeStatus
# Messages an episode keeps in ``heard``; the oldest go first (a resume adds at most the room's news).
MAX_HEARD = 200

#: The caller's check of a quote the episode did not hear: ``(chat id, message id)`` -> ``None`` when it
#: may be quoted, else why not (``"own"`` for one of the bot's own messages, or a sentence).
QuoteCheck = Callable[[str, str], str | None]
OWN_MESSAGE = "own"


class OutcomeKind(StrEnum):
    REPLIED = "replied"
    OBSERVED = "observed"
    WAITING = "waiting"
    EXPIRED = "expired"
    DEADLINE = "deadline"
    STEP_LIMIT = "step_limit"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class EpisodeOutcome:
    """How a run ended. ``reply`` (and the ``quote`` it answers, if named) is set for ``replied``;
    ``until`` for ``waiting``."""

    kind: OutcomeKind
    episode: Episode
    reason: str = ""
    reply: str | None = None
    until: float | None = None
    quote: str | None = None


class ToolBox(Protocol):
    """What the loop needs of a ToolRegistry."""

    def list(self, permissions: Iterable[str] | None = None) -> list[ToolSpec]: ...

    async def invoke(self, name: str, args: object, context: ToolContext) -> ToolResult: ...


class _Run:
    """The mutable bookkeeping of one run; the episode itself stays an immutable value."""

    def __init__(self, episode: Episode, clock: Clock) -> None:
        self.episode = episode
        self.clock = clock
        self.failures = 0
        self.last_call: tuple[str, str] | None = None

    def step(
        self, action: ParsedAction, observation: Observation | None, started: float, decided: float
    ) -> None:
        self.episode = self.episode.with_step(
            EpisodeStep(
                index=self.episode.next_step_index(),
                run=self.episode.run,
                action=action,
                observation=observation,
                started_at=started,
                decided_at=decided,
                finished_at=self.clock.now(),
            )
        )

    def end(self, kind: OutcomeKind, status: EpisodeStatus, reason: str, **extra: object) -> EpisodeOutcome:
        self.episode = self.episode.transition(status, self.clock.now(), reason=reason)
        log.info(
            "episode_end",
            episode_id=self.episode.id,
            chat_id=self.episode.chat_id,
            outcome=kind.value,
            reason=reason,
            steps=len(self.episode.steps),
        )
        return EpisodeOutcome(kind=kind, episode=self.episode, reason=reason, **extra)  # type: ignore[arg-type]


async def run_episode(
    initial: Episode,
    reasoner: Reasoner,
    tools: ToolBox,
    *,
    clock: Clock,
    settings: EpisodeSettings,
    permissions: Iterable[str] = (),
    quotes: QuoteCheck | None = None,
) -> EpisodeOutcome:
    """Run ``initial`` (which must be ``pending``) until it decides or hits a limit.

    ``reasoner`` follows the :class:`~runtime.episodes.reasoner.Reasoner` protocol. ``permissions``
    are the caller's grants: the reasoner sees only the tools they allow, and tools check them again.
    ``quotes`` judges a quote of a message the episode did not hear (none given: only heard ones).
    """
    if initial.status is not S.PENDING:
        raise IllegalTransition(f"episode {initial.id}", initial.status.value, S.THINKING.value)
    granted = frozenset(permissions)
    run = _Run(initial, clock)
    while True:
        now = clock.now()
        ep = run.episode
        if now >= ep.deadline:
            return run.end(OutcomeKind.DEADLINE, S.EXPIRED, "deadline: the run took too long")
        if ep.run_steps >= ep.max_steps:
            return run.end(
                OutcomeKind.STEP_LIMIT, S.FAILED, f"step_limit: no decision in {ep.max_steps} steps"
            )
        run.episode = ep.transition(S.THINKING, now)
        visible = tools.list(granted)
        try:
            with anyio.move_on_after(max(0.0, ep.deadline - now)) as scope:
                raw = await reasoner.next(run.episode, visible)
        except Exception as exc:
            log.warning("reasoner_failed", episode_id=ep.id, chat_id=ep.chat_id, error=repr(exc))
            return run.end(
                OutcomeKind.FAILED, S.FAILED, f"reasoner_error: {type(exc).__name__}: {str(exc)[:200]}"
            )
        if scope.cancelled_caught:
            return run.end(
                OutcomeKind.DEADLINE, S.EXPIRED, "deadline: the reasoner did not answer before the deadline"
            )
        decided = clock.now()
        action = parse_action(raw)
        outcome = await _act(run, action, tools, settings, granted, now, decided, quotes)
        if outcome is not None:
            return outcome


async def _act(
    run: _Run,
    action: ParsedAction,
    tools: ToolBox,
    settings: EpisodeSettings,
    granted: frozenset[str],
    started: float,
    decided: float,
    quotes: QuoteCheck | None = None,
) -> EpisodeOutcome | None:
    ep = run.episode
    match action:
        case Reply(text=text, quote=quote):
            refusal = _refuse_quote(ep, quote, quotes) if quote is not None else None
            if refusal is not None:
                return _failed_step(
                    run,
                    action,
                    Observation.failure("reply", "quote_refused", refusal),
                    settings,
                    started,
                    decided,
                )
            run.step(action, None, started, decided)
            return run.end(OutcomeKind.REPLIED, S.DONE, "replied", reply=text, quote=quote)
        case Observe(reason=reason):
            run.step(action, None, started, decided)
            return run.end(OutcomeKind.OBSERVED, S.DONE, f"observe: {reason}".rstrip(": "))
        case Expire(reason=reason):
            run.step(action, None, started, decided)
            return run.end(OutcomeKind.EXPIRED, S.EXPIRED, f"expire: {reason}".rstrip(": "))
        case Wait(seconds=seconds, reason=reason):
            refusal = _refuse_wait(ep, seconds, settings)
            if refusal is not None:
                return _failed_step(
                    run,
                    action,
                    Observation.failure("wait", "wait_refused", refusal),
                    settings,
                    started,
                    decided,
                )
            run.step(action, None, started, decided)
            until = decided + seconds
            run.episode = replace(run.episode, wait_until=until, waits=run.episode.waits + 1)
            return run.end(OutcomeKind.WAITING, S.WAITING, f"wait: {reason}".rstrip(": "), until=until)
        case Malformed(problem=problem):
            return _failed_step(
                run,
                action,
                Observation.failure("episode", "malformed_action", f"unreadable action: {problem}"),
                settings,
                started,
                decided,
            )
        case ToolCall():
            return await _call_tool(run, action, tools, settings, granted, started, decided)
    raise AssertionError(f"unhandled action {action!r}")  # parse_action returns only the cases above


async def _call_tool(
    run: _Run,
    call: ToolCall,
    tools: ToolBox,
    settings: EpisodeSettings,
    granted: frozenset[str],
    started: float,
    decided: float,
) -> EpisodeOutcome | None:
    key = call.key()
    if key == run.last_call:
        run.step(
            call,
            Observation.failure(
                call.name, "repeated_tool_call", "the same call with the same arguments was just made"
            ),
            started,
            decided,
        )
        run.episode = run.episode.transition(S.AWAITING_OBSERVATION, run.clock.now())
        return run.end(OutcomeKind.FAILED, S.FAILED, f"repeated_tool_call: {call.name} {key[1][:200]}")
    run.last_call = key
    ep = run.episode.transition(S.ACTING, decided)
    run.episode = ep
    context = ToolContext(
        chat_id=ep.chat_id,
        user_id=ep.user_id,
        thread_id=ep.thread_id,
        episode_id=ep.id,
        permissions=granted,
        now=decided,
        heard=tuple((h.message_id, h.speaker_id) for h in ep.heard),
    )
    # A tool may not outlive the run: its own timeout is cut short by what is left of the deadline.
    with anyio.move_on_after(max(0.0, ep.deadline - run.clock.now())) as scope:
        result = await tools.invoke(call.name, call.args, context)
    if scope.cancelled_caught:
        cut = Observation.failure(call.name, "deadline", "the run's deadline passed during the call")
        run.step(call, cut, started, decided)
        return run.end(OutcomeKind.DEADLINE, S.EXPIRED, f"deadline: {call.name} was still running")
    observation = Observation(
        source=call.name,
        ok=result.ok,
        content=result.observation_text(),
        error=result.error.value if result.error else None,
        truncated=result.truncated,
        full_size=result.full_size,
    )
    run.step(call, observation, started, decided)
    run.episode = run.episode.transition(S.AWAITING_OBSERVATION, run.clock.now())
    if result.ok:
        run.failures = 0
        return None
    return _count_failure(run, settings)


def _failed_step(
    run: _Run,
    action: ParsedAction,
    observation: Observation,
    settings: EpisodeSettings,
    started: float,
    decided: float,
) -> EpisodeOutcome | None:
    run.step(action, observation, started, decided)
    run.episode = run.episode.transition(S.AWAITING_OBSERVATION, run.clock.now())
    return _count_failure(run, settings)


def _count_failure(run: _Run, settings: EpisodeSettings) -> EpisodeOutcome | None:
    run.failures += 1
    if run.failures < settings.max_consecutive_failures:
        return None
    last = run.episode.steps[-1].observation
    detail = f" (last: {last.error}: {last.content[:200]})" if last is not None else ""
    return run.end(
        OutcomeKind.FAILED, S.FAILED, f"too_many_failures: {run.failures} failed steps in a row{detail}"
    )


def _refuse_quote(episode: Episode, quote: str, quotes: QuoteCheck | None) -> str | None:
    """Why ``quote`` may not be quoted, or ``None``: what the episode heard others say may be."""
    if any(h.message_id == quote for h in episode.heard):
        return None
    verdict = quotes(episode.chat_id, quote) if quotes is not None else "it is not a message you heard here"
    if verdict is None:
        return None
    if verdict == OWN_MESSAGE:
        verdict = "it is your own message: you never reply to or quote yourself"
    return (
        f"not sent: you cannot quote #{quote}, {verdict}. "
        "Reply without a quote, or quote what someone else said"
    )


def _refuse_wait(episode: Episode, seconds: float, settings: EpisodeSettings) -> str | None:
    if episode.waits >= settings.max_waits:
        return f"this episode has already waited {episode.waits} times; decide now: reply, observe or expire"
    if not settings.min_wait <= seconds <= settings.max_wait:
        return (
            f"wait seconds must be between {settings.min_wait:g} and {settings.max_wait:g}, got {seconds:g}"
        )
    return None


def resume(
    episode: Episode, observations: Sequence[Observation], now: float, heard: Sequence[Heard] = ()
) -> Episode:
    """A waiting episode, ready to run again with what happened in its thread meanwhile.

    The new run gets a fresh deadline (``time_limit`` from ``now``) and a fresh step budget; the
    news becomes one resume step the reasoner reads like any other observation; it names the message
    that began the episode, so the model can point back at it. ``heard`` are the news' messages,
    added to the episode's ``heard`` (the newest last).
    """
    if episode.status is not S.WAITING:
        raise IllegalTransition(f"episode {episode.id}", episode.status.value, S.PENDING.value)
    waited = now - episode.steps[-1].finished_at if episode.steps else 0.0
    lines = [o.content for o in observations if o.content]
    body = "\n".join(lines) if lines else "(nothing new happened in the thread)"
    began = episode.heard[0] if episode.heard else None
    origin = f", began with [{began.speaker_id}] #{began.message_id}" if began is not None else ""
    why = f"{episode.reason or 'wait'}{origin}"
    news = Observation(
        source="thread", ok=True, content=f"resumed after waiting {waited:.0f} s ({why}):\n{body}"
    )
    known = {h.message_id for h in episode.heard}
    fresh = tuple(h for h in heard if h.message_id not in known)
    resumed = replace(
        episode,
        run=episode.run + 1,
        deadline=now + episode.time_limit,
        wait_until=None,
        heard=(*episode.heard, *fresh)[-MAX_HEARD:],
    )
    resumed = resumed.with_step(
        EpisodeStep(
            index=resumed.next_step_index(),
            run=resumed.run,
            action=None,
            observation=news,
            started_at=now,
            decided_at=now,
            finished_at=now,
        )
    )
    return resumed.transition(S.PENDING, now)


def _speaker(message: ChatMessage) -> str:
    if message.sent_elsewhere:
        return f"{SENT_ELSEWHERE_LABEL} {message.sender_name}"
    return "(you)" if message.from_self else message.sender_name


def observation_from_messages(messages: Sequence[ChatMessage]) -> Observation:
    """The messages that arrived in a thread, as one observation (the bot's own marked as such).

    Each line carries its message id (``#id``), so the model can name the message a tool call is about.
    """
    lines = [f"{_speaker(m)}[{m.sender_id}] #{m.message_id}: {m.text}" for m in messages]
    return Observation(source="thread", ok=True, content="\n".join(lines))


def heard_from_messages(messages: Sequence[ChatMessage]) -> tuple[Heard, ...]:
    """The messages others said, as what an episode has heard (the bot's own are not news)."""
    return tuple(Heard(m.message_id, m.sender_id) for m in messages if not m.from_self)
