"""Config: ``GET /api/config`` — the effective configuration (every key, defaults filled in) with
secrets masked by the log's own rule (``runtime.logs.Redactor``: a key naming a secret, and any model
key or access token wherever it appears), and the config file's text for an edited copy;
``POST /api/config/validate`` — an edited copy checked by the same validator the bot starts with
(``runtime.config.parse_config``; the answer names the bad key), nothing written;
``POST /api/config/reload`` — what can be reloaded while running: the persona (the admin
``persona reload``). Everything else takes a restart.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from runtime.config import ConfigError, parse_config
from runtime.console.state import ConsoleState, console_state
from runtime.logs import Redactor, secret_values_from_env

__all__ = ["router"]

router = APIRouter()
MAX_CONFIG = 512 * 1024


class Edited(BaseModel):
    text: str = Field(max_length=MAX_CONFIG)


def _redactor(state: ConsoleState) -> Redactor:
    config = state.site.edge.config
    names = [p.api_key_env for p in config.models.providers if p.api_key_env]
    return Redactor(secret_values_from_env(dict(os.environ), extra_names=names))


def _masked_tree(redactor: Redactor, value: Any) -> Any:
    """``value`` with every secret masked, at any depth (the redactor's own rule, key by key)."""
    if isinstance(value, dict):
        return {k: _masked_tree(redactor, redactor(None, "", {k: v})[k]) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_tree(redactor, v) for v in value]
    return value


@router.get("/api/config")
async def config(request: Request) -> dict[str, Any]:
    state = console_state(request)
    redactor = _redactor(state)
    path = state.site.edge.config_path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        text = f"# cannot read {path}: {exc}"
    return {
        "path": str(path),
        "effective": _masked_tree(redactor, state.site.edge.config.model_dump(mode="json")),
        "text": redactor.mask(text),
    }


@router.post("/api/config/validate")
async def validate(body: Edited) -> dict[str, Any]:
    try:
        data = tomllib.loads(body.text)
    except tomllib.TOMLDecodeError as exc:
        return {"ok": False, "error": f"not valid TOML: {exc}", "keys": []}
    try:
        parse_config(data, source="the edited copy")
    except ConfigError as exc:
        return {"ok": False, "error": str(exc), "keys": list(exc.keys)}
    return {"ok": True, "error": None, "keys": []}


@router.post("/api/config/reload")
async def reload(request: Request) -> dict[str, str]:
    return {"answer": await console_state(request).control.persona_reload()}
