"""What if: ``POST /api/whatif`` ``{chat, hours, high, medium}`` — the chat's last hours (from the
running bot's store) replayed by the replay engine (``runtime.replay.run_replay``, the same as
``python -m runtime.replay --from-db``) twice: under the thresholds the chat has now, and under the
ones asked for. Answered: would-speak counts (and the other outcomes) for both, what the bot really
sent in that time, and each message's attention score, for the page's plot.

The replay takes the model as answering at once and charges the budget at the activation's time
(see :mod:`runtime.replay.engine`), so the counts compare thresholds, not the exact replies.
At most :data:`MAX_MESSAGES` messages (the latest) are replayed, so one request stays short.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from runtime.console.state import ConsoleState, console_state
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.message import ChatKey
from runtime.kernel.settings import KernelSettings
from runtime.replay.addressing import Addressing
from runtime.replay.database import convert_stored, guess_self_id
from runtime.replay.engine import ActivationLine, MessageLine, Outcome
from runtime.replay.run import run_replay

__all__ = ["router"]

router = APIRouter()
MAX_MESSAGES = 5_000
DEFAULT_SELF_ID = "10000"


class WhatIf(BaseModel):
    chat: str = Field(min_length=1, max_length=200)
    hours: float = Field(default=6.0, gt=0, le=7 * 24)
    high: float = Field(ge=0.0, le=1.0)
    medium: float = Field(ge=0.0, le=1.0)


class _Trace:
    """An observer of the replay: each message's score, each activation's outcome."""

    def __init__(self, chat_id: str) -> None:
        self._chat = chat_id
        self.points: list[dict[str, Any]] = []
        self.outcomes: Counter[str] = Counter()
        self.speaks: list[float] = []

    def message(self, line: MessageLine) -> None:
        if line.chat_id == self._chat and not line.source.message.from_self:
            result = line.result
            self.points.append(
                {
                    "time": line.source.message.time,
                    "score": round(result.attention.score, 4),
                    "decision": result.decision.value,
                }
            )

    def activation(self, line: ActivationLine, prompt_tokens: int | None) -> None:
        if line.chat_id != self._chat:
            return
        self.outcomes[line.outcome.value] += 1
        if line.outcome is Outcome.WOULD_SPEAK:
            self.speaks.append(line.time)

    def view(self, high: float, medium: float) -> dict[str, Any]:
        return {
            "high": high,
            "medium": medium,
            "would_speak": self.outcomes.get(Outcome.WOULD_SPEAK.value, 0),
            "outcomes": dict(self.outcomes),
            "speaks": self.speaks,
        }


async def _replay(
    state: ConsoleState, chat_id: str, hours: float, thresholds: tuple[tuple[float, float], ...]
) -> dict[str, Any]:
    config = state.site.edge.config
    now = state.clock()
    stored = await state.runtime.store.list_messages(chat_id, since=now - hours * 3600, limit=100_000)
    stored = stored[-MAX_MESSAGES:]
    try:
        key = ChatKey.parse(chat_id)
        self_id = key.account or guess_self_id(stored) or DEFAULT_SELF_ID
    except ValueError:
        self_id = guess_self_id(stored) or DEFAULT_SELF_ID
    names = (config.persona.name, *config.persona.aliases)
    messages, _skipped = convert_stored(stored, Addressing(self_id, names, config.bot.max_message_chars))
    base = KernelSettings.from_config(config, self_ids=(self_id,))
    runs = []
    points: list[dict[str, Any]] = []
    for high, medium in thresholds:
        settings = dataclasses.replace(
            base, attention=dataclasses.replace(base.attention, high=high, medium=medium)
        )
        trace = _Trace(chat_id)
        await run_replay(messages, settings, observers=[trace])
        runs.append(trace.view(high, medium))
        points = points or trace.points
    sent = [m.time for m in stored if m.from_self and not m.sent_elsewhere]  # the owner's are not its
    return {
        "chat_id": chat_id,
        "messages": sum(1 for m in stored if not m.from_self),
        "since": now - hours * 3600,
        "until": now,
        "actual": {"sent": len(sent), "times": sent},
        "runs": runs,
        "points": points,
    }


@router.post("/api/whatif")
async def whatif(body: WhatIf, request: Request) -> dict[str, Any]:
    state = console_state(request)
    current = state.runtime.kernel.thresholds(body.chat)
    try:
        wanted = state.runtime.kernel.settings.attention
        dataclasses.replace(wanted, high=body.high, medium=body.medium)  # refuses medium > high
    except InvalidSetting as exc:
        return {"error": str(exc)}
    return await _replay(
        state, body.chat, body.hours, ((current.high, current.medium), (body.high, body.medium))
    )
