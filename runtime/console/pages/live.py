"""The live group view: ``GET /api/groups`` (the chats, busiest first), ``GET /api/live/recent?chat=``
(the messages the why log keeps, with their decisions now, plus budget and pending activations) and
``GET /api/live/stream?chat=`` (server-sent events as they arrive).

The stream sends ``message`` (a message with its score, decision, reasons and activation state),
``reply`` (what the bot said there, or in shadow mode would have said), ``update`` (an activation's
state moved: replied, skipped and why), ``dropped`` (how many items a slow browser missed) and a
comment line every few seconds to keep proxies from closing it. One stream watches one chat.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from runtime.app.reasons_zh import reason_zh
from runtime.console.feed import TooManyWatchers
from runtime.console.state import ConsoleState, console_state
from runtime.console.views import event_state, result_view
from runtime.kernel.events import EventState

__all__ = ["router"]

router = APIRouter()
POLL = 0.5  # seconds between looks at the watched activations' states
KEEPALIVE = 15.0
_WAITING = (EventState.SCHEDULED, EventState.SNOOZED)


def _sse(kind: str, data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


@router.get("/api/groups")
async def groups(request: Request) -> dict[str, Any]:
    state = console_state(request)
    core = state.runtime.bot.core
    chats = dict.fromkeys(core.why.chats())
    chats.update(dict.fromkeys(core.groups.overrides()))
    rows: list[dict[str, Any]] = [
        {
            "chat_id": chat,
            "enabled": core.groups.enabled(chat),
            "per_minute": state.feed.chat_per_minute(chat),
            "last_heard": state.feed.last_heard(chat),
            "quiet": not state.runtime.outbound.gate(chat).open,
        }
        for chat in chats
    ]
    rows.sort(key=lambda r: (-r["per_minute"], -(r["last_heard"] or 0.0), r["chat_id"]))
    return {"groups": rows}


def budget_view(state: ConsoleState, chat_id: str) -> dict[str, Any]:
    kernel = state.runtime.kernel
    now = state.clock()
    actor = kernel.budgets.get(chat_id)
    if actor is None:
        return {"allowed": True, "reason": "", "reason_zh": "", "normal_in_window": 0, "forced_in_window": 0}
    stats = actor.statistics(now)
    verdict = actor.peek(now)
    return {
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "reason_zh": reason_zh(verdict.reason),
        "retry_at": verdict.retry_at,
        "normal_in_window": stats.normal_in_window,
        "forced_in_window": stats.forced_in_window,
        "last_speech_at": stats.last_speech_at,
    }


def pending_view(state: ConsoleState, chat_id: str) -> list[dict[str, Any]]:
    events = state.runtime.kernel.events.list(chat_id=chat_id, states=_WAITING)
    return [{"kind": e.kind, "not_before": e.not_before, **event_state(e)} for e in events]


@router.get("/api/live/recent")
async def recent(request: Request, chat: str = Query(max_length=200)) -> dict[str, Any]:
    state = console_state(request)
    kernel = state.runtime.kernel
    results = state.runtime.bot.core.why.recent(chat)
    return {
        "chat_id": chat,
        "messages": [result_view(r, kernel.events.get(r.event.id)) for r in results],
        "budget": budget_view(state, chat),
        "pending": pending_view(state, chat),
        "thresholds": {"high": kernel.thresholds(chat).high, "medium": kernel.thresholds(chat).medium},
        "shadow_mode": state.site.edge.shadow_mode,
    }


@router.get("/api/live/stream", response_model=None)
async def stream(request: Request, chat: str = Query(max_length=200)) -> StreamingResponse | JSONResponse:
    state = console_state(request)
    try:
        subscription = state.feed.subscribe(chat)
    except TooManyWatchers as exc:
        return JSONResponse({"error": str(exc)}, status_code=503)
    kernel = state.runtime.kernel

    async def events() -> AsyncIterator[str]:
        try:
            yield "retry: 2000\n\n"
            quiet = 0.0
            while True:
                items, dropped = await subscription.take(POLL)
                if dropped:
                    yield _sse("dropped", {"count": dropped, "total": subscription.dropped_total})
                for item in items:
                    yield _sse(item["kind"], item)
                moved = subscription.changes(kernel)
                for message_id, event in moved:
                    yield _sse("update", {"message_id": message_id, **event_state(event)})
                if items or moved:
                    yield _sse(
                        "budget", {"budget": budget_view(state, chat), "pending": pending_view(state, chat)}
                    )
                    quiet = 0.0
                else:
                    quiet += POLL
                    if quiet >= KEEPALIVE:
                        quiet = 0.0
                        yield ": keep-alive\n\n"
        finally:
            state.feed.unsubscribe(subscription)

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no", "Cache-Control": "no-store"},
    )
