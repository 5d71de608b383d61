"""Logs: ``GET /api/logs?after=&level=&chat=`` — the last lines of the process's log (already
masked: the tap sits after the redactor), newest last, filtered by minimum level and chat. The page
asks again every two seconds with the last sequence number it has, so it gets only what is new.

The lines are kept by :class:`runtime.console.logtail.LogTail`, a ring buffer.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from runtime.console.state import console_state

__all__ = ["router"]

router = APIRouter()


@router.get("/api/logs")
async def logs(
    request: Request,
    after: int = Query(default=0, ge=0),
    level: str = Query(default="info", max_length=10),
    chat: str | None = Query(default=None, max_length=200),
) -> dict[str, Any]:
    return {"lines": console_state(request).logs.since(after, level=level, chat=chat)}
