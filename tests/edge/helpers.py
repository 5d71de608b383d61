"""Build adapter event models from OneBot JSON and run the adapter's own pre-processing on them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nonebot.adapters.onebot.v11 import Adapter, Event, MessageEvent
from nonebot.adapters.onebot.v11.bot import _check_at_me, _check_reply

SELF_ID = 10_000
GROUP = 555_001


def parse(payload: Mapping[str, Any]) -> Event:
    event = Adapter.json_to_event(dict(payload))
    assert event is not None, "the adapter refused the payload"
    return event


class _GetMsgBot:
    """Answers the adapter's ``get_msg`` from a table, or fails like an implementation that lost it."""

    def __init__(self, messages: Mapping[int, Mapping[str, Any]]) -> None:
        self._messages = messages

    async def get_msg(self, *, message_id: int) -> Mapping[str, Any]:
        if message_id not in self._messages:
            raise RuntimeError("message not found")
        return self._messages[message_id]


async def as_adapter_delivers(
    payload: Mapping[str, Any], get_msg: Mapping[int, Mapping[str, Any]] | None = None
) -> MessageEvent:
    """The event as matchers receive it: parsed, reduced, reply resolved through get_msg, @-bot checked."""
    event = parse(payload)
    assert isinstance(event, MessageEvent)
    event.message.reduce()
    await _check_reply(_GetMsgBot(get_msg or {}), event)  # type: ignore[arg-type]
    _check_at_me(None, event)  # type: ignore[arg-type]
    return event
