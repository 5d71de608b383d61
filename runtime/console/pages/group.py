"""Group settings: ``GET /api/group?chat=`` (whether the bot lives there and why, its quiet period,
its attention thresholds and budget with where each value comes from, its lexicon) and the changes,
each one a method of the runtime's admin control, the same the chat commands call:
``POST /api/group/enabled`` (``/enable`` / ``/disable``), ``/mute`` and ``/unmute``,
``/thresholds`` (the per-chat override), ``/lexicon`` (add, pin, suppress). Each change answers
with the control's own words, as a superuser would read them in the chat.

A value's origin is ``default`` (the schema's default), ``config`` (the config file's shared tables
set it otherwise), ``account`` (the account's own ``[[accounts]]`` table, with several accounts) or
``group`` (this chat's override); see :mod:`runtime.console.origins`.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from runtime.config.kernel import AttentionConfig
from runtime.console.origins import value_origins
from runtime.console.state import ConsoleState, console_state
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope

__all__ = ["router"]

router = APIRouter()
BY = "console"
LEXICON_SHOWN = 200


class Target(BaseModel):
    chat: str = Field(min_length=1, max_length=200)


class Enabled(Target):
    on: bool


class Mute(Target):
    minutes: float | None = Field(default=None, gt=0, le=60 * 24 * 30)


class Thresholds(Target):
    high: float | None = Field(default=None, ge=0.0, le=1.0)
    medium: float | None = Field(default=None, ge=0.0, le=1.0)


class LexiconChange(Target):
    action: Literal["add", "pin", "suppress"]
    term: str = Field(min_length=1, max_length=64)
    weight: float | None = Field(default=None, ge=0.0, le=10.0)


def thresholds_view(state: ConsoleState, chat_id: str) -> dict[str, Any]:
    config = state.site.edge.config.attention
    saved = state.runtime.persistence.load_threshold_overrides().get(chat_id, {})
    now = state.runtime.kernel.thresholds(chat_id)
    origins = value_origins(state.config_file, state.account, ("attention",))
    view = {}
    for name in ("high", "medium"):
        view[name] = {
            "value": getattr(now, name),
            "origin": "group" if name in saved else origins[f"attention.{name}"][1],
            "config": getattr(config, name),
            "default": AttentionConfig.model_fields[name].default,
        }
    return view


def budget_settings(state: ConsoleState) -> dict[str, Any]:
    config = state.site.edge.config.budget
    origins = value_origins(state.config_file, state.account, ("budget",))
    return {
        name: {"value": getattr(config, name), "origin": origins[f"budget.{name}"][1]}
        for name in ("min_interval_ms", "max_per_window", "window_ms")
    }


def lexicon_view(state: ConsoleState, chat_id: str) -> list[dict[str, Any]]:
    terms = state.runtime.kernel.lexicon.terms(LexiconKey(LexiconScope.GROUP, chat_id))
    ordered = sorted(terms, key=lambda t: (-t.weight, t.text))[:LEXICON_SHOWN]
    return [
        {"text": t.text, "weight": round(t.weight, 3), "status": t.status.value, "source": t.source}
        for t in ordered
    ]


@router.get("/api/group")
async def group(request: Request, chat: str = Query(min_length=1, max_length=200)) -> dict[str, Any]:
    state = console_state(request)
    core = state.runtime.bot.core
    overrides = core.groups.overrides()
    gate = state.runtime.outbound.gate(chat)
    return {
        "chat_id": chat,
        "enabled": core.groups.enabled(chat),
        "enabled_origin": "group" if chat in overrides else "config",
        "configured": core.groups.configured(chat),
        "gate": {"open": gate.open, "reason": gate.reason, "until": gate.until, "kind": gate.kind},
        "thresholds": thresholds_view(state, chat),
        "budget": budget_settings(state),
        "lexicon": lexicon_view(state, chat),
    }


@router.post("/api/group/enabled")
async def set_enabled(body: Enabled, request: Request) -> dict[str, str]:
    return {"answer": await console_state(request).control.set_group(body.chat, body.on, by=BY)}


@router.post("/api/group/mute")
async def mute(body: Mute, request: Request) -> dict[str, str]:
    state = console_state(request)
    until = None if body.minutes is None else state.clock() + body.minutes * 60
    # As the chat's /mute does: the edge's gate closes here (control.mute closes it too).
    return {"answer": await state.control.mute(body.chat, until, by=BY, reason="console")}


@router.post("/api/group/unmute")
async def unmute(body: Target, request: Request) -> dict[str, str]:
    return {"answer": await console_state(request).control.unmute(body.chat, by=BY, reason="console")}


@router.post("/api/group/thresholds")
async def thresholds(body: Thresholds, request: Request) -> dict[str, Any]:
    state = console_state(request)
    answer = await state.control.set_thresholds(body.chat, body.high, body.medium, by=BY)
    return {"answer": answer, "thresholds": thresholds_view(state, body.chat)}


@router.post("/api/group/lexicon")
async def lexicon(body: LexiconChange, request: Request) -> dict[str, Any]:
    control = console_state(request).control
    if body.action == "add":
        answer = await control.lexicon_add(body.chat, body.term, body.weight)
    elif body.action == "pin":
        answer = await control.lexicon_pin(body.chat, body.term)
    else:
        answer = await control.lexicon_suppress(body.chat, body.term)
    return {"answer": answer}
